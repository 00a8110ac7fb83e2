/* lopi-cyg.c - LOPI's benchmark instrumentation (see lopi-hooks.h) for
 * GCC's -finstrument-functions.
 *
 * Compiled WITHOUT -finstrument-functions (and without the plugin) and
 * linked into a program built with -finstrument-functions.  The operation
 * is the same as lopi-hooks.h: read the 4-byte `lopi_source` at entry,
 * accumulate (value at exit - value at entry) and a call count per function
 * at exit.  What -finstrument-functions adds around it is exactly what
 * tally's user hooks avoid:
 *
 * - the hooks are always out-of-line calls with two arguments (the
 *   function's address and the call site), made from every function and
 *   from every place a function was inlined;
 * - nothing identifies the function but its address, so the per-function
 *   slot is found by a lookup: an open-addressing hash table (linear
 *   probing; support/cyg-table.h) keyed by the address - the cost LOPI's
 *   "inlined identifiers" (and tally's constant `fn->id`) remove;
 * - there is no per-activation frame, so the entry value goes on a shadow
 *   stack (single-threaded; the benchmark programs do not longjmp out of
 *   instrumented functions).
 *
 * Prints the same "lopi: calls=N functions=F sum=S" line as lopi-data.c at
 * exit.  */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#define NOINSTR __attribute__ ((no_instrument_function))
/* Deepest nesting of instrumented calls kept on the shadow stack.  */
#define STACK_MAX 65536

/* The 4-byte value read at entry and at exit.  */
volatile uint32_t lopi_source;

/* One function: its address (0 = free slot), sum of differences, calls.  */
struct slot
{
  void *fn;
  uint64_t total;
  uint64_t calls;
};
#include "support/cyg-table.h"
/* Entry values of the active calls, innermost last.  */
static uint32_t stack[STACK_MAX];
/* Number of active instrumented calls (may exceed STACK_MAX: not stored).  */
static uint32_t depth;
/* Set when the table is full (then calls are dropped and reported).  */
static uint64_t lost;

NOINSTR void
__cyg_profile_func_enter (void *fn, void *site)
{
  (void) fn;
  (void) site;
  uint32_t d = depth++;
  if (d < STACK_MAX)
    stack[d] = lopi_source;
}

NOINSTR void
__cyg_profile_func_exit (void *fn, void *site)
{
  (void) site;
  uint32_t d = --depth;
  uint32_t start = d < STACK_MAX ? stack[d] : 0;
  struct slot *s = lookup (fn);
  if (!s)
    {
      lost++;
      return;
    }
  s->total += (uint32_t) (lopi_source - start);
  s->calls++;
}

NOINSTR __attribute__ ((destructor)) static void
lopi_summary (void)
{
  uint64_t calls = 0, sum = 0, fns = 0;
  for (uint32_t i = 0; i < SLOTS; i++)
    {
      calls += slots[i].calls;
      sum += slots[i].total;
      fns += slots[i].calls != 0;
    }
  fprintf (stderr, "lopi: calls=%" PRIu64 " functions=%" PRIu64 " sum=%" PRIu64
           "\n", calls, fns, sum);
  if (lost)
    fprintf (stderr, "lopi: table full, %" PRIu64 " calls lost\n", lost);
}
