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
   precomputes x^(8N) mod P per segment.  Four bits of A a step: the
   multiples of B by the 16 polynomials of degree < 4, then Horner's rule
   over A's nibbles, reducing by x^4 through REDUCE4 (about 130
   instructions, against some 450 for the bitwise loop).  */
static const uint32_t reduce4[16] = {
  0x00000000u, 0x1db71064u, 0x3b6e20c8u, 0x26d930acu,
  0x76dc4190u, 0x6b6b51f4u, 0x4db26158u, 0x5005713cu,
  0xedb88320u, 0xf00f9344u, 0xd6d6a3e8u, 0xcb61b38cu,
  0x9b64c2b0u, 0x86d3d2d4u, 0xa00ae278u, 0xbdbdf21cu,
}; /* x^4 times the terms x^28..x^31, reduced */

static uint32_t
times_x (uint32_t b)
{
  return (b >> 1) ^ (0xEDB88320u & -(b & 1u));
}

uint32_t
tally_rt_crc_mulmod (uint32_t a, uint32_t b)
{
  uint32_t t[16];
  if (tally_crc32_mulmod_fast (a, b, &t[0]))
    return t[0]; /* crc32.c: a carry-less multiplication */
  uint32_t b1 = times_x (b), b2 = times_x (b1), b3 = times_x (b2);
  t[0] = 0;
  t[1] = b3;
  t[2] = b2;
  t[3] = b2 ^ b3;
  t[4] = b1;
  t[5] = b1 ^ b3;
  t[6] = b1 ^ b2;
  t[7] = b1 ^ b2 ^ b3;
  for (int n = 0; n < 8; n++)
    t[8 + n] = b ^ t[n];
  uint32_t p = 0;
  for (int j = 0; j < 32; j += 4)
    p = (p >> 4) ^ reduce4[p & 0xf] ^ t[(a >> j) & 0xf];
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

/* CRC advanced over a blob segment, whose CRC and shift are at E (two
   u32: a segment table entry's or its all-zero variant's), then over LEN
   bytes at BUF; FAST: tally_crc32_append_ok (), which does it in one
   call.  */
static inline uint32_t
crc_append (int fast, uint32_t crc, const unsigned char *e, const void *buf,
            size_t len)
{
  uint32_t c = tally_le_get32 (e), shift = tally_le_get32 (e + 4);
  if (fast)
    return tally_crc32_append (crc, shift, c, buf, len);
  crc = tally_rt_crc_mulmod (shift, crc) ^ c;
  return len ? tally_crc32 (crc, buf, len) : crc;
}

/* The blob's fixed part and segment table (include/tally/abi.h).  */
#define HEAD 24u
#define SEG 24u

/* Whether M's blob is one this runtime can use: its magic, one segment per
   function and one more, and a value total that agrees with the function
   table (a blob of another plugin build would otherwise be written with
   the wrong values between its segments).  O(functions), so it is asked
   once, at registration (register.c), which notes the answer in M's state
   (TALLY_STATE_BLOB); the blob and the function table are compile-time
   data, so the answer holds for as long as M is registered.  */
int
tally_rt_blob_check (const struct tally_module *m)
{
#ifdef TALLY_RT_NO_BLOB
  (void) m;
  return 0;
#else
  if (!(m->flags & TALLY_MOD_BLOB) || !m->blob)
    return 0;
  const unsigned char *b = m->blob;
  if (tally_le_get32 (b) != TALLY_BLOB_MAGIC
      || tally_le_get32 (b + 4) != m->nfns + 1)
    return 0;
  uint64_t n = 0;
  for (struct tally_fn *const *f = m->fns, *const *end = f + m->nfns; f != end;
       f++)
    n += tally_rt_fn_nvalues (*f);
  return n == tally_le_get64 (b + 8);
#endif
}

/* M's blob if the check at its registration accepted it, else NULL; its
   value total in *NVALUES.  */
static const unsigned char *
blob_of (const struct tally_module *m, uint64_t *nvalues)
{
  if (!(__atomic_load_n (&m->rt_state, __ATOMIC_ACQUIRE) & TALLY_STATE_BLOB))
    return NULL;
  *nvalues = tally_le_get64 (m->blob + 8);
  return m->blob;
}

int
tally_rt_blob_usable (const struct tally_module *m)
{
  uint64_t n;
  return blob_of (m, &n) != NULL;
}

/* Value K of function FN of M as a dump reads it (records.c's writer).  */
uint64_t
tally_rt_fn_value (const struct tally_module *m, uint32_t fn, uint32_t k)
{
  const struct tally_fn *f = m->fns[fn];
  if (k >= f->ncounters)
    return __atomic_load_n (&tally_rt_live_visited (m, f->visited)[k - f->ncounters],
                            __ATOMIC_RELAXED)
           != 0;
  uint64_t v = __atomic_load_n (&tally_rt_live_counters (m, f->counters)[k],
                                __ATOMIC_RELAXED);
  if (m->flags & TALLY_MOD_UPDATE_TLS)
    tally_rt_tls_add (m, NULL, 0, fn, k, 1, &v);
  return v;
}

/* update=tls: the attachments of the module being read, gathered once
   per module (the dump lock is held); NULL when it has more than fit, and
   then each function walks all of them.  */
#define TLS_ATT 64u
static const void *tls_att[TLS_ATT];
static const void *const *tls_list;
static uint32_t tls_n;

/* And where its code updates its counters (tally_rt_bias), and the sum
   of the values read (for dump.c's watch of counts made after the exit
   dump: tally_rt_blob_sums).  */
static intptr_t cur_bias;
static uint64_t cur_sum;
static struct tally_rt_sum *sums;
static size_t nsums, sums_cursor;

void
tally_rt_blob_sums (struct tally_rt_sum *table, size_t n)
{
  sums = table;
  nsums = n;
  sums_cursor = 0;
}

struct tally_rt_sum *
tally_rt_sum_of (struct tally_rt_sum *table, size_t n, size_t *cursor,
                 const struct tally_module *m)
{
  for (size_t k = 0; table && k < n; k++)
    {
      size_t i = (*cursor + k) % n;
      if (table[i].m == m)
        {
          *cursor = (i + 1) % n;
          return &table[i];
        }
    }
  return NULL;
}

/* M's values are written: their sum into its pending entry, if any.  */
static void
module_end (const struct tally_module *m)
{
  struct tally_rt_sum *e = tally_rt_sum_of (sums, nsums, &sums_cursor, m);
  if (e && e->pending)
    {
      e->sum = cur_sum;
      e->pending = 2;
    }
}

/* Before reading M's values.  */
static void
module_begin (const struct tally_module *m)
{
  cur_bias = tally_rt_bias (m);
  cur_sum = 0;
  if (m->flags & TALLY_MOD_UPDATE_TLS)
    {
      tls_n = tally_rt_tls_of (m, tls_att, TLS_ATT);
      tls_list = tls_n <= TLS_ATT ? tls_att : NULL;
    }
}

/* Value I at C, read as every live counter is: one relaxed atomic load
   of its aligned 8 bytes (other threads may be adding to it as the dump
   reads).  */
#define LIVE(c, i) __atomic_load_n (&(c)[i], __ATOMIC_RELAXED)

/* S += counter I at C, the counter read as LIVE reads it.  On x86-64 one
   add from memory: an aligned 8-byte load, single-copy atomic as LIVE's
   mov is, which GCC does not fold into the add it feeds (so one
   instruction a counter instead of two).  Not under ThreadSanitizer,
   which must see the load as LIVE's.  */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_THREAD__)
