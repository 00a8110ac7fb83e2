/* libtally-mpi's counts of MPI routines (routines.c).  */
#ifndef TALLY_MPI_ROUTINES_H
#define TALLY_MPI_ROUTINES_H

#include <stddef.h>
#include <stdint.h>

/* TALLY_MPI_ROUTINES set (and not 0): the routines are counted.  */
extern int tally_mpi_routines_on;

/* The module record of the routines' counts at W (NULL: only sized), its
   checksum in *CHECKSUM; the bytes.  */
size_t routines_record (unsigned char *w, uint64_t *checksum);
/* Its functions.  */
uint32_t routines_count (void);
/* Its MEAS part at W: u32 functions, then per function V (inclusive,
   exclusive) pairs, the first the cycles spent, the others 0:
   4 + routines_count () * V * 16 bytes.  */
void routines_meas (unsigned char *w, uint32_t v);

#endif
