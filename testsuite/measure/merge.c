/* Merge-on-write of measured values and call paths: each round does some
   work and merges it into the %m file (argv[1]); at the end the process
   writes its whole profile to a plain file (argv[2]) with no instrumented
   code run in between, so the plain files of all processes add up to
   exactly what the merged file holds.  argv[3]: rounds.
   Paths: main -> x -> shared; main -> y -> shared; main -> y -> x ->
   shared; main -> r -> r -> r -> r.  */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <tally/tally.h>

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
  if (argc != 4)
    return 2;
  for (int k = 0; k < atoi (argv[3]); k++)
    {
      for (int i = 0; i < 300; i++)
        x ();
      for (int i = 0; i < 70; i++)
        y ();
      for (int i = 0; i < 10; i++)
        r (4);
      setenv ("TALLY_OUTPUT", argv[1], 1);
      if (tally_dump () != 0)
        return 1;
    }
  setenv ("TALLY_OUTPUT", argv[2], 1);
  if (tally_dump () != 0)
    return 1;
  _exit (0); /* no exit dump: the files hold the same moment */
}
