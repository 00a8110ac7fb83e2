/* CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), the checksum of the
   tally data file.  Shared by the runtime and the `tally` command.

   Slicing-by-8 (eight bytes per step through eight 256-entry tables, about
   1.5 instructions a byte, against some 70 for the bitwise loop: a block
   counter data file of a few megabytes is checksummed at every dump).  The
   tables are built on first use, without a lock so that it stays
   async-signal-safe: the first caller claims them and fills them in; a
   caller that finds them being filled (another thread, or a signal handler
   that interrupted the filling) uses the bitwise loop meanwhile.  They are
   in .bss: they cost the binary no bytes.

   On x86-64 with PCLMULQDQ (checked once with cpuid), runs of 16 bytes and
   more are folded 16 bytes a step by carry-less multiplication (Intel's
   "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ", with the
   bit-reflected constants of its appendix, as zlib and Linux use them),
   and tally_crc32_mulmod, which appends a block of precomputed CRC to a
   running CRC (rt/mapblob.c), is one carry-less multiplication and a
   4-byte table step instead of a 4-bit-a-step loop.  The results are the
   same bits either way (testsuite/run-dumpcost.py checks both against
   Python's zlib.crc32).  */
#include "tally/format.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(TALLY_CRC_PORTABLE)
#define TALLY_CRC_CLMUL 1
#include <cpuid.h>
#include <immintrin.h>
#endif

static uint32_t table[8][256];
static int table_state; /* 0 empty, 1 being filled, 2 ready */

static uint32_t
crc_bitwise (uint32_t crc, const unsigned char *p, size_t len)
{
  while (len--)
    {
      crc ^= *p++;
      for (int k = 0; k < 8; k++)
        crc = (crc >> 1) ^ (0xEDB88320u & -(crc & 1u));
    }
  return crc;
}

