/* Reading module records back, for merge-on-write (TALLY_OUTPUT with %m).
 *
 * The runtime merges its counts into an existing data file that other
 * processes wrote, so it reads that file: without malloc (it is mmap'ed by
 * the caller), trusting nothing in it (another program, an older tally or a
 * disk error may have written it), and in bounded time.  These helpers
 * work on records in file format (include/tally/format.h); every length is
 * checked against the bytes that are there before it is used.  */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "rt.h"
#include "tally/format.h"
#include "tally/mapcode.h"

/* Whether the N bytes at P hold a NUL byte (the readers refuse such a
   string: format/datafile.c).  */
static int
has_nul (const unsigned char *p, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (!p[i])
      return 1;
  return 0;
}

/* Bytes of the str field at P (at most AVAIL bytes there), or 0 if it does
   not fit, is over the limit or holds a NUL byte.  */
static size_t
str_size (const unsigned char *p, size_t avail)
{
  if (avail < 4)
    return 0;
  uint32_t n = tally_le_get32 (p);
  if (n > TALLY_MAX_STRING || n > avail - 4 || has_nul (p + 4, n))
    return 0;
  return 4 + (size_t) n;
}

/* The u32s of scratch derived_ok needs for a kind 4 or 5 map of NBLOCKS
   and NEDGES: its blocks and edges as the walk decodes them, the rules'
   scratch and their order.  */
static size_t
derive_need (uint32_t nblocks, uint32_t nedges)
{
  return ((size_t) nblocks + nedges) * 4
         + tally_derive_scratch (nblocks, nedges) + nblocks;
}

/* Whether the block map of SIZE bytes at MAP, of a function with NVALUES
   values, is one tally_map_decode (format/blockmap.c) accepts: the same
   checks, in one pass and without memory (version 2: the same walk,
   rt/mapcode.c), but for what needs memory: the derivations of kinds 4
   and 5 (*NEED becomes the most scratch one takes, for derived_ok) and
   kind 6's call sites (*NSITES counts them, for callers_ok).  A merge
   copies maps as they are, so a map the tools cannot decode would make
   the merged file unreadable for good.  */
static int
map_ok (const unsigned char *map, size_t size, uint32_t nvalues,
        uint64_t *nsites, size_t *need)
{
  if (size == 0)
    return 1; /* no map */
  if (size >= 4 && tally_le_get32 (map) == TALLY_MAP_VERSION2)
    {
      struct tally_map2_info info;
      if (tally_map2_walk (map, size, nvalues, &info, NULL) != 0)
        return 0;
      *nsites += info.nsites;
      if ((info.kind == TALLY_MAP_VISITED_DERIVED
           || info.kind == TALLY_MAP_VISITED_EDGES)
          && derive_need (info.nblocks, info.nedges) > *need)
        *need = derive_need (info.nblocks, info.nedges);
      return 1;
    }
  if (size < 20)
    return 0;
  uint32_t kind = tally_le_get32 (map + 4);
  uint32_t nblocks = tally_le_get32 (map + 8);
  uint32_t nedges = tally_le_get32 (map + 12);
  uint32_t nfiles = tally_le_get32 (map + 16);
  size_t pos = 20;
  if (tally_le_get32 (map) != TALLY_MAP_VERSION
      || (kind != TALLY_MAP_BLOCK && kind != TALLY_MAP_TREE
          && kind != TALLY_MAP_VISITED)
      || nblocks < 2 || nfiles > (size - pos) / 4
      || nblocks > (size - pos) / 12 || nedges > (size - pos) / 16)
    return 0;
  for (uint32_t i = 0; i < nfiles; i++)
    {
      size_t k = str_size (map + pos, size - pos);
      if (!k)
        return 0;
      pos += k;
    }
  for (uint32_t b = 0; b < nblocks; b++)
    {
      if (size - pos < 12)
        return 0;
      uint32_t value = tally_le_get32 (map + pos);
      uint32_t nlocs = tally_le_get32 (map + pos + 8);
      pos += 12;
      if (nlocs > (size - pos) / 8
          || (value != TALLY_MAP_NONE && value >= nvalues)
          || (b < 2 && (value != TALLY_MAP_NONE || nlocs)))
        return 0;
      for (uint32_t k = 0; k < nlocs; k++, pos += 8)
        if (tally_le_get32 (map + pos) >= nfiles)
          return 0;
    }
  if (nedges > (size - pos) / 16)
    return 0;
  for (uint32_t e = 0; e < nedges; e++, pos += 16)
    {
      uint32_t src = tally_le_get32 (map + pos);
      uint32_t dst = tally_le_get32 (map + pos + 4);
      uint32_t value = tally_le_get32 (map + pos + 12);
      if (src >= nblocks || dst >= nblocks || src == TALLY_MAP_EXIT
          || dst == TALLY_MAP_ENTRY
          || (value != TALLY_MAP_NONE && value >= nvalues))
        return 0;
    }
  return pos == size;
}

