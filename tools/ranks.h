/* ranks.h - `tally report --ranks` and `--rank N` (ranks.c): the ranks of
   an MPI job, from a file libtally-mpi reduced (RNKS record) or from one
   file per rank.  */
#ifndef TALLY_TOOLS_RANKS_H
#define TALLY_TOOLS_RANKS_H

/* Whether ARGV (report's arguments, ARGV[0] "report") asks for --ranks.  */
int tally_ranks_wanted (int argc, char **argv);

/* report --ranks: print per function the min, mean and max over the
   ranks, the rank of the max and the imbalance (max / mean).  Returns the
   exit status.  */
int tally_ranks_report (int argc, char **argv);

/* report --rank N: the arguments without --rank N and with only the file
   of rank N (files ordered by name, numbers by value), for the ordinary
   report; NULL without --rank.  *STATUS: nonzero (an exit status) on a
   usage or data error, which is reported.  */
char **tally_ranks_select (int argc, char **argv, int *new_argc, int *status);

struct tally_data;
/* tally dump: the RNKS record of D, if any, as stored: per module record
   its holders and per value min, max and the rank of the max.  */
void tally_ranks_dump (const struct tally_data *d);

#endif /* TALLY_TOOLS_RANKS_H */
