/* sancov.c - the callbacks clang's -fsanitize-coverage needs when no
 * sanitizer runtime is linked (benchmarks/run, clang modes).
 *
 * inline-8bit-counters: the counters are updated inline; the module
 * constructor only announces its counter array, ignored here.
 * trace-pc-guard: a call at every edge with a pointer to that edge's
 * guard; the init callback numbers the guards from 1 and the callback
 * counts hits per guard: the cheapest useful callback.  Compiled
 * without coverage flags and linked in.  */
#include <stdint.h>

/* Hits per guard number (guards beyond the array share the last slot).  */
#define MAX_GUARDS (1u << 20)
static uint64_t hits[MAX_GUARDS];
/* Guards numbered so far.  */
static uint32_t n_guards;

void
__sanitizer_cov_8bit_counters_init (char *start, char *end)
{
  (void) start;
  (void) end;
}

void
__sanitizer_cov_pcs_init (const uintptr_t *start, const uintptr_t *end)
{
  (void) start;
  (void) end;
}

void
__sanitizer_cov_trace_pc_guard_init (uint32_t *start, uint32_t *stop)
{
  if (start == stop || *start)
    return;
  for (uint32_t *g = start; g < stop; g++)
    *g = ++n_guards < MAX_GUARDS ? n_guards : MAX_GUARDS - 1;
}

void
__sanitizer_cov_trace_pc_guard (uint32_t *guard)
{
  hits[*guard]++;
}
