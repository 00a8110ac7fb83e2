/* Strict decoder of the block map and the flow solver (blockmap.h).
 *
 * Decoding: every count is compared with the bytes left (by division, so no
 * hostile value overflows) before anything is allocated, every index with
 * what it indexes.
 *
 * Solving (doc/data-format.md "Solving"):
 *   1. Each block B >= 2 is two nodes, B.in = 2B-2 and B.out = 2B-1, joined
 *      by B's block edge; ENTRY is node 0, EXIT node 1; a map edge S -> D
 *      runs from S.out (ENTRY) to D.in (EXIT); an edge EXIT -> ENTRY closes
 *      the flow.
 *   2. Edges with a value are known; the others unknown.
 *   3. A node with exactly one unknown edge determines it: the counts in
 *      equal the counts out.  Repeat until no node has a single unknown.
 *      With kind TREE the unknown edges form a spanning forest, so this
 *      determines all of them; with kind BLOCK whatever is determined.
 *      The sums are taken modulo 2^64: the equations are linear, so every
 *      count comes out exact however the others came out.
 *   4. A negative count is legitimate on a fake edge into EXIT only: flow
 *      that arrived there by a call returning in a process that did not
 *      make the call (a forked child, or after tally_reset, resumes in the
 *      middle of its active functions).  Anywhere else the counts are not
 *      one consistent run (racy update=single counts, a dump taken while
 *      other threads counted): shown as 0 and counted in NEGATIVE.  */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blockmap.h"
#include "freeall.h"
#include "tally/format.h"

#include "datafile.h"

#define fail tally_errf
#define get_u32 tally_le32

/* A cursor over the map bytes.  */
struct cursor
{
  const unsigned char *buf;
  size_t pos, size;
  char *err;
  size_t errlen;
};

static size_t
left (const struct cursor *c)
{
  return c->size - c->pos;
}

static int
take (struct cursor *c, uint32_t *v, const char *what)
{
  if (left (c) < 4)
    return fail (c->err, c->errlen, "%s at map byte %zu runs past the end of "
                 "the map (%zu bytes)", what, c->pos, c->size);
  *v = get_u32 (c->buf + c->pos);
  c->pos += 4;
  return 0;
}

static void *
alloc_array (size_t n, size_t size)
{
  return calloc (n ? n : 1, size);
}

/* Whether value index V of block or edge WHAT I is acceptable for a
   function with NVALUES; if not, said in ERR.  */
static int
value_ok (uint32_t v, uint32_t nvalues, const char *what, uint32_t i,
          char *err, size_t errlen)
{
  if (v == TALLY_MAP_NONE || v < nvalues)
    return 1;
  fail (err, errlen, "%s %lu: value index %lu, but the function has %lu "
        "values", what, (unsigned long) i, (unsigned long) v,
        (unsigned long) nvalues);
  return 0;
}

int
tally_map_decode (const unsigned char *map, size_t size, uint32_t nvalues,
                  struct tally_blockmap *out, char *err, size_t errlen)
{
  struct cursor c = { map, 0, size, err, errlen };
  struct tally_blockmap m;
  uint32_t version;
  memset (&m, 0, sizeof m);
  memset (out, 0, sizeof *out);
  if (take (&c, &version, "version") || take (&c, &m.kind, "kind")
      || take (&c, &m.nblocks, "block count")
      || take (&c, &m.nedges, "edge count")
      || take (&c, &m.nfiles, "file count"))
    return -1;
  if (version != TALLY_MAP_VERSION)
    return fail (err, errlen, "map version %lu, this tally reads version %u",
                 (unsigned long) version, TALLY_MAP_VERSION);
  if (m.kind != TALLY_MAP_BLOCK && m.kind != TALLY_MAP_TREE
      && m.kind != TALLY_MAP_VISITED)
    return fail (err, errlen, "unknown map kind %lu (expected 1, 2 or 3)",
                 (unsigned long) m.kind);
  if (m.nblocks < 2)
    return fail (err, errlen, "%lu blocks, at least 2 (ENTRY and EXIT) "
                 "required", (unsigned long) m.nblocks);
  /* Smallest encodings: a file name 4 bytes, a block 12, an edge 16.  */
  if (m.nfiles > left (&c) / 4 || m.nblocks > left (&c) / 12
      || m.nedges > left (&c) / 16)
    return fail (err, errlen, "%lu files, %lu blocks and %lu edges cannot "
                 "fit in the %zu bytes left of the map",
                 (unsigned long) m.nfiles, (unsigned long) m.nblocks,
                 (unsigned long) m.nedges, left (&c));

