/* Per-line counts the way gcov computes them (coverage.h).
 *
 * The plugin records each block's locations as GCC's profile.cc does for
 * gcov, so gcov's line algorithm (gcc/gcov.cc: add_line_counts,
 * accumulate_line_info, get_cycles_count) applied to tally's blocks gives
 * gcov's numbers:
 *   1. Per block, consecutive locations in one file form a group.  Every
 *      line of a group exists, and adds the block's count to its raw sum;
 *      the block is attached to the group's highest line (gcov sorts each
 *      group's lines, process_all_functions, and attaches the block to the
 *      last: a condition spread over lines 5 and 6 whose block records 6
 *      before 5 counts on line 6).  As in gcov, the
 *      block with the highest number is never attached (gcov skips it as if
 *      it were EXIT, which it numbered last in older versions).
 *   2. A line without attached blocks counts its raw sum.
 *   3. A line with attached blocks counts the edges entering them from
 *      blocks not attached to it, plus the loops entirely within them: each
 *      elementary cycle found (Hawick and James' circuit enumeration, in
 *      gcov's order: blocks ascending, each block's exits by destination)
 *      adds its smallest edge count, which is then taken off every edge of
 *      the cycle.
 *   4. Bodies that start on the same line (C++ constructor and destructor
 *      variants, a function from several modules) form a group, as in gcov:
 *      the lines of their own file from that line on are counted per body
 *      and then summed; other lines are counted over all bodies at once.
 *      blocks=visited bodies make a line 1 when one of its blocks ran.
 * Branches are the normal exits of blocks with two or more of them, on the
 * last line of their block, as gcov -b lists them.  */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coverage.h"
#include "freeall.h"
#include "tally/format.h"

/* gcov never attaches its last block to a line (step 1).  */
#define SKIP_LAST_BLOCK 1

static void *
xmalloc (size_t n)
{
  void *p = malloc (n ? n : 1);
  if (!p)
    {
      fputs ("tally: out of memory\n", stderr);
      exit (1);
    }
  return p;
}

static void *
xgrow (void *p, size_t *cap, size_t need, size_t size)
{
  if (need <= *cap)
    return p;
  size_t n = *cap ? *cap : 16;
  while (n < need)
    n *= 2;
  if (n > SIZE_MAX / size)
    {
      fputs ("tally: out of memory\n", stderr);
      exit (1);
    }
  p = realloc (p, n * size);
  if (!p)
    {
      fputs ("tally: out of memory\n", stderr);
      exit (1);
    }
  *cap = n;
  return p;
}

