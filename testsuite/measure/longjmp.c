/* longjmp across four instrumented frames, 1000 times; then a heavy
   function that must not be charged to the frames longjmp skipped.  */
#include <setjmp.h>
#include <stdio.h>

static jmp_buf env;
static volatile unsigned long sink;

__attribute__ ((noinline)) void l4 (void) { sink++; longjmp (env, 1); }
__attribute__ ((noinline)) void l3 (void) { l4 (); sink++; }
__attribute__ ((noinline)) void l2 (void) { l3 (); sink++; }
__attribute__ ((noinline)) void l1 (void) { l2 (); sink++; }

__attribute__ ((noinline)) void
after (void)
{
  for (int i = 0; i < 200000; i++)
    sink += i;
}

__attribute__ ((noinline)) void
driver (void)
{
  if (setjmp (env) == 0)
    l1 ();
  after ();
}

int
main (void)
{
  for (int i = 0; i < 1000; i++)
    driver ();
  printf ("%d\n", sink > 0);
  return 0;
}
