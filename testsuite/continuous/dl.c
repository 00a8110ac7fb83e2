/* Continuous output and dlopen: LIB is loaded, lib_f called 3 times,
   unloaded, loaded again and lib_f called 4 times; then the process kills
   itself.  Each load is a module record with its own region: 3 + 4 calls.
   Usage: dl LIB.  */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>

static int
calls (const char *lib, int n)
{
  void *h = dlopen (lib, RTLD_NOW);
  if (!h)
    {
      fprintf (stderr, "%s\n", dlerror ());
      return -1;
    }
  int (*lib_f) (int) = (int (*) (int)) dlsym (h, "lib_f");
  int s = 0;
  for (int i = 0; i < n; i++)
    s = lib_f (s);
  if (n == 3 && dlclose (h) != 0)
    return -1;
  return s;
}

int
main (int argc, char **argv)
{
  if (argc < 2 || calls (argv[1], 3) != 3 || calls (argv[1], 4) != 4)
    return 1;
  raise (SIGKILL);
  return 1;
}
