/* Strict reader of the tally data file, versions 1 and 2, and the
   continuous files of version 3 (include/tally/format.h).
 *
 * The file is checked from the outside in: magic, byte order, version, the
 * size the header promises against the size that is there, the trailer and
 * the CRC; only then are the records walked.  Every field is decoded
 * byte-wise as little-endian, and every length or count read from the file
 * is compared with the bytes left before it is used, with divisions rather
 * than multiplications so that no hostile value can overflow.  The records
 * are copied out, so the caller can drop the input as soon as this returns.  */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datafile.h"
#include "tally/abi.h"
#include "tally/format.h"

/* Refuse to read files larger than this: real dumps are kilobytes to a few
   megabytes, and the reader holds the whole file in memory.  */
#define MAX_FILE_BYTES ((size_t) 1 << 30)

/* Smallest encodings, used to bound counts before anything is allocated:
   a string is at least its u32 length.  The function bound leaves out the
   counters, so that a record with too few of them is reported as that.  */
#define MIN_MODULE_BYTES (4u + 4u + 8u + 4u + 4u + 4u + 4u)
#define MIN_FN_BYTES (4u * 4u + 4u * 4u)
#define MIN_FILE_BYTES (TALLY_HEADER_FIXED + 4u + TALLY_TRAILER_SIZE)

/* Offsets of the fixed header fields.  */
#define OFF_VERSION 8u
#define OFF_BOM 12u
#define OFF_SIZE 16u
#define OFF_PID 24u
#define OFF_TIME 32u
#define OFF_NMODULES 40u
#define OFF_FLAGS 44u

/* The byte-order mark as a little-endian reader sees a big-endian file.  */
#define BOM_SWAPPED 0x04030201u

/* State of one parse: a cursor over the records between the header's fixed
   part and the trailer, and the pool the strings and counters are copied
   into.  */
struct parser
{
  const unsigned char *buf;
  size_t pos;          /* next byte to read */
  size_t end;          /* offset of the trailer: records stop here */
  unsigned char *pool; /* counters grow up from the start, strings down
                          from the end */
  size_t pool_size;
  size_t pool_low;     /* bytes used by counters */
  size_t pool_high;    /* bytes used by strings */
  uint32_t version;    /* of the file: 1 has no block maps */
  char *err;
  size_t errlen;
};

uint32_t
tally_le32 (const unsigned char *p)
{
  return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16
         | (uint32_t) p[3] << 24;
}

#define get_u32 tally_le32

static uint64_t
get_u64 (const unsigned char *p)
{
  return (uint64_t) get_u32 (p) | (uint64_t) get_u32 (p + 4) << 32;
}

int
tally_errf (char *err, size_t errlen, const char *fmt, ...)
{
  if (err && errlen)
    {
      va_list ap;
      va_start (ap, fmt);
      vsnprintf (err, errlen, fmt, ap);
      va_end (ap);
    }
  return -1;
}
#define fail tally_errf

/* Copy S into BUF (SIZE bytes) for use in a message: at most SIZE - 4
   bytes of it, cut at a character boundary and marked "...", with control
   characters as '?' so that a hostile name cannot drive the terminal.  */
static const char *
printable (const char *s, char *buf, size_t size)
{
  size_t n = strlen (s), i;
  int cut = n > size - 1;
  if (cut)
    {
      n = size - 4;
      while (n && ((unsigned char) s[n] & 0xc0) == 0x80)
        n--;
    }
  for (i = 0; i < n; i++)
    {
      unsigned char c = (unsigned char) s[i];
      buf[i] = c < 0x20 || c == 0x7f ? '?' : (char) c;
    }
  if (cut)
    memcpy (buf + i, "...", 3), i += 3;
  buf[i] = 0;
  return buf;
}

static size_t
left (const struct parser *p)
{
  return p->end - p->pos;
}

static int
take_u32 (struct parser *p, uint32_t *v, const char *what)
{
  if (left (p) < 4)
    return fail (p->err, p->errlen, "%s at byte %zu runs past the end of the "
                 "records: file is corrupt", what, p->pos);
  *v = get_u32 (p->buf + p->pos);
  p->pos += 4;
  return 0;
}

static int
take_u64 (struct parser *p, uint64_t *v, const char *what)
{
  if (left (p) < 8)
    return fail (p->err, p->errlen, "%s at byte %zu runs past the end of the "
                 "records: file is corrupt", what, p->pos);
  *v = get_u64 (p->buf + p->pos);
  p->pos += 8;
  return 0;
}

/* Read a string into the pool as a NUL-terminated copy.  A string of N
   bytes takes 4 + N bytes of file and N + 1 bytes of pool, and a counter
   takes 8 of each, so a pool as large as the file always has room; the
   check below only guards that reasoning.  */
static int
take_str (struct parser *p, const char **out, const char *what)
{
  size_t at = p->pos;
  uint32_t n;
  if (take_u32 (p, &n, what) != 0)
    return -1;
  if (n > TALLY_MAX_STRING)
    return fail (p->err, p->errlen, "%s at byte %zu: string length %lu is "
                 "over the limit of %lu: file is corrupt", what, at,
                 (unsigned long) n, (unsigned long) TALLY_MAX_STRING);
  if (n > left (p))
    return fail (p->err, p->errlen, "%s at byte %zu: string of %lu bytes "
                 "runs past the end of the records: file is corrupt", what,
                 at, (unsigned long) n);
  if (memchr (p->buf + p->pos, 0, n))
    return fail (p->err, p->errlen, "%s at byte %zu: string contains a NUL "
                 "byte: file is corrupt", what, at);
  if ((size_t) n + 1 > p->pool_size - p->pool_low - p->pool_high)
    return fail (p->err, p->errlen, "%s at byte %zu: internal error: string "
                 "pool exhausted", what, at);
  p->pool_high += (size_t) n + 1;
  char *s = (char *) p->pool + (p->pool_size - p->pool_high);
  memcpy (s, p->buf + p->pos, n);
  s[n] = 0;
  p->pos += n;
  *out = s;
  return 0;
}

