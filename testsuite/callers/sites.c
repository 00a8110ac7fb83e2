/* sites.c - entries=callers (plugin/callers.cc): functions whose entry
   count comes from the blocks that call them, and the ones that must keep
   their own entry counter.  Usage: sites N (prints one checksum line).

   Derived at -O2 (every call known, every caller instrumented, no cycle):
   leaf, twice, chain_b, chain_c, loop_first, may_die, clone_me (as a
   .constprop clone where GCC makes one), in_cold, dumper.
   Counted: chain_a and main (visible outside), rec (calls itself),
   ping and pong (call each other), by_pointer (address taken),
   from_skipped (a no_instrument_function caller), kept (`used`).  */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tally/tally.h"

#define NOINLINE __attribute__ ((noinline, noclone))

static volatile unsigned sink;
static jmp_buf back;

NOINLINE static unsigned
leaf (unsigned x)
{
  return x * 2654435761u + 1;
}

/* Called twice from one block of its caller.  */
NOINLINE static unsigned
twice (unsigned x)
{
  return (x << 7) | (x >> 25);
}

NOINLINE static unsigned
chain_c (unsigned x)
{
  return x & 1 ? leaf (x) : x >> 1;
}

NOINLINE static unsigned
chain_b (unsigned x)
{
  return chain_c (x) + chain_c (x + 1);
}

NOINLINE unsigned
chain_a (unsigned x)
{
  return chain_b (x) ^ twice (x) ^ twice (x + 3);
}

/* Its first block is a loop's header: entries and header runs differ.  */
NOINLINE static unsigned
loop_first (unsigned n)
{
  unsigned s = 0;
  do
    s += n;
  while (n-- > 1);
  return s;
}

NOINLINE static unsigned
rec (unsigned n)
{
  return n < 2 ? n : rec (n - 1) + 1;
}

NOINLINE static unsigned pong (unsigned n);

NOINLINE static unsigned
ping (unsigned n)
{
  return n ? pong (n - 1) + 1 : 0;
}

NOINLINE static unsigned
pong (unsigned n)
{
  return n ? ping (n - 1) + 2 : 0;
}

NOINLINE static unsigned
by_pointer (unsigned x)
{
  return x + 7;
}

NOINLINE static unsigned
from_skipped (unsigned x)
{
  return x ^ 0x55;
}

__attribute__ ((no_instrument_function)) NOINLINE static unsigned
skipped (unsigned x)
{
  return from_skipped (x) + leaf (x);
}

__attribute__ ((used)) NOINLINE static unsigned
kept (unsigned x)
{
  return x - 1;
}

/* Leaves by longjmp on some calls: the caller's block still counts the
   call.  */
NOINLINE static unsigned
may_die (unsigned x)
{
  if (x % 97 == 0)
    longjmp (back, 1);
  return x + 1;
}

/* A constant argument: GCC may clone it (clone_me.constprop.0).  */
NOINLINE static unsigned
clone_me (unsigned x, unsigned k)
{
  return x * k + (k >> 1);
}

NOINLINE static unsigned
in_cold (unsigned x)
{
  return x * 3;
}

/* With SITES_MID set, its call with I == AT writes a data file there
   while it runs (tally_dump): a dump in the middle of a call of a function
   whose entry count comes from its caller's block.  */
NOINLINE static unsigned
dumper (unsigned i, unsigned at)
{
  const char *mid = getenv ("SITES_MID");
  if (i == at && mid)
    {
      char *final = getenv ("TALLY_OUTPUT");
      final = final ? strdup (final) : NULL;
      setenv ("TALLY_OUTPUT", mid, 1);
      if (tally_dump () != 0)
        abort ();
      if (final)
        setenv ("TALLY_OUTPUT", final, 1);
      else
        unsetenv ("TALLY_OUTPUT");
      free (final);
    }
  return i + 1;
}

unsigned (*volatile fp) (unsigned) = by_pointer;

int
main (int argc, char **argv)
{
  unsigned n = argc > 1 ? (unsigned) strtoul (argv[1], 0, 10) : 100;
  unsigned s = 0;
  for (unsigned i = 0; i < n; i++)
    {
      s += leaf (i) + chain_a (i) + loop_first (i % 5 + 1);
      s += clone_me (i, 3) + fp (i) + kept (i) + dumper (i, n / 2);
      if (__builtin_expect (i % 31 == 30, 0))
        s += in_cold (i);
      if (i % 10 == 0)
        s += rec (i % 7) + ping (i % 9) + skipped (i);
      if (setjmp (back) == 0)
        s += may_die (i);
      else
        s += 5;
    }
#ifdef SITES_EXTRA
  /* Another build of main (run-entries.py merge-force).  */
  if (argc > 5)
    s += 7;
#endif
  sink = s;
  printf ("sites %u: %08x\n", n, s);
  return 0;
}
