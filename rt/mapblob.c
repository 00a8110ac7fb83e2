/* Writing a module record from the unit's compile-time blob.
 *
 * A module record is mostly constant: the module header, every function's
 * strings, line and flags, and every block map never change while the
 * program runs; only the values do.  The plugin lays the constant bytes
 * out as they go into the file, in one read-only blob per unit (layout:
 * include/tally/abi.h, "The record blob"), split into segments at the
 * values, each segment with its CRC-32 and the operator that appends it to
 * a running CRC.  So a dump of the record costs O(values) instructions:
 * the segments go to the file by writev straight from the blob, the
 * values are read once into a staging buffer, and the file's CRC is
 * advanced over a segment by one multiplication modulo the CRC polynomial
 * (tally_rt_crc_shift, below) instead of a pass over its bytes.
 *
 * The result is byte for byte what dump.c's put_module writes for the same
 * values; put_module remains for modules without a blob (older plugins).
 * Async-signal-safe like the rest of the dump: static buffers, guarded by
 * the dump lock, and direct system calls.  */
#include <errno.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "rt.h"
#include "tally/format.h"

/* Multiply A and B, polynomials over GF(2) modulo the CRC-32 polynomial,
   in the CRC's reflected bit order (x^0 is bit 31).  Appending a block of
   N bytes whose own CRC is C to data whose CRC is R gives the CRC
   mulmod (x^(8N) mod P, R) ^ C (zlib's crc32_combine); the plugin
   precomputes x^(8N) mod P per segment.  At most 32 steps.  */
uint32_t
tally_rt_crc_mulmod (uint32_t a, uint32_t b)
{
  uint32_t m = 1u << 31, p = 0;
  while (a)
    {
      if (a & m)
        {
          p ^= b;
          a &= ~m;
        }
      m >>= 1;
      b = (b >> 1) ^ (0xEDB88320u & -(b & 1u));
    }
  return p;
}

/* x^(8N) mod P, as the plugin stores it per segment (for the tests and for
   checking a blob).  */
uint32_t
tally_rt_crc_shift (uint64_t n)
{
  uint32_t p = 1u << 31;    /* x^0 */
  uint32_t sq = 1u << 23;   /* x^8: one byte */
  for (; n; n >>= 1)
    {
      if (n & 1)
        p = tally_rt_crc_mulmod (sq, p);
      sq = tally_rt_crc_mulmod (sq, sq);
    }
  return p;
}

/* The blob's fixed part and segment table (include/tally/abi.h).  */
#define HEAD 24u
#define SEG 16u

/* M's blob if it has one this runtime can use, else NULL.  Checked at
   every use, cheaply (O(functions)): the segment count and the value
   total must agree with the function table.  */
static const unsigned char *
blob_of (const struct tally_module *m, uint64_t *nvalues)
{
#ifdef TALLY_RT_NO_BLOB
  (void) m;
  (void) nvalues;
  return NULL;
#else
  if (m->abi_version < 3 || !(m->flags & TALLY_MOD_BLOB) || !m->blob)
    return NULL;
  const unsigned char *b = m->blob;
  if (tally_le_get32 (b) != TALLY_BLOB_MAGIC
      || tally_le_get32 (b + 4) != m->nfns + 1)
    return NULL;
  uint64_t n = 0;
  for (uint32_t i = 0; i < m->nfns; i++)
    n += tally_rt_fn_nvalues (m->fns[i]);
  if (n != tally_le_get64 (b + 8))
    return NULL;
  *nvalues = n;
  return b;
#endif
}

int
tally_rt_blob_usable (const struct tally_module *m)
{
  uint64_t n;
  return blob_of (m, &n) != NULL;
}

/* The values of function FN of M, from value K on, into OUT (little-endian,
   at most MAX); returns how many.  Each counter is read once, as
   tally_rt_fn_value reads it.  */
static uint32_t
snapshot (const struct tally_module *m, uint32_t fn, uint32_t k, uint32_t max,
          unsigned char *out)
{
  const struct tally_fn *f = m->fns[fn];
  uint32_t nv = tally_rt_fn_nvalues (f), n = 0;
  if (m->flags & TALLY_MOD_UPDATE_TLS)
    {
      for (; k < nv && n < max; k++, n++)
        tally_le_put64 (out + 8 * n, tally_rt_fn_value (m, fn, k));
      return n;
    }
  const uint64_t *c = tally_rt_live_counters (m, f->counters);
  for (; k < f->ncounters && n < max; k++, n++)
    tally_le_put64 (out + 8 * n, __atomic_load_n (&c[k], __ATOMIC_RELAXED));
  if (k < nv)
    {
      const unsigned char *v = tally_rt_live_visited (m, f->visited);
      for (; k < nv && n < max; k++, n++)
        tally_le_put64 (out + 8 * n,
                        __atomic_load_n (&v[k - f->ncounters], __ATOMIC_RELAXED) != 0);
    }
  return n;
}

