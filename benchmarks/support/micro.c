/* micro.c - the microbenchmark of benchmarks/run: tiny nested functions.
 *
 * Usage: micro N      (N rounds; prints one checksum line)
 *
 * The worst case for function-level instrumentation: almost all the work
 * is calls of functions a few instructions long, nested three deep.  The
 * leaves are `noinline` so that they stay calls at -O2 (otherwise GCC
 * inlines them and late instrumentation has nothing to count); `mix` and
 * `step` are small enough for GCC to inline, so at=early and
 * -finstrument-functions count calls that at=late does not.  The seed is
 * read through a volatile so that nothing is computed at compile time.  */
#include <stdio.h>
#include <stdlib.h>

/* Read once at start: keeps the compiler from folding the loop away.  */
static volatile unsigned seed = 12345;

__attribute__ ((noinline)) static unsigned
leaf_mul (unsigned x)
{
  return x * 2654435761u + 1;
}

__attribute__ ((noinline)) static unsigned
leaf_rot (unsigned x)
{
  return (x << 7) | (x >> 25);
}

static inline unsigned
mix (unsigned x)
{
  return leaf_mul (x) ^ leaf_rot (x);
}

__attribute__ ((noinline)) static unsigned
middle (unsigned x, unsigned i)
{
  return mix (x + i) + (i & 1 ? leaf_rot (i) : leaf_mul (i));
}

static inline unsigned
step (unsigned x, unsigned i)
{
  return middle (x, i) ^ (x >> 3);
}

__attribute__ ((noinline)) static unsigned
outer (unsigned x, unsigned n)
{
  for (unsigned i = 0; i < n; i++)
    x = step (x, i);
  return x;
}

int
main (int argc, char **argv)
{
  long rounds = argc > 1 ? strtol (argv[1], 0, 10) : 1000;
  unsigned x = seed;
  for (long r = 0; r < rounds; r++)
    x = outer (x, 1000);
  printf ("micro %ld rounds: checksum %08x\n", rounds, x);
  return 0;
}
