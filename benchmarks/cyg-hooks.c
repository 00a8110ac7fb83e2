/* cyg-hooks.c - -finstrument-functions hooks for the measurement
 * microbenchmark (benchmarks/measure.py), compiled without
 * -finstrument-functions.  Empty by default; with -DCOUNT they count calls
 * per function in an open-addressing table keyed by address (what a
 * counting -finstrument-functions tool has to do).  */
#include <stdio.h>

#ifdef COUNT
#define SLOTS 4096
static struct { void *fn; unsigned long calls; } table[SLOTS];

void
__cyg_profile_func_enter (void *fn, void *site)
{
  (void) site;
  unsigned long h = ((unsigned long) fn >> 4) & (SLOTS - 1);
  while (table[h].fn && table[h].fn != fn)
    h = (h + 1) & (SLOTS - 1);
  table[h].fn = fn;
  table[h].calls++;
}

__attribute__ ((destructor)) static void
report (void)
{
  unsigned long total = 0;
  for (unsigned i = 0; i < SLOTS; i++)
    total += table[i].calls;
  fprintf (stderr, "cyg-hooks: %lu calls\n", total);
}
#else
__attribute__ ((noinline)) void
__cyg_profile_func_enter (void *fn, void *site)
{
  __asm__ ("" ::"r"(fn), "r"(site));
}
#endif

__attribute__ ((noinline)) void
__cyg_profile_func_exit (void *fn, void *site)
{
  __asm__ ("" ::"r"(fn), "r"(site));
}