  m.files = alloc_array (m.nfiles, sizeof *m.files);
  m.blocks = alloc_array (m.nblocks, sizeof *m.blocks);
  m.edges = alloc_array (m.nedges, sizeof *m.edges);
  if (!m.files || !m.blocks || !m.edges)
    goto oom;
  for (uint32_t i = 0; i < m.nfiles; i++)
    {
      uint32_t n;
      if (take (&c, &n, "file name length"))
        goto bad;
      if (n > TALLY_MAX_STRING || n > left (&c))
        {
          fail (err, errlen, "file name %lu at map byte %zu: length %lu runs "
                "past the end of the map or over the limit",
                (unsigned long) i, c.pos - 4, (unsigned long) n);
          goto bad;
        }
      if (memchr (c.buf + c.pos, 0, n))
        {
          fail (err, errlen, "file name %lu contains a NUL byte",
                (unsigned long) i);
          goto bad;
        }
      m.files[i] = malloc ((size_t) n + 1);
      if (!m.files[i])
        goto oom;
      memcpy (m.files[i], c.buf + c.pos, n);
      m.files[i][n] = 0;
      c.pos += n;
    }

  /* The locations of all blocks go into one array; count them first.  */
  size_t start = c.pos, nlocs = 0;
  for (uint32_t b = 0; b < m.nblocks; b++)
    {
      uint32_t n;
      if (left (&c) < 12)
        {
          fail (err, errlen, "block %lu at map byte %zu runs past the end of "
                "the map", (unsigned long) b, c.pos);
          goto bad;
        }
      n = get_u32 (c.buf + c.pos + 8);
      c.pos += 12;
      if (n > left (&c) / 8)
        {
          fail (err, errlen, "block %lu: %lu locations cannot fit in the %zu "
                "bytes left of the map", (unsigned long) b, (unsigned long) n,
                left (&c));
          goto bad;
        }
      c.pos += (size_t) n * 8;
      nlocs += n;
    }
  m.locs_ = alloc_array (nlocs, sizeof *m.locs_);
  if (!m.locs_)
    goto oom;
  c.pos = start;
  nlocs = 0;
  for (uint32_t b = 0; b < m.nblocks; b++)
    {
      struct tally_map_block *blk = &m.blocks[b];
      take (&c, &blk->value, "block value");
      take (&c, &blk->flags, "block flags");
      take (&c, &blk->nlocs, "location count");
      blk->locs = m.locs_ + nlocs;
      for (uint32_t k = 0; k < blk->nlocs; k++)
        {
          struct tally_map_loc *l = &m.locs_[nlocs++];
          take (&c, &l->file, "location file");
          take (&c, &l->line, "location line");
          if (l->file >= m.nfiles)
            {
              fail (err, errlen, "block %lu location %lu: file index %lu, "
                    "but the map has %lu files", (unsigned long) b,
                    (unsigned long) k, (unsigned long) l->file,
                    (unsigned long) m.nfiles);
              goto bad;
            }
        }
      if (!value_ok (blk->value, nvalues, "block", b, err, errlen))
        goto bad;
      if (b < 2 && (blk->value != TALLY_MAP_NONE || blk->nlocs))
        {
          fail (err, errlen, "block %lu (%s) has a value or locations",
                (unsigned long) b, b == TALLY_MAP_ENTRY ? "ENTRY" : "EXIT");
          goto bad;
        }
    }
  if (m.nedges > left (&c) / 16)
    {
      fail (err, errlen, "%lu edges cannot fit in the %zu bytes left of the "
            "map", (unsigned long) m.nedges, left (&c));
      goto bad;
    }
  for (uint32_t e = 0; e < m.nedges; e++)
    {
      struct tally_map_edge *ed = &m.edges[e];
      take (&c, &ed->src, "edge source");
      take (&c, &ed->dst, "edge destination");
      take (&c, &ed->flags, "edge flags");
      take (&c, &ed->value, "edge value");
      if (ed->src >= m.nblocks || ed->dst >= m.nblocks)
        {
          fail (err, errlen, "edge %lu: %lu -> %lu, but the map has %lu "
                "blocks", (unsigned long) e, (unsigned long) ed->src,
                (unsigned long) ed->dst, (unsigned long) m.nblocks);
          goto bad;
        }
      if (ed->src == TALLY_MAP_EXIT || ed->dst == TALLY_MAP_ENTRY)
        {
          fail (err, errlen, "edge %lu: %lu -> %lu leaves EXIT or enters "
                "ENTRY", (unsigned long) e, (unsigned long) ed->src,
                (unsigned long) ed->dst);
          goto bad;
        }
      if (!value_ok (ed->value, nvalues, "edge", e, err, errlen))
        goto bad;
    }
  if (left (&c))
    {
      fail (err, errlen, "%zu unexpected bytes at the end of the map",
            left (&c));
      goto bad;
    }
  *out = m;
  return 0;

oom:
  fail (err, errlen, "out of memory decoding the map");
bad:
  tally_map_free (&m);
  return -1;
}

