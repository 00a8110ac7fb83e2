/* tally/format.h - layout of the tally data file (version 2, and version 3:
 * continuous files).
 *
 * Written by the runtime (rt/records.c, driven by rt/dump.c), read by the
 * format library (format/: format/datafile.c, the strict reader of the
 * `tally` command and of the plugin's select=).  doc/data-format.md is the
 * prose description; keep the two in step.  All integers are
 * little-endian; strings are a u32 byte length followed by that many bytes,
 * no terminator.
 *
 * Below the constants, the codec: the byte offsets of every fixed part
 * (TALLY_HDR_*, TALLY_MODREC_*, ...) and static inline functions that
 * encode and decode them (tally_le_*, tally_hdr_put, tally_modrec_get ...).
 * They call nothing, not even libc (tally_file_seal only tally_crc32,
 * rt/crc32.c), so the runtime may use them anywhere, signal handlers
 * included, and its merge reader keeps its bounds: the *_get functions
 * read exactly their part's bytes.  Every writer (the runtime's records,
 * continuous files and merges, libtally-mpi, `tally merge`) writes every
 * fixed part through them: the header (tally_hdr_put; TALLY_HDR_* for the
 * fields it patches; tally_cstart_put after a version 3 header's
 * program), the module and function records (tally_modrec_put,
 * tally_fnrec_put; TALLY_MODREC_NFNS, TALLY_FNREC_NVALUES where a reader
 * walks records), MEAS (tally_meashdr_put, and tally_measpair_put for its
 * and PEVT's inclusive/exclusive pairs), FRMS (tally_frmshdr_put,
 * tally_frmsent_put), PATH (tally_pathhdr_put, tally_pnode_put), PEVT
 * (tally_pevthdr_put), RNKS (tally_rnkshdr_put, tally_rnksrec_put,
 * tally_rnksval_put), the trailer (tally_trailer_put, tally_file_seal for
 * an image in memory), CMOD and DUMP chunks (tally_cmod_put,
 * tally_cmodfn_put, tally_dumphdr_put); the plugin's record blob writes
 * the module and function records the same way, and the version 1 block
 * map's parts (tally_maphdr_put, tally_mapblk_put, tally_mapedge_put,
 * tally_mapcallers_put).  What is left between the fixed parts are
 * strings, counts of what follows (u32) and arrays of values, written
 * with tally_le_put32/64.
 *
 *   header   magic "TALLYDAT", u32 version, u32 byte-order mark 0x01020304,
 *            u64 file size, u64 pid, u64 unix time, u32 module count,
 *            u32 flags, str program
 *   module   u32 TALLY_TAG_MODULE, u32 abi version, u64 compile checksum,
 *            u32 module flags, u32 function count, str source, str directory,
 *            then per function: str name, str symbol, str origin, str file,
 *            u32 line, u32 flags, u32 value count, u32 reserved,
 *            u64 values[value count], u32 map size, u8 map[map size]
 *            (values: the function's counters, then its visited bytes
 *            widened to u64; map: the block map below, or empty)
 *   meas     optional, after the modules (measure=cycles): u32 TALLY_TAG_MEAS,
 *            u32 value count V (1..TALLY_MAX_MEAS), V x str value name
 *            ("cycles"), u32 record count (= module count), then per module
 *            record in file order: u32 function count (= the module's), then
 *            per function V x (u64 inclusive, u64 exclusive)
 *   path     optional, after meas and frames (paths=on): u32 TALLY_TAG_PATH, u32 depth
 *            limit, u64 activations lost to a full tree, u32 record count
 *            (= module count), u32 function-id base per module record (its
 *            first function's id; ~0 if unknown), u32 node count N, then N
 *            nodes (1..N; 0 is the implicit root): u32 parent (< own index),
 *            u32 function id (~0: a node being made at the dump, all zero),
 *            u64 calls, u64 inclusive cycles, u64 exclusive cycles
 *   frames   optional, between meas and path (paths=on with libunwind):
 *            u32 TALLY_TAG_FRAMES, u32 count F, then F x (u32 id, u64
 *            start address, str symbol name, "" if unknown), ids strictly
 *            increasing, each >= TALLY_FRAME_ID_BASE: the functions of
 *            frames found on threads' stacks below their first instrumented
 *            call; PATH nodes with such an id stand for them (no values)
 *   pevt     optional, after path (paths=on with measure=papi): u32
 *            TALLY_TAG_PATH_EVENTS, u32 event count E (= the meas value
 *            count - 1: the events named there after "cycles"), u32 node
 *            count (= path's), then per node (1..N) E x (u64 inclusive,
 *            u64 exclusive)
 *   ranks    optional, last before the trailer (written by libtally-mpi,
 *            mpi/tally-mpi.c, for the ranks of an MPI job reduced into
 *            this file, whose records hold the sums): u32 TALLY_TAG_RANKS,
 *            u32 TALLY_RANKS_VERSION, u32 job size P (>= 1), u32 record
 *            count (= module count), then per module record in file order:
 *            u32 ranks holding it (1..P), u32 reserved (0), u64 value count
 *            (= the record's values, plus 2V per function with a MEAS
 *            record of V values), then per value, counters in function
 *            order then the MEAS pairs in function order: u64 min, u64 max
 *            over the ranks holding the record, u32 the lowest rank
 *            holding the max (< P); min <= max
 *   trailer  u32 TALLY_TAG_END, u32 CRC-32 (IEEE) of every byte before the
 *            trailer, u64 file size (same as in the header)
 *
 * Version 1 files are the same without the map size and map.
 *
 * Version 3, a continuous file (TALLY_OUTPUT with %c, rt/continuous.c):
 * grows while the process runs, never has a trailer, and is read chunk by
 * chunk (doc/data-format.md "Continuous files"):
 *   header   as above with version 3, file size 0, module count 0, flags
 *            TALLY_FILE_CONTINUOUS, str program, then u64 process start
 *            (clock ticks since boot, /proc/self/stat field 22)
 *   CMOD     (a counters=mapped module, written at its registration)
 *            u32 TALLY_TAG_CMOD, u32 CRC-32 of bytes 8 .. the end of the
 *            record, u64 chunk length (to the next chunk), u64 region offset
 *            (from the chunk start), u64 region size, u32 function count,
 *            u32 record size, per function (u64 counters offset in the
 *            region, u64 visited offset in the region or ~0, u32 counter
 *            count, u32 visited count), a module record as above (its
 *            values are those at registration; readers take the region's),
 *            zero padding, then the region: the live counters (u64, host
 *            order) and visited bytes, outside every CRC
 *   DUMP     (written by every dump: exit, tally_dump, exec, signal)
 *            u32 TALLY_TAG_DUMP, u32 session (0, +1 for each exec'd image
 *            that went on writing the file), u64 image size, then a whole
 *            version 2 file holding the modules not in a region
 * A reader takes every CMOD's region and, per session, the last complete
 * DUMP; a last chunk cut short by a killed writer is left out.
 *
 * Block map (emitted by the plugin as a constant, copied verbatim by the
 * runtime; readers must check every field).  Version 2 (the compact one
 * the plugin writes) is in tally/mapcode.h; version 1, still read:
 *   u32 TALLY_MAP_VERSION, u32 kind (TALLY_MAP_*), u32 block count (blocks
 *   0 = ENTRY and 1 = EXIT included), u32 edge count, u32 file count,
 *   str file[file count],
 *   per block: u32 value (index into values, or TALLY_MAP_NONE),
 *              u32 flags (TALLY_BLOCK_*), u32 location count,
 *              (u32 file index, u32 line) x location count
 *   per edge:  u32 source block, u32 destination block, u32 flags
 *              (TALLY_EDGE_*), u32 value (index into values, or
 *              TALLY_MAP_NONE)
 *   kind TALLY_MAP_TREE_CALLERS only, the callers trailer: u32 complete
 *              (0 or 1), u32 site count, (u32 function index in the
 *              module record, u32 block) x site count; the one normal
 *              edge out of ENTRY has no value and is taken the sum of
 *              the sites' block counts
 * A block's value counts the times it started; an edge's value the times it
 * was taken.  Every count the map does not give is implied by flow
 * conservation (into a block = out of it, EXIT feeding back to ENTRY):
 * doc/data-format.md says how readers solve it.
 */