static int
parse_fn (struct parser *p, uint32_t mi, uint32_t fi,
          struct tally_data_fn *fn)
{
  char what[96];
#define WHAT(field) \
  (snprintf (what, sizeof what, "module %lu function %lu " field, \
             (unsigned long) mi, (unsigned long) fi), what)
  if (take_str (p, &fn->name, WHAT ("name")) != 0
      || take_str (p, &fn->symbol, WHAT ("symbol")) != 0
      || take_str (p, &fn->origin, WHAT ("origin")) != 0
      || take_str (p, &fn->file, WHAT ("file")) != 0
      || take_u32 (p, &fn->line, WHAT ("line")) != 0
      || take_u32 (p, &fn->flags, WHAT ("flags")) != 0
      || take_u32 (p, &fn->ncounters, WHAT ("counter count")) != 0
      || take_u32 (p, &fn->reserved, WHAT ("reserved field")) != 0)
    return -1;
#undef WHAT
  char sym[64];
  if (fn->ncounters < TALLY_C_CORE)
    return fail (p->err, p->errlen, "module %lu function %lu (%s): %lu "
                 "counters, at least %u required: file is corrupt",
                 (unsigned long) mi, (unsigned long) fi,
                 printable (fn->symbol, sym, sizeof sym),
                 (unsigned long) fn->ncounters, (unsigned) TALLY_C_CORE);
  if (fn->ncounters > left (p) / 8)
    return fail (p->err, p->errlen, "module %lu function %lu (%s): counter "
                 "count %lu cannot fit in the %zu bytes left: file is corrupt",
                 (unsigned long) mi, (unsigned long) fi,
                 printable (fn->symbol, sym, sizeof sym),
                 (unsigned long) fn->ncounters, left (p));
  size_t bytes = (size_t) fn->ncounters * 8;
  if (bytes > p->pool_size - p->pool_low - p->pool_high)
    return fail (p->err, p->errlen, "module %lu function %lu: internal "
                 "error: counter pool exhausted", (unsigned long) mi,
                 (unsigned long) fi);
  /* pool_low only ever grows by multiples of 8 from an aligned start.  */
  fn->counters = (uint64_t *) (void *) (p->pool + p->pool_low);
  p->pool_low += bytes;
  for (uint32_t k = 0; k < fn->ncounters; k++)
    {
      fn->counters[k] = get_u64 (p->buf + p->pos);
      p->pos += 8;
    }
  fn->map = NULL;
  fn->map_size = 0;
  if (p->version < 2)
    return 0;
  size_t at = p->pos;
  if (take_u32 (p, &fn->map_size, "block map size") != 0)
    return -1;
  if (fn->map_size > left (p))
    return fail (p->err, p->errlen, "module %lu function %lu (%s): block map "
                 "of %lu bytes at byte %zu runs past the end of the records: "
                 "file is corrupt", (unsigned long) mi, (unsigned long) fi,
                 printable (fn->symbol, sym, sizeof sym),
                 (unsigned long) fn->map_size, at);
  if (fn->map_size > p->pool_size - p->pool_low - p->pool_high)
    return fail (p->err, p->errlen, "module %lu function %lu: internal "
                 "error: pool exhausted", (unsigned long) mi,
                 (unsigned long) fi);
  p->pool_high += fn->map_size;
  unsigned char *map = p->pool + (p->pool_size - p->pool_high);
  memcpy (map, p->buf + p->pos, fn->map_size);
  p->pos += fn->map_size;
  if (fn->map_size)
    fn->map = map;
  return 0;
}

static int
parse_module (struct parser *p, uint32_t mi, struct tally_data_module *m)
{
  char what[64];
  size_t at = p->pos;
  uint32_t tag;
#define WHAT(field) \
  (snprintf (what, sizeof what, "module %lu " field, (unsigned long) mi), \
   what)
  if (take_u32 (p, &tag, WHAT ("tag")) != 0)
    return -1;
  if (tag != TALLY_TAG_MODULE)
    return fail (p->err, p->errlen, "module %lu at byte %zu: bad tag 0x%08lx "
                 "(expected 0x%08lx \"MODL\"): file is corrupt",
                 (unsigned long) mi, at, (unsigned long) tag,
                 (unsigned long) TALLY_TAG_MODULE);
  if (take_u32 (p, &m->abi_version, WHAT ("abi version")) != 0
      || take_u64 (p, &m->checksum, WHAT ("checksum")) != 0
      || take_u32 (p, &m->flags, WHAT ("flags")) != 0
      || take_u32 (p, &m->nfns, WHAT ("function count")) != 0
      || take_str (p, &m->source, WHAT ("source")) != 0
      || take_str (p, &m->directory, WHAT ("directory")) != 0)
    return -1;
#undef WHAT
  char src[64];
  if (m->nfns > left (p) / MIN_FN_BYTES)
    return fail (p->err, p->errlen, "module %lu (%s): function count %lu "
                 "cannot fit in the %zu bytes left: file is corrupt",
                 (unsigned long) mi, printable (m->source, src, sizeof src),
                 (unsigned long) m->nfns, left (p));
  if (m->nfns == 0)
    return 0;
  m->fns = calloc (m->nfns, sizeof *m->fns);
  if (!m->fns)
    return fail (p->err, p->errlen, "out of memory");
  for (uint32_t fi = 0; fi < m->nfns; fi++)
    if (parse_fn (p, mi, fi, &m->fns[fi]) != 0)
      return -1;
  return 0;
}

void
tally_data_free (struct tally_data *d)
{
  if (!d)
    return;
  if (d->modules)
    for (uint32_t i = 0; i < d->nmodules; i++)
      free (d->modules[i].fns);
  free (d->modules);
  free (d->paths);
  free (d->path_events);
  free (d->frames);
  if (d->rank_stats)
    for (uint32_t i = 0; i < d->nmodules; i++)
      {
        free (d->rank_stats[i].min);
        free (d->rank_stats[i].max);
        free (d->rank_stats[i].maxrank);
      }
  free (d->rank_stats);
  free (d->pool_);
  memset (d, 0, sizeof *d);
}

/* The magic check alone, so that tally_read_file can give up on a stream
   of something else before reading all of it.  */
static int
magic_ok (const unsigned char *buf, size_t len)
{
  size_t n = len < TALLY_FILE_MAGIC_LEN ? len : TALLY_FILE_MAGIC_LEN;
  return memcmp (buf, TALLY_FILE_MAGIC, n) == 0;
}

