/* dlopen of one instrumented library twice, and of two copies of it.
   Every lib_f call adds 1 to s; the program checks s itself.
   Usage: dl-twice MODE LIB [LIB2] MID
     same LIB MID   dlopen LIB twice (one handle, refcount 2); lib_f 3
                    times through the first, 4 through the second;
                    dlclose once (still loaded), 5 more calls; dump to MID
                    (12 calls); dlclose again (unloaded: its record is
                    kept); dlopen it anew (registered again, from zero),
                    6 calls, dlclose.  At exit: lib_f 18.
     copies LIB LIB2 MID
                    dlopen LIB and LIB2 (a copy of LIB: same module,
                    same checksum, two objects); lib_f 3 times through
                    LIB, 5 through LIB2; dump to MID (8 calls); dlclose
                    LIB, 2 more calls through LIB2, dlclose LIB2.  At
                    exit: lib_f 10, in two records (3 and 7).
   MID is written with tally_dump, found with dlsym in the library.  */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*fn_t) (int);

/* The last library opened: tally_dump is looked up through it, so this
   program needs no runtime of its own (it may be built uninstrumented).  */
static void *last;

__attribute__ ((noipa)) static void *
open_lib (const char *path, fn_t *f)
{
  void *h = dlopen (path, RTLD_NOW);
  if (!h || !(*f = (fn_t) dlsym (h, "lib_f")))
    {
      fprintf (stderr, "%s\n", dlerror ());
      exit (1);
    }
  last = h;
  return h;
}

__attribute__ ((noipa)) static int
calls (fn_t f, int s, int n)
{
  for (int i = 0; i < n; i++)
    s = f (s);
  return s;
}

/* Write the counts so far to MID, then go back to the usual output.  */
__attribute__ ((noipa)) static void
dump_to (const char *mid)
{
  char *old = getenv ("TALLY_OUTPUT");
  old = old ? strdup (old) : NULL;
  setenv ("TALLY_OUTPUT", mid, 1);
  int (*dump) (void) = (int (*) (void)) dlsym (last, "tally_dump");
  if (!dump || dump () != 0)
    exit (1);
  if (old)
    setenv ("TALLY_OUTPUT", old, 1);
  else
    unsetenv ("TALLY_OUTPUT");
  free (old);
}

__attribute__ ((noipa)) static int
loaded (const char *path)
{
  void *h = dlopen (path, RTLD_NOW | RTLD_NOLOAD);
  if (h)
    dlclose (h);
  return h != NULL;
}

int
main (int argc, char **argv)
{
  fn_t f1, f2;
  int s = 0;
  if (argc == 4 && strcmp (argv[1], "same") == 0)
    {
      void *h1 = open_lib (argv[2], &f1);
      s = calls (f1, s, 3);
      void *h2 = open_lib (argv[2], &f2);
      if (h2 != h1 || f2 != f1)
        return 3;
      s = calls (f2, s, 4);
      dlclose (h1);
      if (!loaded (argv[2]))
        return 4;
      s = calls (f2, s, 5);
      dump_to (argv[3]);
      dlclose (h2);
      if (loaded (argv[2]))
        return 5;
      h1 = open_lib (argv[2], &f1);
      s = calls (f1, s, 6);
      dlclose (h1);
      return s == 18 ? 0 : 6;
    }
  if (argc == 5 && strcmp (argv[1], "copies") == 0)
    {
      void *h1 = open_lib (argv[2], &f1);
      void *h2 = open_lib (argv[3], &f2);
      if (h2 == h1 || f2 == f1)
        return 3;
      s = calls (f1, s, 3);
      s = calls (f2, s, 5);
      dump_to (argv[4]);
      dlclose (h1);
      s = calls (f2, s, 2);
      dlclose (h2);
      return s == 10 ? 0 : 6;
    }
  return 2;
}