#ifndef TALLY_FORMAT_H
#define TALLY_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define TALLY_FILE_MAGIC "TALLYDAT"
#define TALLY_FILE_MAGIC_LEN 8
#define TALLY_FILE_VERSION 2u
#define TALLY_FILE_VERSION_MIN 1u /* oldest version readers still accept */
#define TALLY_FILE_VERSION_CONT 3u /* continuous files; also the newest
                                      version readers accept */
#define TALLY_BYTE_ORDER_MARK 0x01020304u
#define TALLY_TAG_MODULE 0x4c444f4du /* "MODL" */
#define TALLY_TAG_END 0x444e4554u    /* "TEND" */
#define TALLY_TAG_MEAS 0x5341454du   /* "MEAS" */
#define TALLY_TAG_PATH 0x48544150u   /* "PATH" */
#define TALLY_TAG_FRAMES 0x534d5246u /* "FRMS" */
#define TALLY_TAG_CMOD 0x444f4d43u   /* "CMOD": continuous files */
#define TALLY_TAG_DUMP 0x504d5544u   /* "DUMP": continuous files */
#define TALLY_CMOD_FIXED 40u /* CMOD bytes before the function table */
#define TALLY_CMOD_FN 24u    /* CMOD bytes per function */
#define TALLY_DUMP_FIXED 16u /* DUMP bytes before the image */
#define TALLY_TAG_PATH_EVENTS 0x54564550u /* "PEVT" */
#define TALLY_TAG_RANKS 0x534b4e52u  /* "RNKS": an MPI job reduced (mpi/) */
#define TALLY_RANKS_VERSION 1u       /* layout of the RNKS record */
#define TALLY_RANKS_VALUE 20u        /* RNKS bytes per value */
/* Path nodes of frames outside instrumented code (FRMS) have function ids
   from here up.  */