/* Everything up to the records: header, trailer, CRC.  */
static int
check_envelope (const unsigned char *buf, size_t len, char *err,
                size_t errlen)
{
  if (len == 0)
    return fail (err, errlen, "file is empty (0 bytes)");
  if (!magic_ok (buf, len))
    return fail (err, errlen, "not a tally data file (it does not start "
                 "with \"%s\")", TALLY_FILE_MAGIC);
  if (len < TALLY_HEADER_FIXED)
    return fail (err, errlen, "truncated: too short for a tally data file "
                 "header (%zu bytes, the header alone is %u)", len,
                 (unsigned) TALLY_HEADER_FIXED);

  /* The byte-order mark first: in a big-endian file every other field,
     the version included, reads as garbage.  */
  uint32_t bom = get_u32 (buf + OFF_BOM);
  if (bom == BOM_SWAPPED)
    return fail (err, errlen, "written on a big-endian machine (wrong byte "
                 "order); this tally reads little-endian files only");
  if (bom != TALLY_BYTE_ORDER_MARK)
    return fail (err, errlen, "bad byte-order mark 0x%08lx (expected "
                 "0x%08lx): file is corrupt", (unsigned long) bom,
                 (unsigned long) TALLY_BYTE_ORDER_MARK);
  uint32_t version = get_u32 (buf + OFF_VERSION);
  if (version < TALLY_FILE_VERSION_MIN || version > TALLY_FILE_VERSION_CONT)
    return fail (err, errlen, "unsupported format version %lu (this tally "
                 "reads versions %u to %u)", (unsigned long) version,
                 (unsigned) TALLY_FILE_VERSION_MIN,
                 (unsigned) TALLY_FILE_VERSION_CONT);
  if (version == TALLY_FILE_VERSION_CONT)
    return 1; /* continuous: no size, no trailer (parse_continuous) */

  uint64_t size = get_u64 (buf + OFF_SIZE);
  if (size > len)
    return fail (err, errlen, "truncated: header says %llu bytes, file has "
                 "%zu", (unsigned long long) size, len);
  if (size < len)
    return fail (err, errlen, "%zu trailing bytes: header says %llu bytes, "
                 "file has %zu", len - (size_t) size,
                 (unsigned long long) size, len);
  if (len < MIN_FILE_BYTES)
    return fail (err, errlen, "too short: %zu bytes, a tally data file has at "
                 "least %u: file is corrupt", len, (unsigned) MIN_FILE_BYTES);

  size_t tpos = len - TALLY_TRAILER_SIZE;
  uint32_t tag = get_u32 (buf + tpos);
  if (tag != TALLY_TAG_END)
    return fail (err, errlen, "bad trailer tag 0x%08lx at byte %zu (expected "
                 "0x%08lx \"TEND\"): file is corrupt", (unsigned long) tag,
                 tpos, (unsigned long) TALLY_TAG_END);
  uint64_t tsize = get_u64 (buf + tpos + 8);
  if (tsize != size)
    return fail (err, errlen, "trailer says the file has %llu bytes, header "
                 "says %llu: file is corrupt", (unsigned long long) tsize,
                 (unsigned long long) size);
  uint32_t stored = get_u32 (buf + tpos + 4);
  uint32_t actual = tally_crc32 (0, buf, tpos);
  if (stored != actual)
    return fail (err, errlen, "checksum mismatch: file is corrupt (stored "
                 "0x%08lx, computed 0x%08lx)", (unsigned long) stored,
                 (unsigned long) actual);
  return 0;
}

/* The optional MEAS record (measure=cycles) after the modules: per module
   record, in order, its functions' inclusive and exclusive values.  */
static int
parse_meas (struct parser *p, struct tally_data *d)
{
  size_t at = p->pos;
  uint32_t tag, nvalues, nrecords;
  if (take_u32 (p, &tag, "measurement tag") != 0
      || take_u32 (p, &nvalues, "measurement value count") != 0)
    return -1;
  if (nvalues == 0 || nvalues > TALLY_MAX_MEAS)
    return fail (p->err, p->errlen, "measurement record at byte %zu: %lu "
                 "values per function, expected 1 to %u: file is corrupt",
                 at, (unsigned long) nvalues, (unsigned) TALLY_MAX_MEAS);
  for (uint32_t v = 0; v < nvalues; v++)
    if (take_str (p, &d->meas_names[v], "measurement value name") != 0)
      return -1;
  if (take_u32 (p, &nrecords, "measurement module count") != 0)
    return -1;
  if (nrecords != d->nmodules)
    return fail (p->err, p->errlen, "measurement record at byte %zu covers "
                 "%lu modules, the file holds %lu: file is corrupt", at,
                 (unsigned long) nrecords, (unsigned long) d->nmodules);
  for (uint32_t mi = 0; mi < d->nmodules; mi++)
    {
      struct tally_data_module *m = &d->modules[mi];
      uint32_t nfns;
      if (take_u32 (p, &nfns, "measurement function count") != 0)
        return -1;
      if (nfns != m->nfns)
        return fail (p->err, p->errlen, "measurement record: module %lu has "
                     "%lu functions, the record gives %lu: file is corrupt",
                     (unsigned long) mi, (unsigned long) m->nfns,
                     (unsigned long) nfns);
      size_t per_fn = (size_t) nvalues * 16;
      if (nfns > left (p) / per_fn)
        return fail (p->err, p->errlen, "measurement record: module %lu's "
                     "values run past the end of the records: file is "
                     "corrupt", (unsigned long) mi);
      for (uint32_t fi = 0; fi < nfns; fi++)
        {
          if (per_fn > p->pool_size - p->pool_low - p->pool_high)
            return fail (p->err, p->errlen, "internal error: measurement "
                         "pool exhausted");
          uint64_t *vals = (uint64_t *) (void *) (p->pool + p->pool_low);
          p->pool_low += per_fn;
          for (uint32_t k = 0; k < 2 * nvalues; k++)
            {
              vals[k] = get_u64 (p->buf + p->pos);
              p->pos += 8;
            }
          for (uint32_t v = 0; v < nvalues; v++)
            if (vals[2 * v + 1] > vals[2 * v])
              return fail (p->err, p->errlen, "measurement record: module "
                           "%lu function %lu: exclusive %s above inclusive: "
                           "file is corrupt", (unsigned long) mi,
                           (unsigned long) fi, d->meas_names[v]);
          m->fns[fi].meas = vals;
        }
    }
  d->nmeas = nvalues;
  return 0;
}

/* The optional FRMS record (paths=on with libunwind), before PATH.  */
static int
parse_frames (struct parser *p, struct tally_data *d)
{
  size_t at = p->pos;
  uint32_t tag, n;
  if (take_u32 (p, &tag, "frames tag") != 0
      || take_u32 (p, &n, "frame count") != 0)
    return -1;
  if (n == 0 || n > left (p) / 16)
    return fail (p->err, p->errlen, "frames record at byte %zu: %lu frames "
                 "cannot be, or fit in the %zu bytes left: file is corrupt",
                 at, (unsigned long) n, left (p));
  d->frames = calloc (n, sizeof *d->frames);
  if (!d->frames)
    return fail (p->err, p->errlen, "out of memory");
  d->nframes = n;
  for (uint32_t i = 0; i < n; i++)
    {
      struct tally_data_frame *f = &d->frames[i];
      if (take_u32 (p, &f->id, "frame id") != 0
          || take_u64 (p, &f->addr, "frame address") != 0
          || take_str (p, &f->name, "frame name") != 0)
        return -1;
      if (f->id < TALLY_FRAME_ID_BASE || (i && f->id <= f[-1].id))
        return fail (p->err, p->errlen, "frame %lu: id %#lx is below %#lx "
                     "or not above the one before: file is corrupt",
                     (unsigned long) i, (unsigned long) f->id,
                     (unsigned long) TALLY_FRAME_ID_BASE);
    }
  return 0;
}

