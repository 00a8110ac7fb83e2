/* tally/mapcode.h - the compact block map, version 2 (rt/mapcode.c).
 *
 * One implementation shared by the plugin (which encodes its version 1 map
 * into version 2 before it goes into the record blob: format/mapencode.c,
 * not linked into the runtime), the runtime's merge-on-write (which checks
 * a file's maps before copying them: no memory, one pass) and the `tally`
 * command (which decodes them).  It calls nothing, not even libc, so the
 * runtime can use it anywhere.
 *
 * Layout (doc/data-format.md "Version 2: the compact map"): u32 version 2,
 * then unsigned LEB128 varints (7 bits a byte, low first, at most 10
 * bytes, the shortest encoding only):
 *   kind, block count, edge count, file count,
 *   per file: length, bytes;
 *   F, the number of edge flag values (at most TALLY_MAP2_MAX_FLAGS), and
 *     the F values, each once;
 *   per block: (location count * 2 + (flags != 0)) * 2 + (has a value),
 *     [flags, not 0], [value], per location: zigzag (line - previous line)
 *     * 2 + (file differs from the previous location's), [file index];
 *   per edge: (zigzag (source - previous edge's source) * F + index of its
 *     flags in the table) * 2 + (has a value), zigzag (destination -
 *     source), [value];
 *   kind 6 (TALLY_MAP_TREE_CALLERS) only, the callers trailer: complete
 *     (0 or 1), site count, per site: function index, block.
 * A value is zigzag (index - the previous value's index - 1), blocks' and
 * edges' in map order; the previous line, file, source and value + 1
 * start at 0.  zigzag (d) = 2d for d >= 0, -2d - 1 below.
 */
#ifndef TALLY_MAPCODE_H
#define TALLY_MAPCODE_H

#include <stddef.h>
#include <stdint.h>

#define TALLY_MAP_VERSION2 2u
#define TALLY_MAP2_MAX_FLAGS 32u /* distinct edge flag values in a map */

