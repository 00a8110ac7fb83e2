/* lopi-driver.c - a program for lopi-hooks.h: a call chain that does known
 * amounts of "work" (additions to lopi_counter), so each function's LOPI
 * total can be checked against what the program knows it added.
 *
 *   gcc -O2 -Iinclude -Idoc/examples -include lopi-hooks.h \
 *       -fplugin=build/plugin/tally.so \
 *       -fplugin-arg-tally-hooks=user:lopi -fplugin-arg-tally-at=early \
 *       doc/examples/lopi-driver.c build/rt/libtally-rt.a -o lopi-driver
 *   ./lopi-driver
 *
 * Per round, top() adds 1 and calls middle(), which adds 10 and calls
 * leaf() twice, which adds 100 each time; after 1000 rounds main adds
 * 5000.  Expected (calls, inclusive total): leaf (2000, 200000), middle
 * (1000, 210000), top (1000, 211000), work (4001, 216000), main (1, 216000).
 * The counter starts just below 2^32, so it wraps during the run and the
 * totals are only right because the hooks subtract modulo 2^32.  GCC
 * inlines the whole chain into main at -O2; with at=early the hooks still
 * run once per source-level call.  */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

volatile uint32_t lopi_counter = 0xffffff00u;

/* What the program added, kept by the program itself.  */
static uint64_t added;

static void
work (uint32_t n)
{
  lopi_counter += n;
  added += n;
}

static void
leaf (void)
{
  work (100);
}

static void
middle (void)
{
  work (10);
  leaf ();
  leaf ();
}

static void
top (void)
{
  work (1);
  middle ();
}

int
main (void)
{
  atexit (lopi_report);
  for (int i = 0; i < 1000; i++)
    top ();
  work (5000);
  printf ("lopi-driver: the program added %llu to lopi_counter\n",
          (unsigned long long) added);
  return 0;
}