/* The index of the frame with id ID in D's FRMS record, or UINT32_MAX.  */
static uint32_t
find_frame (const struct tally_data *d, uint32_t id)
{
  uint32_t lo = 0, hi = d->nframes;
  while (lo < hi)
    {
      uint32_t mid = lo + (hi - lo) / 2;
      if (d->frames[mid].id == id)
        return mid;
      if (d->frames[mid].id < id)
        lo = mid + 1;
      else
        hi = mid;
    }
  return UINT32_MAX;
}

/* The optional PATH record (paths=on), after MEAS and FRMS.  */
static int
parse_paths (struct parser *p, struct tally_data *d)
{
  size_t at = p->pos;
  uint32_t tag, nrecords, n;
  if (take_u32 (p, &tag, "path tag") != 0
      || take_u32 (p, &d->path_depth, "path depth limit") != 0
      || take_u64 (p, &d->path_lost, "lost path count") != 0
      || take_u32 (p, &nrecords, "path module count") != 0)
    return -1;
  if (d->path_depth > TALLY_PATH_DEPTH_MAX)
    return fail (p->err, p->errlen, "path record at byte %zu: depth limit "
                 "%lu is above %u: file is corrupt", at,
                 (unsigned long) d->path_depth, TALLY_PATH_DEPTH_MAX);
  if (nrecords != d->nmodules)
    return fail (p->err, p->errlen, "path record at byte %zu covers %lu "
                 "modules, the file holds %lu: file is corrupt", at,
                 (unsigned long) nrecords, (unsigned long) d->nmodules);
  if (nrecords > left (p) / 4)
    return fail (p->err, p->errlen, "path record at byte %zu: module bases "
                 "run past the end of the records: file is corrupt", at);
  uint32_t *bases = calloc (nrecords + 1, sizeof *bases), *depth = NULL;
  if (!bases)
    return fail (p->err, p->errlen, "out of memory");
  for (uint32_t i = 0; i < nrecords; i++)
    {
      bases[i] = get_u32 (p->buf + p->pos);
      p->pos += 4;
    }
  int rc = -1;
  if (take_u32 (p, &n, "path node count") != 0)
    goto out;
  if (n > left (p) / 32)
    {
      fail (p->err, p->errlen, "path record at byte %zu: %lu nodes cannot "
            "fit in the %zu bytes left: file is corrupt", at,
            (unsigned long) n, left (p));
      goto out;
    }
  d->paths = calloc ((size_t) n + 1, sizeof *d->paths);
  /* Each node's depth (the root's is 0): none deeper than the limit, so
     the tools' tree walks and printed paths stay bounded.  */
  depth = calloc ((size_t) n + 1, sizeof *depth);
  if (!d->paths || !depth)
    {
      fail (p->err, p->errlen, "out of memory");
      goto out;
    }
  d->paths[0].parent = d->paths[0].module = d->paths[0].fn = UINT32_MAX;
  for (uint32_t i = 1; i <= n; i++)
    {
      struct tally_data_path *q = &d->paths[i];
      const unsigned char *b = p->buf + p->pos;
      uint32_t id = get_u32 (b + 4);
      q->parent = get_u32 (b);
      q->calls = get_u64 (b + 8);
      q->incl = get_u64 (b + 16);
      q->excl = get_u64 (b + 24);
      p->pos += 32;
      q->module = q->fn = UINT32_MAX;
      if (q->parent >= i)
        {
          fail (p->err, p->errlen, "path node %lu: parent %lu is not an "
                "earlier node: file is corrupt", (unsigned long) i,
                (unsigned long) q->parent);
          goto out;
        }
      depth[i] = depth[q->parent] + 1;
      if (depth[i] > d->path_depth)
        {
          fail (p->err, p->errlen, "path node %lu is %lu calls deep, deeper "
                "than the file's depth limit %lu: file is corrupt",
                (unsigned long) i, (unsigned long) depth[i],
                (unsigned long) d->path_depth);
          goto out;
        }
      if (q->excl > q->incl)
        {
          fail (p->err, p->errlen, "path node %lu: exclusive cycles above "
                "inclusive: file is corrupt", (unsigned long) i);
          goto out;
        }
      if (id == UINT32_MAX)
        {
          if (q->calls || q->incl)
            {
              fail (p->err, p->errlen, "path node %lu has values but no "
                    "function: file is corrupt", (unsigned long) i);
              goto out;
            }
          continue;
        }
      if (id >= TALLY_FRAME_ID_BASE)
        {
          q->fn = find_frame (d, id);
          if (q->fn == UINT32_MAX)
            {
              fail (p->err, p->errlen, "path node %lu: outside frame %#lx is "
                    "not in the frames record: file is corrupt",
                    (unsigned long) i, (unsigned long) id);
              goto out;
            }
          if (q->calls || q->incl)
            {
              fail (p->err, p->errlen, "path node %lu: an outside frame "
                    "with values: file is corrupt", (unsigned long) i);
              goto out;
            }
          q->module = TALLY_DATA_FRAME;
          continue;
        }
      for (uint32_t m = 0; m < nrecords && q->module == UINT32_MAX; m++)
        if (bases[m] != UINT32_MAX && id >= bases[m]
            && id - bases[m] < d->modules[m].nfns)
          {
            q->module = m;
            q->fn = id - bases[m];
          }
      if (q->module == UINT32_MAX)
        {
          fail (p->err, p->errlen, "path node %lu: function id %lu is in no "
                "module: file is corrupt", (unsigned long) i,
                (unsigned long) id);
          goto out;
        }
    }
  d->npaths = n + 1;
  rc = 0;
out:
  free (bases);
  free (depth);
  return rc;
}

/* The optional PEVT record (paths=on with measure=papi), after PATH: the
   events of each node.  Values of a node without a function are ignored
   (the writer may have seen it filled after it wrote PATH).  */
