/* An independent oracle for call counts and call paths: link a program
   built with GCC's own -finstrument-functions against this file, and at
   exit it writes
   - to $CYG_COUNT_OUTPUT one line per function, "OFFSET ENTRIES EXITS"
     (run-case.py, the at=early counts);
   - to $CYG_PATHS_OUTPUT, when that is set, one line per call path,
     "OFF1;OFF2;...;OFFN CALLS", outermost first (run-paths.py); paths
     are kept for single-threaded programs whose functions all return;
   the offsets being the functions' addresses relative to the executable's
   load address (what `nm` prints for a PIE).  It shares no code with
   tally.  */
#define _GNU_SOURCE
#include <link.h>
#include <stdio.h>
#include <stdlib.h>

#define SLOTS 4096
#define MAX_DEPTH 256
#define MAX_PATHS 4096

struct slot
{
  void *fn;
  unsigned long entries, exits;
};

/* Open-addressing table keyed by function address.  */
static struct slot table[SLOTS];

struct path
{
  int depth;
  void *fn[MAX_DEPTH];
  unsigned long calls;
};

/* The call paths: the stack of functions entered, and each path seen.  */
static void *stack[MAX_DEPTH];
static int depth;
static struct path paths[MAX_PATHS];
static int npaths;

__attribute__ ((no_instrument_function)) static struct slot *
find (void *fn)
{
  unsigned long h = ((unsigned long) fn >> 4) % SLOTS;
  for (unsigned n = 0; n < SLOTS; n++, h = (h + 1) % SLOTS)
    {
      void *cur = __atomic_load_n (&table[h].fn, __ATOMIC_ACQUIRE);
      if (cur == fn)
        return &table[h];
      if (!cur)
        {
          void *expected = NULL;
          if (__atomic_compare_exchange_n (&table[h].fn, &expected, fn, 0,
                                           __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)
              || expected == fn)
            return &table[h];
        }
    }
  abort ();
}

/* Whether call paths are wanted ($CYG_PATHS_OUTPUT set), asked once.  */
__attribute__ ((no_instrument_function)) static int
paths_wanted (void)
{
  static int state; /* 0 not asked yet, 1 no, 2 yes */
  int s = __atomic_load_n (&state, __ATOMIC_RELAXED);
  if (!s)
    {
      s = getenv ("CYG_PATHS_OUTPUT") ? 2 : 1;
      __atomic_store_n (&state, s, __ATOMIC_RELAXED);
    }
  return s == 2;
}

__attribute__ ((no_instrument_function)) static void
path_enter (void *fn)
{
  if (depth >= MAX_DEPTH)
    abort ();
  stack[depth++] = fn;
  for (int i = 0; i < npaths; i++)
    {
      if (paths[i].depth != depth)
        continue;
      int k = 0;
      while (k < depth && paths[i].fn[k] == stack[k])
        k++;
      if (k == depth)
        {
          paths[i].calls++;
          return;
        }
    }
  if (npaths == MAX_PATHS)
    abort ();
  paths[npaths].depth = depth;
  for (int k = 0; k < depth; k++)
    paths[npaths].fn[k] = stack[k];
  paths[npaths++].calls = 1;
}

__attribute__ ((no_instrument_function)) void
__cyg_profile_func_enter (void *fn, void *site)
{
  (void) site;
  __atomic_fetch_add (&find (fn)->entries, 1, __ATOMIC_RELAXED);
  if (paths_wanted ())
    path_enter (fn);
}

__attribute__ ((no_instrument_function)) void
__cyg_profile_func_exit (void *fn, void *site)
{
  (void) site;
  __atomic_fetch_add (&find (fn)->exits, 1, __ATOMIC_RELAXED);
  if (paths_wanted () && depth > 0)
    depth--;
}

__attribute__ ((no_instrument_function)) static int
first_object (struct dl_phdr_info *info, size_t size, void *base)
{
  (void) size;
  *(ElfW (Addr) *) base = info->dlpi_addr;
  return 1;
}

__attribute__ ((no_instrument_function, destructor)) static void
write_oracle (void)
{
  ElfW (Addr) base = 0;
  dl_iterate_phdr (first_object, &base);
  const char *path = getenv ("CYG_COUNT_OUTPUT");
  FILE *f = path ? fopen (path, "w") : NULL;
  if (f)
    {
      for (unsigned i = 0; i < SLOTS; i++)
        if (table[i].fn)
          fprintf (f, "%lx %lu %lu\n", (unsigned long) table[i].fn - base,
                   table[i].entries, table[i].exits);
      fclose (f);
    }
  path = getenv ("CYG_PATHS_OUTPUT");
  f = path ? fopen (path, "w") : NULL;
  if (f)
    {
      for (int i = 0; i < npaths; i++)
        {
          for (int k = 0; k < paths[i].depth; k++)
            fprintf (f, "%s%lx", k ? ";" : "",
                     (unsigned long) paths[i].fn[k] - base);
          fprintf (f, " %lu\n", paths[i].calls);
        }
      fclose (f);
    }
}
