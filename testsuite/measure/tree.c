/* A call tree in which every function has one caller, so each inclusive
   total is its own exclusive total plus its callees' inclusive totals:
   main -> a (x 200) -> b (x 2) -> c (x 3); main -> d (heavy, once).  */
#include <stdio.h>

static volatile unsigned long sink;

__attribute__ ((noinline)) void c (void) { for (int i = 0; i < 50; i++) sink += i; }
__attribute__ ((noinline)) void b (void) { for (int i = 0; i < 3; i++) c (); sink++; }
__attribute__ ((noinline)) void a (void) { b (); b (); }
__attribute__ ((noinline)) void d (void) { for (int i = 0; i < 20000000; i++) sink += i; }

int
main (void)
{
  for (int i = 0; i < 200; i++)
    a ();
  d ();
  printf ("%lu\n", sink > 0 ? 1ul : 0ul);
  return 0;
}