static int
parse_path_events (struct parser *p, struct tally_data *d)
{
  size_t at = p->pos;
  uint32_t tag, e, n;
  if (take_u32 (p, &tag, "path events tag") != 0
      || take_u32 (p, &e, "path event count") != 0
      || take_u32 (p, &n, "path events node count") != 0)
    return -1;
  if (e == 0 || e + 1 != d->nmeas)
    return fail (p->err, p->errlen, "path events record at byte %zu: %lu "
                 "events, the measurement record names %lu: file is corrupt",
                 at, (unsigned long) e,
                 (unsigned long) (d->nmeas ? d->nmeas - 1 : 0));
  if ((uint64_t) n + 1 != d->npaths)
    return fail (p->err, p->errlen, "path events record at byte %zu covers "
                 "%lu nodes, the path record has %lu: file is corrupt", at,
                 (unsigned long) n, (unsigned long) (d->npaths - 1));
  if (n && n > left (p) / ((size_t) e * 16))
    return fail (p->err, p->errlen, "path events record at byte %zu: the "
                 "values run past the end of the records: file is corrupt",
                 at);
  d->path_events = calloc ((size_t) d->npaths * e * 2, sizeof *d->path_events);
  if (!d->path_events)
    return fail (p->err, p->errlen, "out of memory");
  for (uint32_t i = 1; i <= n; i++)
    for (uint32_t k = 0; k < e; k++)
      {
        uint64_t incl = get_u64 (p->buf + p->pos);
        uint64_t excl = get_u64 (p->buf + p->pos + 8);
        p->pos += 16;
        if (excl > incl)
          return fail (p->err, p->errlen, "path node %lu: exclusive %s above "
                       "inclusive: file is corrupt", (unsigned long) i,
                       d->meas_names[k + 1]);
        if (d->paths[i].module == UINT32_MAX
            || d->paths[i].module == TALLY_DATA_FRAME)
          continue;
        d->path_events[((size_t) i * e + k) * 2] = incl;
        d->path_events[((size_t) i * e + k) * 2 + 1] = excl;
      }
  d->path_nevents = e;
  return 0;
}

/* The optional RNKS record (libtally-mpi), last: per module record the
   per-rank minimum, maximum and rank of the maximum of every value.  */
static int
parse_ranks (struct parser *p, struct tally_data *d)
{
  size_t at = p->pos;
  uint32_t tag, version, size, nrecords;
  if (take_u32 (p, &tag, "ranks tag") != 0
      || take_u32 (p, &version, "ranks record version") != 0
      || take_u32 (p, &size, "job size") != 0
      || take_u32 (p, &nrecords, "ranks module count") != 0)
    return -1;
  if (version != TALLY_RANKS_VERSION)
    return fail (p->err, p->errlen, "ranks record at byte %zu has version "
                 "%lu; this tally reads version %u", at,
                 (unsigned long) version, (unsigned) TALLY_RANKS_VERSION);
  if (size == 0)
    return fail (p->err, p->errlen, "ranks record at byte %zu: a job of 0 "
                 "ranks: file is corrupt", at);
  if (nrecords != d->nmodules)
    return fail (p->err, p->errlen, "ranks record at byte %zu covers %lu "
                 "modules, the file holds %lu: file is corrupt", at,
                 (unsigned long) nrecords, (unsigned long) d->nmodules);
  d->rank_stats = calloc (d->nmodules ? d->nmodules : 1, sizeof *d->rank_stats);
  if (!d->rank_stats)
    return fail (p->err, p->errlen, "out of memory");
  d->ranks = size;
  for (uint32_t mi = 0; mi < d->nmodules; mi++)
    {
      struct tally_data_module *m = &d->modules[mi];
      struct tally_data_ranks *r = &d->rank_stats[mi];
      uint32_t reserved;
      uint64_t nvalues = 0, want = 0;
      if (take_u32 (p, &r->nranks, "ranks holding a module") != 0
          || take_u32 (p, &reserved, "ranks reserved field") != 0
          || take_u64 (p, &nvalues, "ranks value count") != 0)
        return -1;
      for (uint32_t fi = 0; fi < m->nfns; fi++)
        want += m->fns[fi].ncounters + 2 * (uint64_t) d->nmeas;
      if (r->nranks == 0 || r->nranks > size)
        return fail (p->err, p->errlen, "ranks record: module %lu is held by "
                     "%lu ranks of %lu: file is corrupt", (unsigned long) mi,
                     (unsigned long) r->nranks, (unsigned long) size);
      if (nvalues != want)
        return fail (p->err, p->errlen, "ranks record: module %lu has %llu "
                     "values, the record gives %llu: file is corrupt",
                     (unsigned long) mi, (unsigned long long) want,
                     (unsigned long long) nvalues);
      if (nvalues > left (p) / TALLY_RANKS_VALUE)
        return fail (p->err, p->errlen, "ranks record: module %lu's values "
                     "run past the end of the records: file is corrupt",
                     (unsigned long) mi);
      r->nvalues = nvalues;
      size_t n = nvalues ? (size_t) nvalues : 1;
      r->min = malloc (n * sizeof *r->min);
      r->max = malloc (n * sizeof *r->max);
      r->maxrank = malloc (n * sizeof *r->maxrank);
      if (!r->min || !r->max || !r->maxrank)
        return fail (p->err, p->errlen, "out of memory");
      for (uint64_t k = 0; k < nvalues; k++)
        {
          const unsigned char *q = p->buf + p->pos;
          r->min[k] = get_u64 (q);
          r->max[k] = get_u64 (q + 8);
          r->maxrank[k] = get_u32 (q + 16);
          p->pos += TALLY_RANKS_VALUE;
          if (r->min[k] > r->max[k] || r->maxrank[k] >= size)
            return fail (p->err, p->errlen, "ranks record: module %lu value "
                         "%llu: min %llu, max %llu at rank %lu of %lu: file "
                         "is corrupt", (unsigned long) mi,
                         (unsigned long long) k, (unsigned long long) r->min[k],
                         (unsigned long long) r->max[k],
                         (unsigned long) r->maxrank[k], (unsigned long) size);
        }
    }
  return 0;
}