#define ADD_LIVE(s, c, i) __asm__ ("add %1, %0" : "+r"(s) : "m"((c)[i]) : "cc")
#else
#define ADD_LIVE(s, c, i) ((s) += LIVE (c, i))
#endif

/* The sum of the N counters at C, each read once as the dump reads it.
   One instruction a counter on x86-64 (ADD_LIVE), two elsewhere, and the
   loop's three once per eight: the first N % 8 are
   entered Duff's-device fashion, by one indirect jump rather than a loop
   of their own, which matters at some 25 counters a function.  The odd
   ones first, so that N is dead in the loop and nothing is spilled.
   Inlined, so that a module's functions are one loop.  */
static inline __attribute__ ((always_inline)) uint64_t
sum_counters (const uint64_t *c, uint32_t n)
{
  uint64_t s = 0;
  const uint64_t *e = c + n;
  switch (n & 7u)
    {
    case 7:
      ADD_LIVE (s, c, 6);
      __attribute__ ((fallthrough));
    case 6:
      ADD_LIVE (s, c, 5);
      __attribute__ ((fallthrough));
    case 5:
      ADD_LIVE (s, c, 4);
      __attribute__ ((fallthrough));
    case 4:
      ADD_LIVE (s, c, 3);
      __attribute__ ((fallthrough));
    case 3:
      ADD_LIVE (s, c, 2);
      __attribute__ ((fallthrough));
    case 2:
      ADD_LIVE (s, c, 1);
      __attribute__ ((fallthrough));
    case 1:
      ADD_LIVE (s, c, 0);
      __attribute__ ((fallthrough));
    default:
      break;
    }
  for (c += n & 7u; c != e; c += 8)
    {
      ADD_LIVE (s, c, 0);
      ADD_LIVE (s, c, 1);
      ADD_LIVE (s, c, 2);
      ADD_LIVE (s, c, 3);
      ADD_LIVE (s, c, 4);
      ADD_LIVE (s, c, 5);
      ADD_LIVE (s, c, 6);
      ADD_LIVE (s, c, 7);
    }
  return s;
}

