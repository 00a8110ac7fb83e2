/* Strict reader of the tally data file, versions 1 and 2, and the
   continuous files of version 3 (include/tally/format.h).
 *
 * The file is checked from the outside in: magic, byte order, version, the
 * size the header promises against the size that is there, the trailer and
 * the CRC; only then are the records walked.  Every field is decoded
 * byte-wise as little-endian, and every length or count read from the file
 * is compared with the bytes left before it is used, with divisions rather
 * than multiplications so that no hostile value can overflow.  The records
 * are copied out, so the caller can drop the input as soon as this returns.
 *
 * This file: the envelope, the module and function records, the walk over
 * the records and reading a file; format/records.c the optional records
 * after the modules (MEAS, FRMS, PATH, PEVT, RNKS), format/continuous.c
 * the version 3 files.  */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader.h"
#include "tally/abi.h"

/* Refuse to read files larger than this: real dumps are kilobytes to a few
   megabytes, and the reader holds the whole file in memory.  */
#define MAX_FILE_BYTES ((size_t) 1 << 30)

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

/* Copy S into BUF (SIZE bytes) for use in a message: at most SIZE - 4
   bytes of it, cut at a character boundary and marked "...", with control
   characters as '?' so that a hostile name cannot drive the terminal.  */
const char *
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

/* The next N bytes of P, or NULL with a message naming WHAT if they run
   past the end of the records.  */
static const unsigned char *
take (struct parser *p, size_t n, const char *what)
{
  if (left (p) < n)
    {
      fail (p->err, p->errlen, "%s at byte %zu runs past the end of the "
            "records: file is corrupt", what, p->pos);
      return NULL;
    }
  p->pos += n;
  return p->buf + p->pos - n;
}

int
take_u32 (struct parser *p, uint32_t *v, const char *what)
{
  const unsigned char *b = take (p, 4, what);
  return b ? (*v = tally_le_get32 (b), 0) : -1;
}

int
take_u64 (struct parser *p, uint64_t *v, const char *what)
{
  const unsigned char *b = take (p, 8, what);
  return b ? (*v = tally_le_get64 (b), 0) : -1;
}

/* Read a string into the pool as a NUL-terminated copy.  A string of N
   bytes takes 4 + N bytes of file and N + 1 bytes of pool, and a counter
   takes 8 of each, so a pool as large as the file always has room; the
   check below only guards that reasoning.  */
int
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
  const unsigned char *b;
  if (take_str (p, &fn->name, WHAT ("name")) != 0
      || take_str (p, &fn->symbol, WHAT ("symbol")) != 0
      || take_str (p, &fn->origin, WHAT ("origin")) != 0
      || take_str (p, &fn->file, WHAT ("file")) != 0
      || !(b = take (p, TALLY_FNREC_FIXED, WHAT ("line and counter count"))))
    return -1;
#undef WHAT
  struct tally_fnrec r;
  tally_fnrec_get (b, &r);
  char sym[64];
  if (r.nvalues < TALLY_C_CORE)
    return fail (p->err, p->errlen, "module %lu function %lu (%s): %lu "
                 "counters, at least %u required: file is corrupt",
                 (unsigned long) mi, (unsigned long) fi,
                 printable (fn->symbol, sym, sizeof sym),
                 (unsigned long) r.nvalues, (unsigned) TALLY_C_CORE);
  if (r.nvalues > left (p) / 8)
    return fail (p->err, p->errlen, "module %lu function %lu (%s): counter "
                 "count %lu cannot fit in the %zu bytes left: file is corrupt",
                 (unsigned long) mi, (unsigned long) fi,
                 printable (fn->symbol, sym, sizeof sym),
                 (unsigned long) r.nvalues, left (p));
  fn->line = r.line;
  fn->flags = r.flags;
  fn->ncounters = r.nvalues;
  fn->reserved = r.reserved;
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
      fn->counters[k] = tally_le_get64 (p->buf + p->pos);
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

