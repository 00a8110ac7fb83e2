/* ranks.h - `tally report --ranks` and `--rank N` (ranks.c): the ranks of
   an MPI job, from a file libtally-mpi reduced (RNKS record) or from one
   file per rank.  */
#ifndef TALLY_TOOLS_RANKS_H
#define TALLY_TOOLS_RANKS_H

#include <stddef.h>

/* What the options of `tally report --ranks` say.  */
struct ranks_opts
{
  const char **files;
  size_t nfiles;
  int json, csv;
  const char *sort;   /* imbalance (NULL), max, mean, name */
  const char *metric; /* calls, cycles, self; NULL: cycles if measured */
  size_t top;         /* 0: every row */
};

/* report --ranks: print per function the min, mean and max over the
   ranks, the rank of the max and the imbalance (max / mean).  Returns the
   exit status.  */
int tally_ranks_report (const struct ranks_opts *o);

/* report --rank N: the file of rank N of the NFILES FILES (ordered by
   name, numbers by value: FILES is sorted), or NULL when there is none
   (reported).  */
const char *tally_ranks_pick (const char **files, size_t nfiles, long rank);

struct tally_data;
/* tally dump: the RNKS record of D, if any, as stored: per module record
   its holders and per value min, max and the rank of the max.  */
void tally_ranks_dump (const struct tally_data *d);

#endif /* TALLY_TOOLS_RANKS_H */