#define TALLY_FRAME_ID_BASE 0xf0000000u
/* The largest PATH depth limit (TALLY_PATH_DEPTH); readers refuse a file
   claiming more, and a node deeper than its file's limit.  */
#define TALLY_PATH_DEPTH_MAX 1024u
#define TALLY_HEADER_FIXED 48u       /* header bytes before the program string */
#define TALLY_TRAILER_SIZE 16u

/* header flags */
#define TALLY_FILE_AT_EXIT 0x1u /* written by the final dump at process exit */
#define TALLY_FILE_CONTINUOUS 0x2u /* a version 3 continuous file */

/* Most values a MEAS record may carry per function.  */
#define TALLY_MAX_MEAS 16u

/* Block map.  */
#define TALLY_MAP_VERSION 1u
#define TALLY_MAP_BLOCK 1u   /* kind: a counter per block */
#define TALLY_MAP_TREE 2u    /* kind: counters on the edges off a spanning tree */
#define TALLY_MAP_VISITED 3u /* kind: a 0/1 value per block */
#define TALLY_MAP_VISITED_DERIVED 4u /* kind: as 3, some blocks derived from
                                        their neighbours (TALLY_BLOCK_ANY_*) */
#define TALLY_MAP_VISITED_EDGES 5u /* kind: as 4, and edges with a value of
                                      their own that derived blocks take
                                      instead of the block at the other end */
#define TALLY_MAP_TREE_CALLERS 6u /* kind: as 2, the entry edge counted by
                                     its callers' blocks (a callers trailer
                                     after the edges) */
#define TALLY_MAP_NONE 0xffffffffu
#define TALLY_MAP_ENTRY 0u   /* block numbers of the entry and exit blocks */
#define TALLY_MAP_EXIT 1u
#define TALLY_BLOCK_CALL 0x1u /* ends with a call that may not return */
#define TALLY_BLOCK_ANY_SUCC 0x2u /* kind 4, no value: ran iff a block its
                                     normal edges lead to ran */
#define TALLY_BLOCK_ANY_PRED 0x4u /* kind 4, no value: ran iff a block with a
                                     normal edge into it ran */
#define TALLY_EDGE_FAKE 0x1u     /* not a jump: stands for leaving through a
                                    call that did not return, an exception or
                                    longjmp (to EXIT), or arriving by one
                                    (from ENTRY) */
#define TALLY_EDGE_FALLTHRU 0x2u
#define TALLY_EDGE_TRUE 0x4u     /* taken when the condition holds */
#define TALLY_EDGE_FALSE 0x8u
#define TALLY_EDGE_EH 0x10u      /* fake edge standing for exception edges */
#define TALLY_EDGE_ABNORMAL 0x20u /* fake edge for setjmp/nonlocal goto edges */
#define TALLY_EDGE_CALL 0x40u    /* fake edge after a call that may not return */

/* A string longer than this is corrupt (both writer and reader enforce it). */
#define TALLY_MAX_STRING 65536u

