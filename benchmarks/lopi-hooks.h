/* lopi-hooks.h - LOPI's benchmark instrumentation as tally user hooks.
 *
 * The LOPI paper (Table 2) measures every instrumentation technique with
 * the same operation: "reading a 4-byte value at function entry and
 * accumulating it at the function exit, similar for instance to
 * accumulating a hardware performance counter (the kernel is not
 * accessed)".  Here the 4-byte value is `lopi_source`, a volatile 32-bit
 * word in memory (so the compiler must read it at both points, as it would
 * a memory-mapped counter); the hooks keep, per function, the sum of the
 * differences between exit and entry, and a call count.
 *
 * Used by benchmarks/user-hooks.sh with
 *
 *   gcc -O2 -I include -include benchmarks/lopi-hooks.h \
 *       -fplugin=build/plugin/tally.so -fplugin-arg-tally-hooks=user:lopi \
 *       -fplugin-arg-tally-at=early ...  benchmarks/lopi-data.c -ltally-rt
 *
 * Inlined (the default): GCC inlines the hooks into every function, so
 * each entry is one load and one store to the frame, and each exit a load,
 * a subtraction and two read-modify-writes indexed by the constant-address
 * descriptor's `id` - LOPI's "inlined identifiers", no lookup by address.
 * With -DLOPI_OUT_OF_LINE the same code is declared noinline: every hook
 * is a call (the "src" row of LOPI's Table 2 against "src (inline)").
 *
 * lopi-data.c (compiled without the plugin) defines the arrays and prints
 * a summary at exit; lopi-cyg.c does the same operation for
 * -finstrument-functions.  */
#ifndef LOPI_HOOKS_H
#define LOPI_HOOKS_H

/* No system header here: this file is given with -include, before the
   program's first line, and must not fix feature-test macros (_GNU_SOURCE)
   before the program defines them; hence GCC's predefined type macros.  */
#include <tally/hooks.h>

typedef __UINT32_TYPE__ lopi_u32;
typedef __UINT64_TYPE__ lopi_u64;

/* Size of the per-function arrays; ids are dense from 0, so this bounds
   the number of instrumented functions in the process.  The benchmark
   script checks the function count against it after each run.  */
#define LOPI_MAX_FNS 16384

/* The 4-byte value read at entry and at exit.  */
extern volatile lopi_u32 lopi_source;
/* Per function id: sum over its calls of (value at exit - value at entry).  */
extern lopi_u64 lopi_total[LOPI_MAX_FNS];
/* Per function id: number of completed calls.  */
extern lopi_u64 lopi_calls[LOPI_MAX_FNS];

/* always_inline, not just inline: GCC's inliner otherwise leaves a few
   hook calls out of line in big functions and on paths it predicts cold
   ("call is unlikely and code size would grow"), and the inlined variant is
   meant to have no hook call at all (the benchmark checks with objdump).  */
#ifdef LOPI_OUT_OF_LINE
#define LOPI_HOOK static __attribute__ ((noinline))
#else
#define LOPI_HOOK static inline __attribute__ ((always_inline))
#endif

LOPI_HOOK void
lopi_enter (const struct tally_fn *fn, struct tally_frame *fr)
{
  (void) fn;
  fr->start = lopi_source;
}

LOPI_HOOK void
lopi_exit (const struct tally_fn *fn, struct tally_frame *fr)
{
  lopi_total[fn->id] += (lopi_u32) (lopi_source - (lopi_u32) fr->start);
  lopi_calls[fn->id]++;
}

#endif /* LOPI_HOOKS_H */
