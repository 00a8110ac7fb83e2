/* Rank 1 fails its part: with argv[1] "exit" it ends through exit ()
   before MPI_Finalize, with "late" it reaches MPI_Finalize 4 s after the
   others.  libtally-mpi's reduction must not keep the others waiting past
   TALLY_MPI_TIMEOUT, and every rank's counts must reach a file.  Rank R
   calls step () R + 1 times.  */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__ ((noinline)) static void
step (void)
{
  __asm__ volatile ("");
}

int
main (int argc, char **argv)
{
  MPI_Init (&argc, &argv);
  int rank;
  MPI_Comm_rank (MPI_COMM_WORLD, &rank);
  const char *how = rank == 1 && argc > 1 ? argv[1] : "";
  for (int i = 0; i <= rank; i++)
    step ();
  MPI_Barrier (MPI_COMM_WORLD); /* every rank has counted */
  if (strcmp (how, "exit") == 0)
    exit (0);
  if (strcmp (how, "late") == 0)
    sleep (4);
  MPI_Finalize ();
  return 0;
}
