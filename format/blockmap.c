/* Strict decoder of the block map (blockmap.h); the flow solver that
 * turns a decoded map and its values into counts is flowsolve.c, what the
 * two share blockmap-int.h.
 *
 * Decoding: every count is compared with the bytes left (by division, so no
 * hostile value overflows) before anything is allocated, every index with
 * what it indexes.  */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blockmap.h"
#include "freeall.h"
#include "tally/format.h"
#include "tally/mapcode.h"

#include "blockmap-int.h"
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

void *
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

/* Kinds 4 and 5 (doc/data-format.md "The block map"): M's blocks and
   edges as the derivation rules shared with the runtime read them
   (tally_derive_*, rt/mapcode.c), into *V; the storage returned (free it)
   holds them, or NULL out of memory.  */
static uint32_t *
derive_view (const struct tally_blockmap *m, struct tally_derive_map *v)
{
  uint32_t *flat = alloc_array ((size_t) m->nblocks + m->nedges,
                                4 * sizeof *flat);
  if (!flat)
    return NULL;
  for (uint32_t b = 0; b < m->nblocks; b++)
    {
      flat[4 * (size_t) b] = m->blocks[b].value;
      flat[4 * (size_t) b + 1] = m->blocks[b].flags;
    }
  uint32_t *ed = flat + 4 * (size_t) m->nblocks;
  for (uint32_t e = 0; e < m->nedges; e++, ed += 4)
    {
      ed[0] = m->edges[e].src;
      ed[1] = m->edges[e].dst;
      ed[2] = m->edges[e].flags;
      ed[3] = m->edges[e].value;
    }
  v->nblocks = m->nblocks;
  v->nedges = m->nedges;
  v->blocks = flat;
  v->edges = flat + 4 * (size_t) m->nblocks;
  v->edge_values = m->edge_values != 0;
  return flat;
}

/* The derived blocks of M in the order of tally_derive_check into ORDER
   (M->nblocks entries), with the rules' view of M in *V and its storage
   in *FLAT (free it).  Returns what tally_derive_check does (*AT and
   *FROM as it sets them), or -2 out of memory.  */
int
derive_order (const struct tally_blockmap *m, uint32_t *order,
              uint32_t *nderived, struct tally_derive_map *v, uint32_t **flat,
              uint32_t *at, uint32_t *from)
{
  *flat = derive_view (m, v);
  uint32_t *scratch = alloc_array (tally_derive_scratch (m->nblocks,
                                                         m->nedges),
                                   sizeof *scratch);
  if (!*flat || !scratch)
    {
      free (scratch);
      return -2;
    }
  int r = tally_derive_check (v, scratch, order, nderived, at, from);
  free (scratch);
  return r;
}

/* Kinds 4 and 5: every derived block has no value, one rule, at least
   one block or edge to derive from and neither ENTRY nor EXIT among them,
   and none is derived from itself; kind 5: every edge with a value is a
   normal edge between blocks that some derived block's value comes
   through.  The rules are tally_derive_check's; the messages are said
   here.  0, -1 (said in ERR) or -2 out of memory.  */