static int
parse_records (struct parser *p, struct tally_data *d)
{
  if (take_str (p, &d->program, "program name") != 0)
    return -1;
  if (d->nmodules > left (p) / MIN_MODULE_BYTES)
    return fail (p->err, p->errlen, "module count in the header, %lu, "
                 "cannot fit in the %zu bytes left: file is corrupt",
                 (unsigned long) d->nmodules, left (p));
  if (d->nmodules)
    {
      d->modules = calloc (d->nmodules, sizeof *d->modules);
      if (!d->modules)
        return fail (p->err, p->errlen, "out of memory");
    }
  for (uint32_t mi = 0; mi < d->nmodules; mi++)
    {
      if (left (p) == 0)
        return fail (p->err, p->errlen, "module count in the header is %lu, "
                     "but the file holds %lu: file is corrupt",
                     (unsigned long) d->nmodules, (unsigned long) mi);
      if (parse_module (p, mi, &d->modules[mi]) != 0)
        return -1;
    }
  if (left (p) >= 4 && get_u32 (p->buf + p->pos) == TALLY_TAG_MODULE)
    return fail (p->err, p->errlen, "module count in the header is %lu, "
                 "but the file holds more: file is corrupt",
                 (unsigned long) d->nmodules);
  if (left (p) >= 4 && get_u32 (p->buf + p->pos) == TALLY_TAG_MEAS
      && parse_meas (p, d) != 0)
    return -1;
  if (left (p) >= 4 && get_u32 (p->buf + p->pos) == TALLY_TAG_FRAMES
      && parse_frames (p, d) != 0)
    return -1;
  if (left (p) >= 4 && get_u32 (p->buf + p->pos) == TALLY_TAG_PATH
      && parse_paths (p, d) != 0)
    return -1;
  if (left (p) >= 4 && get_u32 (p->buf + p->pos) == TALLY_TAG_PATH_EVENTS)
    {
      if (!d->npaths)
        return fail (p->err, p->errlen, "a path events record without a "
                     "path record: file is corrupt");
      if (parse_path_events (p, d) != 0)
        return -1;
    }
  if (d->nframes && !d->npaths)
    return fail (p->err, p->errlen, "a frames record without a path record: "
                 "file is corrupt");
  if (left (p) >= 4 && get_u32 (p->buf + p->pos) == TALLY_TAG_RANKS
      && parse_ranks (p, d) != 0)
    return -1;
  if (left (p) != 0)
    return fail (p->err, p->errlen, "%zu unexpected bytes at byte %zu, "
                 "before the trailer: file is corrupt", left (p), p->pos);
  return 0;
}

/* Continuous files (version 3, TALLY_OUTPUT with %c): the header, then
   chunks up to the end of the file.  Every CMOD chunk is a module whose
   values are read from its region; per session, the last DUMP chunk is a
   whole version 2 file holding the other modules.  A last chunk that runs
   past the end of the file was being written when the writer died: it is
   left out.  Anything else out of place is an error, as in other files.  */

struct chunk
{
  size_t at, len;   /* offset and bytes in the file */
  uint32_t tag;
  uint32_t session; /* DUMP */
  int use;          /* DUMP: the last complete one of its session */
};

/* Check the CMOD chunk at C (whose LEN bytes are in the file) and parse its
   record into M with the region's values.  */
static int
parse_cmod (struct parser *p, const struct chunk *c, uint32_t mi,
            struct tally_data_module *m)
{
  const unsigned char *b = p->buf + c->at;
  if (c->len < TALLY_CMOD_FIXED)
    return fail (p->err, p->errlen, "chunk at byte %zu: %zu bytes, too short "
                 "for a module chunk: file is corrupt", c->at, c->len);
  uint64_t roff = get_u64 (b + 16), rsize = get_u64 (b + 24);
  uint32_t nfns = get_u32 (b + 32), rec = get_u32 (b + 36);
  if (nfns > (c->len - TALLY_CMOD_FIXED) / TALLY_CMOD_FN)
    return fail (p->err, p->errlen, "module chunk at byte %zu: %lu functions "
                 "do not fit in it: file is corrupt", c->at,
                 (unsigned long) nfns);
  size_t head = TALLY_CMOD_FIXED + (size_t) nfns * TALLY_CMOD_FN;
  if (rec > c->len - head)
    return fail (p->err, p->errlen, "module chunk at byte %zu: its record "
                 "runs past the chunk: file is corrupt", c->at);
  head += rec;
  if (roff < head || roff > c->len || rsize != c->len - roff)
    return fail (p->err, p->errlen, "module chunk at byte %zu: region at "
                 "%llu, %llu bytes, is not the rest of the chunk (a chunk of "
                 "%zu bytes whose record ends at %zu): file is corrupt", c->at,
                 (unsigned long long) roff, (unsigned long long) rsize,
                 c->len, head);
  uint32_t crc = tally_crc32 (0, b + 8, head - 8);
  if (crc != get_u32 (b + 4))
    return fail (p->err, p->errlen, "module chunk at byte %zu: checksum "
                 "mismatch (stored 0x%08lx, computed 0x%08lx): file is "
                 "corrupt", c->at, (unsigned long) get_u32 (b + 4),
                 (unsigned long) crc);
  struct parser q = *p;
  q.pos = c->at + head - rec;
  q.end = c->at + head;
  q.version = TALLY_FILE_VERSION;
  if (parse_module (&q, mi, m) != 0)
    {
      p->pool_low = q.pool_low;
      p->pool_high = q.pool_high;
      return -1;
    }
  p->pool_low = q.pool_low;
  p->pool_high = q.pool_high;
  if (q.pos != q.end)
    return fail (p->err, p->errlen, "module chunk at byte %zu: %zu bytes "
                 "after its record: file is corrupt", c->at, q.end - q.pos);
  if (m->nfns != nfns)
    return fail (p->err, p->errlen, "module chunk at byte %zu: table of %lu "
                 "functions, record of %lu: file is corrupt", c->at,
                 (unsigned long) nfns, (unsigned long) m->nfns);
  const unsigned char *region = b + roff;
  for (uint32_t fi = 0; fi < nfns; fi++)
    {
      const unsigned char *t = b + TALLY_CMOD_FIXED + (size_t) fi * TALLY_CMOD_FN;
      uint64_t coff = get_u64 (t), voff = get_u64 (t + 8);
      uint32_t nc = get_u32 (t + 16), nv = get_u32 (t + 20);
      struct tally_data_fn *fn = &m->fns[fi];
      if ((uint64_t) nc + nv != fn->ncounters || nc < TALLY_C_CORE)
        return fail (p->err, p->errlen, "module chunk at byte %zu function "
                     "%lu: %lu counters and %lu visited bytes, the record "
                     "has %lu values: file is corrupt", c->at,
                     (unsigned long) fi, (unsigned long) nc,
                     (unsigned long) nv, (unsigned long) fn->ncounters);
      if (coff > rsize || nc > (rsize - coff) / 8 || coff % 8)
        return fail (p->err, p->errlen, "module chunk at byte %zu function "
                     "%lu: counters at %llu run past its region of %llu "
                     "bytes (or are not aligned): file is corrupt", c->at,
                     (unsigned long) fi, (unsigned long long) coff,
                     (unsigned long long) rsize);
      if (nv && (voff > rsize || nv > rsize - voff))
        return fail (p->err, p->errlen, "module chunk at byte %zu function "
                     "%lu: visited bytes at %llu run past its region of %llu "
                     "bytes: file is corrupt", c->at, (unsigned long) fi,
                     (unsigned long long) voff, (unsigned long long) rsize);
      if (!nv && voff != UINT64_MAX)
        return fail (p->err, p->errlen, "module chunk at byte %zu function "
                     "%lu: visited offset without visited bytes: file is "
                     "corrupt", c->at, (unsigned long) fi);
      /* The region is the writer's memory: host byte order, which the
         byte-order mark already showed to be little-endian.  */
      for (uint32_t k = 0; k < nc; k++)
        fn->counters[k] = get_u64 (region + coff + (size_t) k * 8);
      for (uint32_t k = 0; k < nv; k++)
        fn->counters[nc + k] = region[voff + k] != 0;
    }
  return 0;
}