/* The file's little-endian integers in memory, for every writer and reader
   (no libc: usable by the runtime anywhere, signal handlers included).  */
static inline uint32_t
tally_le_get32 (const unsigned char *p)
{
  return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16
         | (uint32_t) p[3] << 24;
}

static inline uint64_t
tally_le_get64 (const unsigned char *p)
{
  return (uint64_t) tally_le_get32 (p)
         | (uint64_t) tally_le_get32 (p + 4) << 32;
}

static inline void
tally_le_put32 (unsigned char *p, uint32_t v)
{
  for (int i = 0; i < 4; i++)
    p[i] = (unsigned char) (v >> (8 * i));
}

static inline void
tally_le_put64 (unsigned char *p, uint64_t v)
{
  tally_le_put32 (p, (uint32_t) v);
  tally_le_put32 (p + 4, (uint32_t) (v >> 32));
}

/* A length-prefixed field of the SIZE bytes at P: reads the u32 at *POS
   into *N and checks that N bytes follow it; 1 with *POS just past the
   length, 0 (nothing moved) if the length or its bytes do not fit.  */
static inline int
tally_le_take_len (const unsigned char *p, size_t size, size_t *pos,
                   uint32_t *n)
{
  if (*pos > size || size - *pos < 4)
    return 0;
  uint32_t v = tally_le_get32 (p + *pos);
  if (v > size - *pos - 4)
    return 0;
  *pos += 4;
  *n = v;
  return 1;
}

/* The codec of the fixed parts.  Offsets are from the start of the part;
   each *_put writes the whole part (its tag included), each *_get reads
   every field but the tag, unchecked: a reader checks the bytes are there
   (and the tag) first.

   A part's fields are listed once, TALLY_<PART>_FIELDS (X), as
   X (BITS, MEMBER, OFFSET): a uintBITS_t MEMBER at byte OFFSET.
   TALLY_CODEC (part, FIELDS, HEAD) makes of the list

     struct tally_<part> { the members in list order };
     void tally_<part>_put (unsigned char *p, const struct tally_<part> *s);
       HEAD (what precedes the fields: the tag, or (void) 0), then the fields
     void tally_<part>_get (const unsigned char *p, struct tally_<part> *s);
       the fields  */
#define TALLY_FIELD_DECL(bits, member, off) uint##bits##_t member;
#define TALLY_FIELD_PUT(bits, member, off) \
  tally_le_put##bits (p + (off), s->member);
#define TALLY_FIELD_GET(bits, member, off) \
  s->member = tally_le_get##bits (p + (off));
/* A reader's own struct with members named as the list's: TALLY_GET_INTO
   (FIELDS, SRC, TYPE, DST) reads the part at SRC straight into *DST (a
   TYPE *), each member checked to be BITS wide.  C only.  */
