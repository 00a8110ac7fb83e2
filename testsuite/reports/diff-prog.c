/* Two runs of this program with other inputs N differ by known amounts,
   which it prints itself: `step` is called N times, `twice` 2N times,
   `fixed` 5 times whatever N, `big` N - 5 times when N > 5.  The lines
   marked LOOP-STEP and LOOP-BIG run as often as their function is
   called.  */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned sink;

__attribute__ ((noinline)) static void
step (unsigned i)
{
  sink += i;
}

__attribute__ ((noinline)) static void
twice (unsigned i)
{
  for (unsigned k = 0; k < 100 * i; k++)
    sink ^= k;
}

__attribute__ ((noinline)) static void
fixed (void)
{
  sink++;
}

__attribute__ ((noinline)) static void
big (unsigned i)
{
  sink -= i;
}

int
main (int argc, char **argv)
{
  unsigned n = argc > 1 ? (unsigned) atoi (argv[1]) : 3;
  unsigned calls_step = 0, calls_twice = 0, calls_fixed = 0, calls_big = 0;
  for (unsigned i = 0; i < n; i++)
    {
      step (i); calls_step++; /* LOOP-STEP */
      twice (i);
      twice (i + 1);
      calls_twice += 2;
    }
  for (unsigned i = 0; i < 5; i++)
    {
      fixed ();
      calls_fixed++;
    }
  for (unsigned i = 5; i < n; i++)
    {
      big (i); calls_big++; /* LOOP-BIG */
    }
  printf ("step %u twice %u fixed %u big %u\n", calls_step, calls_twice,
          calls_fixed, calls_big);
  return 0;
}