/* Move the modules (and measurements, paths, frames) of image I into D
   from module index *MI on.  */
static int
take_image (struct tally_data *d, struct tally_data *img, uint32_t *mi,
            char *err, size_t errlen)
{
  for (uint32_t i = 0; i < img->nmodules; i++)
    d->modules[(*mi)++] = img->modules[i];
  free (img->modules);
  img->modules = NULL;
  if (img->nmeas || img->npaths || img->nframes)
    {
      if (d->nmeas || d->npaths || d->nframes)
        return fail (err, errlen, "two process images (before and after "
                     "exec) both with measurements: not supported");
      d->nmeas = img->nmeas;
      memcpy (d->meas_names, img->meas_names, sizeof d->meas_names);
      /* Path nodes name modules by index: shift them to where the image's
         modules now are.  */
      uint32_t base = *mi - img->nmodules;
      for (uint32_t n = 0; n < img->npaths; n++)
        if (img->paths[n].module < TALLY_DATA_FRAME)
          img->paths[n].module += base;
      d->paths = img->paths;
      d->npaths = img->npaths;
      d->path_depth = img->path_depth;
      d->path_lost = img->path_lost;
      d->frames = img->frames;
      d->nframes = img->nframes;
      img->paths = NULL;
      img->frames = NULL;
    }
  if (img->time > d->time)
    d->time = img->time;
  return 0;
}

static int
parse_continuous (const unsigned char *buf, size_t len,
                  struct tally_data *out, char *err, size_t errlen)
{
  out->version = TALLY_FILE_VERSION_CONT;
  out->byte_order = get_u32 (buf + OFF_BOM);
  out->file_size = len;
  out->pid = get_u64 (buf + OFF_PID);
  out->time = get_u64 (buf + OFF_TIME);
  out->flags = get_u32 (buf + OFF_FLAGS);
  if (get_u64 (buf + OFF_SIZE) != 0 || get_u32 (buf + OFF_NMODULES) != 0
      || !(out->flags & TALLY_FILE_CONTINUOUS))
    return fail (err, errlen, "version 3 header without the continuous "
                 "flag, or with a size or module count: file is corrupt");
  size_t words = len / 8 + 1;
  out->pool_ = malloc (words * 8);
  struct chunk *chunks = NULL;
  size_t nchunks = 0, cap = 0;
  int rc = -1;
  if (!out->pool_)
    {
      fail (err, errlen, "out of memory");
      goto out;
    }
  struct parser p = { buf, TALLY_HEADER_FIXED, len, out->pool_, words * 8,
                      0, 0, TALLY_FILE_VERSION, err, errlen };
  uint64_t start;
  if (take_str (&p, &out->program, "program name") != 0
      || take_u64 (&p, &start, "process start") != 0)
    goto out;

  /* 1. The chunks.  */
  int cut = 0;
  uint32_t session = 0;
  while (p.pos < len)
    {
      struct chunk c = { p.pos, 0, 0, 0, 0 };
      if (len - p.pos < TALLY_DUMP_FIXED)
        {
          cut = 1;
          break;
        }
      c.tag = get_u32 (buf + p.pos);
      uint64_t n = get_u64 (buf + p.pos + 8);
      if (c.tag == TALLY_TAG_DUMP)
        {
          c.session = get_u32 (buf + p.pos + 4);
          n = n > UINT64_MAX - TALLY_DUMP_FIXED ? UINT64_MAX
                                                : n + TALLY_DUMP_FIXED;
        }
      else if (c.tag != TALLY_TAG_CMOD)
        {
          fail (err, errlen, "chunk at byte %zu: bad tag 0x%08lx (expected "
                "\"CMOD\" or \"DUMP\"): file is corrupt", p.pos,
                (unsigned long) c.tag);
          goto out;
        }
      if (n > len - p.pos)
        {
          cut = 1;
          break;
        }
      if (n < TALLY_DUMP_FIXED)
        {
          fail (err, errlen, "chunk at byte %zu: length %llu is too short: "
                "file is corrupt", p.pos, (unsigned long long) n);
          goto out;
        }
      c.len = (size_t) n;
      if (nchunks == cap)
        {
          cap = cap ? cap * 2 : 16;
          struct chunk *nc = realloc (chunks, cap * sizeof *chunks);
          if (!nc)
            {
              fail (err, errlen, "out of memory");
              goto out;
            }
          chunks = nc;
        }
      /* Each exec'd image appends after the one before: sessions never go
         down, which lets step 2 pick images in one pass.  */
      if (c.tag == TALLY_TAG_DUMP && c.session < session)
        {
          fail (err, errlen, "dump chunk at byte %zu: session %lu after "
                "session %lu: file is corrupt", c.at,
                (unsigned long) c.session, (unsigned long) session);
          goto out;
        }
      if (c.tag == TALLY_TAG_DUMP)
        session = c.session;
      chunks[nchunks++] = c;
      p.pos += c.len;
    }
  if (cut)
    out->flags |= TALLY_DATA_CUT;

