/* tally_dump() writes the counts so far; tally_reset() zeroes them; the
   final dump at exit holds only what ran after the reset.  Usage:
   dump-reset MIDPATH (the final file goes to TALLY_OUTPUT).  */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <tally/tally.h>

__attribute__ ((noinline)) int
step (int x)
{
  return x + 1;
}

int
main (int argc, char **argv)
{
  if (argc != 2)
    return 2;
  int s = 0;
  for (int i = 0; i < 7; i++)
    s = step (s);
  /* Mid-run dump to another path: 7 calls of step so far.  */
  const char *final_path = getenv ("TALLY_OUTPUT");
  setenv ("TALLY_OUTPUT", argv[1], 1);
  errno = 1234;
  if (tally_dump () != 0)
    {
      perror ("tally_dump");
      return 1;
    }
  if (errno != 1234)
    {
      fprintf (stderr, "tally_dump changed errno to %d\n", errno);
      return 1;
    }
  setenv ("TALLY_OUTPUT", final_path, 1);
  tally_reset ();
  for (int i = 0; i < 3; i++)
    s = step (s);
  printf ("%d\n", s);
  return 0;
}
