/* cyg-count.c - a minimal counting runtime for -finstrument-functions:
 * what tally's inline counters do (entries and exits per function), done
 * the only way that interface allows.  The function is known only by its
 * address, so each hook finds its slot in an open-addressing hash table
 * (cyg-table.h, shared with benchmarks/lopi-cyg.c);
 * no shadow stack is needed for counting.  Single-threaded, like
 * tally's update=single.  At exit it prints "cyg: calls=N functions=F" to
 * stderr (benchmarks/run compares stdout only).  */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#define NOINSTR __attribute__ ((no_instrument_function))

/* One function: its address (0 = free slot), entries and exits.  */
struct slot
{
  void *fn;
  uint64_t entries, exits;
};
#include "cyg-table.h"
/* Calls dropped because the table was full.  */
static uint64_t lost;

/* Count an entry (EXIT 0) or an exit of FN, in both hooks' own bodies.  */
NOINSTR static inline __attribute__ ((always_inline)) void
count (void *fn, int exit)
{
  struct slot *s = lookup (fn);
  if (!s)
    lost++;
  else if (exit)
    s->exits++;
  else
    s->entries++;
}

NOINSTR void
__cyg_profile_func_enter (void *fn, void *site)
{
  (void) site;
  count (fn, 0);
}

NOINSTR void
__cyg_profile_func_exit (void *fn, void *site)
{
  (void) site;
  count (fn, 1);
}

NOINSTR __attribute__ ((destructor)) static void
cyg_summary (void)
{
  uint64_t calls = 0, fns = 0;
  for (uint32_t i = 0; i < SLOTS; i++)
    {
      calls += slots[i].entries;
      fns += slots[i].entries != 0;
    }
  fprintf (stderr, "cyg: calls=%" PRIu64 " functions=%" PRIu64 "\n", calls,
           fns);
  if (lost)
    fprintf (stderr, "cyg: table full, %" PRIu64 " calls lost\n", lost);
}
