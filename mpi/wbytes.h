/* mpi/wbytes.h - the records libtally-mpi adds to the reduced file
 * (paths.c, routines.c), written or only measured: W points where the
 * next byte goes, or to NULL to count the bytes in *N only.  */
#ifndef TALLY_MPI_WBYTES_H
#define TALLY_MPI_WBYTES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tally/format.h"

/* The file's bytes into W (NULL: only count).  */
static inline void
wbytes (unsigned char **w, size_t *n, const void *p, size_t l)
{
  if (*w)
    memcpy (*w, p, l), *w += l;
  *n += l;
}

static inline void
w32 (unsigned char **w, size_t *n, uint32_t v)
{
  unsigned char b[4];
  tally_le_put32 (b, v);
  wbytes (w, n, b, 4);
}

#endif /* TALLY_MPI_WBYTES_H */
