/* An MPI program whose work depends on its rank: rank R calls work ()
   calls (R) times, and rank 0 prints what every rank did, for the mpi
   suite to compare with `tally report --ranks` (run-mpi.py).  */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned long sink;

__attribute__ ((noinline)) static void
work (int k)
{
  for (int i = 0; i < 100 * (k % 7 + 1); i++)
    sink += (unsigned long) i;
}

__attribute__ ((noinline)) static void
same (void)
{
  sink++;
}

/* Rank R's number of work () calls: 10 (R + 1), but SLOW's 500.  */
static int
calls (int r, int slow)
{
  return r == slow ? 500 : 10 * (r + 1);
}

int
main (int argc, char **argv)
{
  MPI_Init (&argc, &argv);
  int rank, size;
  MPI_Comm_rank (MPI_COMM_WORLD, &rank);
  MPI_Comm_size (MPI_COMM_WORLD, &size);
  int slow = argc > 1 ? atoi (argv[1]) : -1;
  for (int i = 0; i < calls (rank, slow); i++)
    work (i);
  same ();
  MPI_Barrier (MPI_COMM_WORLD);
  if (rank == 0)
    for (int r = 0; r < size; r++)
      printf ("rank %d work %d\n", r, calls (r, slow));
  MPI_Finalize ();
  return 0;
}
