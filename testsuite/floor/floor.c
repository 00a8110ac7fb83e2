/* floor.c - run-floor.py's program: two functions whose placement floor
 * (the fewest counter increments any spanning-tree placement of
 * blocks=count can execute, benchmarks/placement-floor.py) follows by hand
 * from the source.
 *
 * Usage: floor N   (N >= 1; N calls of pick, all through its store; one call
 *                   of walk, N rounds, a third of them through the store)
 *
 * With entries derived (hooks=inline), every call of a function runs at
 * least one counter (the cycle its entry and exit close), and a loop of N
 * rounds whose body branches runs counters on both arms (a + b = N) or on
 * the latch and an arm (more):
 *   pick: N calls, the branch always taken: floor N (one counter on the
 *         stored arm, N runs; one on the arm that skips it, 0 runs), though
 *         __builtin_expect tells GCC the store is rare;
 *   walk: one call, N rounds: floor N + 1.
 * The stores are volatile so that GCC keeps the branches.  */
#include <stdio.h>
#include <stdlib.h>

volatile int sink;

__attribute__ ((noinline)) int
pick (int x)
{
  if (__builtin_expect (x > 0, 0))
    sink = x;
  return x;
}

__attribute__ ((noinline)) int
walk (int n)
{
  int s = 0;
  for (int i = 0; i < n; i++)
    if (i % 3 == 0)
      sink = i;
    else
      s += i;
  return s;
}

int
main (int argc, char **argv)
{
  int n = argc > 1 ? atoi (argv[1]) : 1;
  long s = 0;
  for (int i = 1; i <= n; i++)
    s += pick (i);
  s += walk (n);
  printf ("%ld\n", s);
  return 0;
}
