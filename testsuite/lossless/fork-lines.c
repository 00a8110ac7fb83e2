/* fork-lines: block counts across fork and tally_reset, per line.

   main runs generation 0 of a chain: each generation works, descends three
   frames (descend), and forks at the bottom; the child climbs back up
   through the frames it inherited, working at each level, and starts the
   next generation (a fork chain: 3 generations, so 4 processes in a line,
   each waiting for its child); the parent climbs back up too.  With the
   argument "reset DIR", each process also dumps in the middle of a frame
   (at the bottom of each descent, after the fork), moves that file to
   DIR/PID.preK.data, and calls tally_reset: its exit file then holds only
   what came after.  Every file of the run together is the whole run,
   line by line.  Built with -DORACLE (and --coverage) the tally calls are
   left out: gcov counts the same run.  Prints nothing; exit status 0.  */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#ifndef ORACLE
#include <tally/tally.h>
#endif

static const char *reset_dir;

static int
work (int n)
{
  int s = 0;
  for (int i = 0; i < n; i++)
    if (i % 3 == 0)
      s += i;
    else
      s -= 1;
  return s;
}

/* Dump what this process counted so far to DIR/PID.preK.data and start
   again from zero.  */
static void
dump_aside (void)
{
#ifndef ORACLE
  static int k;
  char from[4096], to[4096];
  const char *pattern = getenv ("TALLY_OUTPUT");
  if (!pattern || tally_dump () != 0)
    exit (3);
  /* The pattern is DIR/%p.data.  */
  snprintf (from, sizeof from, "%s/%d.data", reset_dir, (int) getpid ());
  snprintf (to, sizeof to, "%s/%d.pre%d.data", reset_dir, (int) getpid (),
            k++);
  if (rename (from, to) != 0)
    exit (4);
  tally_reset ();
#endif
}

static int
descend (int level, int gen, int *child)
{
  int s = work (level + 2);
  if (level > 0)
    {
      s += descend (level - 1, gen, child);
      s += work (level + 3);
      return s;
    }
  fflush (NULL);
  pid_t pid = fork ();
  if (pid < 0)
    exit (2);
  *child = pid == 0;
  if (reset_dir)
    dump_aside ();
  if (pid == 0)
    return s + work (4);
  int status;
  if (waitpid (pid, &status, 0) != pid || !WIFEXITED (status)
      || WEXITSTATUS (status) != 0)
    exit (5);
  return s + work (6);
}

static int
generation (int gen)
{
  int child = 0;
  int s = work (gen + 1);
  s += descend (2, gen, &child);
  if (child && gen < 2)
    s += generation (gen + 1);
  else
    s += work (7);
  return s;
}

int
main (int argc, char **argv)
{
  if (argc == 3 && strcmp (argv[1], "reset") == 0)
    reset_dir = argv[2];
  int s = generation (0);
  return s == 123456789;
}