int
parse_module (struct parser *p, uint32_t mi, struct tally_data_module *m)
{
  char what[64];
  size_t at = p->pos;
#define WHAT(field) \
  (snprintf (what, sizeof what, "module %lu " field, (unsigned long) mi), \
   what)
  const unsigned char *b = take (p, TALLY_MODREC_FIXED, WHAT ("record"));
  if (!b)
    return -1;
  uint32_t tag = tally_le_get32 (b);
  if (tag != TALLY_TAG_MODULE)
    return fail (p->err, p->errlen, "module %lu at byte %zu: bad tag 0x%08lx "
                 "(expected 0x%08lx \"MODL\"): file is corrupt",
                 (unsigned long) mi, at, (unsigned long) tag,
                 (unsigned long) TALLY_TAG_MODULE);
  TALLY_GET_INTO (TALLY_MODREC_FIELDS, b, struct tally_data_module, m);
  if (take_str (p, &m->source, WHAT ("source")) != 0
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
int
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
  uint32_t bom = tally_le_get32 (buf + TALLY_HDR_BOM);
  if (bom == TALLY_BYTE_ORDER_SWAPPED)
    return fail (err, errlen, "written on a big-endian machine (wrong byte "
                 "order); this tally reads little-endian files only");
  if (bom != TALLY_BYTE_ORDER_MARK)
    return fail (err, errlen, "bad byte-order mark 0x%08lx (expected "
                 "0x%08lx): file is corrupt", (unsigned long) bom,
                 (unsigned long) TALLY_BYTE_ORDER_MARK);
  uint32_t version = tally_le_get32 (buf + TALLY_HDR_VERSION);
  if (version < TALLY_FILE_VERSION_MIN || version > TALLY_FILE_VERSION_CONT)
    return fail (err, errlen, "unsupported format version %lu (this tally "
                 "reads versions %u to %u)", (unsigned long) version,
                 (unsigned) TALLY_FILE_VERSION_MIN,
                 (unsigned) TALLY_FILE_VERSION_CONT);
  if (version == TALLY_FILE_VERSION_CONT)
    return 1; /* continuous: no size, no trailer (parse_continuous) */

  uint64_t size = tally_le_get64 (buf + TALLY_HDR_SIZE);
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
  uint32_t tag = tally_le_get32 (buf + tpos);
  if (tag != TALLY_TAG_END)
    return fail (err, errlen, "bad trailer tag 0x%08lx at byte %zu (expected "
                 "0x%08lx \"TEND\"): file is corrupt", (unsigned long) tag,
                 tpos, (unsigned long) TALLY_TAG_END);
  uint64_t tsize = tally_le_get64 (buf + tpos + TALLY_TRL_SIZE);
  if (tsize != size)
    return fail (err, errlen, "trailer says the file has %llu bytes, header "
                 "says %llu: file is corrupt", (unsigned long long) tsize,
                 (unsigned long long) size);
  uint32_t stored = tally_le_get32 (buf + tpos + TALLY_TRL_CRC);
  uint32_t actual = tally_crc32 (0, buf, tpos);
  if (stored != actual)
    return fail (err, errlen, "checksum mismatch: file is corrupt (stored "
                 "0x%08lx, computed 0x%08lx)", (unsigned long) stored,
                 (unsigned long) actual);
  return 0;
}

/* The tag of the record at P, or 0 (no tag) if fewer than 4 bytes are
   left.  */
static uint32_t
next_tag (const struct parser *p)
{
  return left (p) >= 4 ? tally_le_get32 (p->buf + p->pos) : 0;
}

int
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
  if (next_tag (p) == TALLY_TAG_MODULE)
    return fail (p->err, p->errlen, "module count in the header is %lu, "
                 "but the file holds more: file is corrupt",
                 (unsigned long) d->nmodules);
  if (next_tag (p) == TALLY_TAG_MEAS
      && parse_meas (p, d) != 0)
    return -1;
  if (next_tag (p) == TALLY_TAG_FRAMES
      && parse_frames (p, d) != 0)
    return -1;
  if (next_tag (p) == TALLY_TAG_PATH
      && parse_paths (p, d) != 0)
    return -1;
  if (next_tag (p) == TALLY_TAG_PATH_EVENTS)
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
  if (next_tag (p) == TALLY_TAG_RANKS
      && parse_ranks (p, d) != 0)
    return -1;
  if (left (p) != 0)
    return fail (p->err, p->errlen, "%zu unexpected bytes at byte %zu, "
                 "before the trailer: file is corrupt", left (p), p->pos);
  return 0;
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

  TALLY_GET_INTO (TALLY_HDR_FIELDS, buf, struct tally_data, out);
  out->crc = tally_le_get32 (buf + len - TALLY_TRAILER_SIZE + TALLY_TRL_CRC);

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
