/* TALLY_DUMP_ON.  Usage: signal MODE
     wait   f 5 times, print "ready", read one byte from stdin (the test
            sends a signal meanwhile), then f 2 more times; exit 3 if the
            read failed (SA_RESTART should resume it)
     raise  f 3 times, then raise SIGTERM
     abort  f 2 times, then abort ()
     segv   f 4 times, then write through a null pointer  */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__ ((noipa)) int
f (int x)
{
  return x + 1;
}

int
main (int argc, char **argv)
{
  int s = 0;
  if (argc != 2)
    return 2;
  if (strcmp (argv[1], "wait") == 0)
    {
      for (int i = 0; i < 5; i++)
        s = f (s);
      printf ("ready\n");
      fflush (stdout);
      char c;
      if (read (0, &c, 1) != 1)
        {
          perror ("read");
          return 3;
        }
      for (int i = 0; i < 2; i++)
        s = f (s);
      printf ("%d\n", s);
      return 0;
    }
  if (strcmp (argv[1], "raise") == 0)
    {
      for (int i = 0; i < 3; i++)
        s = f (s);
      raise (SIGTERM);
      return 1;
    }
  if (strcmp (argv[1], "abort") == 0)
    {
      for (int i = 0; i < 2; i++)
        s = f (s);
      abort ();
    }
  if (strcmp (argv[1], "segv") == 0)
    {
      for (int i = 0; i < 4; i++)
        s = f (s);
      *(volatile int *) (long) (s - 4) = s;
      return 1;
    }
  return 2;
}