static int
check_derived (struct tally_blockmap *m, char *err, size_t errlen)
{
  struct tally_derive_map v;
  uint32_t *flat = NULL, at = 0, from = 0, n = 0;
  uint32_t *order = alloc_array (m->nblocks, sizeof *order);
  if (!order)
    return -2;
  int r = derive_order (m, order, &n, &v, &flat, &at, &from);
  free_all (order, flat);
  if (r == -2)
    return -2;
  const char *why = NULL;
  switch (r)
    {
    case TALLY_DERIVE_OK:
      m->derived = n;
      return 0;
    case TALLY_DERIVE_FROM_END:
      return fail (err, errlen, "block %lu is derived from %s, which has no "
                   "visited value", (unsigned long) at,
                   from == TALLY_MAP_ENTRY ? "ENTRY" : "EXIT");
    case TALLY_DERIVE_FAKE_VALUE:
      why = "a fake edge has a visited value";
      break;
    case TALLY_DERIVE_END_VALUE:
      why = "an edge from ENTRY or to EXIT has a visited value";
      break;
    case TALLY_DERIVE_UNUSED_VALUE:
      why = "has a visited value no derived block's value comes through";
      break;
    case TALLY_DERIVE_END_DERIVED:
      why = "ENTRY and EXIT are never derived";
      break;
    case TALLY_DERIVE_BOTH:
      why = "derived from both its successors and its predecessors";
      break;
    case TALLY_DERIVE_VALUE:
      why = "has a value and is derived too";
      break;
    case TALLY_DERIVE_NO_SUCC:
      why = "derived from its successors, but has no normal edge out";
      break;
    case TALLY_DERIVE_NO_PRED:
      why = "derived from its predecessors, but has no normal edge in";
      break;
    default: /* TALLY_DERIVE_CYCLE */
      return fail (err, errlen, "block %lu: its visited value is derived "
                   "from itself (a cycle of derived blocks)",
                   (unsigned long) at);
    }
  if (r == TALLY_DERIVE_FAKE_VALUE || r == TALLY_DERIVE_END_VALUE
      || r == TALLY_DERIVE_UNUSED_VALUE)
    return fail (err, errlen, "edge %lu (block %lu to %lu): %s",
                 (unsigned long) at, (unsigned long) m->edges[at].src,
                 (unsigned long) m->edges[at].dst, why);
  return fail (err, errlen, "block %lu: %s", (unsigned long) at, why);
}

/* Kind 6 (doc/data-format.md "Entry counts from callers"): what is wrong
   with M's entry edge or trailer flag, or NULL.  The entry's count is the
   callers', so there must be one edge to give it to, counted by nothing
   else.  */
static const char *
check_callers (const struct tally_blockmap *m)
{
  uint32_t n = 0, valued = 0;
  if (m->complete > 1)
    return "callers complete flag above 1";
  for (uint32_t e = 0; e < m->nedges; e++)
    if (m->edges[e].src == TALLY_MAP_ENTRY
        && !(m->edges[e].flags & TALLY_EDGE_FAKE))
      {
        n++;
        valued += m->edges[e].value != TALLY_MAP_NONE;
      }
  if (n != 1)
    return "kind 6 map without exactly one normal edge out of ENTRY";
  if (valued)
    return "kind 6 map whose edge out of ENTRY has a value";
  return NULL;
}

/* A decoded map M into *OUT; kinds 4 and 5's derivations and kind 6's
   entry checked first (then M is freed and -1 returned, the fault said in
   ERR).  */
static int
map_finish (struct tally_blockmap *m, struct tally_blockmap *out, char *err,
            size_t errlen)
{
  if (m->kind == TALLY_MAP_TREE_CALLERS)
    {
      const char *why = check_callers (m);
      if (why)
        {
          fail (err, errlen, "%s", why);
          tally_map_free (m);
          return -1;
        }
    }
  if (m->kind == TALLY_MAP_VISITED_DERIVED
      || m->kind == TALLY_MAP_VISITED_EDGES)
    {
      if (m->kind == TALLY_MAP_VISITED_EDGES)
        for (uint32_t e = 0; e < m->nedges; e++)
          m->edge_values += m->edges[e].value != TALLY_MAP_NONE;
      m->kind = TALLY_MAP_VISITED;
      int r = check_derived (m, err, errlen);
      if (r)
        {
          if (r == -2)
            fail (err, errlen, "out of memory decoding the map");
          tally_map_free (m);
          return -1;
        }
    }
  *out = *m;
  return 0;
}

/* A version 2 map (tally/mapcode.h): checked by one walk, decoded by a
   second into the arrays the first sized.  */
