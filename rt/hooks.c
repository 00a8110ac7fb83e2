/* Hooks for -fplugin-arg-tally-hooks=call.  The plugin passes the module and
   the function's index in it (LOPI's "inlined function identifier"), so the
   hook is an array index, never a lookup.  No locks, no libc, errno is left
   alone.  */
#include "rt.h"

static inline void
bump (struct tally_module *m, uint64_t *c)
{
  /* update=tls counts the blocks per thread; the calls are counted here,
     atomically.  */
  if (m->flags & (TALLY_MOD_UPDATE_ATOMIC | TALLY_MOD_UPDATE_TLS))
    __atomic_fetch_add (c, 1, __ATOMIC_RELAXED);
  else
    ++*c;
}

void
__tally_enter (struct tally_module *m, uint32_t fn)
{
  bump (m, &m->fns[fn]->counters[TALLY_C_ENTRIES]);
}

void
__tally_exit (struct tally_module *m, uint32_t fn)
{
  bump (m, &m->fns[fn]->counters[TALLY_C_EXITS]);
}

/* counters=mapped units call these instead (the plugin chooses), so the
   ordinary hooks above test nothing more: the counter lives at its address
   plus the unit's bias, which the runtime may point into the data file
   (continuous.c).  */
static inline uint64_t *
mapped (struct tally_module *m, uint64_t *c)
{
  return (uint64_t *) (void *) ((char *) c
                                + __atomic_load_n (m->bias, __ATOMIC_RELAXED));
}

void
__tally_enter_mapped (struct tally_module *m, uint32_t fn)
{
  bump (m, mapped (m, &m->fns[fn]->counters[TALLY_C_ENTRIES]));
}

void
__tally_exit_mapped (struct tally_module *m, uint32_t fn)
{
  bump (m, mapped (m, &m->fns[fn]->counters[TALLY_C_EXITS]));
}
