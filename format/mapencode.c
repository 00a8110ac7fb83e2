/* The block map, version 2: the encoder (tally/mapcode.h).  The plugin
   encodes its version 1 maps with it when it lays out a unit's record blob;
   the runtime only checks maps (rt/mapcode.c), so this is in the format
   library, not in every instrumented program.  Calls nothing, allocates
   nothing.  */
#include "tally/format.h"
#include "tally/mapcode.h"

/* Encoding: appends to OUT while below CAP, counts always.  */
struct sink
{
  unsigned char *p;
  size_t n, cap;
};

static void
put (struct sink *s, uint64_t v)
{
  do
    {
      unsigned char b = v & 0x7f;
      v >>= 7;
      if (v)
        b |= 0x80;
      if (s->n < s->cap)
        s->p[s->n] = b;
      s->n++;
    }
  while (v);
}

static uint64_t
zig (int64_t d)
{
  return d < 0 ? ((uint64_t) -(d + 1)) * 2 + 1 : (uint64_t) d * 2;
}

/* A value index as zigzag (value - *NEXT); *NEXT becomes value + 1.  */
static void
put_value (struct sink *s, uint32_t v, int64_t *next)
{
  put (s, zig ((int64_t) v - *next));
  *next = (int64_t) v + 1;
}

size_t
tally_map2_encode (const unsigned char *v1, size_t size, unsigned char *out,
                   size_t cap)
{
  struct sink s = { out, 0, cap };
  if (size < TALLY_MAP_FIXED || tally_le_get32 (v1) != TALLY_MAP_VERSION)
    return 0;
  uint32_t nblocks = tally_le_get32 (v1 + TALLY_MAP_NBLOCKS);
  uint32_t nedges = tally_le_get32 (v1 + TALLY_MAP_NEDGES);
  uint32_t nfiles = tally_le_get32 (v1 + TALLY_MAP_NFILES);
  size_t pos = TALLY_MAP_FIXED;
  unsigned char version[4];
  tally_le_put32 (version, TALLY_MAP_VERSION2);
  for (int i = 0; i < 4; i++)
    {
      if (s.n < s.cap)
        s.p[s.n] = version[i];
      s.n++;
    }
  put (&s, tally_le_get32 (v1 + TALLY_MAP_KIND));
  put (&s, nblocks);
  put (&s, nedges);
  put (&s, nfiles);
  for (uint32_t i = 0; i < nfiles; i++)
    {
      uint32_t n;
      if (!tally_le_take_len (v1, size, &pos, &n))
        return 0;
      put (&s, n);
      for (uint32_t k = 0; k < n; k++, s.n++)
        if (s.n < s.cap)
          s.p[s.n] = v1[pos + k];
      pos += n;
    }
  /* The edge flag values in order of first use.  */
  size_t edges_at = pos;
  for (uint32_t b = 0; b < nblocks; b++)
    {
      if (size - edges_at < 12
          || tally_le_get32 (v1 + edges_at + 8) > (size - edges_at - 12) / 8)
        return 0;
      edges_at += 12 + (size_t) tally_le_get32 (v1 + edges_at + 8) * 8;
    }
  uint32_t kind = tally_le_get32 (v1 + TALLY_MAP_KIND);
  if (nedges > (size - edges_at) / 16)
    return 0;
  /* Kind 6's callers trailer: u32 complete, u32 site count, 2 u32 per
     site, copied as varints after the edges.  */
  size_t end = edges_at + nedges * (size_t) 16, nsites = 0;
  if (kind == TALLY_MAP_TREE_CALLERS)
    {
      if (size - end < 8
          || tally_le_get32 (v1 + end + 4) > (size - end - 8) / 8)
        return 0;
      nsites = tally_le_get32 (v1 + end + 4);
      end += 8 + nsites * 8;
    }
  if (end != size)
    return 0;
  uint32_t table[TALLY_MAP2_MAX_FLAGS], nflags = 0;
  for (uint32_t e = 0; e < nedges; e++)
    {
      uint32_t fl = tally_le_get32 (v1 + edges_at + e * 16ull + 8), k = 0;
      while (k < nflags && table[k] != fl)
        k++;
      if (k == nflags)
        {
          if (nflags == TALLY_MAP2_MAX_FLAGS)
            return 0;
          table[nflags++] = fl;
        }
    }
  put (&s, nflags);
  for (uint32_t k = 0; k < nflags; k++)
    put (&s, table[k]);

  int64_t line = 0, next = 0;
  uint32_t file = 0;
  for (uint32_t b = 0; b < nblocks; b++)
    {
      uint32_t value = tally_le_get32 (v1 + pos);
      uint32_t flags = tally_le_get32 (v1 + pos + 4);
      uint32_t n = tally_le_get32 (v1 + pos + 8);
      put (&s, ((uint64_t) n * 2 + (flags != 0)) * 2
                   + (value != TALLY_MAP_NONE));
      if (flags)
        put (&s, flags);
      if (value != TALLY_MAP_NONE)
        put_value (&s, value, &next);
      pos += 12;
      for (uint32_t k = 0; k < n; k++, pos += 8)
        {
          uint32_t f = tally_le_get32 (v1 + pos);
          int64_t l = tally_le_get32 (v1 + pos + 4);
          put (&s, zig (l - line) * 2 + (f != file));
          if (f != file)
            put (&s, f);
          line = l;
          file = f;
        }
    }
  int64_t src = 0;
  for (uint32_t e = 0; e < nedges; e++, pos += 16)
    {
      int64_t a = tally_le_get32 (v1 + pos);
      int64_t d = tally_le_get32 (v1 + pos + 4);
      uint32_t fl = tally_le_get32 (v1 + pos + 8), k = 0;
      uint32_t value = tally_le_get32 (v1 + pos + 12);
      while (table[k] != fl)
        k++;
      put (&s, (zig (a - src) * nflags + k) * 2 + (value != TALLY_MAP_NONE));
      put (&s, zig (d - a));
      if (value != TALLY_MAP_NONE)
        put_value (&s, value, &next);
      src = a;
    }
  if (kind == TALLY_MAP_TREE_CALLERS)
    for (size_t k = 0; k < 2 + 2 * nsites; k++, pos += 4)
      put (&s, tally_le_get32 (v1 + pos));
  return pos == size ? s.n : 0;
}
