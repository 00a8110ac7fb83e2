/* cyg-count.c - a minimal counting runtime for -finstrument-functions:
 * what tally's inline counters do (entries and exits per function), done
 * the only way that interface allows.  The function is known only by its
 * address, so each hook finds its slot in an open-addressing hash table
 * (multiplicative hash, linear probing), as benchmarks/lopi-cyg.c does;
 * no shadow stack is needed for counting.  Single-threaded, like
 * tally's update=single.  At exit it prints "cyg: calls=N functions=F" to
 * stderr (benchmarks/run compares stdout only).  */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#define NOINSTR __attribute__ ((no_instrument_function))
/* Table size, a power of two, at least twice the number of functions.  */
#define SLOTS_LOG2 15
#define SLOTS (1u << SLOTS_LOG2)

/* One function: its address (0 = free slot), entries and exits.  */
struct slot
{
  void *fn;
  uint64_t entries, exits;
};
/* The open-addressing table.  */
static struct slot slots[SLOTS];
/* Calls dropped because the table was full.  */
static uint64_t lost;

NOINSTR static struct slot *
lookup (void *fn)
{
  uint32_t i = (uint32_t) (((uintptr_t) fn * 0x9e3779b97f4a7c15ull)
                           >> (64 - SLOTS_LOG2));
  for (uint32_t n = 0; n < SLOTS; n++, i = (i + 1) & (SLOTS - 1))
    {
      if (slots[i].fn == fn)
        return &slots[i];
      if (!slots[i].fn)
        {
          slots[i].fn = fn;
          return &slots[i];
        }
    }
  return 0;
}

NOINSTR void
__cyg_profile_func_enter (void *fn, void *site)
{
  (void) site;
  struct slot *s = lookup (fn);
  if (s)
    s->entries++;
  else
    lost++;
}

NOINSTR void
__cyg_profile_func_exit (void *fn, void *site)
{
  (void) site;
  struct slot *s = lookup (fn);
  if (s)
    s->exits++;
  else
    lost++;
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
