/* profile.c - the measured counts of -fplugin-arg-tally-profile=FILE
 * (profile.h).
 *
 * 1. The file is read by the strict reader and its maps checked with
 *    their modules (tally_data_check_maps): nothing below trusts a count
 *    or an index the checks have not.
 * 2. Each module's maps are solved together (tally_data_module_solve:
 *    kind 6's entry counts are its callers' blocks).  A body whose map
 *    counts blocks (kinds 1, 2, 6) and whose every block and normal edge
 *    came out determined is kept with its identity and those counts; a
 *    visited map has no counts, and a body left partly undetermined (an
 *    incomplete callers trailer) is left out and counted.
 * 3. The bodies are sorted by symbol, file base name and identity, and
 *    equal ones summed (merged runs of one build, or several builds of
 *    one graph), saturating: a weight needs no more.  */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blockmap.h"
#include "datafile.h"
#include "profile.h"
#include "tally/format.h"

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

static void
mix_bytes (uint64_t *h, const void *p, size_t n)
{
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    {
      *h ^= b[i];
      *h *= FNV_PRIME;
    }
}

/* V as 8 little-endian bytes, the same on every host.  */
static void
mix (uint64_t *h, uint64_t v)
{
  unsigned char b[8];
  for (int i = 0; i < 8; i++)
    b[i] = (unsigned char) (v >> (8 * i));
  mix_bytes (h, b, sizeof b);
}

static const char *
base_name (const char *path)
{
  const char *s = strrchr (path, '/');
  return s ? s + 1 : path;
}

uint64_t
tally_profile_identity (const struct tally_blockmap *m, const char *file,
                        uint32_t line)
{
  uint64_t h = FNV_OFFSET;
  static const char tag[] = "tally profile identity 1";
  mix_bytes (&h, tag, sizeof tag);
  mix (&h, m->nblocks);
  for (uint32_t b = 2; b < m->nblocks; b++)
    {
      const struct tally_map_block *bl = &m->blocks[b];
      mix (&h, bl->flags & TALLY_BLOCK_CALL);
      mix (&h, bl->nlocs);
      for (uint32_t k = 0; k < bl->nlocs; k++)
        {
          const char *f = m->files[bl->locs[k].file];
          if (strcmp (f, file) == 0)
            {
              mix (&h, 0);
              mix (&h, (uint64_t) bl->locs[k].line - line);
            }
          else
            {
              const char *bn = base_name (f);
              mix (&h, 1);
              mix_bytes (&h, bn, strlen (bn) + 1);
              mix (&h, bl->locs[k].line);
            }
        }
    }
  for (uint32_t e = 0; e < m->nedges; e++)
    {
      const struct tally_map_edge *ed = &m->edges[e];
      if (ed->flags & TALLY_EDGE_FAKE)
        continue;
      mix (&h, ed->src);
      mix (&h, ed->dst);
      mix (&h, ed->flags & (TALLY_EDGE_FALLTHRU | TALLY_EDGE_TRUE
                            | TALLY_EDGE_FALSE));
    }
  return h;
}

static char *
dup (const char *s)
{
  size_t n = strlen (s) + 1;
  char *d = malloc (n);
  return d ? memcpy (d, s, n) : NULL;
}

static uint64_t
add_sat (uint64_t a, uint64_t b)
{
  return a + b < a ? UINT64_MAX : a + b;
}

static void
fn_free (struct tally_profile_fn *f)
{
  free (f->symbol);
  free (f->base);
  free (f->block);
  free (f->edge);
}

static int
compare_key (const char *sa, const char *ba, uint64_t ia, const char *sb,
             const char *bb, uint64_t ib)
{
  int c = strcmp (sa, sb);
  if (!c)
    c = strcmp (ba, bb);
  if (!c && ia != ib)
    c = ia < ib ? -1 : 1;
  return c;
}

