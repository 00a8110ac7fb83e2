/* cyg-empty.c - empty -finstrument-functions hooks: the floor of that
 * technique (two out-of-line calls per function call, arguments set up,
 * nothing done).  Linked uninstrumented into -finstrument-functions
 * builds by benchmarks/run.  */
#define NOINSTR __attribute__ ((no_instrument_function, noinline, used))

NOINSTR void
__cyg_profile_func_enter (void *fn, void *site)
{
  (void) fn;
  (void) site;
  __asm__ volatile ("");
}

NOINSTR void
__cyg_profile_func_exit (void *fn, void *site)
{
  (void) fn;
  (void) site;
  __asm__ volatile ("");
}