static int
decode_v2 (const unsigned char *map, size_t size, uint32_t nvalues,
           struct tally_blockmap *out, char *err, size_t errlen)
{
  struct tally_map2_info info;
  struct tally_blockmap m;
  struct tally_map2_out o = { NULL, NULL, NULL, NULL, NULL };
  memset (&m, 0, sizeof m);
  if (tally_map2_walk (map, size, nvalues, &info, NULL) != 0)
    return fail (err, errlen, "version 2 map: %s at map byte %zu", info.why,
                 info.at);
  m.kind = info.kind;
  m.nblocks = info.nblocks;
  m.nedges = info.nedges;
  m.nfiles = info.nfiles;
  m.complete = info.complete;
  m.nsites = info.nsites;
  m.files = alloc_array (m.nfiles, sizeof *m.files);
  m.blocks = alloc_array (m.nblocks, sizeof *m.blocks);
  m.edges = alloc_array (m.nedges, sizeof *m.edges);
  m.locs_ = alloc_array (info.nlocs, sizeof *m.locs_);
  o.files = alloc_array (m.nfiles, 2 * sizeof *o.files);
  o.blocks = alloc_array (m.nblocks, 4 * sizeof *o.blocks);
  o.locs = alloc_array (info.nlocs, 2 * sizeof *o.locs);
  o.edges = alloc_array (m.nedges, 4 * sizeof *o.edges);
  /* The sites are kept as the walk puts them.  */
  if (m.kind == TALLY_MAP_TREE_CALLERS)
    o.sites = m.sites = alloc_array (m.nsites, 2 * sizeof *m.sites);
  if (!m.files || !m.blocks || !m.edges || !m.locs_ || !o.files || !o.blocks
      || !o.locs || !o.edges
      || (m.kind == TALLY_MAP_TREE_CALLERS && !m.sites))
    goto oom;
  if (tally_map2_walk (map, size, nvalues, &info, &o) != 0)
    {
      fail (err, errlen, "version 2 map: %s at map byte %zu", info.why,
            info.at);
      goto bad;
    }
  for (uint32_t i = 0; i < m.nfiles; i++)
    {
      uint32_t at = o.files[2 * i], n = o.files[2 * i + 1];
      if (!(m.files[i] = malloc ((size_t) n + 1)))
        goto oom;
      memcpy (m.files[i], map + at, n);
      m.files[i][n] = 0;
    }
  for (uint64_t k = 0; k < info.nlocs; k++)
    {
      m.locs_[k].file = o.locs[2 * k];
      m.locs_[k].line = o.locs[2 * k + 1];
    }
  for (uint32_t b = 0; b < m.nblocks; b++)
    {
      m.blocks[b].value = o.blocks[4 * b];
      m.blocks[b].flags = o.blocks[4 * b + 1];
      m.blocks[b].nlocs = o.blocks[4 * b + 2];
      m.blocks[b].locs = m.locs_ + o.blocks[4 * b + 3];
    }
  for (uint32_t e = 0; e < m.nedges; e++)
    {
      m.edges[e].src = o.edges[4 * e];
      m.edges[e].dst = o.edges[4 * e + 1];
      m.edges[e].flags = o.edges[4 * e + 2];
      m.edges[e].value = o.edges[4 * e + 3];
    }
  free_all (o.files, o.blocks, o.locs, o.edges);
  o.files = o.blocks = o.locs = o.edges = NULL;
  return map_finish (&m, out, err, errlen);

oom:
  fail (err, errlen, "out of memory decoding the map");
bad:
  free_all (o.files, o.blocks, o.locs, o.edges);
  tally_map_free (&m);
  return -1;
}

