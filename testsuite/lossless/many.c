/* Many processes, one file (TALLY_OUTPUT with %m).  Usage: many K [DUMP]
   calls f K times and exits; with DUMP, also writes a mid-run dump after
   the first call (which the exit dump must not count twice).  */
#include <stdlib.h>
#include <tally/tally.h>

__attribute__ ((noipa)) int
f (int x)
{
  return x + 1;
}

#ifdef SECOND_BUILD
/* Another build of the same source: one more function, another checksum.  */
__attribute__ ((noipa)) int
g (int x)
{
  return x - 1;
}
#endif

int
main (int argc, char **argv)
{
  if (argc < 2)
    return 2;
  int k = atoi (argv[1]), s = 0;
  for (int i = 0; i < k; i++)
    {
      s = f (s);
      if (i == 0 && argc > 2 && tally_dump () != 0)
        return 1;
    }
#ifdef SECOND_BUILD
  s = g (s);
#endif
  return s == k || s == k - 1 ? 0 : 1;
}
