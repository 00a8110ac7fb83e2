/* tally/hooks.h - instrumentation written by the user, inlined by GCC.
 *
 * Compile with -fplugin=tally -fplugin-arg-tally-hooks=user:PREFIX and
 * define, before the first function of the translation unit (for instance
 * in a header given with -include):
 *
 *   static inline void PREFIX_enter (const struct tally_fn *fn,
 *                                    struct tally_frame *frame);
 *   static inline void PREFIX_exit (const struct tally_fn *fn,
 *                                   struct tally_frame *frame);
 *
 * The plugin calls PREFIX_enter when a function starts (after its
 * prologue, before any of its own code) and PREFIX_exit when it leaves:
 * on every return and, with at=early, also when an exception unwinds
 * through it.  Both get the function's descriptor (include/tally/abi.h:
 * name, file, line, and `id`, a process-wide number dense from 0 that the
 * runtime assigns when the module registers, before main) and a frame: a
 * struct tally_frame on the instrumented function's stack, the same for
 * both calls of one activation, uninitialised at entry.
 *
 * With at=early (recommended) the calls are inserted before inlining, so
 * GCC inlines the hooks like any static inline function and the
 * instrumentation costs what their C costs; the plugin warns about any call
 * it left out of line.  With at=late the calls are inserted after inlining
 * and stay calls.
 *
 * What a hook may do: read and write memory, its frame and `fn`, inline
 * assembly.  What it may not: call instrumented code (that would recurse).
 * The plugin never instruments the hook functions, nor any function whose
 * name starts with PREFIX_; helpers with other names need
 * __attribute__((no_instrument_function)) or TALLY_HOOK_HELPER.  `id` is 0
 * in code that runs before the module's constructor (priority 101).
 *
 * Link with the runtime as usual (-ltally-rt): it assigns the ids and
 * writes the function list (with zero counts) at exit.  */
#ifndef TALLY_HOOKS_H
#define TALLY_HOOKS_H

#include "tally/abi.h"

/* Per-activation storage for the hooks.  */
struct tally_frame
{
  __UINT64_TYPE__ start;   /* for instance a counter value read at entry */
  __UINT64_TYPE__ data[3]; /* anything else the hooks want to carry to exit */
};

/* For helpers called from hooks: never instrumented, always inlined.  */
#define TALLY_HOOK_HELPER \
  static inline __attribute__ ((always_inline, no_instrument_function))

/* The time-stamp counter (x86-64), for cycle-measuring hooks.  */
TALLY_HOOK_HELPER __UINT64_TYPE__
tally_rdtsc (void)
{
  __UINT32_TYPE__ lo, hi;
  __asm__ __volatile__ ("rdtsc" : "=a"(lo), "=d"(hi));
  return ((__UINT64_TYPE__) hi << 32) | lo;
}

#endif /* TALLY_HOOKS_H */