int
tally_fn_map_decode (const struct tally_data_fn *f,
                     struct tally_blockmap *out, char *err, size_t errlen)
{
  return tally_map_decode (f->map, f->map_size, f->ncounters, out, err,
                           errlen);
}

int
tally_data_check_maps (const struct tally_data *d, char *err, size_t errlen)
{
  for (uint32_t i = 0; i < d->nmodules; i++)
    for (uint32_t j = 0; j < d->modules[i].nfns; j++)
      {
        const struct tally_data_fn *f = &d->modules[i].fns[j];
        struct tally_blockmap bm;
        char why[200];
        if (!f->map_size)
          continue;
        if (tally_fn_map_decode (f, &bm, why, sizeof why) != 0)
          return fail (err, errlen, "module %lu (%s) function %lu (%s): bad "
                       "block map: %s: file is corrupt", (unsigned long) i,
                       d->modules[i].source, (unsigned long) j, f->symbol,
                       why);
        tally_map_free (&bm);
      }
  return 0;
}

void
tally_map_free (struct tally_blockmap *m)
{
  if (m->files)
    for (uint32_t i = 0; i < m->nfiles; i++)
      free (m->files[i]);
  free_all (m->files, m->blocks, m->edges, m->locs_);
  memset (m, 0, sizeof *m);
}

/* 1. The graph of the solver.  */
struct gedge
{
  uint32_t from, to; /* nodes */
  uint64_t count;
  int known;
};

struct gnode
{
  uint64_t in, out; /* sums of the known edges */
  uint32_t unknown; /* edges not yet known */
  uint32_t *edges;  /* incident edges */
  uint32_t nedges;
};

static uint32_t
in_node (uint32_t b)
{
  return b == TALLY_MAP_EXIT ? 1 : b == TALLY_MAP_ENTRY ? 0 : 2 * b - 2;
}

static uint32_t
out_node (uint32_t b)
{
  return b == TALLY_MAP_ENTRY ? 0 : b == TALLY_MAP_EXIT ? 1 : 2 * b - 1;
}

