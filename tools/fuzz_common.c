/* fuzz_common.c - what the fuzz targets share (fuzz_common.h).  */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "tally/format.h"

void
fuzz_repaired (const uint8_t *data, size_t size,
               void (*check) (const unsigned char *buf, size_t len))
{
  if (size < TALLY_HEADER_FIXED + 4 + TALLY_TRAILER_SIZE)
    return;
  unsigned char *copy = malloc (size);
  if (!copy)
    return;
  memcpy (copy, data, size);
  struct tally_hdr h;
  tally_hdr_get (copy, &h);
  h.version = TALLY_FILE_VERSION;
  h.byte_order = TALLY_BYTE_ORDER_MARK;
  tally_hdr_put (copy, &h);
  tally_file_seal (copy, size);
  check (copy, size);
  free (copy);
}
