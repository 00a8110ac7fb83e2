/* datafile.h - strict reader of the tally data file (include/tally/format.h).
 *
 * The reader trusts nothing in the file: every length and count is checked
 * against the bytes that are actually there before it is used, so a
 * truncated, corrupt or hostile file yields a one-line message, never a
 * crash, an out-of-bounds read or a huge allocation.  */
#ifndef TALLY_TOOLS_DATAFILE_H
#define TALLY_TOOLS_DATAFILE_H

#include <stddef.h>
#include <stdint.h>

/* One function record.  The strings are NUL-terminated copies.  */
struct tally_data_fn
{
  const char *name;   /* printable source name */
  const char *symbol; /* assembler name of this body */
  const char *origin; /* assembler name of the source function */
  const char *file;   /* source file of the function */
  uint64_t *counters; /* ncounters values, TALLY_C_ENTRIES first */
  uint32_t line;
  uint32_t flags;     /* TALLY_FN_* */
  uint32_t ncounters; /* at least TALLY_C_CORE */
  uint32_t reserved;  /* as stored; the writer puts 0 */
  uint32_t map_size;  /* bytes at map; 0 without blocks (and in version 1) */
  const unsigned char *map; /* the block map as stored, unchecked
                               (tools/blockmap.h checks and decodes it) */
};

/* One module record (one instrumented translation unit).  */
struct tally_data_module
{
  uint32_t abi_version; /* TALLY_ABI_VERSION of the plugin that built it */
  uint32_t flags;       /* TALLY_MOD_* */
  uint64_t checksum;    /* compile checksum */
  const char *source;
  const char *directory;
  uint32_t nfns;
  struct tally_data_fn *fns;
};

/* A whole data file.  */
struct tally_data
{
  uint32_t version;    /* TALLY_FILE_VERSION_MIN .. TALLY_FILE_VERSION */
  uint32_t byte_order; /* always TALLY_BYTE_ORDER_MARK once read */
  uint64_t file_size;
  uint64_t pid;
  uint64_t time;       /* seconds since the Unix epoch */
  uint32_t nmodules;
  uint32_t flags;      /* TALLY_FILE_* */
  const char *program;
  struct tally_data_module *modules;
  uint32_t crc;        /* CRC-32 stored in (and verified against) the trailer */
  void *pool_;         /* private: storage of the strings and counters */
};

/* Parse LEN bytes at BUF into *OUT.  Returns 0, or -1 with a one-line
   message (no trailing newline, no file name) in ERR, ERRLEN bytes at most,
   and *OUT left empty.  *OUT does not point into BUF.  */
int tally_parse_buffer (const unsigned char *buf, size_t len,
                        struct tally_data *out, char *err, size_t errlen);

/* Read and parse the file PATH, as tally_parse_buffer.  */
int tally_read_file (const char *path, struct tally_data *out, char *err,
                     size_t errlen);

/* Release what a successful read stored in *D and empty it.  Safe to call on
   an empty (zeroed or failed) struct, and twice.  */
void tally_data_free (struct tally_data *d);

#endif /* TALLY_TOOLS_DATAFILE_H */