#ifdef __cplusplus
extern "C" {
#endif

/* What tally_map2_walk found: the counts, or where and why it stopped.  */
struct tally_map2_info
{
  uint32_t kind, nblocks, nedges, nfiles;
  uint64_t nlocs;   /* locations of all blocks */
  uint32_t complete, nsites; /* kind 6: the callers trailer's flag and
                                count of call sites (0 for other kinds) */
  size_t trailer_at; /* kind 6: the map byte the callers trailer starts at
                        (tally merge rewrites it) */
  const char *why;  /* a failed walk: what is wrong (a static string) */
  size_t at;        /* and the map byte where it was found */
};

/* Where tally_map2_walk puts what it decodes (any pointer may be NULL, then
   that part is only checked): FILES 2 per file (byte offset of the name in
   the map, length), BLOCKS 4 per block (value or TALLY_MAP_NONE, flags,
   location count, index of its first location), LOCS 2 per location (file
   index, line), EDGES 4 per edge (source, destination, flags, value or
   TALLY_MAP_NONE), SITES 2 per call site of kind 6 (function index,
   block).  Sized from a first walk's counts.  */
struct tally_map2_out
{
  uint32_t *files, *blocks, *locs, *edges, *sites;
};

/* Check the SIZE bytes at MAP, a version 2 map of a function with NVALUES
   values, as strictly as the version 1 decoder (format/blockmap.c): every
   varint minimal and in range, counts that fit in the bytes left, file
   names without NUL and at most TALLY_MAX_STRING bytes, value indexes
   below NVALUES, file indexes below the file count, lines within 32 bits,
   blocks numbered below the block count, no edge leaving EXIT or entering
   ENTRY, ENTRY and EXIT without value or locations, no bytes after the
   last edge; kind 6: ENTRY with exactly one normal edge out and that
   without a value, a callers trailer whose flag is 0 or 1 and whose sites
   fit, no bytes after it.  The sites' function indexes and blocks are the
   module's to check (format/blockmap.c, tally_data_check_maps).  Returns 0 (INFO has the counts, OUT if not NULL the fields)
   or -1 (INFO->why and INFO->at say what and where).  */
int tally_map2_walk (const unsigned char *map, size_t size, uint32_t nvalues,
                     struct tally_map2_info *info,
                     const struct tally_map2_out *out);

/* Kinds 4 and 5 (doc/data-format.md "Derived visited blocks", "Visited
   edges"): the derivation rules, one implementation for the runtime's
   merge (which must refuse what the tools refuse, rt/merge.c) and the
   format library's decoder and solver (format/blockmap.c).  They read a map's blocks
   and edges as tally_map2_walk's BLOCKS and EDGES lay them out, call
   nothing and allocate nothing: scratch memory is the caller's.  */
struct tally_derive_map
{
  uint32_t nblocks, nedges;
  const uint32_t *blocks; /* 4 per block: value, flags, 2 not read */
  const uint32_t *edges;  /* 4 per edge: source, destination, flags,
                             value */
  int edge_values;        /* kind 5: an edge's value, where it has one,
                             is what a derived block takes through it */
};

/* tally_derive_next's answer for an edge whose own value gives a derived
   block's (kind 5).  */
#define TALLY_DERIVE_FROM_EDGE 0xfffffffeu

/* What tally_derive_check found wrong; AT is a block or an edge as
   said.  */
enum tally_derive_fault
{
  TALLY_DERIVE_OK,
  TALLY_DERIVE_FROM_END,     /* block AT derived from FROM: ENTRY or EXIT */
  TALLY_DERIVE_FAKE_VALUE,   /* edge AT: fake, with a value */
  TALLY_DERIVE_END_VALUE,    /* edge AT: from ENTRY or into EXIT, with a
                                value */
  TALLY_DERIVE_UNUSED_VALUE, /* edge AT: a value no derived block's value
                                comes through */
  TALLY_DERIVE_END_DERIVED,  /* block AT, ENTRY or EXIT, with a rule */
  TALLY_DERIVE_BOTH,         /* block AT: both rules */
  TALLY_DERIVE_VALUE,        /* block AT: a value and a rule */
  TALLY_DERIVE_NO_SUCC,      /* block AT: derived from its successors, but
                                no normal edge out */
  TALLY_DERIVE_NO_PRED,      /* block AT: likewise from its predecessors,
                                no normal edge in */
  TALLY_DERIVE_CYCLE         /* block AT: derived (through others) from
                                itself */
};

/* The rule of block B of M: TALLY_BLOCK_ANY_SUCC, _ANY_PRED, both (an
   error) or 0 (not derived).  */
uint32_t tally_derive_rule (const struct tally_derive_map *m, uint32_t b);

/* Steps *POS (2 x edge + end, from 0) to the next block *A at an end of
   an edge that is derived through that edge; returns the block *A takes
   its value from, TALLY_DERIVE_FROM_EDGE for the edge's own value (the
   edge is then (*POS - 1) / 2), or TALLY_MAP_NONE when the edges are
   done.  */
uint32_t tally_derive_next (const struct tally_derive_map *m, uint32_t *pos,
                            uint32_t *a);

/* The u32s of scratch tally_derive_check needs for a map of NBLOCKS and
   NEDGES.  */
size_t tally_derive_scratch (uint32_t nblocks, uint32_t nedges);

/* Check the derivations of M, in this order (the first fault is the one
   reported): no block derived from ENTRY or EXIT; kind 5 (EDGE_VALUES):
   no value on a fake edge, on an edge from ENTRY or into EXIT, or on an
   edge no derived block's value comes through; no ENTRY or EXIT derived,
   no block with both rules, with a value and a rule, or with a rule and
   nothing to derive from; no cycle of derived blocks.  SCRATCH holds
   tally_derive_scratch (M) u32s (any contents), ORDER M->nblocks.
   Returns TALLY_DERIVE_OK with the derived blocks in ORDER, each after
   the blocks it is derived from, and their number in *NDERIVED; or the
   fault, with *AT (and *FROM for TALLY_DERIVE_FROM_END).  */
int tally_derive_check (const struct tally_derive_map *m, uint32_t *scratch,
                        uint32_t *order, uint32_t *nderived, uint32_t *at,
                        uint32_t *from);

/* Kind 6 (doc/data-format.md "Entry counts from callers"): the order in
   which a module's functions whose entries come from their callers can be
   solved, one implementation for the runtime's merge (rt/merge.c, which
   must refuse a cycle as the tools do) and the tools' check and solver
   (format/blockmap.c); Kahn's algorithm, no recursion, calls nothing and
   allocates nothing.  Of the N functions, of map kinds KIND (0: no map),
   the call sites of function F are the (function, block) pairs
   SITES[2 * FIRST[F]] .. SITES[2 * FIRST[F + 1]] (FIRST has N + 1
   entries; only kind 6 functions' are read).  The kind 6 functions go
   into ORDER (N) each after every kind 6 function one of its sites is in;
   a site out of range is no dependency.  Returns how many went; those left
   out (on a cycle of sites, or after one) have DEPS (N) above 0.  START
   (N + 1), FILL (N) and USERS (FIRST[N]) are scratch, any contents.  */
uint32_t tally_callers_order (uint32_t n, const uint32_t *kind,
                              const uint32_t *first, const uint32_t *sites,
                              uint32_t *deps, uint32_t *order,
                              uint32_t *start, uint32_t *fill,
                              uint32_t *users);

/* Encode the version 1 map of SIZE bytes at V1 as version 2 into OUT (CAP
   bytes).  Returns the bytes version 2 needs (nothing is written past
   CAP; call with CAP 0 to size OUT), or 0 if V1 is not a well-formed
   version 1 map.  */
size_t tally_map2_encode (const unsigned char *v1, size_t size,
                          unsigned char *out, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* TALLY_MAPCODE_H */
