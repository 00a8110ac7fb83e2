/* Continuous output: a process that ends without running any exit code.
   Usage: kill MODE N.  f runs N times (g never), then by MODE:
     wait    print the sum and wait to be killed (SIGKILL from the parent)
     _exit   _exit (0)
     abort   abort () (no TALLY_DUMP_ON: no handler writes anything)
     dump    tally_dump (), 2 more calls of f, print, wait to be killed
     normal  return from main: the file is complete
     closefds  close every descriptor from 3 up, open argv[3] (which gets
             the continuous file's number) and write a byte, then return:
             the exit dump must reopen the file, not write into argv[3]
   The file must hold f's N calls exactly (N + 2 for dump), and the call of
   pre made before the unit registered.  Built as one
   unit, or with -DSPLIT as the caller of other.c's other_f (a second unit,
   built with or without counters=mapped).  */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tally/tally.h"

__attribute__ ((noipa)) int
f (int x)
{
  if (x & 1)
    return x * 3;
  return x + 1;
}

__attribute__ ((noipa)) int
g (int x)
{
  return x - 1;
}

/* Counted before the unit registers (its constructor has priority 101):
   registration copies the count into the file.  */
__attribute__ ((noipa)) int
pre (int x)
{
  return x + 2;
}

__attribute__ ((constructor (100))) static void
before_registration (void)
{
  pre (0);
}

#ifdef SPLIT
int other_f (int x);
#endif

static void
wait_for_kill (int s)
{
  printf ("%d\n", s);
  fflush (stdout);
  for (;;)
    pause ();
}

int
main (int argc, char **argv)
{
  if (argc < 3)
    return 2;
  const char *mode = argv[1];
  int n = atoi (argv[2]), s = 0;
  for (int i = 0; i < n; i++)
    s += f (i);
#ifdef SPLIT
  for (int i = 0; i < n; i++)
    s += other_f (i);
#endif
  if (strcmp (mode, "closefds") == 0)
    {
      for (int fd = 3; fd < 1024; fd++)
        close (fd);
      int v = open (argv[3], O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (v < 0 || write (v, "x", 1) != 1)
        return 4;
      printf ("%d\n", v);
      return 0;
    }
  if (argc > 3)
    s += g (s);
  if (strcmp (mode, "wait") == 0)
    wait_for_kill (s);
  if (strcmp (mode, "_exit") == 0)
    _exit (0);
  if (strcmp (mode, "abort") == 0)
    abort ();
  if (strcmp (mode, "dump") == 0)
    {
      if (tally_dump () != 0)
        return 3;
      s += f (1) + f (2);
      wait_for_kill (s);
    }
  printf ("%d\n", s);
  return 0;
}