/* The N counters at C into OUT in the file's byte order, each read once:
   returns their sum and ors them into *ANY.  Four instructions a counter
   (load, store, or, add), unrolled as sum_counters.  *ANY must be the OR,
   not "the sum is not 0": values that wrap to a sum of 0 are not all 0.  */
static inline __attribute__ ((always_inline)) uint64_t
copy_counters (const uint64_t *c, uint32_t n, uint64_t *out, uint64_t *any)
{
  uint64_t s = 0, o = 0, v;
  const uint64_t *e = c + n;
#define COPY(i) (v = LIVE (c, i), out[i] = tally_rt_le64 (v), s += v, o |= v)
  switch (n & 7u)
    {
    case 7:
      COPY (6);
      __attribute__ ((fallthrough));
    case 6:
      COPY (5);
      __attribute__ ((fallthrough));
    case 5:
      COPY (4);
      __attribute__ ((fallthrough));
    case 4:
      COPY (3);
      __attribute__ ((fallthrough));
    case 3:
      COPY (2);
      __attribute__ ((fallthrough));
    case 2:
      COPY (1);
      __attribute__ ((fallthrough));
    case 1:
      COPY (0);
      __attribute__ ((fallthrough));
    default:
      break;
    }
  for (c += n & 7u, out += n & 7u; c != e; c += 8, out += 8)
    {
      COPY (0);
      COPY (1);
      COPY (2);
      COPY (3);
      COPY (4);
      COPY (5);
      COPY (6);
      COPY (7);
    }
#undef COPY
  *any |= o;
  return s;
}

/* The counters of F as its module's code updates them (BIAS: tally_rt_bias).  */
static inline const uint64_t *
live_counters (const struct tally_fn *f, intptr_t bias)
{
  return (const uint64_t *) (const void *) ((const char *) f->counters + bias);
}

/* The values of function FN of M, from value K on, into OUT (at most MAX,
   in the file's byte order); returns how many and sets *ANY if one is not
   0.  Each counter is read once, as tally_rt_fn_value reads it, but
   update=tls's threads are walked once for all of them.  */
static uint32_t
snapshot (const struct tally_module *m, uint32_t fn, uint32_t k, uint32_t max,
          uint64_t *out, uint64_t *any)
{
  const struct tally_fn *f = m->fns[fn];
  uint32_t nv = tally_rt_fn_nvalues (f), nc = f->ncounters, n = 0;
  uint32_t end = nv - k < max ? nv : k + max;
  uint64_t or = 0, sum = 0;
  if (k < nc)
    {
      const uint64_t *c = live_counters (f, cur_bias) + k;
      uint32_t cn = (end < nc ? end : nc) - k;
      if (m->flags & TALLY_MOD_UPDATE_TLS)
        {
          for (uint32_t i = 0; i < cn; i++)
            out[i] = __atomic_load_n (&c[i], __ATOMIC_RELAXED);
          tally_rt_tls_add (m, tls_list, tls_n, fn, k, cn, out);
          for (uint32_t i = 0; i < cn; i++)
            {
              or |= out[i];
              sum += out[i];
            }
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
          for (uint32_t i = 0; i < cn; i++)
            out[i] = tally_rt_le64 (out[i]);
#endif
        }
      else
        sum = copy_counters (c, cn, out, &or);
      n = cn;
      k += cn;
    }
  if (k < end)
    {
      const unsigned char *v = f->visited + cur_bias + (k - nc);
      uint32_t vn = end - k;
      for (uint32_t i = 0; i < vn; i++)
        {
          uint64_t x = __atomic_load_n (&v[i], __ATOMIC_RELAXED) != 0;
          or |= x;
          sum += x;
          out[n + i] = tally_rt_le64 (x);
        }
      n += vn;
    }
  *any |= or;
  cur_sum += sum;
  return n;
}

/* The number of the N bytes at V that are not 0, each read once.  */
static uint64_t
count_set (const unsigned char *v, uint32_t n)
{
  uint64_t s = 0;
  for (uint32_t i = 0; i < n; i++)
    s += __atomic_load_n (&v[i], __ATOMIC_RELAXED) != 0;
  return s;
}

