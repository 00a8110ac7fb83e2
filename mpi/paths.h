/* libtally-mpi's call paths (paths.c): a rank's calling-context tree in
   job-wide names, merged up a binomial tree of ranks.  */
#ifndef TALLY_MPI_PATHS_H
#define TALLY_MPI_PATHS_H

#include <stddef.h>
#include <stdint.h>

#include "tally/format.h"

/* A cursor over an image (tally-mpi.c, paths.c): every read is checked
   against END (the image is our own runtime's, but a bug must not become
   a crash); one past it sets BAD and reads 0.  */
struct cur
{
  const unsigned char *p, *end;
  int bad;
};

static inline uint32_t
c32 (struct cur *c)
{
  if (c->bad || c->end - c->p < 4)
    {
      c->bad = 1;
      return 0;
    }
  uint32_t v = tally_le_get32 (c->p);
  c->p += 4;
  return v;
}

static inline uint64_t
c64 (struct cur *c)
{
  uint64_t lo = c32 (c);
  return lo | (uint64_t) c32 (c) << 32;
}

static inline void
cskip (struct cur *c, uint64_t n)
{
  if (c->bad || (uint64_t) (c->end - c->p) < n)
    c->bad = 1;
  else
    c->p += n;
}

/* A tree in transit (layout: paths.c); len 0 is the empty tree.  */
struct ptree
{
  unsigned char *buf;
  size_t len, cap;
};

/* The tree of the records at AT (an image's FRMS, PATH, PEVT, in file
   order; END its trailer) in job-wide keys: the image's NREC module
   records have NFNS functions each, and record i's first function is
   function GBASE[i] of the union (UINT32_MAX: not in it; its nodes fold
   into their parents).  E: the event pairs per node kept (PEVT's when it
   has E events, else zeros).  No PATH: an empty tree.  0, or -1 (a
   malformed image, out of memory).  */
int ptree_from_image (const unsigned char *at, const unsigned char *end,
                      uint32_t nrec, const uint32_t *nfns,
                      const uint32_t *gbase, uint32_t e, struct ptree *out);

/* OUT = the sum of X and Y (either may be empty); equal paths become one
   node, unknown ones fold into their parents.  0, or -1.  */
int ptree_merge (const struct ptree *x, const struct ptree *y,
                 struct ptree *out);

/* T as FRMS (if it has frames), PATH and PEVT (if it has events) records
   of a file of NREC module records whose bases are GBASE, written at W
   (NULL: only sized); the bytes.  */
size_t ptree_write (const struct ptree *t, uint32_t nrec,
                    const uint32_t *gbase, unsigned char *w);

void ptree_free (struct ptree *t);

#endif
