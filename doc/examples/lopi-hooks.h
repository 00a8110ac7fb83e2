/* lopi-hooks.h - LOPI's benchmark instrumentation as tally user hooks.
 *
 * What it measures.  The LOPI paper measures every instrumentation
 * technique with one operation: read a 4-byte value at function entry and
 * accumulate its change at the function's exit, as one would accumulate a
 * hardware performance counter.  These hooks do exactly that:
 *
 *   entry:  frame->start = LOPI_READ ();
 *   exit:   lopi_total[id] += (uint32_t) (LOPI_READ () - frame->start);
 *           lopi_calls[id] += 1;
 *
 * where id is the function's process-wide number (fn->id).  The value read
 * is, by default, the program's `volatile uint32_t lopi_counter` (volatile,
 * so GCC reads it at both points as it would a memory-mapped counter; the
 * program adds its "work" to it); define LOPI_READ() before this header to
 * read something else, for instance the low 32 bits of an event counter:
 * -D'LOPI_READ()=((__UINT32_TYPE__) my_events)'.  The difference is taken
 * modulo 2^32, so a counter that wraps around is still measured right.
 *
 * lopi_total[id] is inclusive: what the counter advanced while the function
 * was active, its callees' share included (a recursive function counts a
 * nested activation's share once per enclosing activation of itself).
 * lopi_calls[id] counts exits, so with at=early it counts every call,
 * including those left by a C++ exception; a function left by longjmp is
 * not counted.  Updates are plain (not atomic): exact in one thread.
 *
 * Arrays indexed by id need a bound: ids below LOPI_MAX_FNS (default 4096)
 * have their own slot; every function with a larger id is accumulated in
 * the overflow slot lopi_total[LOPI_MAX_FNS] / lopi_calls[LOPI_MAX_FNS].
 * If lopi_report() shows overflow calls, rebuild with a larger
 * -DLOPI_MAX_FNS (the same value in every translation unit).
 *
 * Build (from the tally tree, after ./dev build):
 *
 *   gcc -O2 -Iinclude -Idoc/examples -include lopi-hooks.h \
 *       -fplugin=build/plugin/tally.so \
 *       -fplugin-arg-tally-hooks=user:lopi -fplugin-arg-tally-at=early \
 *       doc/examples/lopi-driver.c build/rt/libtally-rt.a -o lopi-driver
 *
 * Give the header with -include to every instrumented translation unit
 * (the hooks must be defined before the first function).  The program
 * defines `volatile uint32_t lopi_counter` (unless LOPI_READ is redefined)
 * and calls atexit (lopi_report) early in main: the table is then printed
 * after main has returned, so main's own exit is counted.
 *
 * Like tally/hooks.h, this header includes no system header (a header
 * given with -include must not fix the feature-test macros before the
 * program's own #defines), hence __UINT32_TYPE__ and __builtin_printf.  */
#ifndef LOPI_HOOKS_H
#define LOPI_HOOKS_H

#include <tally/hooks.h>

#ifndef LOPI_MAX_FNS
#define LOPI_MAX_FNS 4096
#endif

#ifndef LOPI_READ
#define LOPI_READ() lopi_counter
/* The 4-byte value the hooks read; the program defines it and adds to it.  */
extern volatile __UINT32_TYPE__ lopi_counter;
#endif

/* The results, defined (weak) in every unit that includes this header; the
   linker keeps one copy.  Index LOPI_MAX_FNS is the overflow slot.  */
__attribute__ ((weak)) __UINT64_TYPE__ lopi_total[LOPI_MAX_FNS + 1];
__attribute__ ((weak)) __UINT64_TYPE__ lopi_calls[LOPI_MAX_FNS + 1];
/* The descriptor of each id seen, for the names in lopi_report (one store
   per exit; a benchmark that wants only LOPI's operation can drop it).  */
__attribute__ ((weak)) const struct tally_fn *lopi_fn[LOPI_MAX_FNS + 1];

/* The slot of function ID: its own, or the overflow slot.  Named with the
   prefix, so the plugin does not instrument it; TALLY_HOOK_HELPER makes
   sure it is inlined even at -O0.  */
TALLY_HOOK_HELPER __UINT32_TYPE__
lopi_slot (__UINT32_TYPE__ id)
{
  return id < LOPI_MAX_FNS ? id : LOPI_MAX_FNS;
}

/* The hooks.  always_inline: inlined at every -O level, -O0 included, and
   on paths GCC predicts cold, where `static inline` alone can leave a call
   (the plugin warns when it does).  */
static inline __attribute__ ((always_inline)) void
lopi_enter (const struct tally_fn *fn, struct tally_frame *fr)
{
  (void) fn;
  fr->start = LOPI_READ ();
}

static inline __attribute__ ((always_inline)) void
lopi_exit (const struct tally_fn *fn, struct tally_frame *fr)
{
  __UINT32_TYPE__ s = lopi_slot (fn->id);
  lopi_total[s] += (__UINT32_TYPE__) (LOPI_READ () - (__UINT32_TYPE__) fr->start);
  lopi_calls[s]++;
  lopi_fn[s] = fn;
}

/* Print one row per function called (id, calls, inclusive total, name),
   then the overflow slot.  For atexit.  */
__attribute__ ((unused, no_instrument_function)) static void
lopi_report (void)
{
  __builtin_printf ("lopi: counter advance while each function was active "
                    "(inclusive)\n%6s %12s %14s  %s\n", "id", "calls", "total",
                    "function");
  for (__UINT32_TYPE__ i = 0; i < LOPI_MAX_FNS; i++)
    if (lopi_calls[i])
      __builtin_printf ("%6u %12llu %14llu  %s\n", (unsigned) i,
                        (unsigned long long) lopi_calls[i],
                        (unsigned long long) lopi_total[i], lopi_fn[i]->names->name);
  __builtin_printf ("lopi: overflow (ids >= %u): %llu calls, total %llu\n",
                    (unsigned) LOPI_MAX_FNS,
                    (unsigned long long) lopi_calls[LOPI_MAX_FNS],
                    (unsigned long long) lopi_total[LOPI_MAX_FNS]);
}

#endif /* LOPI_HOOKS_H */