/* The map of the next function of a module record at *POS (the function
   fields first): *MAP, its *SIZE and the function's *NVALUES; *POS moves
   past it.  */
static void
next_map (const unsigned char *p, size_t *pos, const unsigned char **map,
          uint32_t *size, uint32_t *nvalues)
{
  for (int s = 0; s < 4; s++)
    *pos += TALLY_STR_FIXED + (size_t) tally_le_get32 (p + *pos);
  *nvalues = tally_le_get32 (p + *pos + TALLY_FNREC_NVALUES);
  *pos += TALLY_FNREC_FIXED + (size_t) *nvalues * 8;
  *size = tally_le_get32 (p + *pos);
  *map = p + *pos + 4;
  *pos += 4 + (size_t) *size;
}

/* Offset of the first function of the module record at P.  */
static size_t
first_fn (const unsigned char *p)
{
  size_t pos = TALLY_MODREC_FIXED;
  for (int s = 0; s < 2; s++)
    pos += TALLY_STR_FIXED + (size_t) tally_le_get32 (p + pos);
  return pos;
}

static void *
scratch (size_t len)
{
  void *m = mmap (NULL, len ? len : 1, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return m == MAP_FAILED ? NULL : m;
}

/* Whether the derivations of the kind 4 and 5 maps of the module record
   at P (version 2, checked one by one by map_ok) pass the checks
   tally_map_decode (format/blockmap.c) makes, by the same code
   (tally_derive_check, rt/mapcode.c): no block derived from ENTRY or
   EXIT, with both rules, with a value too or with nothing to derive from,
   no edge value on a fake edge, on an edge from ENTRY or into EXIT, or
   where no derivation takes it, no cycle of derived blocks.  1, 0, or -1
   if the NEED u32s of scratch (mmap'ed once for the record, map_ok's
   largest) cannot be had: then the file is not merged, as unchecked.  */
static int
derived_ok (const unsigned char *p, size_t need)
{
  uint32_t n = tally_le_get32 (p + TALLY_MODREC_NFNS);
  size_t len = need * 4;
  uint32_t *mem = scratch (len);
  if (!mem)
    return -1;
  size_t pos = first_fn (p);
  int ok = 1;
  for (uint32_t i = 0; i < n && ok; i++)
    {
      const unsigned char *map;
      uint32_t size, nvalues;
      next_map (p, &pos, &map, &size, &nvalues);
      if (size < 4 || tally_le_get32 (map) != TALLY_MAP_VERSION2)
        continue; /* version 1: kinds 1 to 3 only (map_ok) */
      struct tally_map2_info info;
      tally_map2_walk (map, size, nvalues, &info, NULL); /* checked */
      if (info.kind != TALLY_MAP_VISITED_DERIVED
          && info.kind != TALLY_MAP_VISITED_EDGES)
        continue;
      uint32_t *blocks = mem, *edges = blocks + 4 * (size_t) info.nblocks;
      uint32_t *rules = edges + 4 * (size_t) info.nedges;
      uint32_t *order = rules + tally_derive_scratch (info.nblocks,
                                                      info.nedges);
      struct tally_map2_out out = { NULL, blocks, NULL, edges, NULL };
      tally_map2_walk (map, size, nvalues, &info, &out);
      struct tally_derive_map m
          = { info.nblocks, info.nedges, blocks, edges,
              info.kind == TALLY_MAP_VISITED_EDGES };
      uint32_t nderived, at, from;
      ok = tally_derive_check (&m, rules, order, &nderived, &at, &from)
           == TALLY_DERIVE_OK;
    }
  munmap (mem, len ? len : 1);
  return ok;
}

/* Whether the call sites of the kind 6 maps of the module record at P
   (NSITES in all, its maps checked one by one) pass the checks
   tally_data_check_maps (format/blockmap.c) makes with the module: each
   names a function of the record whose map counts blocks (kind 1, 2 or
   6) and one of its blocks but ENTRY and EXIT, and no kind 6 function's
   entry depends on itself through sites of kind 6 functions (Kahn's
   algorithm).  Scratch memory is mmap'ed, time linear in the sites.  1,
   0, or -1 if the scratch cannot be had.  */
static int
callers_ok (const unsigned char *p, uint64_t nsites)
{
  uint32_t n = tally_le_get32 (p + TALLY_MODREC_NFNS);
  if (nsites > 0x3fffffffu)
    return 0; /* not from a record under 4 GB */
  /* Per function: kind, block count, pending dependencies, users filled,
     first site, first user (n + 1 each); the sites (2 u32), the users,
     the order.  */
  size_t len = ((size_t) n * 6 + 2 + (size_t) nsites * 3 + n) * 4;
  uint32_t *kind = scratch (len);
  if (!kind)
    return -1;
  uint32_t *nblocks = kind + n, *deps = nblocks + n, *fill = deps + n;
  uint32_t *first = fill + n, *start = first + n + 1;
  uint32_t *sites = start + n + 1, *users = sites + 2 * nsites;
  uint32_t *order = users + nsites;
  size_t pos = first_fn (p);
  uint32_t at = 0, n6 = 0;
  int ok = 1;
  for (uint32_t i = 0; i < n; i++)
    {
      const unsigned char *map;
      uint32_t size, nvalues;
      next_map (p, &pos, &map, &size, &nvalues);
      first[i] = at;
      if (!size)
        continue;
      if (tally_le_get32 (map) != TALLY_MAP_VERSION2)
        {
          /* Version 1: kinds 1 to 3 only (map_ok), no sites.  */
          kind[i] = tally_le_get32 (map + 4);
          nblocks[i] = tally_le_get32 (map + 8);
          continue;
        }
      struct tally_map2_info info;
      struct tally_map2_out out = { NULL, NULL, NULL, NULL, sites + 2 * at };
      tally_map2_walk (map, size, nvalues, &info, &out); /* checked */
      kind[i] = info.kind;
      nblocks[i] = info.nblocks;
      at += info.nsites;
      n6 += info.kind == TALLY_MAP_TREE_CALLERS;
    }
  first[n] = at;
  for (uint32_t f = 0; f < n && ok; f++)
    for (uint32_t k = first[f]; k < first[f + 1] && ok; k++)
      {
        uint32_t g = sites[2 * k], b = sites[2 * k + 1];
        ok = g < n
             && (kind[g] == TALLY_MAP_BLOCK || kind[g] == TALLY_MAP_TREE
                 || kind[g] == TALLY_MAP_TREE_CALLERS)
             && b >= 2 && b < nblocks[g];
      }
  if (ok)
    ok = tally_callers_order (n, kind, first, sites, deps, order, start,
                              fill, users) == n6;
  munmap (kind, len ? len : 1);
  return ok;
}

/* What is wrong with the block maps of the module record at P (checked
   by tally_rt_rec_size), or NULL: each must decode, kinds 4 and 5 with
   their derivations, and kind 6's call sites fit the record.  Without
   the scratch memory to check them the file is refused too, never
   merged unchecked.  */
static const char *
maps_ok (const unsigned char *p)
{
  uint32_t nfns = tally_le_get32 (p + TALLY_MODREC_NFNS);
  size_t pos = first_fn (p), need = 0;
  uint64_t nsites = 0;
  for (uint32_t i = 0; i < nfns; i++)
    {
      const unsigned char *map;
      uint32_t size, nvalues;
      next_map (p, &pos, &map, &size, &nvalues);
      if (!map_ok (map, size, nvalues, &nsites, &need))
        return "corrupt block map";
    }
  /* Without derived blocks or call sites there is nothing more to
     check.  */
  int ok = need ? derived_ok (p, need) : 1;
  if (ok == 1 && nsites)
    ok = callers_ok (p, nsites);
  return ok == 1 ? NULL
         : ok == 0 ? "corrupt block map"
                   : "no memory to check its block maps";
}

size_t
tally_rt_rec_size (const unsigned char *p, size_t avail)
{
  size_t pos = TALLY_MODREC_FIXED, k;
  if (avail < pos)
    return 0;
  uint32_t nfns = tally_le_get32 (p + TALLY_MODREC_NFNS);
  for (int s = 0; s < 2; s++) /* source, directory */
    {
      if (!(k = str_size (p + pos, avail - pos)))
        return 0;
      pos += k;
    }
  for (uint32_t i = 0; i < nfns; i++)
    {
      for (int s = 0; s < 4; s++) /* name, symbol, origin, file */
        {
          if (!(k = str_size (p + pos, avail - pos)))
            return 0;
          pos += k;
        }
      if (avail - pos < TALLY_FNREC_FIXED)
        return 0;
      uint32_t nc = tally_le_get32 (p + pos + TALLY_FNREC_NVALUES);
      pos += TALLY_FNREC_FIXED;
      if (nc < TALLY_C_CORE || nc > (avail - pos) / 8)
        return 0;
      pos += (size_t) nc * 8;
      uint32_t map;
      if (!tally_le_take_len (p, avail, &pos, &map))
        return 0;
      pos += map;
    }
  return pos;
}

/* Whether the str fields at A and B are equal.  */
static int
str_eq (const unsigned char *a, const unsigned char *b)
{
  uint32_t n = tally_le_get32 (a);
  return n == tally_le_get32 (b) && memcmp (a + 4, b + 4, n) == 0;
}

int
tally_rt_rec_match (const unsigned char *a, const unsigned char *b)
{
  /* abi, checksum, flags and function count.  */
  if (memcmp (a + TALLY_MODREC_ABI, b + TALLY_MODREC_ABI,
              TALLY_MODREC_FIXED - TALLY_MODREC_ABI) != 0)
    return 0;
  if (!str_eq (a + TALLY_MODREC_FIXED, b + TALLY_MODREC_FIXED)) /* source */
    return 0;
  uint32_t nfns = tally_le_get32 (a + TALLY_MODREC_NFNS);
  a = tally_rt_skip_str (tally_rt_skip_str (a + TALLY_MODREC_FIXED));
  b = tally_rt_skip_str (tally_rt_skip_str (b + TALLY_MODREC_FIXED));
  for (uint32_t i = 0; i < nfns; i++)
    {
      a = tally_rt_skip_str (a); /* name: printable, the symbol decides */
      b = tally_rt_skip_str (b);
      if (!str_eq (a, b))
        return 0;
      /* symbol, origin, file */
      a = tally_rt_skip_str (tally_rt_skip_str (tally_rt_skip_str (a)));
      b = tally_rt_skip_str (tally_rt_skip_str (tally_rt_skip_str (b)));
      uint32_t nc = tally_le_get32 (a + TALLY_FNREC_NVALUES);
      if (nc != tally_le_get32 (b + TALLY_FNREC_NVALUES))
        return 0;
      a += TALLY_FNREC_FIXED + (size_t) nc * 8;
      b += TALLY_FNREC_FIXED + (size_t) nc * 8;
      uint32_t map = tally_le_get32 (a);
      if (map != tally_le_get32 (b) || memcmp (a + 4, b + 4, map) != 0)
        return 0;
      a += 4 + (size_t) map;
      b += 4 + (size_t) map;
    }
  return 1;
}

/* Sort the N ranges at R by base (Shell sort: no malloc, few records).  */
static void
sort_ranges (struct tally_id_range *r, uint32_t n)
{
  for (uint32_t gap = n / 2; gap; gap /= 2)
    for (uint32_t i = gap; i < n; i++)
      {
        struct tally_id_range t = r[i];
        uint32_t j = i;
        for (; j >= gap && r[j - gap].base > t.base; j -= gap)
          r[j] = r[j - gap];
        r[j] = t;
      }
}

void
tally_rt_ranges (struct tally_id_range *r, uint32_t *n)
{
  uint32_t k = 0;
  for (uint32_t i = 0; i < *n; i++)
    if (r[i].base != UINT32_MAX && r[i].count)
      r[k++] = r[i];
  *n = k;
  sort_ranges (r, k);
}

/* The function count of each of the N module records from offset RECORDS
   of BUF into NFNS (the records were checked).  */
static void
record_nfns (const unsigned char *buf, size_t records, size_t end, uint32_t n,
             uint32_t *nfns)
{
  size_t pos = records;
  for (uint32_t i = 0; i < n; i++)
    {
      nfns[i] = tally_le_get32 (buf + pos + TALLY_MODREC_NFNS);
      pos += tally_rt_rec_size (buf + pos, end - pos);
    }
}

/* The MEAS, FRMS and PATH records from POS to END (after the N module
   records at RECORDS), checked as the reader checks them; NULL if valid
   (their places in *X), else what is wrong.  SCRATCH holds at least
   tally_rt_extras_scratch (N, END - POS) bytes.  */
static const char *
check_extras (const unsigned char *buf, size_t pos, size_t end, size_t records,
              uint32_t n, struct tally_rt_extras *x, unsigned char *scratch)
{
  uint32_t *nfns = (uint32_t *) (void *) scratch;
  record_nfns (buf, records, end, n, nfns);
  size_t k;
  if (end - pos >= 8 && tally_le_get32 (buf + pos) == TALLY_TAG_MEAS)
    {
      x->meas = pos;
      uint32_t v = tally_le_get32 (buf + pos + 4);
      pos += 8;
      if (v == 0 || v > TALLY_MAX_MEAS)
        return "corrupt measurement record";
      for (uint32_t i = 0; i < v; i++, pos += k)
        if (!(k = str_size (buf + pos, end - pos)))
          return "corrupt measurement record";
      if (end - pos < 4 || tally_le_get32 (buf + pos) != n)
        return "corrupt measurement record";
      pos += 4;
      x->meas_values = pos;
      for (uint32_t r = 0; r < n; r++)
        {
          if (end - pos < 4 || tally_le_get32 (buf + pos) != nfns[r])
            return "corrupt measurement record";
          pos += 4;
          if (nfns[r] > (end - pos) / ((size_t) v * 16))
            return "corrupt measurement record";
          for (size_t j = 0; j < (size_t) nfns[r] * v; j++, pos += 16)
            if (tally_le_get64 (buf + pos + 8) > tally_le_get64 (buf + pos))
              return "corrupt measurement record";
        }
      x->nmeas = v;
    }
  uint32_t *fids = nfns + n; /* the frames' ids */
  if (end - pos >= 8 && tally_le_get32 (buf + pos) == TALLY_TAG_FRAMES)
    {
      x->frames = pos;
      uint32_t f = tally_le_get32 (buf + pos + 4);
      pos += 8;
      if (f == 0 || f > (end - pos) / 16)
        return "corrupt frames record";
      for (uint32_t i = 0; i < f; i++, pos += k)
        {
          if (end - pos < 12)
            return "corrupt frames record";
          fids[i] = tally_le_get32 (buf + pos);
          if (fids[i] < TALLY_FRAME_ID_BASE || (i && fids[i] <= fids[i - 1]))
            return "corrupt frames record";
          pos += 12;
          if (!(k = str_size (buf + pos, end - pos)))
            return "corrupt frames record";
        }
      x->nframes = f;
    }
  if (end - pos >= 24 && tally_le_get32 (buf + pos) == TALLY_TAG_PATH)
    {
      x->paths = pos;
      uint32_t limit = tally_le_get32 (buf + pos + 4);
      if (tally_le_get32 (buf + pos + 16) != n
          || limit > TALLY_PATH_DEPTH_MAX)
        return "corrupt path record";
      pos += 20;
      if (n > (end - pos) / 4)
        return "corrupt path record";
      struct tally_id_range *rg
          = (struct tally_id_range *) (void *) (fids + x->nframes);
      for (uint32_t r = 0; r < n; r++, pos += 4)
        rg[r] = (struct tally_id_range){ tally_le_get32 (buf + pos),
                                         nfns[r], r };
      uint32_t nr = n;
      tally_rt_ranges (rg, &nr);
      if (end - pos < 4)
        return "corrupt path record";
      uint32_t nodes = tally_le_get32 (buf + pos);
      pos += 4;
      if (nodes > (end - pos) / 32)
        return "corrupt path record";
      /* Each node's depth (the root, node 0, is at 0): none deeper than
         the file's limit, as the tools' reader checks.  The scratch holds
         it: 4 bytes a 32-byte node.  */
      uint32_t *depth = (uint32_t *) (void *) (rg + n);
      depth[0] = 0;
      for (uint32_t i = 1; i <= nodes; i++, pos += 32)
        {
          const unsigned char *b = buf + pos;
          uint32_t id = tally_le_get32 (b + 4);
          int values = tally_le_get64 (b + 8) || tally_le_get64 (b + 16);
          if (tally_le_get32 (b) >= i
              || tally_le_get64 (b + 24) > tally_le_get64 (b + 16))
            return "corrupt path record";
          depth[i] = depth[tally_le_get32 (b)] + 1;
          if (depth[i] > limit)
            return "corrupt path record";
          if (id == UINT32_MAX)
            {
              if (values)
                return "corrupt path record";
            }
          else if (id >= TALLY_FRAME_ID_BASE)
            {
              if (values || tally_rt_frame_index (fids, x->nframes, id)
                                == UINT32_MAX)
                return "corrupt path record";
            }
          else if (tally_id_range_find (rg, nr, id) == UINT32_MAX)
            return "corrupt path record";
        }
      x->npaths = nodes;
      if (end - pos >= 12 && tally_le_get32 (buf + pos) == TALLY_TAG_PATH_EVENTS)
        {
          x->pevt = pos;
          uint32_t e = tally_le_get32 (buf + pos + 4);
          if (!x->meas || e + 1 != x->nmeas
              || tally_le_get32 (buf + pos + 8) != nodes)
            return "corrupt path events record";
          pos += 12;
          if (nodes && nodes > (end - pos) / ((size_t) e * 16))
            return "corrupt path events record";
          for (size_t j = 0; j < (size_t) nodes * e; j++, pos += 16)
            if (tally_le_get64 (buf + pos + 8) > tally_le_get64 (buf + pos))
              return "corrupt path events record";
          x->nevents = e;
        }
    }
  else if (x->frames)
    return "frames record without a path record";
  if (pos != end)
    return "module count differs from the records";
  return NULL;
}

uint32_t
tally_rt_frame_index (const uint32_t *ids, uint32_t n, uint32_t id)
{
  uint32_t lo = 0, hi = n;
  while (lo < hi)
    {
      uint32_t mid = lo + (hi - lo) / 2;
      if (ids[mid] == id)
        return mid;
      if (ids[mid] < id)
        lo = mid + 1;
      else
        hi = mid;
    }
  return UINT32_MAX;
}

size_t
tally_rt_extras_scratch (uint32_t nmodules, size_t bytes)
{
  /* nfns and a range per record, and a frame id per 16 bytes (a frame
     takes 16 bytes at least, a path node 32: the nodes' depths fit in
     the same bytes / 4).  */
  return (size_t) nmodules * (4 + sizeof (struct tally_id_range))
         + bytes / 16 * 4 + 64;
}

const char *
tally_rt_check_file (const unsigned char *buf, size_t len, size_t *records,
                     uint32_t *nmodules, struct tally_rt_extras *x)
{
  memset (x, 0, sizeof *x);
  if (len < TALLY_HEADER_FIXED + 4 + TALLY_TRAILER_SIZE)
    return "too short";
  if (memcmp (buf, TALLY_FILE_MAGIC, TALLY_FILE_MAGIC_LEN) != 0)
    return "not a tally data file";
  if (tally_le_get32 (buf + 8) != TALLY_FILE_VERSION
      || tally_le_get32 (buf + 12) != TALLY_BYTE_ORDER_MARK)
    return "another version or byte order";
  if (tally_le_get64 (buf + 16) != len)
    return "size differs from its header (truncated?)";
  const unsigned char *trailer = buf + len - TALLY_TRAILER_SIZE;
  if (tally_le_get32 (trailer) != TALLY_TAG_END
      || tally_le_get64 (trailer + 8) != len)
    return "bad trailer";
  if (tally_crc32 (0, buf, len - TALLY_TRAILER_SIZE)
      != tally_le_get32 (trailer + 4))
    return "checksum mismatch";
  size_t end = len - TALLY_TRAILER_SIZE;
  size_t pos = TALLY_HEADER_FIXED;
  size_t k = str_size (buf + pos, end - pos); /* program */
  if (!k)
    return "corrupt header";
  pos += k;
  uint32_t n = tally_le_get32 (buf + 40);
  *records = pos;
  for (uint32_t i = 0; i < n; i++)
    {
      if (end - pos < 4 || tally_le_get32 (buf + pos) != TALLY_TAG_MODULE
          || !(k = tally_rt_rec_size (buf + pos, end - pos)))
        return "corrupt module record";
      const char *why = maps_ok (buf + pos);
      if (why)
        return why;
      pos += k;
    }
  if (pos != end)
    {
      size_t need = tally_rt_extras_scratch (n, end - pos);
      void *m = mmap (NULL, need, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m == MAP_FAILED)
        return "no memory to check its measurements";
      const char *why = check_extras (buf, pos, end, *records, n, x,
                                      (unsigned char *) m);
      munmap (m, need);
      if (why)
        return why;
    }
  x->end = end;
  *nmodules = n;
  return NULL;
}

int
tally_rt_read_whole (int fd, size_t size, unsigned char **buf, int *e)
{
  *buf = NULL;
  *e = 0;
  void *m = mmap (NULL, size, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED)
    {
      *e = errno;
      return -1;
    }
  unsigned char *p = (unsigned char *) m;
  size_t got = 0;
  while (got < size)
    {
      ssize_t k = pread (fd, p + got, size - got, (off_t) got);
      if (k < 0 && errno == EINTR)
        continue;
      if (k < 0)
        {
          *e = errno;
          munmap (m, size);
          return -1;
        }
      if (k == 0)
        break; /* shrunk */
      got += (size_t) k;
    }
  /* Not a byte more, and the same size now as when the read began.  */
  unsigned char more;
  ssize_t k;
  do
    k = pread (fd, &more, 1, (off_t) size);
  while (k < 0 && errno == EINTR);
  struct stat st;
  if (got != size || k != 0 || fstat (fd, &st) != 0
      || (uint64_t) st.st_size != (uint64_t) size)
    {
      munmap (m, size);
      return 1;
    }
  *buf = p;
  return 0;
}
