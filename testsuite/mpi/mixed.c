/* The MPMD job's first program, and the dlopen job: every rank calls
   common_step (rank + 1) times; with argv[1] = a shared library and
   argv[2] = R, rank R alone dlopens it and calls its plug_run (rank).  */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

void common_step (int k);

__attribute__ ((noinline)) static void
mixed_only (void)
{
  common_step (1);
}

int
main (int argc, char **argv)
{
  MPI_Init (&argc, &argv);
  int rank;
  MPI_Comm_rank (MPI_COMM_WORLD, &rank);
  for (int i = 0; i <= rank; i++)
    common_step (i);
  mixed_only ();
  if (argc > 2 && atoi (argv[2]) == rank)
    {
      void *h = dlopen (argv[1], RTLD_NOW);
      if (!h)
        {
          fprintf (stderr, "%s\n", dlerror ());
          MPI_Abort (MPI_COMM_WORLD, 1);
        }
      void (*run) (int) = (void (*) (int)) dlsym (h, "plug_run");
      run (rank);
    }
  MPI_Finalize ();
  return 0;
}
