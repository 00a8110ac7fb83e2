/* The block map, version 2: the checking walk, and the derivation rules
   of kinds 4 and 5 (tally/mapcode.h; the encoder, which only the plugin
   needs, is format/mapencode.c).  Shared by the runtime and the format
   library (the `tally` command): calls nothing, allocates nothing, reads
   every byte against the size first.  */
#include "tally/format.h"
#include "tally/mapcode.h"

/* A cursor over the map.  */
struct cur
{
  const unsigned char *p;
  size_t pos, size;
  struct tally_map2_info *info;
};

static int
stop (struct cur *c, size_t at, const char *why)
{
  c->info->why = why;
  c->info->at = at;
  return -1;
}

/* An unsigned LEB128 varint of at most MAX into *V: 0, or -1 (why said).  */
static int
get (struct cur *c, uint64_t max, uint64_t *v, const char *what_big)
{
  size_t at = c->pos;
  uint64_t x = 0;
  for (unsigned shift = 0;; shift += 7)
    {
      if (c->pos >= c->size)
        return stop (c, at, "varint runs past the end of the map");
      unsigned char b = c->p[c->pos++];
      if (shift == 63 && b > 1)
        return stop (c, at, "varint does not fit in 64 bits");
      x |= (uint64_t) (b & 0x7f) << shift;
      if (!(b & 0x80))
        {
          if (!b && shift)
            return stop (c, at, "overlong varint (not its shortest "
                         "encoding)");
          break;
        }
      if (shift == 63)
        return stop (c, at, "varint does not fit in 64 bits");
    }
  if (x > max)
    return stop (c, at, what_big);
  *v = x;
  return 0;
}

static uint64_t
unzig (uint64_t z)
{
  return (z >> 1) ^ (0 - (z & 1));
}

/* A value index stored as zigzag (value - *NEXT) into *V; *NEXT becomes
   the value + 1.  */
static int
get_value (struct cur *c, uint32_t nvalues, uint64_t *next, uint32_t *v)
{
  uint64_t x;
  size_t at = c->pos;
  if (get (c, 0x3ffffffffull, &x, "value index does not fit"))
    return -1;
  uint64_t value = *next + unzig (x); /* below 0 wraps above */
  if (value >= nvalues)
    return stop (c, at, "value index beyond the function's values");
  *v = (uint32_t) value;
  *next = value + 1;
  return 0;
}