#define TALLY_FIELD_INTO(bits, member, off)                                 \
  _Static_assert (sizeof tally_into_->member * 8 == (bits), #member);       \
  tally_into_->member = tally_le_get##bits (tally_from_ + (off));
#define TALLY_GET_INTO(FIELDS, src, TYPE, dst)                              \
  do                                                                        \
    {                                                                       \
      const unsigned char *tally_from_ = (src);                             \
      TYPE *tally_into_ = (dst);                                            \
      FIELDS (TALLY_FIELD_INTO)                                             \
    }                                                                       \
  while (0)
#define TALLY_CODEC(part, FIELDS, HEAD)                                     \
  struct tally_##part                                                       \
  {                                                                         \
    FIELDS (TALLY_FIELD_DECL)                                               \
  };                                                                        \
  static inline void tally_##part##_put (unsigned char *p,                  \
                                         const struct tally_##part *s)      \
  {                                                                         \
    HEAD;                                                                   \
    FIELDS (TALLY_FIELD_PUT)                                                \
  }                                                                         \
  static inline void tally_##part##_get (const unsigned char *p,            \
                                         struct tally_##part *s)            \
  {                                                                         \
    FIELDS (TALLY_FIELD_GET)                                                \
  }

static inline void
tally_magic_put (unsigned char *p)
{
  for (unsigned i = 0; i < TALLY_FILE_MAGIC_LEN; i++)
    p[i] = (unsigned char) TALLY_FILE_MAGIC[i];
}

/* The byte-order mark as a little-endian reader sees a big-endian file.  */
#define TALLY_BYTE_ORDER_SWAPPED 0x04030201u

/* header (TALLY_HEADER_FIXED bytes; str program follows; a version 3
   header then has u64 process start) */
#define TALLY_HDR_VERSION 8u
#define TALLY_HDR_BOM 12u
#define TALLY_HDR_SIZE 16u
#define TALLY_HDR_PID 24u
#define TALLY_HDR_TIME 32u
#define TALLY_HDR_NMODULES 40u
#define TALLY_HDR_FLAGS 44u

#define TALLY_HDR_FIELDS(X) \
  X (32, version, TALLY_HDR_VERSION) \
  X (32, byte_order, TALLY_HDR_BOM) \
  X (64, file_size, TALLY_HDR_SIZE) \
  X (64, pid, TALLY_HDR_PID) \
  X (64, time, TALLY_HDR_TIME) \
  X (32, nmodules, TALLY_HDR_NMODULES) \
  X (32, flags, TALLY_HDR_FLAGS)

/* struct tally_hdr; tally_hdr_put writes the magic first (TALLY_HEADER_FIXED
   bytes in all).  */
TALLY_CODEC (hdr, TALLY_HDR_FIELDS, tally_magic_put (p))

/* trailer (TALLY_TRAILER_SIZE bytes at the end) */
#define TALLY_TRL_CRC 4u
#define TALLY_TRL_SIZE 8u

#define TALLY_TRAILER_FIELDS(X) \
  X (32, crc, TALLY_TRL_CRC) \
  X (64, file_size, TALLY_TRL_SIZE)

TALLY_CODEC (trailer, TALLY_TRAILER_FIELDS, tally_le_put32 (p, TALLY_TAG_END))

/* A string: u32 length, then the bytes.  */
#define TALLY_STR_FIXED 4u

/* module record: this fixed part, then str source, str directory and the
   functions */
#define TALLY_MODREC_ABI 4u
#define TALLY_MODREC_CHECKSUM 8u
#define TALLY_MODREC_FLAGS 16u
#define TALLY_MODREC_NFNS 20u
#define TALLY_MODREC_FIXED 24u

#define TALLY_MODREC_FIELDS(X) \
  X (32, abi_version, TALLY_MODREC_ABI) \
  X (64, checksum, TALLY_MODREC_CHECKSUM) \
  X (32, flags, TALLY_MODREC_FLAGS) \
  X (32, nfns, TALLY_MODREC_NFNS)

TALLY_CODEC (modrec, TALLY_MODREC_FIELDS, tally_le_put32 (p, TALLY_TAG_MODULE))

/* function: str name, symbol, origin, file, then this fixed part, then
   u64 values[nvalues], u32 map size, the map (version 2) */
#define TALLY_FNREC_LINE 0u
#define TALLY_FNREC_FLAGS 4u
#define TALLY_FNREC_NVALUES 8u
#define TALLY_FNREC_RESERVED 12u
#define TALLY_FNREC_FIXED 16u

#define TALLY_FNREC_FIELDS(X) \
  X (32, line, TALLY_FNREC_LINE) \
  X (32, flags, TALLY_FNREC_FLAGS) \
  X (32, nvalues, TALLY_FNREC_NVALUES) \
  X (32, reserved, TALLY_FNREC_RESERVED)

TALLY_CODEC (fnrec, TALLY_FNREC_FIELDS, (void) 0)

/* MEAS: u32 tag, u32 V (TALLY_MEAS_HEAD bytes), V names, u32 record count
   (TALLY_MEAS_FIXED bytes without the names); per record u32 function
   count, then per function V pairs of TALLY_MEAS_PAIR bytes */
#define TALLY_MEAS_NVALUES 4u
#define TALLY_MEAS_HEAD 8u
#define TALLY_MEAS_FIXED 12u
#define TALLY_MEAS_PAIR 16u

#define TALLY_MEASHDR_FIELDS(X) \
  X (32, nvalues, TALLY_MEAS_NVALUES)

TALLY_CODEC (meashdr, TALLY_MEASHDR_FIELDS, tally_le_put32 (p, TALLY_TAG_MEAS))

/* A pair of MEAS and PEVT: u64 inclusive, u64 exclusive (no larger).  */
#define TALLY_MEASPAIR_INCL 0u
#define TALLY_MEASPAIR_EXCL 8u

#define TALLY_MEASPAIR_FIELDS(X) \
  X (64, incl, TALLY_MEASPAIR_INCL) \
  X (64, excl, TALLY_MEASPAIR_EXCL)

TALLY_CODEC (measpair, TALLY_MEASPAIR_FIELDS, (void) 0)

/* The function ids of MEAS and PATH: module record REC's functions are
   ids [base, base + count) (its base in the MEAS record).  */
struct tally_id_range
{
  uint32_t base, count, rec;
};
/* The index of the range of function ID among the N ranges at R sorted by
   base, or UINT32_MAX.  */
static inline uint32_t
tally_id_range_find (const struct tally_id_range *r, uint32_t n, uint32_t id)
{
  uint32_t lo = 0, hi = n; /* the last range with base <= id */
  while (lo < hi)
    {
      uint32_t mid = lo + (hi - lo) / 2;
      if (r[mid].base <= id)
        lo = mid + 1;
      else
        hi = mid;
    }
  if (lo && id - r[lo - 1].base < r[lo - 1].count)
    return lo - 1;
  return UINT32_MAX;
}

/* FRMS: u32 tag, u32 count (TALLY_FRAMES_FIXED), then per frame u32 id,
   u64 address (TALLY_FRAME_FIXED) and str name */
#define TALLY_FRAMES_COUNT 4u
#define TALLY_FRAMES_FIXED 8u
#define TALLY_FRAME_ID 0u
#define TALLY_FRAME_ADDR 4u
#define TALLY_FRAME_FIXED 12u

#define TALLY_FRMSHDR_FIELDS(X) \
  X (32, count, TALLY_FRAMES_COUNT)

TALLY_CODEC (frmshdr, TALLY_FRMSHDR_FIELDS, tally_le_put32 (p, TALLY_TAG_FRAMES))

#define TALLY_FRMSENT_FIELDS(X) \
  X (32, id, TALLY_FRAME_ID) \
  X (64, addr, TALLY_FRAME_ADDR)

TALLY_CODEC (frmsent, TALLY_FRMSENT_FIELDS, (void) 0)

/* PATH: u32 tag, u32 depth limit, u64 lost, u32 record count
   (TALLY_PATH_HEAD bytes), then a u32 base per record, u32 node count
   (TALLY_PATH_FIXED bytes without the bases), then nodes of
   TALLY_PATH_NODE bytes */
#define TALLY_PATH_DEPTH 4u
#define TALLY_PATH_LOST 8u
#define TALLY_PATH_NRECORDS 16u
#define TALLY_PATH_HEAD 20u
#define TALLY_PATH_FIXED 24u

#define TALLY_PATHHDR_FIELDS(X) \
  X (32, depth, TALLY_PATH_DEPTH) \
  X (64, lost, TALLY_PATH_LOST) \
  X (32, nrecords, TALLY_PATH_NRECORDS)

TALLY_CODEC (pathhdr, TALLY_PATHHDR_FIELDS, tally_le_put32 (p, TALLY_TAG_PATH))

#define TALLY_PNODE_PARENT 0u
#define TALLY_PNODE_FN 4u
#define TALLY_PNODE_CALLS 8u
#define TALLY_PNODE_INCL 16u
#define TALLY_PNODE_EXCL 24u
#define TALLY_PATH_NODE 32u

#define TALLY_PNODE_FIELDS(X) \
  X (32, parent, TALLY_PNODE_PARENT) \
  X (32, fn, TALLY_PNODE_FN) \
  X (64, calls, TALLY_PNODE_CALLS) \
  X (64, incl, TALLY_PNODE_INCL) \
  X (64, excl, TALLY_PNODE_EXCL)

TALLY_CODEC (pnode, TALLY_PNODE_FIELDS, (void) 0)

/* PEVT: u32 tag, u32 event count, u32 node count (TALLY_PEVT_FIXED), then
   per node and event a pair of TALLY_MEAS_PAIR bytes */
#define TALLY_PEVT_NEVENTS 4u
#define TALLY_PEVT_NNODES 8u
#define TALLY_PEVT_FIXED 12u

#define TALLY_PEVTHDR_FIELDS(X) \
  X (32, nevents, TALLY_PEVT_NEVENTS) \
  X (32, nnodes, TALLY_PEVT_NNODES)

TALLY_CODEC (pevthdr, TALLY_PEVTHDR_FIELDS,
             tally_le_put32 (p, TALLY_TAG_PATH_EVENTS))

/* RNKS: u32 tag, u32 version, u32 job size, u32 record count
   (TALLY_RANKS_FIXED), per record u32 ranks, u32 reserved, u64 value count
   (TALLY_RANKS_MODULE), then values of TALLY_RANKS_VALUE bytes: u64 min,
   u64 max, u32 rank of the max */
#define TALLY_RANKS_VERSION_AT 4u
#define TALLY_RANKS_JOBSIZE 8u
#define TALLY_RANKS_NRECORDS 12u
#define TALLY_RANKS_FIXED 16u
#define TALLY_RANKS_NRANKS 0u
#define TALLY_RANKS_RESERVED 4u
#define TALLY_RANKS_NVALUES 8u
#define TALLY_RANKS_MODULE 16u
#define TALLY_RANKS_MIN 0u
#define TALLY_RANKS_MAX 8u
#define TALLY_RANKS_MAXRANK 16u

#define TALLY_RNKSHDR_FIELDS(X) \
  X (32, version, TALLY_RANKS_VERSION_AT) \
  X (32, job_size, TALLY_RANKS_JOBSIZE) \
  X (32, nrecords, TALLY_RANKS_NRECORDS)

TALLY_CODEC (rnkshdr, TALLY_RNKSHDR_FIELDS, tally_le_put32 (p, TALLY_TAG_RANKS))

#define TALLY_RNKSREC_FIELDS(X) \
  X (32, nranks, TALLY_RANKS_NRANKS) \
  X (32, reserved, TALLY_RANKS_RESERVED) \
  X (64, nvalues, TALLY_RANKS_NVALUES)

TALLY_CODEC (rnksrec, TALLY_RNKSREC_FIELDS, (void) 0)

#define TALLY_RNKSVAL_FIELDS(X) \
  X (64, min, TALLY_RANKS_MIN) \
  X (64, max, TALLY_RANKS_MAX) \
  X (32, maxrank, TALLY_RANKS_MAXRANK)

TALLY_CODEC (rnksval, TALLY_RNKSVAL_FIELDS, (void) 0)

/* CMOD chunk: the fixed part (TALLY_CMOD_FIXED), then per function
   TALLY_CMOD_FN bytes */
#define TALLY_CMOD_CRC 4u
#define TALLY_CMOD_LEN 8u
#define TALLY_CMOD_REGION 16u
#define TALLY_CMOD_REGION_SIZE 24u
#define TALLY_CMOD_NFNS 32u
#define TALLY_CMOD_RECSIZE 36u

#define TALLY_CMOD_FIELDS(X) \
  X (32, crc, TALLY_CMOD_CRC) \
  X (64, len, TALLY_CMOD_LEN) \
  X (64, region, TALLY_CMOD_REGION) \
  X (64, region_size, TALLY_CMOD_REGION_SIZE) \
  X (32, nfns, TALLY_CMOD_NFNS) \
  X (32, rec_size, TALLY_CMOD_RECSIZE)

TALLY_CODEC (cmod, TALLY_CMOD_FIELDS, tally_le_put32 (p, TALLY_TAG_CMOD))

/* A CMOD function: u64 counters offset, u64 visited offset (or ~0), u32
   counter count, u32 visited count.  */
#define TALLY_CMODFN_COUNTERS 0u
#define TALLY_CMODFN_VISITED 8u
#define TALLY_CMODFN_NCOUNTERS 16u
#define TALLY_CMODFN_NVISITED 20u

#define TALLY_CMODFN_FIELDS(X) \
  X (64, counters, TALLY_CMODFN_COUNTERS) \
  X (64, visited, TALLY_CMODFN_VISITED) \
  X (32, ncounters, TALLY_CMODFN_NCOUNTERS) \
  X (32, nvisited, TALLY_CMODFN_NVISITED)

TALLY_CODEC (cmodfn, TALLY_CMODFN_FIELDS, (void) 0)

/* DUMP chunk: u32 tag, u32 session, u64 image size (TALLY_DUMP_FIXED),
   then the image */
#define TALLY_DUMP_SESSION 4u
#define TALLY_DUMP_SIZE 8u

#define TALLY_DUMPHDR_FIELDS(X) \
  X (32, session, TALLY_DUMP_SESSION) \
  X (64, image_size, TALLY_DUMP_SIZE)

TALLY_CODEC (dumphdr, TALLY_DUMPHDR_FIELDS, tally_le_put32 (p, TALLY_TAG_DUMP))

/* A version 3 header's end, after the program string: u64 process start
   (TALLY_CSTART_SIZE bytes) */
#define TALLY_CSTART_START 0u
#define TALLY_CSTART_SIZE 8u

#define TALLY_CSTART_FIELDS(X) \
  X (64, start, TALLY_CSTART_START)

TALLY_CODEC (cstart, TALLY_CSTART_FIELDS, (void) 0)

/* block map: u32 version, kind, block count, edge count, file count
   (TALLY_MAP_FIXED), the files, then blocks and edges */
#define TALLY_MAP_KIND 4u
#define TALLY_MAP_NBLOCKS 8u
#define TALLY_MAP_NEDGES 12u
#define TALLY_MAP_NFILES 16u
#define TALLY_MAP_FIXED 20u
#define TALLY_MAP_EDGE 16u /* bytes per edge */

#define TALLY_MAP_FIELDS(X) \
  X (32, kind, TALLY_MAP_KIND) \
  X (32, nblocks, TALLY_MAP_NBLOCKS) \
  X (32, nedges, TALLY_MAP_NEDGES) \
  X (32, nfiles, TALLY_MAP_NFILES)

/* struct tally_maphdr; tally_maphdr_put writes TALLY_MAP_VERSION first.  */
TALLY_CODEC (maphdr, TALLY_MAP_FIELDS, tally_le_put32 (p, TALLY_MAP_VERSION))

/* a block: value, flags, location count (TALLY_MAPBLK_FIXED), then the
   (file index, line) pairs */
#define TALLY_MAPBLK_VALUE 0u
#define TALLY_MAPBLK_FLAGS 4u
#define TALLY_MAPBLK_NLOCS 8u
#define TALLY_MAPBLK_FIXED 12u

#define TALLY_MAPBLK_FIELDS(X) \
  X (32, value, TALLY_MAPBLK_VALUE) \
  X (32, flags, TALLY_MAPBLK_FLAGS) \
  X (32, nlocs, TALLY_MAPBLK_NLOCS)

TALLY_CODEC (mapblk, TALLY_MAPBLK_FIELDS, (void) 0)

/* an edge (TALLY_MAP_EDGE bytes) */
#define TALLY_MAPEDGE_SRC 0u
#define TALLY_MAPEDGE_DST 4u
#define TALLY_MAPEDGE_FLAGS 8u
#define TALLY_MAPEDGE_VALUE 12u

#define TALLY_MAPEDGE_FIELDS(X) \
  X (32, src, TALLY_MAPEDGE_SRC) \
  X (32, dst, TALLY_MAPEDGE_DST) \
  X (32, flags, TALLY_MAPEDGE_FLAGS) \
  X (32, value, TALLY_MAPEDGE_VALUE)

TALLY_CODEC (mapedge, TALLY_MAPEDGE_FIELDS, (void) 0)

/* kind TALLY_MAP_TREE_CALLERS's callers trailer: complete, site count
   (TALLY_MAPCALLERS_FIXED), then the (function index, block) pairs */
#define TALLY_MAPCALLERS_COMPLETE 0u
#define TALLY_MAPCALLERS_NSITES 4u
#define TALLY_MAPCALLERS_FIXED 8u

#define TALLY_MAPCALLERS_FIELDS(X) \
  X (32, complete, TALLY_MAPCALLERS_COMPLETE) \
  X (32, nsites, TALLY_MAPCALLERS_NSITES)

TALLY_CODEC (mapcallers, TALLY_MAPCALLERS_FIELDS, (void) 0)

#ifdef __cplusplus
extern "C" {
#endif
/* CRC-32 (IEEE 802.3, reflected, as zlib's crc32); start with crc = 0.  */
uint32_t tally_crc32 (uint32_t crc, const void *buf, size_t len);
#ifdef __cplusplus
}
#endif

/* Finish the version 1 or 2 file of LEN bytes at BUF (at least
   TALLY_HEADER_FIXED + TALLY_TRAILER_SIZE), whose header and records are
   written: its size into the header, and the trailer with the CRC of
   every byte before it.  */
static inline void
tally_file_seal (unsigned char *buf, size_t len)
{
  size_t t = len - TALLY_TRAILER_SIZE;
  tally_le_put64 (buf + TALLY_HDR_SIZE, len);
  struct tally_trailer trl = { tally_crc32 (0, buf, t), len };
  tally_trailer_put (buf + t, &trl);
}

#endif /* TALLY_FORMAT_H */
