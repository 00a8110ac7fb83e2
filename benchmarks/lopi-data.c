/* lopi-data.c - storage and exit summary for lopi-hooks.h.
 *
 * Compiled without the plugin and linked into the instrumented program.
 * At exit it prints one line on stderr,
 *
 *   lopi: calls=N functions=F sum=S
 *
 * (completed calls over all functions, functions called at least once, sum
 * of all accumulated differences), which benchmarks/user-hooks.sh compares
 * across variants.  Nothing in the benchmark programs writes lopi_source,
 * so the sum stays 0: what is measured is the cost of the reads and the
 * updates, not the value.  */
#include <inttypes.h>
#include <stdio.h>

#include "lopi-hooks.h"

volatile uint32_t lopi_source;
uint64_t lopi_total[LOPI_MAX_FNS];
uint64_t lopi_calls[LOPI_MAX_FNS];

__attribute__ ((destructor)) static void
lopi_summary (void)
{
  uint64_t calls = 0, sum = 0, fns = 0;
  for (int i = 0; i < LOPI_MAX_FNS; i++)
    {
      calls += lopi_calls[i];
      sum += lopi_total[i];
      fns += lopi_calls[i] != 0;
    }
  fprintf (stderr, "lopi: calls=%" PRIu64 " functions=%" PRIu64 " sum=%" PRIu64
           "\n", calls, fns, sum);
}