int
tally_map2_walk (const unsigned char *map, size_t size, uint32_t nvalues,
                 struct tally_map2_info *info,
                 const struct tally_map2_out *out)
{
  struct cur c = { map, 4, size, info };
  uint64_t x;
  info->kind = info->nblocks = info->nedges = info->nfiles = 0;
  info->nlocs = 0;
  info->complete = info->nsites = 0;
  info->trailer_at = 0;
  info->why = 0;
  info->at = 0;
  if (size < 4)
    return stop (&c, 0, "version runs past the end of the map");
  if (tally_le_get32 (map) != TALLY_MAP_VERSION2)
    return stop (&c, 0, "not a version 2 map");
  /* Smallest encodings: a file 1 byte, a block 2, an edge 4.  */
  if (get (&c, 0xffffffffu, &x, "kind does not fit in 32 bits"))
    return -1;
  if (x != TALLY_MAP_BLOCK && x != TALLY_MAP_TREE && x != TALLY_MAP_VISITED
      && x != TALLY_MAP_VISITED_DERIVED && x != TALLY_MAP_VISITED_EDGES
      && x != TALLY_MAP_TREE_CALLERS)
    return stop (&c, 4, "unknown map kind (expected 1 to 6)");
  info->kind = (uint32_t) x;
  size_t at = c.pos;
  if (get (&c, 0xffffffffu, &x, "block count does not fit in 32 bits"))
    return -1;
  if (x < 2)
    return stop (&c, at, "fewer than 2 blocks (ENTRY and EXIT)");
  info->nblocks = (uint32_t) x;
  at = c.pos;
  if (get (&c, 0xffffffffu, &x, "edge count does not fit in 32 bits"))
    return -1;
  info->nedges = (uint32_t) x;
  if (get (&c, 0xffffffffu, &x, "file count does not fit in 32 bits"))
    return -1;
  info->nfiles = (uint32_t) x;
  size_t rest = c.size - c.pos;
  if (info->nfiles > rest || info->nblocks > rest || info->nedges / 2 > rest
      || info->nfiles + (uint64_t) info->nblocks
             + (uint64_t) info->nedges * 2 > rest)
    return stop (&c, at, "block, edge and file counts cannot fit in the "
                 "bytes left of the map");

  for (uint32_t i = 0; i < info->nfiles; i++)
    {
      at = c.pos;
      if (get (&c, TALLY_MAX_STRING, &x, "file name over the length limit"))
        return -1;
      if (x > c.size - c.pos)
        return stop (&c, at, "file name runs past the end of the map");
      for (size_t k = 0; k < x; k++)
        if (!c.p[c.pos + k])
          return stop (&c, at, "file name contains a NUL byte");
      if (out && out->files)
        {
          out->files[2 * i] = (uint32_t) c.pos;
          out->files[2 * i + 1] = (uint32_t) x;
        }
      c.pos += x;
    }

  /* The edge flag values, each once.  */
  uint32_t table[TALLY_MAP2_MAX_FLAGS];
  at = c.pos;
  if (get (&c, TALLY_MAP2_MAX_FLAGS, &x, "more edge flag values than "
           "allowed"))
    return -1;
  uint32_t nflags = (uint32_t) x;
  if (!nflags && info->nedges)
    return stop (&c, at, "edges but no edge flag values");
  for (uint32_t i = 0; i < nflags; i++)
    {
      at = c.pos;
      if (get (&c, 0xffffffffu, &x, "edge flags do not fit in 32 bits"))
        return -1;
      for (uint32_t k = 0; k < i; k++)
        if (table[k] == x)
          return stop (&c, at, "edge flag value listed twice");
      table[i] = (uint32_t) x;
    }

  uint64_t line = 0, file = 0, nlocs = 0, next = 0;
  for (uint32_t b = 0; b < info->nblocks; b++)
    {
      uint32_t value = TALLY_MAP_NONE, flags = 0;
      at = c.pos;
      uint64_t head;
      if (get (&c, 0x3ffffffffull, &head, "location count does not fit in "
               "32 bits"))
        return -1;
      int has_value = head & 1;
      head >>= 1;
      if ((head & 1))
        {
          if (get (&c, 0xffffffffu, &x, "block flags do not fit in 32 bits"))
            return -1;
          if (!x)
            return stop (&c, at, "block flags of 0 stored (not the shortest "
                         "encoding)");
          flags = (uint32_t) x;
        }
      if (has_value && get_value (&c, nvalues, &next, &value))
        return -1;
      uint64_t n = head >> 1;
      if (n > c.size - c.pos)
        return stop (&c, at, "locations cannot fit in the bytes left of the "
                     "map");
      if (b < 2 && (value != TALLY_MAP_NONE || n))
        return stop (&c, at, "ENTRY or EXIT has a value or locations");
      if (out && out->blocks)
        {
          out->blocks[4 * b] = value;
          out->blocks[4 * b + 1] = flags;
          out->blocks[4 * b + 2] = (uint32_t) n;
          out->blocks[4 * b + 3] = (uint32_t) nlocs;
        }
      for (uint64_t k = 0; k < n; k++, nlocs++)
        {
          at = c.pos;
          if (get (&c, 0x3ffffffffull, &x, "location does not fit in 34 "
                   "bits"))
            return -1;
          uint64_t l = line + unzig (x >> 1);
          if (l > 0xffffffffu) /* below 0 wraps above too */
            return stop (&c, at, "location line out of range");
          line = l;
          if ((x & 1))
            {
              uint64_t f;
              if (get (&c, 0xffffffffu, &f, "location file index does not "
                       "fit in 32 bits"))
                return -1;
              if (f == file)
                return stop (&c, at, "location file index repeats the "
                             "previous one");
              file = f;
            }
          if (file >= info->nfiles)
            return stop (&c, at, "location file index beyond the map's "
                         "files");
          if (out && out->locs)
            {
              out->locs[2 * nlocs] = (uint32_t) file;
              out->locs[2 * nlocs + 1] = (uint32_t) line;
            }
        }
    }
  info->nlocs = nlocs;

  if ((uint64_t) info->nedges * 2 > c.size - c.pos)
    return stop (&c, c.pos, "edges cannot fit in the bytes left of the map");
  uint64_t src = 0;
  uint32_t entry_edges = 0, entry_valued = 0; /* normal ones out of ENTRY */
  for (uint32_t e = 0; e < info->nedges; e++)
    {
      uint64_t h, d;
      uint32_t value = TALLY_MAP_NONE;
      at = c.pos;
      if (get (&c, 0x1ffffffffull * 2 * TALLY_MAP2_MAX_FLAGS + 2 * nflags - 1,
               &h, "edge source does not fit")
          || get (&c, 0x1ffffffffull, &d, "edge destination does not fit"))
        return -1;
      uint64_t q = h >> 1, z = q / nflags;
      uint32_t fl = table[q % nflags];
      if (z > 0x1ffffffffull)
        return stop (&c, at, "edge source does not fit");
      src += unzig (z);
      uint64_t dst = src + unzig (d);
      if (src >= info->nblocks || dst >= info->nblocks) /* or wrapped */
        return stop (&c, at, "edge block number beyond the map's blocks");
      if (src == TALLY_MAP_EXIT || dst == TALLY_MAP_ENTRY)
        return stop (&c, at, "edge leaves EXIT or enters ENTRY");
      if ((h & 1) && get_value (&c, nvalues, &next, &value))
        return -1;
      if (src == TALLY_MAP_ENTRY && !(fl & TALLY_EDGE_FAKE))
        {
          entry_edges++;
          entry_valued += value != TALLY_MAP_NONE;
        }
      if (out && out->edges)
        {
          out->edges[4 * e] = (uint32_t) src;
          out->edges[4 * e + 1] = (uint32_t) dst;
          out->edges[4 * e + 2] = fl;
          out->edges[4 * e + 3] = value;
        }
    }
  if (info->kind == TALLY_MAP_TREE_CALLERS)
    {
      /* The entry's count is its callers': one edge for it to be, and
         that edge not counted.  */
      if (entry_edges != 1)
        return stop (&c, c.pos, "kind 6 map without exactly one normal "
                     "edge out of ENTRY");
      if (entry_valued)
        return stop (&c, c.pos, "kind 6 map whose edge out of ENTRY has a "
                     "value");
      at = c.pos;
      info->trailer_at = at;
      if (get (&c, 0xffffffffu, &x, "callers complete flag does not fit in "
               "32 bits"))
        return -1;
      if (x > 1)
        return stop (&c, at, "callers complete flag above 1");
      info->complete = (uint32_t) x;
      at = c.pos;
      if (get (&c, 0xffffffffu, &x, "call site count does not fit in 32 "
               "bits"))
        return -1;
      /* A site takes at least 2 bytes.  */
      if (x > (c.size - c.pos) / 2)
        return stop (&c, at, "call sites cannot fit in the bytes left of the "
                     "map");
      info->nsites = (uint32_t) x;
      for (uint32_t s = 0; s < info->nsites; s++)
        {
          uint64_t fn, blk;
          if (get (&c, 0xffffffffu, &fn, "call site function does not fit in "
                   "32 bits")
              || get (&c, 0xffffffffu, &blk, "call site block does not fit "
                      "in 32 bits"))
            return -1;
          if (out && out->sites)
            {
              out->sites[2 * s] = (uint32_t) fn;
              out->sites[2 * s + 1] = (uint32_t) blk;
            }
        }
      if (c.pos != c.size)
        return stop (&c, c.pos, "unexpected bytes after the callers "
                     "trailer");
      return 0;
    }
  if (c.pos != c.size)
    return stop (&c, c.pos, "unexpected bytes after the last edge");
  return 0;
}

