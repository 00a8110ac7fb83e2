/* Module registration and the dump at process exit.
 *
 * Every instrumented translation unit has a constructor (emitted by the
 * plugin) that calls __tally_register with its descriptor.  The first
 * registration installs an atexit handler: glibc runs atexit handlers
 * registered after start-up before any ELF destructor, so the final dump sees
 * every module still mapped.  The runtime's own destructor dumps too, for the
 * case where exit handlers do not run (a shared runtime unloaded early); the
 * tally_exit_dumped flag makes the pair idempotent.  */
#include <stdlib.h>

#include "rt.h"
#include "tally/tally.h"

struct tally_module *tally_modules;
int tally_exit_dumped;

/* Set by the first registration, once atexit has been called.  */
static int atexit_installed;

void
__tally_register (struct tally_module *m)
{
  if (m->magic != TALLY_MODULE_MAGIC || m->abi_version != TALLY_ABI_VERSION)
    {
      tally_rt_error ("%s: built by a tally plugin with module ABI %u, but "
                      "this runtime reads ABI %u; its counts are not recorded "
                      "(rebuild it with the plugin matching this runtime)",
                      m->magic == TALLY_MODULE_MAGIC ? m->source : "a module",
                      m->abi_version, TALLY_ABI_VERSION);
      return;
    }
  uint64_t expected = 0;
  if (!__atomic_compare_exchange_n (&m->rt_state, &expected,
                                    TALLY_STATE_REGISTERED, 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return; /* already registered */

  struct tally_module *head = __atomic_load_n (&tally_modules, __ATOMIC_ACQUIRE);
  do
    m->next = head;
  while (!__atomic_compare_exchange_n (&tally_modules, &head, m, 1,
                                       __ATOMIC_RELEASE, __ATOMIC_ACQUIRE));

  if (!__atomic_exchange_n (&atexit_installed, 1, __ATOMIC_ACQ_REL))
    if (atexit (tally_rt_exit_dump) != 0)
      tally_rt_error ("atexit failed; data will be written by the runtime's "
                      "destructor only");
}

void
__tally_unregister (struct tally_module *m)
{
  if (__atomic_load_n (&m->rt_state, __ATOMIC_ACQUIRE) != TALLY_STATE_REGISTERED)
    return;
  if (!__atomic_load_n (&tally_exit_dumped, __ATOMIC_ACQUIRE))
    {
      /* The module is being unloaded (dlclose) while the process lives on.
         Write everything now so its counts reach the disk before its memory
         goes away; the final dump at exit no longer includes it.  */
      tally_rt_dump (0);
      tally_rt_error ("%s: module unloaded before exit; its counts are in the "
                      "data file written now, not in the one written at exit",
                      m->source);
    }
  __atomic_store_n (&m->rt_state, TALLY_STATE_GONE, __ATOMIC_RELEASE);
}

void
tally_rt_exit_dump (void)
{
  if (__atomic_exchange_n (&tally_exit_dumped, 1, __ATOMIC_ACQ_REL))
    return;
  tally_rt_dump (1);
}

__attribute__ ((destructor)) static void
tally_rt_destructor (void)
{
  tally_rt_exit_dump ();
}

void
tally_reset (void)
{
  for (struct tally_module *m = __atomic_load_n (&tally_modules, __ATOMIC_ACQUIRE);
       m; m = m->next)
    {
      if (__atomic_load_n (&m->rt_state, __ATOMIC_ACQUIRE) != TALLY_STATE_REGISTERED)
        continue;
      for (uint32_t i = 0; i < m->nfns; i++)
        for (uint32_t k = 0; k < m->fns[i].ncounters; k++)
          __atomic_store_n (&m->fns[i].counters[k], 0, __ATOMIC_RELAXED);
    }
}
