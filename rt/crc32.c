/* CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), the checksum of the
   tally data file.  Shared by the runtime and the `tally` command.

   Slicing-by-8 (eight bytes per step through eight 256-entry tables, about
   1.5 instructions a byte, against some 70 for the bitwise loop: a block
   counter data file of a few megabytes is checksummed at every dump).  The
   tables are built on first use, without a lock so that it stays
   async-signal-safe: the first caller claims them and fills them in; a
   caller that finds them being filled (another thread, or a signal handler
   that interrupted the filling) uses the bitwise loop meanwhile.  */
#include "tally/format.h"

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

/* Whether the tables can be used; fills them if nobody has started.  */
static int
tables_ready (void)
{
  int state = __atomic_load_n (&table_state, __ATOMIC_ACQUIRE);
  if (state == 2)
    return 1;
  if (state == 1
      || !__atomic_compare_exchange_n (&table_state, &state, 1, 0,
                                       __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return 0;
  for (uint32_t i = 0; i < 256; i++)
    {
      unsigned char b = (unsigned char) i;
      table[0][i] = crc_bitwise (0, &b, 1);
    }
  for (uint32_t i = 0; i < 256; i++)
    for (int k = 1; k < 8; k++)
      table[k][i] = (table[k - 1][i] >> 8) ^ table[0][table[k - 1][i] & 0xff];
  __atomic_store_n (&table_state, 2, __ATOMIC_RELEASE);
  return 1;
}

static uint32_t
load_le32 (const unsigned char *p)
{
  return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16
         | (uint32_t) p[3] << 24;
}

uint32_t
tally_crc32 (uint32_t crc, const void *buf, size_t len)
{
  const unsigned char *p = (const unsigned char *) buf;
  crc = ~crc;
  if (len >= 16 && tables_ready ())
    {
      for (; len >= 8; len -= 8, p += 8)
        {
          uint32_t one = load_le32 (p) ^ crc;
          uint32_t two = load_le32 (p + 4);
          crc = table[7][one & 0xff] ^ table[6][(one >> 8) & 0xff]
                ^ table[5][(one >> 16) & 0xff] ^ table[4][one >> 24]
                ^ table[3][two & 0xff] ^ table[2][(two >> 8) & 0xff]
                ^ table[1][(two >> 16) & 0xff] ^ table[0][two >> 24];
        }
    }
  return ~crc_bitwise (crc, p, len);
}
