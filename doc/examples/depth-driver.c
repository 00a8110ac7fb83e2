/* depth-driver.c - a program for depth-hooks.h: a recursion of known depth
 * and a short call chain.
 *
 *   gcc -O2 -Iinclude -Idoc/examples -include depth-hooks.h \
 *       -fplugin=build/plugin/tally.so \
 *       -fplugin-arg-tally-hooks=user:depth -fplugin-arg-tally-at=early \
 *       doc/examples/depth-driver.c build/rt/libtally-rt.a -o depth-driver
 *   ./depth-driver
 *
 * main is entered at depth 0, fib(15) at depth 1, fib(15 - k) at depth
 * 1 + k, so the deepest entries (fib(1) and fib(0)) are at depth 15.  Calls:
 * main 1, fib 1973 (2 * F(16) - 1), chain1..chain3 1 each (at depths 1, 2
 * and 3): 1977 in all, the sum of the histogram.  */
#include <stdio.h>
#include <stdlib.h>

static unsigned
fib (unsigned n)
{
  return n < 2 ? n : fib (n - 1) + fib (n - 2);
}

static int
chain3 (int x)
{
  return x + 1;
}

static int
chain2 (int x)
{
  return chain3 (x) * 2;
}

static int
chain1 (int x)
{
  return chain2 (x) + 1;
}

int
main (void)
{
  atexit (depth_report);
  printf ("depth-driver: fib(15) = %u, chain1(1) = %d\n", fib (15), chain1 (1));
  printf ("depth-driver: depth in main after the calls: %u\n", (unsigned) depth_now);
  return 0;
}
