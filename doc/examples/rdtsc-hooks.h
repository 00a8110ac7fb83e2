/* rdtsc-hooks.h - per-function inclusive cycles, as tally user hooks.
 *
 * What it measures.  For every function, the time-stamp-counter cycles
 * spent between its entry and its exit, callees included, summed over its
 * calls, and the number of calls:
 *
 *   entry:  frame->start = tally_rdtsc ();
 *   exit:   rdtsc_cycles[id] += tally_rdtsc () - frame->start;
 *           rdtsc_calls[id] += 1;
 *
 * where id is the function's process-wide number (fn->id) and tally_rdtsc
 * (tally/hooks.h) reads the x86-64 time-stamp counter.  Inclusive means a
 * caller's cycles contain its callees': a function called only from one
 * caller never has more cycles than that caller, and a recursive function
 * counts a nested activation once per enclosing activation of itself (so
 * fib's total can exceed main's).  The counts include the hooks' own cost
 * (a few tens of cycles per call: rdtsc is not free) and, since rdtsc is
 * not a serialising instruction, are exact only to a few cycles per call.
 * Updates are plain (not atomic): exact in one thread.  x86-64 only.
 *
 * Ids below RDTSC_MAX_FNS (default 4096) have their own slot; larger ones
 * are summed in the overflow slot rdtsc_cycles[RDTSC_MAX_FNS] /
 * rdtsc_calls[RDTSC_MAX_FNS].
 *
 * Build (from the tally tree, after ./dev build):
 *
 *   gcc -O2 -Iinclude -Idoc/examples -include rdtsc-hooks.h \
 *       -fplugin=build/plugin/tally.so \
 *       -fplugin-arg-tally-hooks=user:rdtsc -fplugin-arg-tally-at=early \
 *       doc/examples/rdtsc-driver.c build/rt/libtally-rt.a -o rdtsc-driver
 *
 * Give the header with -include to every instrumented translation unit.
 * The program calls atexit (rdtsc_report) early in main, so the table is
 * printed after main's own exit has been measured.  The header includes no
 * system header (see tally/hooks.h for why).  */
#ifndef RDTSC_HOOKS_H
#define RDTSC_HOOKS_H

#include <tally/hooks.h>

#ifndef RDTSC_MAX_FNS
#define RDTSC_MAX_FNS 4096
#endif

/* The results, defined (weak) in every unit that includes this header; the
   linker keeps one copy.  Index RDTSC_MAX_FNS is the overflow slot.  */
__attribute__ ((weak)) __UINT64_TYPE__ rdtsc_cycles[RDTSC_MAX_FNS + 1];
__attribute__ ((weak)) __UINT64_TYPE__ rdtsc_calls[RDTSC_MAX_FNS + 1];
/* The descriptor of each id seen, for the names in rdtsc_report.  */
__attribute__ ((weak)) const struct tally_fn *rdtsc_fn[RDTSC_MAX_FNS + 1];

TALLY_HOOK_HELPER __UINT32_TYPE__
rdtsc_slot (__UINT32_TYPE__ id)
{
  return id < RDTSC_MAX_FNS ? id : RDTSC_MAX_FNS;
}

static inline __attribute__ ((always_inline)) void
rdtsc_enter (const struct tally_fn *fn, struct tally_frame *fr)
{
  (void) fn;
  fr->start = tally_rdtsc ();
}

static inline __attribute__ ((always_inline)) void
rdtsc_exit (const struct tally_fn *fn, struct tally_frame *fr)
{
  __UINT64_TYPE__ now = tally_rdtsc ();
  __UINT32_TYPE__ s = rdtsc_slot (fn->id);
  rdtsc_cycles[s] += now - fr->start;
  rdtsc_calls[s]++;
  rdtsc_fn[s] = fn;
}

/* Print one row per function called (id, calls, inclusive cycles, cycles
   per call, name), then the overflow slot.  For atexit.  */
__attribute__ ((unused, no_instrument_function)) static void
rdtsc_report (void)
{
  __builtin_printf ("rdtsc: inclusive cycles per function\n%6s %12s %16s %12s  %s\n",
                    "id", "calls", "cycles", "cycles/call", "function");
  for (__UINT32_TYPE__ i = 0; i < RDTSC_MAX_FNS; i++)
    if (rdtsc_calls[i])
      __builtin_printf ("%6u %12llu %16llu %12llu  %s\n", (unsigned) i,
                        (unsigned long long) rdtsc_calls[i],
                        (unsigned long long) rdtsc_cycles[i],
                        (unsigned long long) (rdtsc_cycles[i] / rdtsc_calls[i]),
                        rdtsc_fn[i]->names->name);
  __builtin_printf ("rdtsc: overflow (ids >= %u): %llu calls, %llu cycles\n",
                    (unsigned) RDTSC_MAX_FNS,
                    (unsigned long long) rdtsc_calls[RDTSC_MAX_FNS],
                    (unsigned long long) rdtsc_cycles[RDTSC_MAX_FNS]);
}

#endif /* RDTSC_HOOKS_H */
