/* nested.c - the measurement microbenchmark: tiny nested functions (like
 * uftrace's tests/s-bench), so that the instrumentation is nearly all the
 * work.  One iteration makes 5 calls: f1 -> f2 -> f3 -> leaf, leaf.
 * Usage: nested N (iterations).  */
#include <stdio.h>
#include <stdlib.h>

__attribute__ ((noinline)) int leaf (int x) { __asm__ ("" : "+r"(x)); return x + 1; }
__attribute__ ((noinline)) int f3 (int x) { return leaf (x) ^ leaf (x + 1); }
__attribute__ ((noinline)) int f2 (int x) { return f3 (x) + 1; }
__attribute__ ((noinline)) int f1 (int x) { return f2 (x) * 3; }

int
main (int argc, char **argv)
{
  long n = argc > 1 ? atol (argv[1]) : 1000000;
  unsigned s = 0;
  for (long i = 0; i < n; i++)
    s += (unsigned) f1 ((int) i);
  printf ("%u\n", s);
  return 0;
}
