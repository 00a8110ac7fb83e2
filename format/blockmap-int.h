/* blockmap-int.h - internal to the block map's decoder (format/blockmap.c)
 * and its flow solver (format/flowsolve.c); callers include blockmap.h.
 * The external names carry the prefix tally_bm_ (the short names below
 * are macros), so nothing clashes with the program that links the
 * library.  */
#ifndef TALLY_FORMAT_BLOCKMAP_INT_H
#define TALLY_FORMAT_BLOCKMAP_INT_H

#include <stddef.h>
#include <stdint.h>

#include "blockmap.h"
#include "tally/mapcode.h"

#define alloc_array tally_bm_alloc_array
#define derive_order tally_bm_derive_order
#define counts_blocks tally_bm_counts_blocks
#define out_of_memory tally_bm_out_of_memory
#define callers_order tally_bm_callers_order

/* What kind 6's order needs of each function of a module.  */
struct callers_fn
{
  uint32_t kind;  /* its map's (as decoded), 0 without a map */
  uint32_t nblocks, nsites;
  const uint32_t *sites; /* kind 6: 2 per site (function, block) */
};

/* calloc of N (at least 1) elements of SIZE.  */
void *alloc_array (size_t n, size_t size);
/* The derived blocks of M in the order of tally_derive_check into ORDER
   (M->nblocks entries), with the rules' view of M in *V and its storage
   in *FLAT (free it).  Returns what tally_derive_check does (*AT and
   *FROM as it sets them), or -2 out of memory.  */
int derive_order (const struct tally_blockmap *m, uint32_t *order,
                  uint32_t *nderived, struct tally_derive_map *v,
                  uint32_t **flat, uint32_t *at, uint32_t *from);
/* Whether a map of KIND counts its blocks (kinds 1, 2 and 6).  */
int counts_blocks (uint32_t kind);
/* "tally: out of memory", and exit.  */
void out_of_memory (void);
/* The kind 6 functions of the NFNS functions FNS in an order where each
   comes after every kind 6 function one of its sites is in (blockmap.c
   says more).  */
uint32_t callers_order (uint32_t nfns, const struct callers_fn *fns,
                        uint32_t *order, uint32_t *deps);

#endif /* TALLY_FORMAT_BLOCKMAP_INT_H */
