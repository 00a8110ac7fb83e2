/* datafile.h - strict reader of the tally data file (include/tally/format.h),
 * part of the format library (format/: the `tally` command and the plugin
 * link it).
 *
 * The reader trusts nothing in the file: every length and count is checked
 * against the bytes that are actually there before it is used, so a
 * truncated, corrupt or hostile file yields a one-line message, never a
 * crash, an out-of-bounds read or a huge allocation.  */
#ifndef TALLY_FORMAT_DATAFILE_H
#define TALLY_FORMAT_DATAFILE_H

#include <stddef.h>
#include <stdint.h>

#include "tally/format.h"

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
  uint64_t *meas;     /* nmeas pairs {inclusive, exclusive} from the MEAS
                         record (measure=cycles), NULL without one */
  uint32_t map_size;  /* bytes at map; 0 without blocks (and in version 1) */
  const unsigned char *map; /* the block map as stored, unchecked
                               (format/blockmap.h checks and decodes it) */
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

/* One node of the calling-context tree (PATH record, paths=on).  Node 0
   is the root; every other node's parent has a smaller index.  */
struct tally_data_path
{
  uint32_t parent;       /* node index (UINT32_MAX for the root) */
  uint32_t module, fn;   /* its function; module UINT32_MAX for the root
                            and for nodes the writer had not finished,
                            TALLY_DATA_FRAME for a frame outside
                            instrumented code (fn indexes frames) */
  uint64_t calls, incl, excl;
};
#define TALLY_DATA_FRAME (UINT32_MAX - 1)

/* A function of a frame found below a thread's first instrumented call
   (FRMS record): a path node without values.  */
struct tally_data_frame
{
  uint32_t id;      /* its pseudo function id in the PATH record */
  uint64_t addr;    /* start address in the writing process */
  const char *name; /* symbol, "" if unknown */
};

/* Per-rank statistics of one module record of a file reduced from an MPI
   job (RNKS record, libtally-mpi): per value, the record's counters in
   function order and then (with a MEAS record) each function's nmeas
   (inclusive, exclusive) pairs, the smallest and largest value over the
   ranks holding the record and the lowest rank holding the largest.  The
   record's own values are the sums.  */
struct tally_data_ranks
{
  uint32_t nranks;  /* ranks holding the record, 1 .. tally_data.ranks */
  uint64_t nvalues;
  uint64_t *min, *max;
  uint32_t *maxrank;
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
  uint32_t flags;      /* TALLY_FILE_*, and TALLY_DATA_* for continuous files */
  const char *program;
  struct tally_data_module *modules;
  uint32_t nmeas;      /* measured values per function (MEAS), 0 if none */
  const char *meas_names[TALLY_MAX_MEAS]; /* "cycles", ... */
  uint32_t npaths;     /* nodes of the calling-context tree, root included;
                          0 without a PATH record */
  struct tally_data_path *paths;
  uint32_t path_depth; /* the writer's depth limit */
  uint64_t path_lost;  /* activations the writer's full tree did not hold */
  uint32_t path_nevents; /* PAPI events per node (PEVT), 0 if none: the
                            MEAS values after "cycles" */
  uint64_t *path_events; /* [npaths][path_nevents] (inclusive, exclusive)
                            pairs; zero for the root, nodes without a
                            function and outside frames */
  uint32_t nframes;    /* outside functions on the paths (FRMS), 0 if none */
  struct tally_data_frame *frames;
  uint32_t ranks;      /* RNKS: the MPI job's size, 0 without the record */
  struct tally_data_ranks *rank_stats; /* [nmodules] with ranks */
  uint32_t crc;        /* CRC-32 stored in (and verified against) the trailer */
  void *pool_;         /* private: storage of the strings and counters */
};

/* struct tally_data.flags set by the reader of a continuous file (version
   3): no dump at exit was written, so the counts are those up to the
   process's end (SIGKILL, _exit, a crash); and its last chunk was cut
   short and left out.  */
#define TALLY_DATA_UNFINISHED 0x10000u
#define TALLY_DATA_CUT 0x20000u

/* The little-endian u32 at P: tally_le_get32 of tally/format.h, under the
   name the tools used first.  */
static inline uint32_t
tally_le32 (const unsigned char *p)
{
  return tally_le_get32 (p);
}

/* Store a message in ERR (ERRLEN bytes at most) like snprintf; returns -1,
   so that a parser can `return tally_errf (...)`.  */
int tally_errf (char *err, size_t errlen, const char *fmt, ...)
    __attribute__ ((format (printf, 3, 4)));

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

#endif /* TALLY_FORMAT_DATAFILE_H */
