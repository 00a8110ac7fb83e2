/* MPI routines counted by libtally-mpi (TALLY_MPI_ROUTINES): every rank
   calls MPI_Barrier twice and MPI_Allreduce three times; rank R > 0 sends
   R messages to rank 0, which receives them all (MPI_Recv); rank 0 prints
   the counts for run-mpi.py to compare.  */
#include <mpi.h>
#include <stdio.h>

int
main (int argc, char **argv)
{
  MPI_Init (&argc, &argv);
  int rank, size, x = 1, y;
  MPI_Comm_rank (MPI_COMM_WORLD, &rank);
  MPI_Comm_size (MPI_COMM_WORLD, &size);
  MPI_Barrier (MPI_COMM_WORLD);
  for (int i = 0; i < 3; i++)
    MPI_Allreduce (&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank)
    for (int i = 0; i < rank; i++)
      MPI_Send (&x, 1, MPI_INT, 0, 5, MPI_COMM_WORLD);
  else
    for (int i = 0; i < size * (size - 1) / 2; i++)
      MPI_Recv (&y, 1, MPI_INT, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Barrier (MPI_COMM_WORLD);
  if (rank == 0)
    printf ("barrier %d allreduce %d send %d recv %d\n", 2 * size, 3 * size,
            size * (size - 1) / 2, size * (size - 1) / 2);
  MPI_Finalize ();
  return 0;
}