uint64_t
tally_rt_values_sum (const struct tally_module *m)
{
  uint64_t sum = 0;
  module_begin (m);
  intptr_t bias = cur_bias;
  struct tally_fn *const *fns = m->fns;
  uint32_t nfns = m->nfns;
  /* update=tls reads each function's threads' copies just before its
     counters, as the dump does; everything else in a loop without that
     test.  */
  if (m->flags & TALLY_MOD_UPDATE_TLS)
    for (uint32_t i = 0; i < nfns; i++)
      {
        const struct tally_fn *f = fns[i];
        sum += tally_rt_tls_sum (m, tls_list, tls_n, i, f->ncounters);
        sum += sum_counters (live_counters (f, bias), f->ncounters);
        if (f->visited && f->nvisited)
          sum += count_set (f->visited + bias, f->nvisited);
      }
  else
    for (struct tally_fn *const *p = fns, *const *e = fns + nfns; p != e; p++)
      {
        const struct tally_fn *f = *p;
        sum += sum_counters (live_counters (f, bias), f->ncounters);
        if (f->visited && f->nvisited)
          sum += count_set (f->visited + bias, f->nvisited);
      }
  return sum;
}

/* Staging for the writev: the values read, and the pieces to write.  */
#define STAGE_VALUES 8192u
#define STAGE_IOV 1024u
static uint64_t stage[STAGE_VALUES]; /* little-endian values */
static struct iovec iov[STAGE_IOV];

