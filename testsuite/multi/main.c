/* Several instrumented objects in one process, each possibly with its own
   copy of the runtime: one data file must hold all of their counts.
   Usage: main PLUGIN.so  */
#include <dlfcn.h>
#include <stdio.h>

int lib_fn (int);

int
main (int argc, char **argv)
{
  if (argc != 2)
    return 2;
  int s = 0;
  for (int i = 0; i < 3; i++)
    s += lib_fn (i);
  void *h = dlopen (argv[1], RTLD_NOW);
  if (!h)
    {
      fprintf (stderr, "%s\n", dlerror ());
      return 1;
    }
  int (*fn) (int) = (int (*) (int)) dlsym (h, "plugin_fn");
  for (int i = 0; i < 2; i++)
    s += fn (i);
  dlclose (h);
  printf ("%d\n", s);
  return 0;
}
