/* blockmap.h - strict decoder of a function's block map and its flow solver.
 *
 * The block map (include/tally/format.h, doc/data-format.md "The block
 * map") lists a function's basic blocks with their source lines, its edges,
 * and which of the function's values counts what.  tally_map_decode checks
 * every field against the bytes present and the function's value count,
 * so a damaged map gives a one-line message, never a crash.
 * tally_flow_solve derives every count the map leaves out from flow
 * conservation: exact for kind TREE, as far as determined for kind BLOCK;
 * tally_module_solve does so for a whole module, which kind TREE_CALLERS
 * needs (its entry count is the sum of blocks of other functions).
 * Part of the format library: the tools and the plugin's profile= use it.
 * C, callable from C++.  */
#ifndef TALLY_FORMAT_BLOCKMAP_H
#define TALLY_FORMAT_BLOCKMAP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tally_map_loc
{
  uint32_t file; /* index into files */
  uint32_t line;
};

struct tally_map_block
{
  uint32_t value; /* index into the values, or TALLY_MAP_NONE */
  uint32_t flags; /* TALLY_BLOCK_* */
  uint32_t nlocs;
  const struct tally_map_loc *locs; /* nlocs locations, in order */
};

struct tally_map_edge
{
  uint32_t src, dst; /* block numbers */
  uint32_t flags;    /* TALLY_EDGE_* */
  uint32_t value;    /* index into the values, or TALLY_MAP_NONE */
};

/* A decoded, checked map.  */
struct tally_blockmap
{
  uint32_t kind; /* TALLY_MAP_BLOCK, _TREE, _TREE_CALLERS or _VISITED
                    (kinds 4, 5 too) */
  uint32_t derived; /* kinds 4 and 5 (TALLY_MAP_VISITED_DERIVED, _EDGES):
                       blocks whose value comes from their neighbours' */
  uint32_t edge_values; /* kind 5: edges with a visited value of their own,
                           which derived blocks take instead of the block
                           at the edge's other end */
  uint32_t nblocks, nedges, nfiles;
  uint32_t complete; /* kind 6: every call site listed (else the entry
                        count is unknown) */
  uint32_t nsites;   /* kind 6: call sites */
  uint32_t *sites;   /* kind 6: 2 per site, the function's index in its
                        module record and the block holding the call */
  char **files;  /* NUL-terminated copies */
  struct tally_map_block *blocks;
  struct tally_map_edge *edges;
  struct tally_map_loc *locs_; /* storage of every block's locations */
};

/* Decode the SIZE bytes at MAP of a function with NVALUES values.  Returns
   0, or -1 with a one-line message in ERR (ERRLEN bytes at most) and *OUT
   empty.  Besides the layout it checks that value indexes are below
   NVALUES, block numbers below the block count, file indexes below the
   file count, that no edge leaves EXIT or enters ENTRY, that ENTRY
   and EXIT carry neither a value nor locations, and (kinds 4 and 5) that
   every derived block has neighbours to derive from and none is derived
   from itself, and (kind 5) that every edge with a value is a normal edge
   between two blocks that a derived block's value comes through, and
   (kind 6) that ENTRY has exactly one normal edge out, without a value,
   and a callers trailer follows the edges.  Kinds 4 and 5 are decoded as
   kind VISITED with DERIVED (and EDGE_VALUES) set.  The call sites of
   kind 6 are checked against the module by tally_data_check_maps.  */
int tally_map_decode (const unsigned char *map, size_t size, uint32_t nvalues,
                      struct tally_blockmap *out, char *err, size_t errlen);

/* The same for the block map of the function record F (its map, map_size
   and ncounters).  */
struct tally_data_fn;
int tally_fn_map_decode (const struct tally_data_fn *f,
                         struct tally_blockmap *out, char *err, size_t errlen);

/* Decode every block map of the data file D: 0, or -1 with "module M (SRC)
   function F (SYM): bad block map: WHY: file is corrupt" in ERR.  Whatever
   reads, merges or copies a file's maps checks them so first (tally report
   and tally merge alike).  Kind 6's call sites are checked against their
   module too: each names a function of the module with a map of kind 1, 2
   or 6 and one of its blocks other than ENTRY and EXIT, and no entry
   count depends, through the sites of kind 6 functions, on itself.  */
struct tally_data;
int tally_data_check_maps (const struct tally_data *d, char *err,
                           size_t errlen);

/* Release what a successful decode stored; safe on a zeroed struct.  */
void tally_map_free (struct tally_blockmap *m);

/* The solved counts of one function.  */
struct tally_flow
{
  uint64_t *block;           /* nblocks: times each block started; ENTRY's
                                and EXIT's are every arrival and departure,
                                fake edges included */
  uint64_t *edge;            /* nedges: times each edge was taken */
  unsigned char *block_known; /* nblocks: 1 where block[] is determined */
  unsigned char *edge_known;  /* nedges */
  uint64_t entries, exits;   /* normal edges out of ENTRY, into EXIT */
  int entries_known, exits_known;
  uint32_t negative;         /* counts that came out negative, shown as 0 */
  uint32_t unknown_blocks;   /* blocks (ENTRY, EXIT excluded) undetermined */
};

/* Solve M against the function's NVALUES values.  For kind VISITED the
   block values are taken as they are (0 or 1), a derived block's from its
   neighbours' (doc/data-format.md "The block map"), and no edge is
   known.  */
void tally_flow_solve (const struct tally_blockmap *m, const uint64_t *values,
                       uint32_t nvalues, struct tally_flow *out);

/* The same, with the count of kind 6's edge out of ENTRY: ENTRY if
   ENTRY_KNOWN, else unknown (as tally_flow_solve takes it).  Other kinds
   ignore ENTRY.  */
void tally_flow_solve_entry (const struct tally_blockmap *m,
                             const uint64_t *values, uint32_t nvalues,
                             uint64_t entry, int entry_known,
                             struct tally_flow *out);

/* Solve the NFNS functions of one module record (a build's functions in
   the record's order, which kind 6's call sites index): MAPS[i] (NULL
   where function i has no map) against VALUES[i] (NVALUES[i] of them),
   into FLOWS[i] (zeroed where no map; tally_flow_free each).  Kind 6
   functions are solved after the functions their sites are in, their
   entry the sum of the sites' block counts; an entry stays unknown when
   the trailer is not complete, a site's block is undetermined, or a site
   is out of the module's range or on a cycle (which
   tally_data_check_maps refuses: solving never loops nor fails on
   them).  */
void tally_module_solve (uint32_t nfns, const struct tally_blockmap *const *maps,
                         const uint64_t *const *values,
                         const uint32_t *nvalues, struct tally_flow *flows);

/* The block maps of the functions of data module M decoded into BM and
   solved together (tally_module_solve) into FLOWS, both arrays of
   M->nfns.  A function without a map, or whose map does not decode, is
   left zeroed in both (nblocks 0); 0 if every map decoded, else -1 with
   the first one's message in ERR.  Release each with tally_map_free and
   tally_flow_free.  */
struct tally_data_module;
int tally_data_module_solve (const struct tally_data_module *m,
                             struct tally_blockmap *bm,
                             struct tally_flow *flows, char *err,
                             size_t errlen);

void tally_flow_free (struct tally_flow *f);

#ifdef __cplusplus
}
#endif

#endif /* TALLY_FORMAT_BLOCKMAP_H */