static int
compare_fn (const void *pa, const void *pb)
{
  const struct tally_profile_fn *a = pa, *b = pb;
  return compare_key (a->symbol, a->base, a->identity, b->symbol, b->base,
                      b->identity);
}

/* 2. Body J of module MOD, its map BM solved into FL, appended to *OUT
   (*CAP entries allocated): 0, 1 when it is left out, -1 out of
   memory.  */
static int
keep (const struct tally_data_module *mod, uint32_t j,
      const struct tally_blockmap *bm, const struct tally_flow *fl,
      struct tally_profile *out, size_t *cap)
{
  const struct tally_data_fn *f = &mod->fns[j];
  if (!bm->nblocks || (bm->kind != TALLY_MAP_BLOCK && bm->kind != TALLY_MAP_TREE
                       && bm->kind != TALLY_MAP_TREE_CALLERS))
    return 1;
  uint32_t nnormal = 0;
  for (uint32_t e = 0; e < bm->nedges; e++)
    if (!(bm->edges[e].flags & TALLY_EDGE_FAKE))
      {
        if (!fl->edge_known[e])
          {
            out->undetermined++;
            return 1;
          }
        nnormal++;
      }
  for (uint32_t b = 0; b < bm->nblocks; b++)
    if (!fl->block_known[b])
      {
        out->undetermined++;
        return 1;
      }
  if (out->nfns == *cap)
    {
      size_t n = *cap ? 2 * *cap : 64;
      struct tally_profile_fn *p = realloc (out->fns, n * sizeof *p);
      if (!p)
        return -1;
      out->fns = p;
      *cap = n;
    }
  struct tally_profile_fn *p = &out->fns[out->nfns];
  memset (p, 0, sizeof *p);
  p->symbol = dup (f->symbol);
  p->base = dup (base_name (f->file));
  p->block = calloc (bm->nblocks, sizeof *p->block);
  p->edge = calloc (nnormal ? nnormal : 1, sizeof *p->edge);
  if (!p->symbol || !p->base || !p->block || !p->edge)
    {
      fn_free (p);
      return -1;
    }
  out->nfns++;
  p->identity = tally_profile_identity (bm, f->file, f->line);
  p->nblocks = bm->nblocks;
  p->nedges = nnormal;
  p->records = 1;
  memcpy (p->block, fl->block, bm->nblocks * sizeof *p->block);
  uint32_t k = 0;
  for (uint32_t e = 0; e < bm->nedges; e++)
    if (!(bm->edges[e].flags & TALLY_EDGE_FAKE))
      p->edge[k++] = fl->edge[e];
  return 0;
}

/* 3. */
static void
sum_equal (struct tally_profile *p)
{
  qsort (p->fns, p->nfns, sizeof *p->fns, compare_fn);
  size_t w = 0;
  for (size_t r = 0; r < p->nfns; r++)
    {
      struct tally_profile_fn *a = w ? &p->fns[w - 1] : NULL;
      struct tally_profile_fn *b = &p->fns[r];
      /* One identity is one graph: the same block and edge counts, but
         for a collision of the hash, which keeps the first.  */
      if (a && compare_fn (a, b) == 0)
        {
          if (a->nblocks == b->nblocks && a->nedges == b->nedges)
            {
              for (uint32_t i = 0; i < a->nblocks; i++)
                a->block[i] = add_sat (a->block[i], b->block[i]);
              for (uint32_t i = 0; i < a->nedges; i++)
                a->edge[i] = add_sat (a->edge[i], b->edge[i]);
              a->records++;
            }
          fn_free (b);
          continue;
        }
      p->fns[w++] = *b;
    }
  p->nfns = w;
}