uint32_t
tally_derive_rule (const struct tally_derive_map *m, uint32_t b)
{
  return m->blocks[4 * (size_t) b + 1]
         & (TALLY_BLOCK_ANY_SUCC | TALLY_BLOCK_ANY_PRED);
}

/* For derived block B and edge ED (4 u32s), the block ED gives B's value
   from, TALLY_DERIVE_FROM_EDGE when ED's own value gives it (kind 5), or
   TALLY_MAP_NONE if ED is not one of B's: fake edges never are.  */
static uint32_t
derive_source (const struct tally_derive_map *m, uint32_t b,
               const uint32_t *ed)
{
  uint32_t rule = tally_derive_rule (m, b);
  if (ed[2] & TALLY_EDGE_FAKE)
    return TALLY_MAP_NONE;
  if (!(rule == TALLY_BLOCK_ANY_SUCC && ed[0] == b)
      && !(rule == TALLY_BLOCK_ANY_PRED && ed[1] == b))
    return TALLY_MAP_NONE;
  if (m->edge_values && ed[3] != TALLY_MAP_NONE)
    return TALLY_DERIVE_FROM_EDGE;
  return rule == TALLY_BLOCK_ANY_SUCC ? ed[1] : ed[0];
}

uint32_t
tally_derive_next (const struct tally_derive_map *m, uint32_t *pos,
                   uint32_t *a)
{
  /* A map's edges take 2 bytes at least and its size is a u32, so 2 x
     edges fits in 32 bits.  */
  while (*pos < 2 * m->nedges)
    {
      const uint32_t *ed = m->edges + 4 * (size_t) (*pos / 2);
      uint32_t b = *pos % 2 ? ed[1] : ed[0];
      ++*pos;
      uint32_t from = tally_derive_rule (m, b) ? derive_source (m, b, ed)
                                               : TALLY_MAP_NONE;
      if (from != TALLY_MAP_NONE)
        {
          *a = b;
          return from;
        }
    }
  return TALLY_MAP_NONE;
}

