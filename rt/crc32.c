/* CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), the checksum of the
   tally data file.  Shared by the runtime and the `tally` command.  Bitwise
   and table-free: it runs once per dump over a few kilobytes, needs no
   initialisation and is async-signal-safe.  */
#include "tally/format.h"

uint32_t
tally_crc32 (uint32_t crc, const void *buf, size_t len)
{
  const unsigned char *p = (const unsigned char *) buf;
  crc = ~crc;
  while (len--)
    {
      crc ^= *p++;
      for (int k = 0; k < 8; k++)
        crc = (crc >> 1) ^ (0xEDB88320u & -(crc & 1u));
    }
  return ~crc;
}