int
tally_map_decode (const unsigned char *map, size_t size, uint32_t nvalues,
                  struct tally_blockmap *out, char *err, size_t errlen)
{
  struct cursor c = { map, 0, size, err, errlen };
  if (size >= 4 && get_u32 (map) == TALLY_MAP_VERSION2)
    {
      memset (out, 0, sizeof *out);
      return decode_v2 (map, size, nvalues, out, err, errlen);
    }
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
    return fail (err, errlen, "map version %lu, this tally reads versions "
                 "%u and %u", (unsigned long) version, TALLY_MAP_VERSION,
                 TALLY_MAP_VERSION2);
  if (m.kind != TALLY_MAP_BLOCK && m.kind != TALLY_MAP_TREE
      && m.kind != TALLY_MAP_VISITED && m.kind != TALLY_MAP_VISITED_DERIVED
      && m.kind != TALLY_MAP_VISITED_EDGES
      && m.kind != TALLY_MAP_TREE_CALLERS)
    return fail (err, errlen, "unknown map kind %lu (expected 1 to 6)",
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
  if (m.kind == TALLY_MAP_TREE_CALLERS)
    {
      if (take (&c, &m.complete, "callers complete flag")
          || take (&c, &m.nsites, "call site count"))
        goto bad;
      if (m.nsites > left (&c) / 8)
        {
          fail (err, errlen, "%lu call sites cannot fit in the %zu bytes "
                "left of the map", (unsigned long) m.nsites, left (&c));
          goto bad;
        }
      m.sites = alloc_array (m.nsites, 2 * sizeof *m.sites);
      if (!m.sites)
        goto oom;
      for (uint32_t k = 0; k < 2 * m.nsites; k++)
        take (&c, &m.sites[k], "call site");
    }
  if (left (&c))
    {
      fail (err, errlen, "%zu unexpected bytes at the end of the map",
            left (&c));
      goto bad;
    }
  return map_finish (&m, out, err, errlen);

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
counts_blocks (uint32_t kind)
{
  return kind == TALLY_MAP_BLOCK || kind == TALLY_MAP_TREE
         || kind == TALLY_MAP_TREE_CALLERS;
}

void
out_of_memory (void)
{
  fputs ("tally: out of memory\n", stderr);
  exit (1);
}

/* The kind 6 functions of the NFNS functions FNS in an order where each
   comes after every kind 6 function one of its sites is in, into ORDER
   (tally_callers_order, rt/mapcode.c, which the runtime's merge uses
   too).  Returns how many there are; those left out (on a cycle of sites,
   or after one) have DEPS (NFNS, out) above 0.  A module of more call
   sites than 32 bits count orders none.  */
uint32_t
callers_order (uint32_t nfns, const struct callers_fn *fns, uint32_t *order,
               uint32_t *deps)
{
  uint64_t nsites = 0;
  for (uint32_t f = 0; f < nfns; f++)
    if (fns[f].kind == TALLY_MAP_TREE_CALLERS)
      nsites += fns[f].nsites;
  if (nsites >= UINT32_MAX / 2)
    {
      for (uint32_t f = 0; f < nfns; f++)
        deps[f] = fns[f].kind == TALLY_MAP_TREE_CALLERS;
      return 0;
    }
  /* The form tally_callers_order reads: the kinds, and every kind 6
     function's sites one after another, FIRST[F] the first of F's.  */
  uint32_t *kind = alloc_array (nfns, sizeof *kind);
  uint32_t *first = alloc_array ((size_t) nfns + 1, sizeof *first);
  uint32_t *sites = alloc_array (2 * nsites, sizeof *sites);
  uint32_t *start = alloc_array ((size_t) nfns + 1, sizeof *start);
  uint32_t *fill = alloc_array (nfns, sizeof *fill);
  uint32_t *users = alloc_array (nsites, sizeof *users);
  if (!kind || !first || !sites || !start || !fill || !users)
    out_of_memory ();
  uint32_t at = 0;
  for (uint32_t f = 0; f < nfns; f++)
    {
      kind[f] = fns[f].kind;
      first[f] = at;
      if (fns[f].kind != TALLY_MAP_TREE_CALLERS || !fns[f].nsites)
        continue;
      memcpy (sites + 2 * (size_t) at, fns[f].sites,
              2 * (size_t) fns[f].nsites * sizeof *sites);
      at += fns[f].nsites;
    }
  first[nfns] = at;
  uint32_t n = tally_callers_order (nfns, kind, first, sites, deps, order,
                                    start, fill, users);
  free_all (kind, first, sites, start, fill, users);
  return n;
}

/* A kind 6 function left out of callers_order's ORDER (DEPS above 0) that
   is on a cycle itself, found from F: a function left out has a site in
   one left out, so NFNS steps along such sites end on a cycle.  */
static uint32_t
on_cycle (uint32_t nfns, const struct callers_fn *fns, const uint32_t *deps,
          uint32_t f)
{
  for (uint32_t step = 0; step < nfns; step++)
    for (uint32_t k = 0; k < fns[f].nsites; k++)
      {
        uint32_t g = fns[f].sites[2 * k];
        if (g < nfns && fns[g].kind == TALLY_MAP_TREE_CALLERS && deps[g])
          {
            f = g;
            break;
          }
      }
  return f;
}

/* Module I of D's kind 6 call sites against its functions FNS: 0, or -1
   with the fault in ERR.  */
static int
check_module_callers (const struct tally_data *d, uint32_t i,
                      const struct callers_fn *fns, char *err, size_t errlen)
{
  const struct tally_data_module *mod = &d->modules[i];
  uint32_t nfns = mod->nfns, n6 = 0;
  char why[200];
  for (uint32_t j = 0; j < nfns; j++)
    {
      if (fns[j].kind != TALLY_MAP_TREE_CALLERS)
        continue;
      n6++;
      for (uint32_t k = 0; k < fns[j].nsites; k++)
        {
          uint32_t g = fns[j].sites[2 * k], blk = fns[j].sites[2 * k + 1];
          why[0] = 0;
          if (g >= nfns)
            snprintf (why, sizeof why, "function %lu, but the module has "
                      "%lu functions", (unsigned long) g,
                      (unsigned long) nfns);
          else if (!fns[g].kind)
            snprintf (why, sizeof why, "function %lu has no block map",
                      (unsigned long) g);
          else if (!counts_blocks (fns[g].kind))
            snprintf (why, sizeof why, "function %lu's map is not of a "
                      "kind that counts blocks (1, 2 or 6)",
                      (unsigned long) g);
          else if (blk < 2)
            snprintf (why, sizeof why, "block %lu of function %lu is %s",
                      (unsigned long) blk, (unsigned long) g,
                      blk == TALLY_MAP_ENTRY ? "ENTRY" : "EXIT");
          else if (blk >= fns[g].nblocks)
            snprintf (why, sizeof why, "block %lu, but function %lu has %lu "
                      "blocks", (unsigned long) blk, (unsigned long) g,
                      (unsigned long) fns[g].nblocks);
          if (why[0])
            return fail (err, errlen, "module %lu (%s) function %lu (%s): "
                         "bad block map: call site %lu: %s: file is corrupt",
                         (unsigned long) i, mod->source, (unsigned long) j,
                         mod->fns[j].symbol, (unsigned long) k, why);
        }
    }
  if (!n6)
    return 0;
  uint32_t *order = alloc_array (nfns, sizeof *order);
  uint32_t *deps = alloc_array (nfns, sizeof *deps);
  if (!order || !deps)
    out_of_memory ();
  int r = 0;
  if (callers_order (nfns, fns, order, deps) < n6)
    {
      uint32_t j = 0;
      while (!(fns[j].kind == TALLY_MAP_TREE_CALLERS && deps[j]))
        j++;
      j = on_cycle (nfns, fns, deps, j);
      r = fail (err, errlen, "module %lu (%s) function %lu (%s): bad block "
                "map: its entry count depends, through call sites, on "
                "itself (a cycle of kind 6 functions): file is corrupt",
                (unsigned long) i, mod->source, (unsigned long) j,
                mod->fns[j].symbol);
    }
  free_all (order, deps);
  return r;
}

int
tally_data_check_maps (const struct tally_data *d, char *err, size_t errlen)
{
  for (uint32_t i = 0; i < d->nmodules; i++)
    {
      const struct tally_data_module *mod = &d->modules[i];
      /* What the module's call sites are checked against; the sites are
         kept from the decoded maps.  */
      struct callers_fn *fns = alloc_array (mod->nfns, sizeof *fns);
      int r = 0;
      if (!fns)
        out_of_memory ();
      for (uint32_t j = 0; j < mod->nfns && !r; j++)
        {
          const struct tally_data_fn *f = &mod->fns[j];
          struct tally_blockmap bm;
          char why[200];
          if (!f->map_size)
            continue;
          if (tally_fn_map_decode (f, &bm, why, sizeof why) != 0)
            {
              r = fail (err, errlen, "module %lu (%s) function %lu (%s): bad "
                        "block map: %s: file is corrupt", (unsigned long) i,
                        mod->source, (unsigned long) j, f->symbol, why);
              break;
            }
          fns[j].kind = bm.kind;
          fns[j].nblocks = bm.nblocks;
          fns[j].nsites = bm.nsites;
          fns[j].sites = bm.sites;
          bm.sites = NULL;
          tally_map_free (&bm);
        }
      if (!r)
        r = check_module_callers (d, i, fns, err, errlen);
      for (uint32_t j = 0; j < mod->nfns; j++)
        free ((void *) fns[j].sites);
      free (fns);
      if (r)
        return r;
    }
  return 0;
}

void
tally_map_free (struct tally_blockmap *m)
{
  if (m->files)
    for (uint32_t i = 0; i < m->nfiles; i++)
      free (m->files[i]);
  free_all (m->files, m->blocks, m->edges, m->locs_, m->sites);
  memset (m, 0, sizeof *m);
}