static uint64_t
add_sat (uint64_t a, uint64_t b)
{
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

char *
cov_resolve_path (const char *directory, const char *file)
{
  size_t nd = directory ? strlen (directory) : 0, nf = strlen (file);
  char *joined = xmalloc (nd + nf + 2);
  if (file[0] == '/' || !nd)
    memcpy (joined, file, nf + 1);
  else
    {
      memcpy (joined, directory, nd);
      joined[nd] = '/';
      memcpy (joined + nd + 1, file, nf + 1);
    }
  /* Fold components in place: the result is never longer.  */
  char *out = xmalloc (strlen (joined) + 2);
  size_t o = 0;
  int absolute = joined[0] == '/';
  const char *s = joined;
  while (*s)
    {
      while (*s == '/')
        s++;
      const char *e = s;
      while (*e && *e != '/')
        e++;
      size_t n = (size_t) (e - s);
      if (n == 0 || (n == 1 && s[0] == '.'))
        ;
      else if (n == 2 && s[0] == '.' && s[1] == '.' && o > 0
               && !(o >= 2 && out[o - 1] == '.' && out[o - 2] == '.'
                    && (o == 2 || out[o - 3] == '/')))
        {
          while (o > 0 && out[o - 1] != '/')
            o--;
          if (o > 0)
            o--;
        }
      else
        {
          if (o > 0 || absolute)
            out[o++] = '/';
          memcpy (out + o, s, n);
          o += n;
        }
      s = e;
    }
  if (o == 0)
    out[o++] = absolute ? '/' : '.';
  out[o] = 0;
  free (joined);
  return out;
}

/* One location of one block: a line it is on.  */
struct rec
{
  uint32_t file; /* index into the result's files */
  uint32_t line;
  uint32_t body;
  uint32_t block;
  uint32_t group; /* 1 + body for a line counted per body (step 4), or 0 */
  uint32_t seq;  /* order of creation, for a stable sort */
  int attach;    /* the block is attached to this line */
};

/* The order of two records by their N keys, the first most significant:
   what the qsort comparators below return.  */
static int
cmp_keys (const uint64_t *a, const uint64_t *b, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (a[i] != b[i])
      return a[i] < b[i] ? -1 : 1;
  return 0;
}

static int
cmp_rec (const void *pa, const void *pb)
{
  const struct rec *a = pa, *b = pb;
  return cmp_keys ((uint64_t[]) { a->file, a->line, a->group, a->seq },
                   (uint64_t[]) { b->file, b->line, b->group, b->seq }, 4);
}

/* Function start of a body, for finding groups.  */
struct start
{
  uint32_t file, line;
  size_t body;
};

static int
cmp_start (const void *pa, const void *pb)
{
  const struct start *a = pa, *b = pb;
  return cmp_keys ((uint64_t[]) { a->file, a->line, a->body },
                   (uint64_t[]) { b->file, b->line, b->body }, 3);
}

/* A body's edges by source (each source's sorted by destination, as gcov
   sorts them) and by destination.  */
struct adjacency
{
  uint32_t *succ_start, *succ; /* edge numbers */
  uint32_t *pred_start, *pred;
};

/* For qsort of a body's edge numbers: by source, then destination, then
   map order.  */
static const struct tally_blockmap *sort_map;

static int
cmp_succ (const void *pa, const void *pb)
{
  uint32_t a = *(const uint32_t *) pa, b = *(const uint32_t *) pb;
  const struct tally_map_edge *x = &sort_map->edges[a], *y = &sort_map->edges[b];
  return cmp_keys ((uint64_t[]) { x->src, x->dst, a },
                   (uint64_t[]) { y->src, y->dst, b }, 3);
}

static void
build_adjacency (const struct tally_blockmap *m, struct adjacency *adj)
{
  uint32_t nb = m->nblocks, ne = m->nedges;
  adj->succ_start = xmalloc ((nb + 1) * sizeof (uint32_t));
  adj->pred_start = xmalloc ((nb + 1) * sizeof (uint32_t));
  adj->succ = xmalloc (ne * sizeof (uint32_t));
  adj->pred = xmalloc (ne * sizeof (uint32_t));
  for (uint32_t e = 0; e < ne; e++)
    adj->succ[e] = e;
  sort_map = m;
  qsort (adj->succ, ne, sizeof (uint32_t), cmp_succ);
  memset (adj->succ_start, 0, (nb + 1) * sizeof (uint32_t));
  memset (adj->pred_start, 0, (nb + 1) * sizeof (uint32_t));
  for (uint32_t e = 0; e < ne; e++)
    {
      adj->succ_start[m->edges[e].src + 1]++;
      adj->pred_start[m->edges[e].dst + 1]++;
    }
  for (uint32_t b = 0; b < nb; b++)
    {
      adj->succ_start[b + 1] += adj->succ_start[b];
      adj->pred_start[b + 1] += adj->pred_start[b];
    }
  uint32_t *fill = xmalloc ((nb + 1) * sizeof (uint32_t));
  memcpy (fill, adj->pred_start, (nb + 1) * sizeof (uint32_t));
  for (uint32_t e = 0; e < ne; e++)
    adj->pred[fill[m->edges[e].dst]++] = e;
  free (fill);
}

static void
free_adjacency (struct adjacency *adj)
{
  free_all (adj->succ_start, adj->succ, adj->pred_start, adj->pred);
}

/* The blocks attached to one line, and the cycle search over them.  */
struct local_arc
{
  uint32_t to;    /* local index */
  uint64_t cs;    /* count left for the cycle search */
};

struct line_graph
{
  uint32_t n;            /* attached blocks */
  uint32_t *body, *block;
  uint32_t *arc_start;   /* n + 1 */
  struct local_arc *arcs;
  /* Hawick-James state.  */
  unsigned char *blocked;
  uint32_t **blist;      /* per node: nodes it blocks */
  uint32_t *blist_n, *blist_cap;
  uint32_t *path;        /* arc indexes */
  uint32_t npath;
};

static int
local_index (const struct line_graph *g, uint32_t body, uint32_t block)
{
  for (uint32_t i = 0; i < g->n; i++)
    if (g->body[i] == body && g->block[i] == block)
      return (int) i;
  return -1;
}

static void
unblock (struct line_graph *g, uint32_t u)
{
  if (!g->blocked[u])
    return;
  g->blocked[u] = 0;
  while (g->blist_n[u])
    {
      uint32_t w = g->blist[u][--g->blist_n[u]];
      unblock (g, w);
    }
}

static void
blist_add (struct line_graph *g, uint32_t w, uint32_t v)
{
  for (uint32_t i = 0; i < g->blist_n[w]; i++)
    if (g->blist[w][i] == v)
      return;
  if (g->blist_n[w] == g->blist_cap[w])
    {
      g->blist_cap[w] = g->blist_cap[w] ? 2 * g->blist_cap[w] : 4;
      g->blist[w] = realloc (g->blist[w], g->blist_cap[w] * sizeof (uint32_t));
      if (!g->blist[w])
        {
          fputs ("tally: out of memory\n", stderr);
          exit (1);
        }
    }
  g->blist[w][g->blist_n[w]++] = v;
}

static int
circuit (struct line_graph *g, uint32_t v, uint32_t start, uint64_t *count)
{
  int found = 0;
  g->blocked[v] = 1;
  g->blist_n[v] = 0;
  for (uint32_t a = g->arc_start[v]; a < g->arc_start[v + 1]; a++)
    {
      uint32_t w = g->arcs[a].to;
      if (w < start || g->arcs[a].cs == 0)
        continue;
      g->path[g->npath++] = a;
      if (w == start)
        {
          uint64_t least = UINT64_MAX;
          for (uint32_t i = 0; i < g->npath; i++)
            if (g->arcs[g->path[i]].cs < least)
              least = g->arcs[g->path[i]].cs;
          *count = add_sat (*count, least);
          for (uint32_t i = 0; i < g->npath; i++)
            g->arcs[g->path[i]].cs -= least;
          found = 1;
        }
      else
        {
          int zero = 0;
          for (uint32_t i = 0; i < g->npath && !zero; i++)
            zero = g->arcs[g->path[i]].cs == 0;
          if (!zero && !g->blocked[w])
            found |= circuit (g, w, start, count);
        }
      g->npath--;
    }
  if (found)
    unblock (g, v);
  else
    for (uint32_t a = g->arc_start[v]; a < g->arc_start[v + 1]; a++)
      {
        uint32_t w = g->arcs[a].to;
        if (w < start || g->arcs[a].cs == 0)
          continue;
        blist_add (g, w, v);
      }
  return found;
}

/* Step 3 for the N attached blocks (BODY[i], BLOCK[i]), sorted by body
   then block.  Sets *KNOWN to 0 if an edge it needs is undetermined.  */
static uint64_t
attached_count (const struct cov_body *bodies, const struct adjacency *adjs,
                struct line_graph *g, int *known)
{
  uint64_t count = 0; /* saturates at 2^64-1, as every sum of counts */
  uint32_t narcs = 0;
  *known = 1;
  for (uint32_t i = 0; i < g->n; i++)
    {
      const struct cov_body *b = &bodies[g->body[i]];
      const struct adjacency *adj = &adjs[g->body[i]];
      uint32_t blk = g->block[i];
      for (uint32_t k = adj->pred_start[blk]; k < adj->pred_start[blk + 1]; k++)
        {
          uint32_t e = adj->pred[k];
          if (local_index (g, g->body[i], b->map->edges[e].src) >= 0)
            continue;
          if (!b->flow->edge_known[e])
            *known = 0;
          count = add_sat (count, b->flow->edge[e]);
        }
      narcs += adj->succ_start[blk + 1] - adj->succ_start[blk];
    }
  g->arc_start = xmalloc ((g->n + 1) * sizeof (uint32_t));
  g->arcs = xmalloc ((narcs ? narcs : 1) * sizeof *g->arcs);
  narcs = 0;
  for (uint32_t i = 0; i < g->n; i++)
    {
      const struct cov_body *b = &bodies[g->body[i]];
      const struct adjacency *adj = &adjs[g->body[i]];
      uint32_t blk = g->block[i];
      g->arc_start[i] = narcs;
      for (uint32_t k = adj->succ_start[blk]; k < adj->succ_start[blk + 1]; k++)
        {
          uint32_t e = adj->succ[k];
          int w = local_index (g, g->body[i], b->map->edges[e].dst);
          if (w < 0)
            continue;
          if (!b->flow->edge_known[e])
            *known = 0;
          g->arcs[narcs].to = (uint32_t) w;
          g->arcs[narcs].cs = b->flow->edge[e];
          narcs++;
        }
    }
  g->arc_start[g->n] = narcs;
  if (narcs)
    {
      g->blocked = calloc (g->n, 1);
      g->blist = calloc (g->n, sizeof *g->blist);
      g->blist_n = calloc (g->n, sizeof *g->blist_n);
      g->blist_cap = calloc (g->n, sizeof *g->blist_cap);
      g->path = xmalloc (narcs * sizeof *g->path);
      if (!g->blocked || !g->blist || !g->blist_n || !g->blist_cap)
        {
          fputs ("tally: out of memory\n", stderr);
          exit (1);
        }
      for (uint32_t s = 0; s < g->n; s++)
        {
          memset (g->blocked, 0, g->n);
          for (uint32_t i = 0; i < g->n; i++)
            g->blist_n[i] = 0;
          g->npath = 0;
          circuit (g, s, s, &count);
        }
      for (uint32_t i = 0; i < g->n; i++)
        free (g->blist[i]);
      free_all (g->blocked, g->blist, g->blist_n, g->blist_cap, g->path);
    }
  free_all (g->arc_start, g->arcs);
  return count;
}

static int
cmp_branch (const void *pa, const void *pb)
{
  const struct cov_branch *a = pa, *b = pb;
  return cmp_keys ((uint64_t[]) { a->line, a->block, a->branch },
                   (uint64_t[]) { b->line, b->block, b->branch }, 3);
}

static uint32_t
intern_file (struct cov_result *r, size_t *cap, char *path)
{
  for (size_t i = 0; i < r->nfiles; i++)
    if (strcmp (r->files[i].path, path) == 0)
      {
        free (path);
        return (uint32_t) i;
      }
  r->files = xgrow (r->files, cap, r->nfiles + 1, sizeof *r->files);
  memset (&r->files[r->nfiles], 0, sizeof *r->files);
  r->files[r->nfiles].path = path;
  return (uint32_t) r->nfiles++;
}

static int
cmp_files (const void *pa, const void *pb)
{
  return strcmp (((const struct cov_file *) pa)->path,
                 ((const struct cov_file *) pb)->path);
}

void
cov_compute (const struct cov_body *bodies, size_t nbodies,
             struct cov_result *out)
{
  memset (out, 0, sizeof *out);
  size_t files_cap = 0, nrecs = 0, recs_cap = 0;
  struct rec *recs = NULL;
  /* Branches, per file index, collected unsorted.  */
  size_t *br_cap = NULL, br_files_cap = 0;
  struct adjacency *adjs = xmalloc ((nbodies ? nbodies : 1) * sizeof *adjs);

  /* 4. Groups: bodies that start on the same line of the same file.  */
  struct start *starts = xmalloc ((nbodies ? nbodies : 1) * sizeof *starts);
  uint32_t *fn_file = xmalloc ((nbodies ? nbodies : 1) * sizeof *fn_file);
  unsigned char *grouped = xmalloc (nbodies ? nbodies : 1);
  memset (grouped, 0, nbodies ? nbodies : 1);
  for (size_t bi = 0; bi < nbodies; bi++)
    {
      fn_file[bi] = intern_file (out, &files_cap,
                                 cov_resolve_path (bodies[bi].directory,
                                                   bodies[bi].fn_file));
      starts[bi].file = fn_file[bi];
      starts[bi].line = bodies[bi].fn_line;
      starts[bi].body = bi;
    }
  qsort (starts, nbodies, sizeof *starts, cmp_start);
  for (size_t i = 0; i + 1 < nbodies; i++)
    if (starts[i].file == starts[i + 1].file
        && starts[i].line == starts[i + 1].line)
      grouped[starts[i].body] = grouped[starts[i + 1].body] = 1;
  free (starts);

  for (size_t bi = 0; bi < nbodies; bi++)
    {
      const struct tally_blockmap *m = bodies[bi].map;
      build_adjacency (m, &adjs[bi]);
      uint32_t *gfile = xmalloc ((m->nfiles ? m->nfiles : 1) * sizeof *gfile);
      for (uint32_t f = 0; f < m->nfiles; f++)
        gfile[f] = intern_file (out, &files_cap,
                                cov_resolve_path (bodies[bi].directory,
                                                  m->files[f]));
      if (out->nfiles > br_files_cap)
        {
          size_t old = br_files_cap;
          br_cap = xgrow (br_cap, &br_files_cap, out->nfiles, sizeof *br_cap);
          memset (br_cap + old, 0, (br_files_cap - old) * sizeof *br_cap);
        }
      /* 1.  */
      for (uint32_t b = 2; b < m->nblocks; b++)
        {
          const struct tally_map_block *blk = &m->blocks[b];
          uint32_t top = 0; /* the highest line of the current group */
          for (uint32_t k = 0; k < blk->nlocs; k++)
            {
              if (k == 0 || blk->locs[k].file != blk->locs[k - 1].file)
                {
                  top = k;
                  for (uint32_t t = k + 1; t < blk->nlocs
                       && blk->locs[t].file == blk->locs[k].file; t++)
                    if (blk->locs[t].line > blk->locs[top].line)
                      top = t;
                }
              recs = xgrow (recs, &recs_cap, nrecs + 1, sizeof *recs);
              struct rec *r = &recs[nrecs];
              r->file = gfile[blk->locs[k].file];
              r->line = blk->locs[k].line;
              r->body = (uint32_t) bi;
              r->block = b;
              r->group = grouped[bi] && r->file == fn_file[bi]
                         && r->line >= bodies[bi].fn_line
                         ? (uint32_t) bi + 1 : 0;
              r->seq = (uint32_t) nrecs;
              r->attach = k == top && m->kind != TALLY_MAP_VISITED
                          && !(SKIP_LAST_BLOCK && b + 1 == m->nblocks);
              nrecs++;
            }
          /* Branches.  */
          uint32_t normal = 0;
          const struct adjacency *adj = &adjs[bi];
          for (uint32_t k = adj->succ_start[b]; k < adj->succ_start[b + 1]; k++)
            normal += !(m->edges[adj->succ[k]].flags & TALLY_EDGE_FAKE);
          if (normal < 2 || !blk->nlocs || m->kind == TALLY_MAP_VISITED)
            continue;
          const struct tally_map_loc *last = &blk->locs[blk->nlocs - 1];
          struct cov_file *cf = &out->files[gfile[last->file]];
          uint32_t idx = 0;
          for (uint32_t k = adj->succ_start[b]; k < adj->succ_start[b + 1]; k++)
            {
              uint32_t e = adj->succ[k];
              if (m->edges[e].flags & TALLY_EDGE_FAKE)
                continue;
              if (!bodies[bi].flow->edge_known[e])
                {
                  idx++;
                  continue;
                }
              cf->branches = xgrow (cf->branches, &br_cap[gfile[last->file]],
                                    cf->nbranches + 1, sizeof *cf->branches);
              struct cov_branch *br = &cf->branches[cf->nbranches++];
              br->line = last->line;
              br->block = b;
              br->branch = idx++;
              br->taken = bodies[bi].flow->edge[e];
              br->ran = bodies[bi].flow->block[b] != 0;
            }
        }
      free (gfile);
    }

  if (nrecs > 1) /* recs is NULL without block maps: qsort wants a pointer */
    qsort (recs, nrecs, sizeof *recs, cmp_rec);
  size_t *line_cap = xmalloc ((out->nfiles ? out->nfiles : 1) * sizeof *line_cap);
  memset (line_cap, 0, (out->nfiles ? out->nfiles : 1) * sizeof *line_cap);
  struct line_graph g;
  size_t body_cap = 0, block_cap = 0;
  memset (&g, 0, sizeof g);
  for (size_t i = 0; i < nrecs;)
    {
      size_t j = i;
      while (j < nrecs && recs[j].file == recs[i].file
             && recs[j].line == recs[i].line && recs[j].group == recs[i].group)
        j++;
      uint64_t raw = 0;
      int visited_ran = 0, zero = 0, known = 1, any_count = 0;
      g.n = 0;
      for (size_t k = i; k < j; k++)
        {
          const struct cov_body *b = &bodies[recs[k].body];
          uint64_t c = b->flow->block[recs[k].block];
          if (!b->flow->block_known[recs[k].block])
            known = 0;
          zero |= c == 0;
          if (b->map->kind == TALLY_MAP_VISITED)
            {
              visited_ran |= c != 0;
              continue;
            }
          any_count = 1;
          raw = add_sat (raw, c);
          if (recs[k].attach
              && local_index (&g, recs[k].body, recs[k].block) < 0)
            {
              g.body = xgrow (g.body, &body_cap, g.n + 1, sizeof *g.body);
              g.block = xgrow (g.block, &block_cap, g.n + 1, sizeof *g.block);
              g.body[g.n] = recs[k].body;
              g.block[g.n] = recs[k].block;
              g.n++;
            }
        }
      uint64_t count = raw;
      if (g.n)
        {
          int k2;
          count = attached_count (bodies, adjs, &g, &k2);
          known &= k2;
        }
      if (!any_count)
        count = visited_ran;
      else if (visited_ran && count == 0)
        count = 1;
      struct cov_file *cf = &out->files[recs[i].file];
      struct cov_line *l = cf->nlines ? &cf->lines[cf->nlines - 1] : NULL;
      if (l && l->line == recs[i].line)
        {
          /* Another group's part of the same line: gcov sums them.  A part
             from visited bytes only says whether the line ran.  */
          if (any_count && !l->counted)
            l->count = count ? count : l->count;
          else if (any_count)
            l->count = add_sat (l->count, count);
          else if (!l->count)
            l->count = count;
          l->counted |= any_count;
          l->known &= known;
          l->zero_block |= zero;
        }
      else
        {
          cf->lines = xgrow (cf->lines, &line_cap[recs[i].file],
                             cf->nlines + 1, sizeof *cf->lines);
          l = &cf->lines[cf->nlines++];
          l->line = recs[i].line;
          l->count = count;
          l->known = known;
          l->zero_block = zero;
          l->counted = any_count;
        }
      i = j;
    }
  free (g.body);
  free (g.block);
  free (line_cap);
  free (recs);

  /* Branches: sorted, outcomes of one (line, block, branch) summed.  */
  for (size_t f = 0; f < out->nfiles; f++)
    {
      struct cov_file *cf = &out->files[f];
      if (!cf->nbranches)
        continue;
      qsort (cf->branches, cf->nbranches, sizeof *cf->branches, cmp_branch);
      size_t o = 0;
      for (size_t k = 0; k < cf->nbranches; k++)
        {
          if (o && cmp_branch (&cf->branches[o - 1], &cf->branches[k]) == 0)
            {
              cf->branches[o - 1].taken = add_sat (cf->branches[o - 1].taken,
                                                   cf->branches[k].taken);
              cf->branches[o - 1].ran |= cf->branches[k].ran;
            }
          else
            cf->branches[o++] = cf->branches[k];
        }
      cf->nbranches = o;
    }
  free (br_cap);
  free (fn_file);
  free (grouped);
  for (size_t bi = 0; bi < nbodies; bi++)
    free_adjacency (&adjs[bi]);
  free (adjs);
  if (out->nfiles > 1)
    qsort (out->files, out->nfiles, sizeof *out->files, cmp_files);
}

void
cov_free (struct cov_result *r)
{
  for (size_t i = 0; i < r->nfiles; i++)
    {
      free (r->files[i].path);
      free (r->files[i].lines);
      free (r->files[i].branches);
    }
  free (r->files);
  memset (r, 0, sizeof *r);
}
