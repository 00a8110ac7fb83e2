/* Continuous output across exec: the first image calls f 5 times and
   execs itself with "second", which calls f 3 times and kills itself.
   Same pid, same file: the second image continues the first one's file
   instead of replacing it, so it holds 5 + 3 calls.  */
#include <signal.h>
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
  int second = argc > 1 && strcmp (argv[1], "second") == 0;
  for (int i = 0; i < (second ? 3 : 5); i++)
    s = f (s);
  if (second)
    raise (SIGKILL);
  char *args[] = { argv[0], (char *) "second", NULL };
  execv ("/proc/self/exe", args);
  return 1;
}