/* Fills the tables if nobody has started; whether they can be used.  */
static __attribute__ ((noinline)) int
tables_fill (void)
{
  int state = 0;
  if (!__atomic_compare_exchange_n (&table_state, &state, 1, 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return state == 2;
  /* Each table is linear in its index over GF(2) (a CRC without
     inversion is): with H a power of 2 and I < H, entry H + I is entry H
     xor entry I.  So only the entries at the powers of 2 are computed, by
     the bitwise loop for table 0 and from the table before for the
     others; every other entry is one xor (some 3 instructions an entry
     instead of 10 to 30: the tables are filled at the first dump of
     every process).  */
  for (int k = 0; k < 8; k++)
    {
      uint32_t *t = table[k];
      t[0] = 0;
      for (uint32_t h = 1; h < 256; h <<= 1)
        {
          unsigned char b = (unsigned char) h;
          uint32_t c = k ? (table[k - 1][h] >> 8) ^ table[0][table[k - 1][h] & 0xff]
                         : crc_bitwise (0, &b, 1);
          t[h] = c;
          if (h < 4)
            for (uint32_t i = 1; i < h; i++)
              t[h + i] = c ^ t[i];
          else
            for (uint32_t i = 0; i < h; i += 4)
              {
                t[h + i] = c ^ t[i];
                t[h + i + 1] = c ^ t[i + 1];
                t[h + i + 2] = c ^ t[i + 2];
                t[h + i + 3] = c ^ t[i + 3];
              }
        }
    }
  __atomic_store_n (&table_state, 2, __ATOMIC_RELEASE);
  return 1;
}

/* Whether the tables can be used (filling them on first use).  */
static inline int
tables_ready (void)
{
  return __atomic_load_n (&table_state, __ATOMIC_ACQUIRE) == 2 || tables_fill ();
}

static uint32_t
load_le32 (const unsigned char *p)
{
  return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16
         | (uint32_t) p[3] << 24;
}

#ifdef TALLY_CRC_CLMUL
/* C times x^32 modulo the polynomial: four zero bytes through the tables.  */
static uint32_t
times_x32 (uint32_t c)
{
  return table[3][c & 0xff] ^ table[2][(c >> 8) & 0xff]
         ^ table[1][(c >> 16) & 0xff] ^ table[0][c >> 24];
}

static int clmul_state; /* 0 not asked yet, 1 present, 2 absent */

static __attribute__ ((noinline)) int
clmul_ask (void)
{
  unsigned a, b, c, d;
  int s = __get_cpuid (1, &a, &b, &c, &d) && (c & bit_PCLMUL) ? 1 : 2;
  __atomic_store_n (&clmul_state, s, __ATOMIC_RELAXED);
  return s == 1;
}

static inline int
clmul_present (void)
{
  int s = __atomic_load_n (&clmul_state, __ATOMIC_RELAXED);
  return s ? s == 1 : clmul_ask ();
}

/* CRC (not inverted) advanced over LEN bytes at P, LEN >= 16 and a
   multiple of 16.  */
__attribute__ ((target ("pclmul,sse2"))) static uint32_t
crc_fold (uint32_t crc, const unsigned char *p, size_t len)
{
  const __m128i k3k4 = _mm_set_epi64x (0x00ccaa009e, 0x01751997d0);
  const __m128i k5 = _mm_set_epi64x (0, 0x0163cd6124);
  const __m128i poly = _mm_set_epi64x (0x01f7011641, 0x01db710641);
  const __m128i low32 = _mm_setr_epi32 (~0, 0, ~0, 0);
  __m128i x = _mm_xor_si128 (_mm_loadu_si128 ((const __m128i *) (const void *) p),
                             _mm_cvtsi32_si128 ((int) crc));
  for (p += 16, len -= 16; len; p += 16, len -= 16)
    x = _mm_xor_si128 (_mm_xor_si128 (_mm_clmulepi64_si128 (x, k3k4, 0x00),
                                      _mm_clmulepi64_si128 (x, k3k4, 0x11)),
                       _mm_loadu_si128 ((const __m128i *) (const void *) p));
  /* 128 bits to 64, then Barrett's reduction to 32.  */
  x = _mm_xor_si128 (_mm_srli_si128 (x, 8), _mm_clmulepi64_si128 (x, k3k4, 0x10));
  x = _mm_xor_si128 (_mm_srli_si128 (x, 4),
                     _mm_clmulepi64_si128 (_mm_and_si128 (x, low32), k5, 0x00));
  __m128i t = _mm_clmulepi64_si128 (_mm_and_si128 (x, low32), poly, 0x10);
  t = _mm_clmulepi64_si128 (_mm_and_si128 (t, low32), poly, 0x00);
  return (uint32_t) _mm_cvtsi128_si32 (_mm_srli_si128 (_mm_xor_si128 (x, t), 4));
}

/* A times B modulo the polynomial: their 63-bit carry-less product, in
   the CRC's bit order (x^62 is bit 0) and shifted to 64 bits, has the
   terms x^63..x^32 in its low half, which four zero bytes through the
   tables reduce, and x^31..x^0 in its high half.  */
__attribute__ ((target ("pclmul,sse2"))) static uint32_t
clmul_mulmod (uint32_t a, uint32_t b)
{
  __m128i p = _mm_clmulepi64_si128 (_mm_cvtsi32_si128 ((int) a),
                                    _mm_cvtsi32_si128 ((int) b), 0x00);
  uint64_t q = (uint64_t) _mm_cvtsi128_si64 (p) << 1;
  return (uint32_t) (q >> 32) ^ times_x32 ((uint32_t) q);
}
#endif

/* CRC (not inverted) advanced over LEN bytes at P, the tables ready;
   CLMUL: PCLMULQDQ is there (LEN >= 16 only).  */
static inline __attribute__ ((always_inline)) uint32_t
crc_tables (uint32_t crc, const unsigned char *p, size_t len, int clmul)
{
#ifdef TALLY_CRC_CLMUL
  if (clmul)
    {
      size_t n = len & ~(size_t) 15;
      crc = crc_fold (crc, p, n);
      p += n;
      len -= n;
    }
#else
  (void) clmul;
#endif
  for (; len >= 8; len -= 8, p += 8)
    {
      uint32_t one = load_le32 (p) ^ crc;
      uint32_t two = load_le32 (p + 4);
      crc = table[7][one & 0xff] ^ table[6][(one >> 8) & 0xff]
            ^ table[5][(one >> 16) & 0xff] ^ table[4][one >> 24]
            ^ table[3][two & 0xff] ^ table[2][(two >> 8) & 0xff]
            ^ table[1][(two >> 16) & 0xff] ^ table[0][two >> 24];
    }
  return crc_bitwise (crc, p, len);
}

uint32_t
tally_crc32 (uint32_t crc, const void *buf, size_t len)
{
  const unsigned char *p = (const unsigned char *) buf;
  if (len >= 8 && tables_ready ())
    {
#ifdef TALLY_CRC_CLMUL
      int clmul = len >= 16 && clmul_present ();
#else
      int clmul = 0;
#endif
      return ~crc_tables (~crc, p, len, clmul);
    }
  return ~crc_bitwise (~crc, p, len);
}

/* A times B modulo the polynomial, in the CRC's bit order (rt/mapblob.c's
   tally_rt_crc_mulmod), into *OUT if this machine has a carry-less
   multiplication; 0 if not.  */
int tally_crc32_mulmod_fast (uint32_t a, uint32_t b, uint32_t *out);
int
tally_crc32_mulmod_fast (uint32_t a, uint32_t b, uint32_t *out)
{
#ifdef TALLY_CRC_CLMUL
  if (clmul_present () && tables_ready ())
    {
      *out = clmul_mulmod (a, b);
      return 1;
    }
#else
  (void) a;
  (void) b;
  (void) out;
#endif
  return 0;
}

/* Whether tally_crc32_append can be called: this machine has a
   carry-less multiplication (and the tables are filled).  Asked once per
   record by rt/mapblob.c.  */
int tally_crc32_append_ok (void);
int
tally_crc32_append_ok (void)
{
#ifdef TALLY_CRC_CLMUL
  return clmul_present () && tables_ready ();
#else
  return 0;
#endif
}

/* tally_crc32 (tally_rt_crc_mulmod (SHIFT, CRC) ^ SEG, BUF, LEN): a block
   whose CRC is SEG and whose x^(8 length) mod P is SHIFT appended to CRC,
   then LEN bytes, in one call where tally_crc32_append_ok said so
   (rt/mapblob.c, once a function of a record: two calls with their checks
   cost as much as the CRC of a function's two hundred bytes).  */
uint32_t tally_crc32_append (uint32_t crc, uint32_t shift, uint32_t seg,
                             const void *buf, size_t len);
#ifdef TALLY_CRC_CLMUL
__attribute__ ((target ("pclmul,sse2"))) /* clmul_mulmod and crc_fold inline */
#endif
uint32_t
tally_crc32_append (uint32_t crc, uint32_t shift, uint32_t seg,
                    const void *buf, size_t len)
{
#ifdef TALLY_CRC_CLMUL
  return ~crc_tables (~(clmul_mulmod (shift, crc) ^ seg),
                      (const unsigned char *) buf, len, len >= 16);
#else
  (void) shift;
  (void) seg;
  (void) buf;
  (void) len;
  return crc; /* never called: tally_crc32_append_ok is 0 */
#endif
}
