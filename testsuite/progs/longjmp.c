/* longjmp leaves functions without returning: entries are counted, exits
   are not, and the counts after the jump stay right.  */
#include <setjmp.h>
#include <stdio.h>

static jmp_buf env;

__attribute__ ((noinline)) void
deep (int n)
{
  if (n == 0)
    longjmp (env, 1);
  deep (n - 1);
}

__attribute__ ((noinline)) int
shallow (int x)
{
  return x + 1;
}

int
main (void)
{
  volatile int jumps = 0;
  if (setjmp (env) == 0)
    deep (4);
  else
    jumps++;
  int s = 0;
  for (int i = 0; i < 3; i++)
    s += shallow (i);
  printf ("%d %d\n", jumps, s);
  return 0;
}