uint64_t
tally_rt_values_sum (const struct tally_module *m)
{
  uint64_t sum = 0;
  for (uint32_t i = 0; i < m->nfns; i++)
    {
      const struct tally_fn *f = m->fns[i];
      uint32_t nv = tally_rt_fn_nvalues (f);
      if (m->flags & TALLY_MOD_UPDATE_TLS)
        {
          for (uint32_t k = 0; k < nv; k++)
            sum += tally_rt_fn_value (m, i, k);
          continue;
        }
      const uint64_t *c = tally_rt_live_counters (m, f->counters);
      for (uint32_t k = 0; k < f->ncounters; k++)
        sum += __atomic_load_n (&c[k], __ATOMIC_RELAXED);
      if (nv > f->ncounters)
        {
          const unsigned char *v = tally_rt_live_visited (m, f->visited);
          for (uint32_t k = 0; k < nv - f->ncounters; k++)
            sum += __atomic_load_n (&v[k], __ATOMIC_RELAXED) != 0;
        }
    }
  return sum;
}

/* Staging for the writev: the values read, and the pieces to write.  */
#define STAGE_VALUES 8192u
#define STAGE_IOV 1024u
static unsigned char stage[STAGE_VALUES * 8];
static struct iovec iov[STAGE_IOV];

static int
write_all (int fd, struct iovec *v, int n)
{
  while (n > 0)
    {
      ssize_t r = syscall (SYS_writev, fd, v, n);
      if (r < 0 && errno == EINTR)
        continue;
      if (r <= 0)
        return r < 0 ? errno : EIO;
      size_t done = (size_t) r;
      while (n > 0 && done >= v->iov_len)
        {
          done -= v->iov_len;
          v++;
          n--;
        }
      if (n > 0)
        {
          v->iov_base = (char *) v->iov_base + done;
          v->iov_len -= done;
        }
    }
  return 0;
}

int
tally_rt_blob_put (const struct tally_module *m, struct tally_rt_sink *s)
{
  uint64_t nvalues;
  const unsigned char *b = blob_of (m, &nvalues);
  if (!b)
    return 0;
  uint32_t nseg = m->nfns + 1;
  const unsigned char *seg = b + HEAD;
  if (!s->mem && s->fd < 0)
    {
      /* Sizing pass.  */
      s->total += tally_le_get64 (b + 16) + 8 * nvalues;
      return 1;
    }
  if (s->mem)
    {
      unsigned char *out = s->mem + s->total;
      for (uint32_t i = 0; i < nseg; i++, seg += SEG)
        {
          uint32_t len = tally_le_get32 (seg + 4);
          memcpy (out, b + tally_le_get32 (seg), len);
          out += len;
          if (i < m->nfns)
            {
              uint32_t nv = tally_rt_fn_nvalues (m->fns[i]);
              for (uint32_t k = 0; k < nv;)
                k += snapshot (m, i, k, nv - k, out + 8 * k);
              out += 8 * (size_t) nv;
            }
        }
      s->total = (uint64_t) (out - s->mem);
      return 1;
    }

  uint32_t crc = s->crc;
  uint32_t niov = 0, used = 0;
  for (uint32_t i = 0; i < nseg; i++, seg += SEG)
    {
      uint32_t len = tally_le_get32 (seg + 4);
      if (len)
        {
          if (niov == STAGE_IOV)
            {
              if (!s->failed)
                s->failed = write_all (s->fd, iov, (int) niov);
              niov = used = 0;
            }
          iov[niov].iov_base = (void *) (b + tally_le_get32 (seg));
          iov[niov++].iov_len = len;
          crc = tally_rt_crc_mulmod (tally_le_get32 (seg + 12), crc)
                ^ tally_le_get32 (seg + 8);
          s->total += len;
        }
      if (i == m->nfns)
        break;
      uint32_t nv = tally_rt_fn_nvalues (m->fns[i]);
      for (uint32_t k = 0; k < nv;)
        {
          if (used == STAGE_VALUES || niov == STAGE_IOV)
            {
              if (!s->failed)
                s->failed = write_all (s->fd, iov, (int) niov);
              niov = used = 0;
            }
          uint32_t room = STAGE_VALUES - used;
          uint32_t got = snapshot (m, i, k, room, stage + 8 * used);
          size_t bytes = 8 * (size_t) got;
          crc = tally_crc32 (crc, stage + 8 * used, bytes);
          iov[niov].iov_base = stage + 8 * used;
          iov[niov++].iov_len = bytes;
          used += got;
          k += got;
          s->total += bytes;
        }
    }
  if (niov && !s->failed)
    s->failed = write_all (s->fd, iov, (int) niov);
  s->crc = crc;
  return 1;
}