size_t
tally_derive_scratch (uint32_t nblocks, uint32_t nedges)
{
  /* Per block: sources (then pending dependencies), first user, users
     filled; one more first user; two users an edge (the first NEDGES
     mark the edges used before).  */
  return (size_t) nblocks * 3 + 1 + (size_t) nedges * 2;
}

int
tally_derive_check (const struct tally_derive_map *m, uint32_t *scratch,
                    uint32_t *order, uint32_t *nderived, uint32_t *at,
                    uint32_t *from)
{
  uint32_t nb = m->nblocks, ne = m->nedges;
  uint32_t *nsrc = scratch, *start = nsrc + nb, *fill = start + nb + 1;
  uint32_t *users = fill + nb, *used = users;
  size_t len = tally_derive_scratch (nb, ne);
  for (size_t i = 0; i < len; i++)
    scratch[i] = 0;

  /* 1. Every derivation: none from ENTRY or EXIT, which have no visited
     value; count each block's sources, mark the edges whose own values
     are taken.  */
  uint32_t pos = 0, a, f;
  while ((f = tally_derive_next (m, &pos, &a)) != TALLY_MAP_NONE)
    {
      if (f < 2)
        {
          *at = a;
          *from = f;
          return TALLY_DERIVE_FROM_END;
        }
      if (f == TALLY_DERIVE_FROM_EDGE)
        used[(pos - 1) / 2] = 1;
      nsrc[a]++;
    }

  /* 2. Kind 5: a value only where a derivation takes it.  */
  for (uint32_t e = 0; m->edge_values && e < ne; e++)
    {
      const uint32_t *ed = m->edges + 4 * (size_t) e;
      int fault = TALLY_DERIVE_OK;
      if (ed[3] == TALLY_MAP_NONE)
        continue;
      if (ed[2] & TALLY_EDGE_FAKE)
        fault = TALLY_DERIVE_FAKE_VALUE;
      else if (ed[0] < 2 || ed[1] < 2)
        fault = TALLY_DERIVE_END_VALUE;
      else if (!used[e])
        fault = TALLY_DERIVE_UNUSED_VALUE;
      if (fault)
        {
          *at = e;
          return fault;
        }
    }

  /* 3. Each derived block: one rule, no value, something to derive
     from.  */
  uint32_t derived = 0;
  for (uint32_t b = 0; b < nb; b++)
    {
      uint32_t rule = tally_derive_rule (m, b);
      int fault = TALLY_DERIVE_OK;
      if (!rule)
        continue;
      if (b < 2)
        fault = TALLY_DERIVE_END_DERIVED;
      else if (rule == (TALLY_BLOCK_ANY_SUCC | TALLY_BLOCK_ANY_PRED))
        fault = TALLY_DERIVE_BOTH;
      else if (m->blocks[4 * (size_t) b] != TALLY_MAP_NONE)
        fault = TALLY_DERIVE_VALUE;
      else if (!nsrc[b])
        fault = rule == TALLY_BLOCK_ANY_SUCC ? TALLY_DERIVE_NO_SUCC
                                             : TALLY_DERIVE_NO_PRED;
      if (fault)
        {
          *at = b;
          return fault;
        }
      derived++;
    }

  /* 4. The order (Kahn's algorithm, no recursion): the derivation of
     derived block A from derived block B, twice over: PENDING[A] counts,
     USERS[START[B] ..] lists A.  What is left pending is on a cycle or
     after one.  */
  uint32_t *pending = nsrc;
  for (uint32_t b = 0; b < nb; b++)
    pending[b] = 0;
  for (int pass = 0; pass < 2; pass++)
    {
      for (uint32_t e = 0; e < ne; e++)
        {
          const uint32_t *ed = m->edges + 4 * (size_t) e;
          for (int k = 0; k < 2; k++)
            {
              a = ed[k];
              if (a < 2 || !tally_derive_rule (m, a))
                continue;
              f = derive_source (m, a, ed);
              if (f == TALLY_MAP_NONE || f == TALLY_DERIVE_FROM_EDGE || f < 2
                  || !tally_derive_rule (m, f))
                continue;
              if (pass == 0)
                {
                  pending[a]++;
                  start[f + 1]++;
                }
              else
                users[start[f] + fill[f]++] = a;
            }
        }
      if (pass == 0)
        for (uint32_t b = 0; b < nb; b++)
          start[b + 1] += start[b];
    }
  uint32_t n = 0;
  for (uint32_t b = 2; b < nb; b++)
    if (tally_derive_rule (m, b) && !pending[b])
      order[n++] = b;
  for (uint32_t head = 0; head < n; head++)
    {
      uint32_t b = order[head];
      for (uint32_t i = start[b]; i < start[b + 1]; i++)
        if (--pending[users[i]] == 0)
          order[n++] = users[i];
    }
  if (n < derived)
    {
      for (uint32_t b = 2; b < nb; b++)
        if (tally_derive_rule (m, b) && pending[b])
          {
            *at = b;
            return TALLY_DERIVE_CYCLE;
          }
    }
  *nderived = n;
  return TALLY_DERIVE_OK;
}