int
tally_profile_of (const struct tally_data *d, const char *name,
                  struct tally_profile *out, char *err, size_t errlen)
{
  char why[512];
  size_t cap = 0;
  memset (out, 0, sizeof *out);
  /* 1. */
  if (tally_data_check_maps (d, why, sizeof why) != 0)
    return tally_errf (err, errlen, "%s: %s", name, why);
  /* 2. */
  for (uint32_t i = 0; i < d->nmodules; i++)
    {
      const struct tally_data_module *mod = &d->modules[i];
      size_t n = mod->nfns ? mod->nfns : 1;
      struct tally_blockmap *bm = calloc (n, sizeof *bm);
      struct tally_flow *fl = calloc (n, sizeof *fl);
      int bad = !bm || !fl;
      if (!bad && tally_data_module_solve (mod, bm, fl, why, sizeof why) != 0)
        {
          /* Checked above: a map that decodes there decodes here.  */
          tally_errf (err, errlen, "%s: %s", name, why);
          bad = 2;
        }
      for (uint32_t j = 0; !bad && j < mod->nfns; j++)
        if (keep (mod, j, &bm[j], &fl[j], out, &cap) < 0)
          bad = 1;
      for (uint32_t j = 0; bm && fl && j < mod->nfns; j++)
        {
          tally_map_free (&bm[j]);
          tally_flow_free (&fl[j]);
        }
      free (bm);
      free (fl);
      if (bad == 1)
        tally_errf (err, errlen, "%s: out of memory", name);
      if (bad)
        {
          tally_profile_free (out);
          return -1;
        }
    }
  if (!out->nfns)
    {
      tally_errf (err, errlen, "%s has no block counts%s; the profiling run "
                  "must be built with -fplugin-arg-tally-blocks=count", name,
                  out->undetermined ? " that could be solved" : "");
      tally_profile_free (out);
      return -1;
    }
  /* 3. */
  sum_equal (out);
  return 0;
}

int
tally_profile_read (const char *path, struct tally_profile *out, char *err,
                    size_t errlen)
{
  struct tally_data d;
  char why[512];
  memset (out, 0, sizeof *out);
  if (tally_read_file (path, &d, why, sizeof why) != 0)
    return tally_errf (err, errlen, "%s: %s", path, why);
  int rc = tally_profile_of (&d, path, out, err, errlen);
  tally_data_free (&d);
  return rc;
}

enum tally_profile_match
tally_profile_find (const struct tally_profile *p, const char *symbol,
                    const char *file, uint32_t line,
                    const struct tally_blockmap *m,
                    const struct tally_profile_fn **fn)
{
  const char *base = base_name (file);
  uint64_t identity = tally_profile_identity (m, file, line);
  uint32_t nedges = 0;
  for (uint32_t e = 0; e < m->nedges; e++)
    nedges += !(m->edges[e].flags & TALLY_EDGE_FAKE);
  /* The first body of SYMBOL and BASE: a lower bound by (symbol, base).  */
  size_t lo = 0, hi = p->nfns;
  while (lo < hi)
    {
      size_t mid = lo + (hi - lo) / 2;
      const struct tally_profile_fn *f = &p->fns[mid];
      if (compare_key (f->symbol, f->base, 0, symbol, base, 0) < 0)
        lo = mid + 1;
      else
        hi = mid;
    }
  enum tally_profile_match r = TALLY_PROFILE_ABSENT;
  for (size_t i = lo; i < p->nfns; i++)
    {
      const struct tally_profile_fn *f = &p->fns[i];
      if (strcmp (f->symbol, symbol) != 0 || strcmp (f->base, base) != 0)
        break;
      r = TALLY_PROFILE_CHANGED;
      if (f->identity == identity && f->nblocks == m->nblocks
          && f->nedges == nedges)
        {
          *fn = f;
          return TALLY_PROFILE_FOUND;
        }
    }
  return r;
}

void
tally_profile_free (struct tally_profile *p)
{
  for (size_t i = 0; i < p->nfns; i++)
    fn_free (&p->fns[i]);
  free (p->fns);
  memset (p, 0, sizeof *p);
}