  /* 2. Which images count: per session the last one, and the file is
     complete when the last session's was written at exit.  */
  uint32_t nmods = 0, last_session = 0;
  int any_dump = 0;
  for (size_t i = nchunks; i-- > 0;)
    {
      if (chunks[i].tag == TALLY_TAG_CMOD)
        {
          if (nmods == UINT32_MAX)
            goto toomany;
          nmods++;
          continue;
        }
      if (any_dump && chunks[i].session == last_session)
        continue; /* a later image of its session is used */
      chunks[i].use = 1;
      const unsigned char *img = buf + chunks[i].at + TALLY_DUMP_FIXED;
      size_t ilen = chunks[i].len - TALLY_DUMP_FIXED;
      if (ilen < TALLY_HEADER_FIXED
          || memcmp (img, TALLY_FILE_MAGIC, TALLY_FILE_MAGIC_LEN) != 0
          || get_u32 (img + OFF_VERSION) != TALLY_FILE_VERSION)
        {
          fail (err, errlen, "dump chunk at byte %zu does not hold a "
                "version %u data file: file is corrupt", chunks[i].at,
                (unsigned) TALLY_FILE_VERSION);
          goto out;
        }
      uint32_t n = get_u32 (img + OFF_NMODULES);
      if (n > UINT32_MAX - nmods)
        goto toomany;
      nmods += n;
      /* The first image met (the file's last) tells whether the last
         process image finished.  */
      if (!any_dump && (get_u32 (img + OFF_FLAGS) & TALLY_FILE_AT_EXIT))
        out->flags |= TALLY_FILE_AT_EXIT;
      last_session = chunks[i].session;
      any_dump = 1;
    }
  if (!(out->flags & TALLY_FILE_AT_EXIT))
    out->flags |= TALLY_DATA_UNFINISHED;
  if (nmods > len / MIN_MODULE_BYTES)
    {
    toomany:
      fail (err, errlen, "more modules than the file can hold: file is "
            "corrupt");
      goto out;
    }

  /* 3. The modules: the images' first (their measurements and paths
     index them), then the regions'.  */
  if (nmods)
    {
      out->modules = calloc (nmods, sizeof *out->modules);
      if (!out->modules)
        {
          fail (err, errlen, "out of memory");
          goto out;
        }
    }
  uint32_t mi = 0;
  for (size_t i = 0; i < nchunks; i++)
    if (chunks[i].use)
      {
        const unsigned char *img = buf + chunks[i].at + TALLY_DUMP_FIXED;
        size_t ilen = chunks[i].len - TALLY_DUMP_FIXED;
        char why[256];
        struct tally_data d;
        memset (&d, 0, sizeof d);
        if (check_envelope (img, ilen, why, sizeof why) != 0)
          {
            fail (err, errlen, "dump chunk at byte %zu: %s", chunks[i].at,
                  why);
            goto out;
          }
        d.nmodules = get_u32 (img + OFF_NMODULES);
        d.time = get_u64 (img + OFF_TIME);
        struct parser q = { img, TALLY_HEADER_FIXED,
                            ilen - TALLY_TRAILER_SIZE, p.pool, p.pool_size,
                            p.pool_low, p.pool_high, TALLY_FILE_VERSION, why,
                            sizeof why };
        int r = parse_records (&q, &d);
        p.pool_low = q.pool_low;
        p.pool_high = q.pool_high;
        if (r == 0)
          r = take_image (out, &d, &mi, why, sizeof why);
        out->nmodules = mi;
        if (d.modules)
          for (uint32_t k = 0; k < d.nmodules; k++)
            free (d.modules[k].fns);
        free (d.modules);
        free (d.paths);
        free (d.frames);
        if (r != 0)
          {
            fail (err, errlen, "dump chunk at byte %zu: %s", chunks[i].at,
                  why);
            goto out;
          }
      }
  for (size_t i = 0; i < nchunks; i++)
    if (chunks[i].tag == TALLY_TAG_CMOD)
      {
        int r = parse_cmod (&p, &chunks[i], mi, &out->modules[mi]);
        out->nmodules = ++mi;
        if (r != 0)
          goto out;
      }
  out->nmodules = mi;
  rc = 0;
out:
  free (chunks);
  if (rc != 0)
    tally_data_free (out);
  return rc;
}

int
tally_parse_buffer (const unsigned char *buf, size_t len,
                    struct tally_data *out, char *err, size_t errlen)
{
  memset (out, 0, sizeof *out);
  if (!buf)
    len = 0;
  int env = check_envelope (buf, len, err, errlen);
  if (env < 0)
    return -1;
  if (env == 1)
    return parse_continuous (buf, len, out, err, errlen);

  out->version = get_u32 (buf + OFF_VERSION);
  out->byte_order = get_u32 (buf + OFF_BOM);
  out->file_size = get_u64 (buf + OFF_SIZE);
  out->pid = get_u64 (buf + OFF_PID);
  out->time = get_u64 (buf + OFF_TIME);
  out->nmodules = get_u32 (buf + OFF_NMODULES);
  out->flags = get_u32 (buf + OFF_FLAGS);
  out->crc = get_u32 (buf + len - TALLY_TRAILER_SIZE + 4);

  /* Allocated as u64 so that the counters at its start are aligned.  */
  size_t words = len / 8 + 1;
  out->pool_ = malloc (words * 8);
  if (!out->pool_)
    {
      tally_data_free (out);
      return fail (err, errlen, "out of memory");
    }
  struct parser p = { buf, TALLY_HEADER_FIXED, len - TALLY_TRAILER_SIZE,
                      out->pool_, words * 8, 0, 0, out->version, err, errlen };
  if (parse_records (&p, out) != 0)
    {
      tally_data_free (out);
      return -1;
    }
  return 0;
}

int
tally_read_file (const char *path, struct tally_data *out, char *err,
                 size_t errlen)
{
  memset (out, 0, sizeof *out);
  FILE *f = fopen (path, "rb");
  if (!f)
    return fail (err, errlen, "%s", strerror (errno));

  unsigned char *buf = NULL;
  size_t len = 0, cap = 0;
  int rc = 0;
  for (;;)
    {
      if (len == cap)
        {
          if (cap == MAX_FILE_BYTES)
            {
              if (getc (f) != EOF)
                rc = fail (err, errlen, "file is larger than %zu MiB, more "
                           "than a tally data file can be",
                           MAX_FILE_BYTES >> 20);
              break;
            }
          size_t ncap = cap ? cap * 2 : 64 * 1024;
          if (ncap > MAX_FILE_BYTES)
            ncap = MAX_FILE_BYTES;
          unsigned char *nbuf = realloc (buf, ncap);
          if (!nbuf)
            {
              rc = fail (err, errlen, "out of memory");
              break;
            }
          buf = nbuf;
          cap = ncap;
        }
      size_t want = cap - len;
      size_t n = fread (buf + len, 1, want, f);
      len += n;
      /* Give up early on something that is not a data file at all (a
         device, a large unrelated file); the parser says why.  */
      if (len && !magic_ok (buf, len))
        break;
      if (n < want)
        {
          if (ferror (f))
            rc = fail (err, errlen, "read error: %s", strerror (errno));
          break;
        }
    }
  fclose (f);
  if (rc == 0)
    rc = tally_parse_buffer (buf, len, out, err, errlen);
  free (buf);
  return rc;
}
