/* depth-hooks.h - a call-depth histogram, as tally user hooks.
 *
 * What it measures.  How deep the instrumented call stack is when
 * functions are entered.  Each thread has a depth counter, depth_now: the
 * number of instrumented activations it has open.  The entry hook adds
 * one to depth_hist[d], d being depth_now before the call (0 for the first
 * instrumented function of a thread, usually main), then increments
 * depth_now; the exit hook decrements it:
 *
 *   entry:  depth_hist[min (depth_now, DEPTH_BUCKETS - 1)] += 1;
 *           depth_deepest = max (depth_deepest, depth_now);
 *           depth_now += 1;
 *   exit:   depth_now -= 1;
 *
 * So the histogram's sum is the number of calls, and a function recursing
 * N levels below main is entered at depth N at its deepest.  The histogram
 * is bounded: depths of DEPTH_BUCKETS - 1 (default 63) and more all go to
 * the last bucket; depth_deepest keeps the true maximum.
 *
 * The exit hook must run whenever an activation ends, or depth_now drifts
 * upwards.  With at=early it runs on every return and also when a C++
 * exception unwinds through the function, so after a catch depth_now is
 * what it was before the try (and 0 again once main has returned).  With
 * at=late an exception skips the exit hooks of the frames it unwinds, and
 * depth_now stays too high by that many; longjmp does the same in both
 * modes.
 *
 * depth_now is thread-local; the histogram and depth_deepest are shared,
 * with plain updates: exact in one thread, approximate when threads enter
 * functions at the same moment.
 *
 * Build (from the tally tree, after ./dev build):
 *
 *   gcc -O2 -Iinclude -Idoc/examples -include depth-hooks.h \
 *       -fplugin=build/plugin/tally.so \
 *       -fplugin-arg-tally-hooks=user:depth -fplugin-arg-tally-at=early \
 *       doc/examples/depth-driver.c build/rt/libtally-rt.a -o depth-driver
 *
 *   g++ -O2 ... the same flags ... doc/examples/depth-throw.cc ...
 *
 * Give the header with -include to every instrumented translation unit.
 * The program calls atexit (depth_report) early in main, so the histogram
 * is printed after main has returned.  The header includes no system
 * header (see tally/hooks.h for why).  */
#ifndef DEPTH_HOOKS_H
#define DEPTH_HOOKS_H

#include <tally/hooks.h>

#ifndef DEPTH_BUCKETS
#define DEPTH_BUCKETS 64
#endif

/* This thread's open instrumented activations.  The results below are
   defined (weak) in every unit that includes this header; the linker keeps
   one copy.  */
__attribute__ ((weak)) __thread __UINT32_TYPE__ depth_now;
/* depth_hist[d]: entries at depth d; the last bucket: at depth >= its index.  */
__attribute__ ((weak)) __UINT64_TYPE__ depth_hist[DEPTH_BUCKETS];
/* The greatest depth at which a function was entered.  */
__attribute__ ((weak)) __UINT32_TYPE__ depth_deepest;

static inline __attribute__ ((always_inline)) void
depth_enter (const struct tally_fn *fn, struct tally_frame *fr)
{
  (void) fn;
  (void) fr;
  __UINT32_TYPE__ d = depth_now;
  depth_hist[d < DEPTH_BUCKETS - 1 ? d : DEPTH_BUCKETS - 1]++;
  if (d > depth_deepest)
    depth_deepest = d;
  depth_now = d + 1;
}

static inline __attribute__ ((always_inline)) void
depth_exit (const struct tally_fn *fn, struct tally_frame *fr)
{
  (void) fn;
  (void) fr;
  depth_now--;
}

/* Print the number of calls, the deepest depth, this thread's current
   depth and the non-empty buckets.  For atexit.  */
__attribute__ ((unused, no_instrument_function)) static void
depth_report (void)
{
  unsigned long long calls = 0;
  for (int d = 0; d < DEPTH_BUCKETS; d++)
    calls += depth_hist[d];
  __builtin_printf ("depth: %llu calls, deepest %u, depth now %u\n%6s %12s\n",
                    calls, (unsigned) depth_deepest, (unsigned) depth_now,
                    "depth", "entries");
  for (int d = 0; d < DEPTH_BUCKETS; d++)
    if (depth_hist[d])
      __builtin_printf ("%5d%s %12llu\n", d, d == DEPTH_BUCKETS - 1 ? "+" : " ",
                        (unsigned long long) depth_hist[d]);
}

#endif /* DEPTH_HOOKS_H */
