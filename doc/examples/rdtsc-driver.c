/* rdtsc-driver.c - a program for rdtsc-hooks.h: a call chain in which each
 * function does some work of its own before calling the next, and a
 * recursive fib.
 *
 *   gcc -O2 -Iinclude -Idoc/examples -include rdtsc-hooks.h \
 *       -fplugin=build/plugin/tally.so \
 *       -fplugin-arg-tally-hooks=user:rdtsc -fplugin-arg-tally-at=early \
 *       doc/examples/rdtsc-driver.c build/rt/libtally-rt.a -o rdtsc-driver
 *   ./rdtsc-driver
 *
 * Calls: outer, inner and leaf 1000 each, spin 3000, fib 21891 (fib(20)
 * makes 2 * F(21) - 1 calls), main 1.  Cycles are inclusive, so
 * main >= outer >= inner >= leaf; fib, being recursive, counts each nested
 * activation once per enclosing fib and can exceed main.  */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned long sink;

static void
spin (int n)
{
  for (int i = 0; i < n; i++)
    sink += i;
}

static void
leaf (void)
{
  spin (200);
}

static void
inner (void)
{
  spin (200);
  leaf ();
}

static void
outer (void)
{
  spin (200);
  inner ();
}

static unsigned
fib (unsigned n)
{
  return n < 2 ? n : fib (n - 1) + fib (n - 2);
}

int
main (void)
{
  atexit (rdtsc_report);
  for (int i = 0; i < 1000; i++)
    outer ();
  printf ("rdtsc-driver: fib(20) = %u\n", fib (20));
  return 0;
}
