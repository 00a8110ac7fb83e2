/* fuzz_common.h - what the fuzz targets (fuzz_datafile.c, fuzz_merge.c)
 * share.  */
#ifndef TALLY_TOOLS_FUZZ_COMMON_H
#define TALLY_TOOLS_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* Random bytes almost never carry the right magic, sizes and CRC: call
   CHECK on a copy of DATA (SIZE bytes) made a version 2 file's envelope
   (magic, version, byte order, size, trailer and CRC), so that the
   mutations reach the records.  Nothing if SIZE is too short.  */
void fuzz_repaired (const uint8_t *data, size_t size,
                    void (*check) (const unsigned char *buf, size_t len));

#endif /* TALLY_TOOLS_FUZZ_COMMON_H */