static uint64_t
add_sat (uint64_t a, uint64_t b)
{
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Sums modulo 2^64 (3.): unsigned arithmetic wraps, exactly.  */
static void
set_known (struct gnode *nodes, struct gedge *e, uint64_t count)
{
  e->count = count;
  e->known = 1;
  nodes[e->from].out += count;
  nodes[e->from].unknown--;
  nodes[e->to].in += count;
  nodes[e->to].unknown--;
}

/* 4. A negative count of edge E (a map edge when K is below the map's
   edge count) becomes 0; it is counted in NEGATIVE unless it is
   legitimate.  */
static void
check_sign (const struct tally_blockmap *m, struct gedge *e, size_t k,
            struct tally_flow *out)
{
  if (!e->known || e->count <= (uint64_t) INT64_MAX)
    return;
  if (!(k < m->nedges && (m->edges[k].flags & TALLY_EDGE_FAKE)
        && m->edges[k].dst == TALLY_MAP_EXIT))
    out->negative++;
  e->count = 0;
}

void
tally_flow_solve (const struct tally_blockmap *m, const uint64_t *values,
                  uint32_t nvalues, struct tally_flow *out)
{
  memset (out, 0, sizeof *out);
  uint32_t nb = m->nblocks;
  out->block = alloc_array (nb, sizeof *out->block);
  out->block_known = alloc_array (nb, 1);
  out->edge = alloc_array (m->nedges, sizeof *out->edge);
  out->edge_known = alloc_array (m->nedges, 1);
  if (!out->block || !out->block_known || !out->edge || !out->edge_known)
    {
      fputs ("tally: out of memory\n", stderr);
      exit (1);
    }

  if (m->kind == TALLY_MAP_VISITED)
    {
      for (uint32_t b = 2; b < nb; b++)
        if (m->blocks[b].value != TALLY_MAP_NONE
            && m->blocks[b].value < nvalues)
          {
            out->block[b] = values[m->blocks[b].value] != 0;
            out->block_known[b] = 1;
          }
        else
          out->unknown_blocks++;
      return;
    }

  /* 1, 2. Nodes 0 .. 2 nb - 3; edges: the map's, the block edges, and
     EXIT -> ENTRY last.  */
  uint32_t nnodes = 2 * nb - 2;
  size_t ne = (size_t) m->nedges + (nb - 2) + 1;
  struct gnode *nodes = alloc_array (nnodes, sizeof *nodes);
  struct gedge *edges = alloc_array (ne, sizeof *edges);
  uint32_t *incidence = alloc_array (2 * ne, sizeof *incidence);
  uint32_t *work = alloc_array (nnodes, sizeof *work);
  if (!nodes || !edges || !incidence || !work)
    {
      fputs ("tally: out of memory\n", stderr);
      exit (1);
    }
  size_t k = 0;
  for (uint32_t e = 0; e < m->nedges; e++, k++)
    {
      edges[k].from = out_node (m->edges[e].src);
      edges[k].to = in_node (m->edges[e].dst);
    }
  for (uint32_t b = 2; b < nb; b++, k++)
    {
      edges[k].from = in_node (b);
      edges[k].to = out_node (b);
    }
  edges[k].from = 1;
  edges[k].to = 0;
  for (k = 0; k < ne; k++)
    {
      nodes[edges[k].from].nedges++;
      nodes[edges[k].to].nedges++;
      nodes[edges[k].from].unknown++;
      nodes[edges[k].to].unknown++;
    }
  uint32_t *p = incidence;
  for (uint32_t n = 0; n < nnodes; n++)
    {
      nodes[n].edges = p;
      p += nodes[n].nedges;
      nodes[n].nedges = 0;
    }
  for (k = 0; k < ne; k++)
    {
      struct gnode *a = &nodes[edges[k].from], *b = &nodes[edges[k].to];
      a->edges[a->nedges++] = (uint32_t) k;
      b->edges[b->nedges++] = (uint32_t) k;
    }
  for (uint32_t e = 0; e < m->nedges; e++)
    if (m->edges[e].value != TALLY_MAP_NONE)
      set_known (nodes, &edges[e], values[m->edges[e].value]);
  for (uint32_t b = 2; b < nb; b++)
    if (m->blocks[b].value != TALLY_MAP_NONE)
      set_known (nodes, &edges[m->nedges + b - 2], values[m->blocks[b].value]);

  /* 3. */
  uint32_t nwork = 0;
  for (uint32_t n = 0; n < nnodes; n++)
    if (nodes[n].unknown == 1)
      work[nwork++] = n;
  while (nwork)
    {
      uint32_t n = work[--nwork];
      struct gnode *nd = &nodes[n];
      if (nd->unknown != 1)
        continue;
      struct gedge *e = NULL;
      for (uint32_t i = 0; i < nd->nedges && !e; i++)
        if (!edges[nd->edges[i]].known)
          e = &edges[nd->edges[i]];
      /* An unknown edge from N to N would count twice; the graph has none
         (no map edge leaves EXIT or enters ENTRY).  */
      uint64_t have = e->to == n ? nd->out : nd->in;
      uint64_t other = e->to == n ? nd->in : nd->out;
      set_known (nodes, e, have - other);
      if (nodes[e->from].unknown == 1)
        work[nwork++] = e->from;
      if (nodes[e->to].unknown == 1)
        work[nwork++] = e->to;
    }

  /* 4.  Every count above INT64_MAX is taken as negative, a given one
     too (no run counts that far).  */
  for (k = 0; k < ne; k++)
    check_sign (m, &edges[k], k, out);
  for (uint32_t e = 0; e < m->nedges; e++)
    {
      out->edge[e] = edges[e].count;
      out->edge_known[e] = (unsigned char) edges[e].known;
    }
  for (uint32_t b = 2; b < nb; b++)
    {
      struct gedge *e = &edges[m->nedges + b - 2];
      out->block[b] = e->count;
      out->block_known[b] = (unsigned char) e->known;
      out->unknown_blocks += !e->known;
    }
  /* ENTRY and EXIT: the flow around EXIT -> ENTRY.  */
  struct gedge *back = &edges[ne - 1];
  out->block[TALLY_MAP_ENTRY] = out->block[TALLY_MAP_EXIT] = back->count;
  out->block_known[TALLY_MAP_ENTRY] = out->block_known[TALLY_MAP_EXIT]
    = (unsigned char) back->known;
  out->entries_known = out->exits_known = 1;
  for (uint32_t e = 0; e < m->nedges; e++)
    {
      const struct tally_map_edge *ed = &m->edges[e];
      if (ed->flags & TALLY_EDGE_FAKE)
        continue;
      if (ed->src == TALLY_MAP_ENTRY)
        {
          out->entries = add_sat (out->entries, edges[e].count);
          out->entries_known &= edges[e].known;
        }
      if (ed->dst == TALLY_MAP_EXIT)
        {
          out->exits = add_sat (out->exits, edges[e].count);
          out->exits_known &= edges[e].known;
        }
    }
  free (nodes);
  free (edges);
  free (incidence);
  free (work);
}

void
tally_flow_free (struct tally_flow *f)
{
  free (f->block);
  free (f->edge);
  free (f->block_known);
  free (f->edge_known);
  memset (f, 0, sizeof *f);
}
