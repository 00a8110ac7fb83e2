/* The MPMD job's second program: common_step 3 times a rank, and a
   function of its own.  */
#include <mpi.h>

void common_step (int k);

__attribute__ ((noinline)) static void
other_only (int n)
{
  for (int i = 0; i < n; i++)
    common_step (i);
}

int
main (int argc, char **argv)
{
  MPI_Init (&argc, &argv);
  int rank;
  MPI_Comm_rank (MPI_COMM_WORLD, &rank);
  other_only (3 + rank);
  MPI_Finalize ();
  return 0;
}
