/* Module registration and the dump at process exit.
 *
 * Every instrumented translation unit has a constructor (emitted by the
 * plugin) that calls __tally_register with its descriptor, and a destructor
 * that calls __tally_unregister.  The final dump happens at the first of:
 * the atexit handler installed by the first registration, and the runtime's
 * own ELF destructor; the tally_exit_dumped flag makes the pair idempotent.
 * Which comes first depends on who registered when (an atexit handler
 * installed from a shared library's constructor runs after the ELF
 * destructors), so a module that unregisters before the final dump is kept
 * by tally_rt_retain and still written.  */
#include <pthread.h>
#include <stdlib.h>

#include "rt.h"
#include "tally/tally.h"

int tally_exit_dumped;

/* The id the next registered function gets (struct tally_fn.id).  */
static uint32_t next_id;

/* Set by the first registration in this copy, which also calls atexit.  */
static int atexit_installed;

/* The exit handler, as __cxa_atexit calls it (sys.h).  */
static void
exit_dump_cxa (void *unused)
{
  (void) unused;
  tally_rt_exit_dump ();
}

void
__tally_register (struct tally_module *m)
{
  if (m->magic != TALLY_MODULE_MAGIC || m->abi_version < TALLY_ABI_VERSION_MIN
      || m->abi_version > TALLY_ABI_VERSION)
    {
      tally_rt_error ("%s: built by a tally plugin with module ABI %u, but "
                      "this runtime reads ABI %u to %u; its counts are not "
                      "recorded (rebuild it with the plugin matching this "
                      "runtime)",
                      m->magic == TALLY_MODULE_MAGIC ? m->source : "a module",
                      m->abi_version, TALLY_ABI_VERSION_MIN, TALLY_ABI_VERSION);
      return;
    }
  tally_rt_exec_init ();
  tally_rt_primary ()->register_module (m);
}

void
tally_rt_register_local (struct tally_module *m)
{
  /* The blob is checked against the function table once, here, not at
     every dump (mapblob.c): the state says whether it passed.  */
  uint64_t expected = 0;
  uint64_t state = TALLY_STATE_REGISTERED
                   | (tally_rt_blob_check (m) ? TALLY_STATE_BLOB : 0);
  if (!__atomic_compare_exchange_n (&m->rt_state, &expected, state, 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return; /* already registered */

  if (m->flags & TALLY_MOD_UPDATE_TLS)
    tally_rt_tls_init ();
  /* paths=on: libunwind finds the frames below a thread's first
     instrumented call; the static runtime may have to load it, which a
     hook cannot do.  */
  if (m->flags & TALLY_MOD_PATHS)
    tally_rt_unwind_load ();
  /* counters=mapped: into the continuous file before any dump can see the
     module, so that no dump writes its counts twice (continuous.c).  */
  tally_rt_cont_register (m);
  uint32_t base = __atomic_fetch_add (&next_id, m->nfns, __ATOMIC_RELAXED);
  for (uint32_t i = 0; i < m->nfns; i++)
    m->fns[i]->id = base + i;

  struct tally_module *head = __atomic_load_n (&tally_modules, __ATOMIC_ACQUIRE);
  do
    m->next = head;
  while (!__atomic_compare_exchange_n (&tally_modules, &head, m, 1,
                                       __ATOMIC_RELEASE, __ATOMIC_ACQUIRE));

#if TALLY_RT_SHARED
  /* libtally-rt.so stays loaded even when the library that brought it in
     is dlclose'd, so a reopened library finds this runtime, its kept
     records and its exit handler, and one file holds both loads.  */
  if (!__atomic_load_n (&atexit_installed, __ATOMIC_ACQUIRE))
    tally_rt_pin_local ();
#endif
  if (!__atomic_exchange_n (&atexit_installed, 1, __ATOMIC_ACQ_REL))
    {
      tally_rt_pin_without_dso_handle ();
      if (tally_rt_sys_atexit (exit_dump_cxa) != 0)
        tally_rt_error ("atexit failed; data will be written by the "
                        "runtime's destructor only");
      /* A forked child must not write the parent's counts a second time
         under its own pid.  Only the copy that keeps the modules (this
         one) registers it; vfork and posix_spawn run no atfork handler,
         but their child shares our memory and only execs or _exits.  */
      if (tally_rt_sys_atfork_child (tally_rt_fork_child) != 0)
        tally_rt_error ("pthread_atfork failed; a forked child's data file "
                        "will also hold the parent's counts from before "
                        "the fork");
      tally_rt_signals_init ();
    }
}

void
__tally_unregister (struct tally_module *m)
{
  tally_rt_primary ()->unregister_module (m);
}

void
tally_rt_unregister_local (struct tally_module *m)
{
  if (!tally_rt_module_live (m))
    return;
  /* Before the final dump (dlclose, or ELF destructors that run before the
     exit handler) the module's record is kept for the dumps to come; after
     it, its counts are already on disk.  Either way the module leaves the
     list, since its memory may be unmapped next.  */
  tally_rt_module_gone (m, !__atomic_load_n (&tally_exit_dumped, __ATOMIC_ACQUIRE));
}

/* The exit dump, from the atexit handler (IN_DTOR 0) or the runtime's
   destructor (1), whichever comes first; the second looks for counts made
   in between.  */
static void
exit_dump (int in_dtor)
{
  /* A copy that forwarded everything to a primary has nothing to write.  */
  if (!__atomic_load_n (&atexit_installed, __ATOMIC_ACQUIRE))
    return;
  /* This thread's activations (main, or the caller of exit) never see
     their exits now.  */
  tally_rt_shadow_close_current ();
  if (__atomic_exchange_n (&tally_exit_dumped, 1, __ATOMIC_ACQ_REL))
    {
      /* The second of the pair: code that ran in between may have
         counted.  The atexit handler comes second when it was installed
         from a shared library's constructor, after the ELF destructors:
         the modules still listed are read now.  The destructor comes
         second when the runtime is linked statically: a module still
         listed then is one whose own destructor has not run, its
         object's (the plugin gives it priority 101, which runs after this
         unprioritised one) or a later-finalised object's, and that
         destructor checks its counters (dump.c, tally_rt_module_gone)
         later than this could.  So nothing is read here: it would be a
         second pass over every counter.  A process that ends in between
         (_exit in a destructor) loses those modules' counts made after
         the exit dump, as _exit loses any count made since the last
         dump, and as the shared runtime, whose destructor runs after the
         executable's modules unregistered, always did.  */
      if (!in_dtor)
        tally_rt_late_check ();
      return;
    }
  tally_rt_dump (1);
}

void
tally_rt_exit_dump (void)
{
  exit_dump (0);
}

__attribute__ ((destructor)) static void
tally_rt_destructor (void)
{
  exit_dump (1);
  tally_rt_signals_fini ();
}

void
tally_reset (void)
{
  tally_rt_primary ()->reset ();
}

