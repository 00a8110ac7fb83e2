/* Merge-on-write with repeated dumps around a dlclose: lib_f runs 3
   times, a merged dump, 2 more times, dlclose (the module's record is
   kept), another merged dump, then the exit dump.  The file must say 5,
   whatever the number of dumps.  Usage: dl-main LIB.so  */
#include <dlfcn.h>
#include <stdio.h>
#include <tally/tally.h>

int
main (int argc, char **argv)
{
  if (argc != 2)
    return 2;
  void *h = dlopen (argv[1], RTLD_NOW);
  if (!h)
    {
      fprintf (stderr, "%s\n", dlerror ());
      return 1;
    }
  int (*lib_f) (int) = (int (*) (int)) dlsym (h, "lib_f");
  int s = 0;
  for (int i = 0; i < 3; i++)
    s = lib_f (s);
  if (tally_dump () != 0)
    return 1;
  for (int i = 0; i < 2; i++)
    s = lib_f (s);
  dlclose (h);
  if (tally_dump () != 0)
    return 1;
  return s == 5 ? 0 : 1;
}
