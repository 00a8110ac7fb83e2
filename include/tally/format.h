/* tally/format.h - layout of the tally data file (version 1).
 *
 * Written by the runtime (rt/dump.c), read by the `tally` command
 * (tools/datafile.c).  doc/data-format.md is the prose description; keep the
 * two in step.  All integers are little-endian; strings are a u32 byte
 * length followed by that many bytes, no terminator.
 *
 *   header   magic "TALLYDAT", u32 version, u32 byte-order mark 0x01020304,
 *            u64 file size, u64 pid, u64 unix time, u32 module count,
 *            u32 flags, str program
 *   module   u32 TALLY_TAG_MODULE, u32 abi version, u64 compile checksum,
 *            u32 module flags, u32 function count, str source, str directory,
 *            then per function: str name, str symbol, str origin, str file,
 *            u32 line, u32 flags, u32 counter count, u32 reserved,
 *            u64 counters[counter count]
 *   meas     optional, after the modules (measure=cycles): u32 TALLY_TAG_MEAS,
 *            u32 value count V (1..TALLY_MAX_MEAS), V x str value name
 *            ("cycles"), u32 record count (= module count), then per module
 *            record in file order: u32 function count (= the module's), then
 *            per function V x (u64 inclusive, u64 exclusive)
 *   trailer  u32 TALLY_TAG_END, u32 CRC-32 (IEEE) of every byte before the
 *            trailer, u64 file size (same as in the header)
 */
#ifndef TALLY_FORMAT_H
#define TALLY_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define TALLY_FILE_MAGIC "TALLYDAT"
#define TALLY_FILE_MAGIC_LEN 8
#define TALLY_FILE_VERSION 1u
#define TALLY_BYTE_ORDER_MARK 0x01020304u
#define TALLY_TAG_MODULE 0x4c444f4du /* "MODL" */
#define TALLY_TAG_END 0x444e4554u    /* "TEND" */
#define TALLY_TAG_MEAS 0x5341454du   /* "MEAS" */
#define TALLY_HEADER_FIXED 48u       /* header bytes before the program string */
#define TALLY_TRAILER_SIZE 16u

/* header flags */
#define TALLY_FILE_AT_EXIT 0x1u /* written by the final dump at process exit */

/* Most values a MEAS record may carry per function.  */
#define TALLY_MAX_MEAS 16u

/* A string longer than this is corrupt (both writer and reader enforce it). */
#define TALLY_MAX_STRING 65536u

#ifdef __cplusplus
extern "C" {
#endif
/* CRC-32 (IEEE 802.3, reflected, as zlib's crc32); start with crc = 0.  */
uint32_t tally_crc32 (uint32_t crc, const void *buf, size_t len);
#ifdef __cplusplus
}
#endif

#endif /* TALLY_FORMAT_H */
