/* One function reached on several call paths, and a short recursion: the
   calling-context tree tells them apart where the flat profile cannot.
   main -> x -> shared; main -> y -> shared; main -> y -> x -> shared;
   main -> r -> r -> r -> r (depth 4).
   Without arguments: one round of that, then prints 1.
   paths OUT PLAIN ROUNDS: merge-on-write of measured values and call paths
   (run-paths.py, run-measure.py): each of ROUNDS rounds does the same work
   and merges it into the %m file OUT; at the end the process writes its
   whole profile to the plain file PLAIN with no instrumented code run in
   between, so the plain files of all processes add up to exactly what the
   merged file holds.  */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* <tally/tally.h>'s, weak: the -finstrument-functions build of the oracle
   (run-paths.py) has no runtime and runs no merging round.  */
extern int tally_dump (void) __attribute__ ((weak));

static volatile unsigned long sink;

__attribute__ ((noinline)) void shared (int n) { for (int i = 0; i < n; i++) sink += i; }
__attribute__ ((noinline)) void x (void) { shared (100); }
__attribute__ ((noinline)) void y (void) { shared (1000); x (); x (); }

__attribute__ ((noinline)) void
r (int n)
{
  sink++;
  if (n > 1)
    r (n - 1);
  sink++;
}

int
main (int argc, char **argv)
{
  if (argc != 1 && argc != 4)
    return 2;
  int merging = argc == 4;
  for (int k = 0; k < (merging ? atoi (argv[3]) : 1); k++)
    {
      for (int i = 0; i < 300; i++)
        x ();
      for (int i = 0; i < 70; i++)
        y ();
      for (int i = 0; i < 10; i++)
        r (4);
      if (merging)
        {
          setenv ("TALLY_OUTPUT", argv[1], 1);
          if (tally_dump () != 0)
            return 1;
        }
    }
  if (!merging)
    {
      printf ("%d\n", sink > 0);
      return 0;
    }
  setenv ("TALLY_OUTPUT", argv[2], 1);
  if (tally_dump () != 0)
    return 1;
  _exit (0); /* no exit dump: the files hold the same moment */
}
