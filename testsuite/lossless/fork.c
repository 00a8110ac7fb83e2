/* fork: the parent and the child each write their own file, and the child
   starts from zero.  f runs 3 times before the fork, 2 times in the child
   and 4 more times in the parent, so the parent's file must say 7 and the
   child's 2.  Prints the child's pid and 7.
   With the argument "kill" (continuous output, run-continuous.py) the
   child kills itself instead of returning, and so does the parent after
   printing: neither process runs any exit code, and the files must say 7
   and 2 all the same.  */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__ ((noipa)) int
f (int x)
{
  return x + 1;
}

int
main (int argc, char **argv)
{
  int die = argc > 1 && strcmp (argv[1], "kill") == 0;
  int s = 0;
  for (int i = 0; i < 3; i++)
    s = f (s);
  fflush (stdout);
  pid_t pid = fork ();
  if (pid < 0)
    return 1;
  if (pid == 0)
    {
      for (int i = 0; i < 2; i++)
        s = f (s);
      if (die)
        raise (SIGKILL);
      return s == 5 ? 0 : 1;
    }
  int status;
  if (waitpid (pid, &status, 0) != pid
      || (die ? !WIFSIGNALED (status) || WTERMSIG (status) != SIGKILL
          : !WIFEXITED (status) || WEXITSTATUS (status) != 0))
    return 1;
  for (int i = 0; i < 4; i++)
    s = f (s);
  printf ("%d %d\n", (int) pid, s);
  if (die)
    {
      fflush (stdout);
      raise (SIGKILL);
      return 1;
    }
  return 0;
}