/* Write the N pieces at V, BYTES in all, to FD; 0 or an errno value.  */
static int
write_all (int fd, struct iovec *v, int n, size_t bytes)
{
  while (n > 0)
    {
      ssize_t r = syscall (SYS_writev, fd, v, n);
      if (r < 0 && errno == EINTR)
        continue;
      if (r <= 0)
        return r < 0 ? errno : EIO;
      /* All of it, as a file takes it: no walk over the pieces.  */
      size_t done = (size_t) r;
      if (done == bytes)
        return 0;
      bytes -= done;
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

/* Where the fd path of tally_rt_blob_put is: the next piece, where the
   next values go, the bytes in the pieces not yet written, the CRC and
   the sum of the values read.  */
struct put
{
  struct iovec *v;
  uint64_t *st;
  size_t bytes;
  uint32_t crc;
  uint64_t sum;
};

/* Write W's pieces to S's file (unless an earlier write failed) and
   start the pieces and the stage again.  */
static void
put_flush (struct tally_rt_sink *s, struct put *w)
{
  if (!s->failed)
    s->failed = write_all (s->fd, iov, (int) (w->v - iov), w->bytes);
  s->total += w->bytes;
  w->v = iov;
  w->st = stage;
  w->bytes = 0;
}

/* The common case of the fd path, in a loop of its own so that its state
   stays in registers: from function *P on (its segment at *SEGP) of M,
   whose table starts at FNS, the functions whose values are their
   counters (no visited bytes; with TLS, update=tls's, read by tls.c),
   while their segment and values fit in the pieces and the stage, their
   CRC by tally_crc32_append.  Returns the first function it did not
   write.  Inlined with TLS a constant: a loop for each.  */
static inline __attribute__ ((always_inline)) struct tally_fn *const *
put_plain (const struct tally_module *m, struct tally_fn *const *fns,
           struct tally_fn *const *p, struct tally_fn *const *end,
           const unsigned char **segp, const unsigned char *b, intptr_t bias,
           struct put *w, int tls)
{
  const unsigned char *seg = *segp;
  struct iovec *v = w->v;
  uint64_t *st = w->st, sum = w->sum;
  size_t bytes = w->bytes;
  uint32_t crc = w->crc;
  for (; p != end; p++, seg += SEG)
    {
      const struct tally_fn *f = *p;
      uint32_t nv = f->ncounters;
      if ((f->visited && f->nvisited) || v > iov + STAGE_IOV - 2
          || nv > (size_t) (stage + STAGE_VALUES - st))
        break;
      uint32_t len = tally_le_get32 (seg + 4);
      v[0].iov_base = (void *) (b + tally_le_get32 (seg));
      v[0].iov_len = len;
      /* If all are 0 (a function that never ran), the segment and the
         zeros are one step.  */
      uint64_t any = 0;
      if (!tls)
        sum += copy_counters (live_counters (f, bias), nv, st, &any);
      else
        sum += tally_rt_tls_read (m, tls_list, tls_n, (uint32_t) (p - fns),
                                  live_counters (f, bias), nv, st, &any);
      if (!any)
        crc = crc_append (1, crc, seg + 16, NULL, 0);
      else
        crc = crc_append (1, crc, seg + 8, st, 8 * (size_t) nv);
      v[1].iov_base = st;
      v[1].iov_len = 8 * (size_t) nv;
      v += 2;
      st += nv;
      bytes += len + 8 * (size_t) nv;
    }
  *segp = seg;
  w->v = v;
  w->st = st;
  w->sum = sum;
  w->bytes = bytes;
  w->crc = crc;
  return p;
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
  module_begin (m);
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
              uint64_t any = 0;
              for (uint32_t k = 0; k < nv;)
                {
                  uint32_t got = snapshot (m, i, k, STAGE_VALUES, stage, &any);
                  memcpy (out, stage, 8 * (size_t) got);
                  out += 8 * (size_t) got;
                  k += got;
                }
            }
        }
      s->total = (uint64_t) (out - s->mem);
      module_end (m);
      return 1;
    }

  struct put w = { iov, stage, 0, s->crc, 0 };
  /* Functions whose values are their counters (no visited bytes) are read
     by copy_counters (or tls.c in one call) rather than through snapshot;
     with a carry-less multiplication, by put_plain, which stops at any
     other function and when the stage or the pieces are full: the loop
     below writes that one.  */
  int tls = (m->flags & TALLY_MOD_UPDATE_TLS) != 0;
  int fast = tally_crc32_append_ok ();
  struct tally_fn *const *fns = m->fns, *const *end = fns + m->nfns;
  intptr_t bias = cur_bias;
  for (struct tally_fn *const *p = fns;; p++, seg += SEG)
    {
      if (fast)
        p = tls ? put_plain (m, fns, p, end, &seg, b, bias, &w, 1)
                : put_plain (m, fns, p, end, &seg, b, bias, &w, 0);
      if (p == end)
        break;
      const struct tally_fn *f = *p;
      uint32_t i = (uint32_t) (p - fns);
      uint32_t len = tally_le_get32 (seg + 4), nc = f->ncounters;
      uint32_t nv = tally_rt_fn_nvalues (f);
      /* Room for the segment and the values (or the first piece of
         them).  */
      if (w.v > iov + STAGE_IOV - 2
          || (nv <= STAGE_VALUES && nv > (size_t) (stage + STAGE_VALUES - w.st)))
        put_flush (s, &w);
      w.v->iov_base = (void *) (b + tally_le_get32 (seg));
      w.v++->iov_len = len;
      w.bytes += len;
      if (nv <= STAGE_VALUES)
        {
          /* The function's values in one piece; if all are 0 (a function
             that never ran), the segment and the zeros are one step.  */
          uint64_t any = 0;
          if (nv != nc)
            snapshot (m, i, 0, nv, w.st, &any);
          else if (!tls)
            w.sum += copy_counters (live_counters (f, bias), nv, w.st, &any);
          else
            w.sum += tally_rt_tls_read (m, tls_list, tls_n, i,
                                        live_counters (f, bias), nv, w.st,
                                        &any);
          if (!any)
            w.crc = crc_append (fast, w.crc, seg + 16, NULL, 0);
          else
            w.crc = crc_append (fast, w.crc, seg + 8, w.st, 8 * (size_t) nv);
          w.v->iov_base = w.st;
          w.v++->iov_len = 8 * (size_t) nv;
          w.st += nv;
          w.bytes += 8 * (size_t) nv;
          continue;
        }
      w.crc = crc_append (fast, w.crc, seg + 8, NULL, 0);
      /* A function with more values than the staging buffer holds: in
         pieces.  */
      for (uint32_t k = 0; k < nv;)
        {
          if (w.st == stage + STAGE_VALUES || w.v == iov + STAGE_IOV)
            put_flush (s, &w);
          uint64_t any = 0;
          uint32_t got = snapshot (m, i, k, (uint32_t) (stage + STAGE_VALUES - w.st),
                                   w.st, &any);
          size_t n = 8 * (size_t) got;
          w.crc = tally_crc32 (w.crc, w.st, n);
          w.v->iov_base = w.st;
          w.v++->iov_len = n;
          w.st += got;
          k += got;
          w.bytes += n;
        }
    }
  /* The record's last segment, after the last function's values.  */
  if (w.v > iov + STAGE_IOV - 1)
    put_flush (s, &w);
  uint32_t len = tally_le_get32 (seg + 4);
  w.v->iov_base = (void *) (b + tally_le_get32 (seg));
  w.v++->iov_len = len;
  w.bytes += len;
  w.crc = crc_append (fast, w.crc, seg + 8, NULL, 0);
  put_flush (s, &w);
  s->crc = w.crc;
  cur_sum += w.sum;
  module_end (m);
  return 1;
}