uint32_t
tally_callers_order (uint32_t n, const uint32_t *kind, const uint32_t *first,
                     const uint32_t *sites, uint32_t *deps, uint32_t *order,
                     uint32_t *start, uint32_t *fill, uint32_t *users)
{
  for (uint32_t f = 0; f < n; f++)
    deps[f] = start[f] = fill[f] = 0;
  start[n] = 0;
  /* USERS[START[G] ..] lists F once per site of F in kind 6 function G:
     first the counts, then the places.  */
  for (int pass = 0; pass < 2; pass++)
    {
      for (uint32_t f = 0; f < n; f++)
        for (uint32_t k = first[f];
             kind[f] == TALLY_MAP_TREE_CALLERS && k < first[f + 1]; k++)
          {
            uint32_t g = sites[2 * k];
            if (g >= n || kind[g] != TALLY_MAP_TREE_CALLERS)
              continue;
            if (pass == 0)
              {
                deps[f]++;
                start[g + 1]++;
              }
            else
              users[start[g] + fill[g]++] = f;
          }
      if (pass == 0)
        for (uint32_t g = 0; g < n; g++)
          start[g + 1] += start[g];
    }
  uint32_t done = 0;
  for (uint32_t f = 0; f < n; f++)
    if (kind[f] == TALLY_MAP_TREE_CALLERS && !deps[f])
      order[done++] = f;
  for (uint32_t head = 0; head < done; head++)
    for (uint32_t k = start[order[head]]; k < start[order[head] + 1]; k++)
      if (!--deps[users[k]])
        order[done++] = users[k];
  return done;
}
