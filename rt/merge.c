/* Reading module records back, for merge-on-write (TALLY_OUTPUT with %m).
 *
 * The runtime merges its counts into an existing data file that other
 * processes wrote, so it reads that file: without malloc (it is mmap'ed by
 * the caller), trusting nothing in it (another program, an older tally or a
 * disk error may have written it), and in bounded time.  These helpers
 * work on records in file format (include/tally/format.h); every length is
 * checked against the bytes that are there before it is used.  */
#include <string.h>

#include "rt.h"
#include "tally/format.h"

uint32_t
tally_rt_get_u32 (const unsigned char *p)
{
  return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16
         | (uint32_t) p[3] << 24;
}

uint64_t
tally_rt_get_u64 (const unsigned char *p)
{
  return (uint64_t) tally_rt_get_u32 (p)
         | (uint64_t) tally_rt_get_u32 (p + 4) << 32;
}

/* Bytes of the str field at P (at most AVAIL bytes there), or 0 if it does
   not fit or is over the limit.  */
static size_t
str_size (const unsigned char *p, size_t avail)
{
  if (avail < 4)
    return 0;
  uint32_t n = tally_rt_get_u32 (p);
  if (n > TALLY_MAX_STRING || n > avail - 4)
    return 0;
  return 4 + (size_t) n;
}

size_t
tally_rt_rec_size (const unsigned char *p, size_t avail)
{
  size_t pos = 24, k;
  if (avail < pos)
    return 0;
  uint32_t nfns = tally_rt_get_u32 (p + 20);
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
      if (avail - pos < 16)
        return 0;
      uint32_t nc = tally_rt_get_u32 (p + pos + 8);
      pos += 16;
      if (nc < TALLY_C_CORE || nc > (avail - pos) / 8)
        return 0;
      pos += (size_t) nc * 8;
      if (avail - pos < 4)
        return 0;
      uint32_t map = tally_rt_get_u32 (p + pos);
      pos += 4;
      if (map > avail - pos)
        return 0;
      pos += map;
    }
  return pos;
}

/* Whether the str fields at A and B are equal.  */
static int
str_eq (const unsigned char *a, const unsigned char *b)
{
  uint32_t n = tally_rt_get_u32 (a);
  return n == tally_rt_get_u32 (b) && memcmp (a + 4, b + 4, n) == 0;
}

static const unsigned char *
skip_str (const unsigned char *p)
{
  return p + 4 + tally_rt_get_u32 (p);
}

int
tally_rt_rec_match (const unsigned char *a, const unsigned char *b)
{
  /* abi, checksum, flags and function count.  */
  if (memcmp (a + 4, b + 4, 20) != 0)
    return 0;
  if (!str_eq (a + 24, b + 24)) /* source */
    return 0;
  uint32_t nfns = tally_rt_get_u32 (a + 20);
  a = skip_str (skip_str (a + 24));
  b = skip_str (skip_str (b + 24));
  for (uint32_t i = 0; i < nfns; i++)
    {
      a = skip_str (a); /* name: printable, the symbol decides */
      b = skip_str (b);
      if (!str_eq (a, b))
        return 0;
      a = skip_str (skip_str (skip_str (a))); /* symbol, origin, file */
      b = skip_str (skip_str (skip_str (b)));
      uint32_t nc = tally_rt_get_u32 (a + 8);
      if (nc != tally_rt_get_u32 (b + 8))
        return 0;
      a += 16 + (size_t) nc * 8;
      b += 16 + (size_t) nc * 8;
      uint32_t map = tally_rt_get_u32 (a);
      if (map != tally_rt_get_u32 (b) || memcmp (a + 4, b + 4, map) != 0)
        return 0;
      a += 4 + (size_t) map;
      b += 4 + (size_t) map;
    }
  return 1;
}

const char *
tally_rt_check_file (const unsigned char *buf, size_t len, size_t *records,
                     uint32_t *nmodules)
{
  if (len < TALLY_HEADER_FIXED + 4 + TALLY_TRAILER_SIZE)
    return "too short";
  if (memcmp (buf, TALLY_FILE_MAGIC, TALLY_FILE_MAGIC_LEN) != 0)
    return "not a tally data file";
  if (tally_rt_get_u32 (buf + 8) != TALLY_FILE_VERSION
      || tally_rt_get_u32 (buf + 12) != TALLY_BYTE_ORDER_MARK)
    return "another version or byte order";
  if (tally_rt_get_u64 (buf + 16) != len)
    return "size differs from its header (truncated?)";
  const unsigned char *trailer = buf + len - TALLY_TRAILER_SIZE;
  if (tally_rt_get_u32 (trailer) != TALLY_TAG_END
      || tally_rt_get_u64 (trailer + 8) != len)
    return "bad trailer";
  if (tally_crc32 (0, buf, len - TALLY_TRAILER_SIZE)
      != tally_rt_get_u32 (trailer + 4))
    return "checksum mismatch";
  size_t end = len - TALLY_TRAILER_SIZE;
  size_t pos = TALLY_HEADER_FIXED;
  size_t k = str_size (buf + pos, end - pos); /* program */
  if (!k)
    return "corrupt header";
  pos += k;
  uint32_t n = tally_rt_get_u32 (buf + 40);
  *records = pos;
  for (uint32_t i = 0; i < n; i++)
    {
      if (end - pos < 4 || tally_rt_get_u32 (buf + pos) != TALLY_TAG_MODULE
          || !(k = tally_rt_rec_size (buf + pos, end - pos)))
        return "corrupt module record";
      pos += k;
    }
  if (pos != end)
    return "module count differs from the records";
  *nmodules = n;
  return NULL;
}
