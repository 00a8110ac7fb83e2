/* Functions of very different cost for the select= tests: spin and churn
   loop eighty million times each and take nearly all the time (about
   50 ms: a stall of a millisecond or two in main's own code, such as a
   preemption or its first hook's page faults on a loaded machine, must
   not make main look hot); main calls
   them and two trivial functions, tiny and small.  spin is static and
   always called with the same count, so at -O2 GCC compiles it as a clone
   (spin.constprop.0): the profile names the clone's body, and the rebuild
   must map it back to spin.  */
#include <stdio.h>

volatile unsigned long sink;

__attribute__ ((noinline)) static void
spin (unsigned long n)
{
  for (unsigned long i = 0; i < n; i++)
    sink += i;
}

__attribute__ ((noinline)) void
churn (unsigned long n)
{
  for (unsigned long i = 0; i < n; i++)
    sink -= i;
}

__attribute__ ((noinline)) void
tiny (void)
{
  sink += 1;
}

__attribute__ ((noinline)) int
small (int x)
{
  return x * 3 + 1;
}

int
main (int argc, char **argv)
{
  (void) argv;
  int s = 0;
  for (int k = 0; k < 20; k++)
    {
      spin (4000000);
      churn (4000000 + (unsigned long) argc - 1);
      tiny ();
      s += small (k);
    }
  printf ("%d\n", s);
  return 0;
}
