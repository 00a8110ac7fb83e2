/* Continuous output across fork: f runs 3 times before the fork, 2 times
   in the child, which then kills itself, and 4 more times in the parent,
   which prints the child's pid and kills itself too.  The parent's file
   must say 7 and the child's 2 (it starts from zero), though neither
   process ran any exit code.  */
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__ ((noipa)) int
f (int x)
{
  return x + 1;
}

int
main (void)
{
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
      raise (SIGKILL);
      return 1;
    }
  int status;
  if (waitpid (pid, &status, 0) != pid || !WIFSIGNALED (status)
      || WTERMSIG (status) != SIGKILL)
    return 1;
  for (int i = 0; i < 4; i++)
    s = f (s);
  printf ("%d %d\n", (int) pid, s);
  fflush (stdout);
  raise (SIGKILL);
  return 1;
}
