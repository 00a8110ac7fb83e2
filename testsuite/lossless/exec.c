/* exec: the counts made before an exec are written before the image is
   replaced.  f runs 5 times, then the program execs the way MODE says.
   Usage: exec MODE [ARGS]
     execve execv execvp execvpe execl execlp execle fexecve
               exec /bin/echo or env, which print what they were given
     fail      exec a missing file; counting goes on (f 7 times at exit)
     vfork     vfork, the child execs /bin/true; prints the child's pid
     self OUT MID
               exec this program again with "after OUT MID", which moves
               OUT (the file written before the exec, same pid) to MID,
               calls f once and exits
     continue  exec this program again with "second", which calls f 3 more
               times and kills itself (continuous output, run-continuous.py:
               same pid, same file, so the second image continues the first
               one's file instead of replacing it, and it holds 5 + 3 calls)  */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* execvpe */
#endif
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

__attribute__ ((noipa)) int
f (int x)
{
  return x + 1;
}

int
main (int argc, char **argv)
{
  int s = 0;
  if (argc == 4 && strcmp (argv[1], "after") == 0)
    {
      if (rename (argv[2], argv[3]) != 0)
        {
          perror ("rename");
          return 1;
        }
      return f (s) == 1 ? 0 : 1;
    }
  if (argc == 2 && strcmp (argv[1], "second") == 0)
    {
      for (int i = 0; i < 3; i++)
        s = f (s);
      raise (SIGKILL);
      return 1;
    }
  for (int i = 0; i < 5; i++)
    s = f (s);
  if (argc < 2)
    return 2;
  const char *mode = argv[1];
  char *echo_argv[] = { (char *) "echo", (char *) "a", (char *) mode, NULL };
  char *env_argv[] = { (char *) "env", NULL };
  char x_env[64];
  snprintf (x_env, sizeof x_env, "X=%s", mode);
  char *envp[] = { x_env, NULL };
  fflush (stdout);
  if (strcmp (mode, "execve") == 0)
    execve ("/bin/echo", echo_argv, envp);
  else if (strcmp (mode, "execv") == 0)
    execv ("/bin/echo", echo_argv);
  else if (strcmp (mode, "execvp") == 0)
    execvp ("echo", echo_argv);
  else if (strcmp (mode, "execvpe") == 0)
    execvpe ("env", env_argv, envp);
  else if (strcmp (mode, "execl") == 0)
    execl ("/bin/echo", "echo", "a", mode, (char *) NULL);
  else if (strcmp (mode, "execlp") == 0)
    execlp ("echo", "echo", "a", mode, (char *) NULL);
  else if (strcmp (mode, "execle") == 0)
    execle ("/usr/bin/env", "env", (char *) NULL, envp);
  else if (strcmp (mode, "fexecve") == 0)
    {
      int fd = open ("/bin/echo", O_RDONLY);
      if (fd >= 0)
        fexecve (fd, echo_argv, environ);
    }
  else if (strcmp (mode, "fail") == 0)
    {
      if (execv ("/nonexistent/program", echo_argv) == 0)
        return 1;
      s = f (f (s));
      printf ("%d\n", s);
      return 0;
    }
  else if (strcmp (mode, "vfork") == 0)
    {
      pid_t pid = vfork ();
      if (pid == 0)
        {
          char *true_argv[] = { (char *) "true", NULL };
          execv ("/bin/true", true_argv);
          _exit (127);
        }
      int status;
      if (pid < 0 || waitpid (pid, &status, 0) != pid || status != 0)
        return 1;
      printf ("%d\n", (int) pid);
      return 0;
    }
  else if (strcmp (mode, "self") == 0 && argc == 4)
    {
      char *self_argv[] = { argv[0], (char *) "after", argv[2], argv[3], NULL };
      execv ("/proc/self/exe", self_argv);
    }
  else if (strcmp (mode, "continue") == 0)
    {
      char *second_argv[] = { argv[0], (char *) "second", NULL };
      execv ("/proc/self/exe", second_argv);
    }
  perror (mode);
  return 1;
}
