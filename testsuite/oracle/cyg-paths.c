/* An independent oracle for call paths: link a program built with GCC's
   own -finstrument-functions against this file, and at exit it writes one
   line per call path, "OFF1;OFF2;...;OFFN CALLS", the offsets being the
   functions' addresses relative to the executable's load address (what
   `nm` prints for a PIE), outermost first.  Single-threaded programs
   whose functions all return.  It shares no code with tally.  */
#define _GNU_SOURCE
#include <link.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_DEPTH 256
#define MAX_PATHS 4096

struct path
{
  int depth;
  void *fn[MAX_DEPTH];
  unsigned long calls;
};

static void *stack[MAX_DEPTH];
static int depth;
static struct path paths[MAX_PATHS];
static int npaths;

__attribute__ ((no_instrument_function)) void
__cyg_profile_func_enter (void *fn, void *site)
{
  (void) site;
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
__cyg_profile_func_exit (void *fn, void *site)
{
  (void) fn;
  (void) site;
  if (depth > 0)
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
write_paths (void)
{
  const char *out = getenv ("CYG_PATHS_OUTPUT");
  FILE *f = out ? fopen (out, "w") : NULL;
  if (!f)
    return;
  ElfW (Addr) base = 0;
  dl_iterate_phdr (first_object, &base);
  for (int i = 0; i < npaths; i++)
    {
      for (int k = 0; k < paths[i].depth; k++)
        fprintf (f, "%s%lx", k ? ";" : "",
                 (unsigned long) paths[i].fn[k] - base);
      fprintf (f, " %lu\n", paths[i].calls);
    }
  fclose (f);
}
