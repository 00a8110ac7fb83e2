/* One function reached on several call paths, and a short recursion: the
   calling-context tree tells them apart where the flat profile cannot.
   main -> x -> shared; main -> y -> shared; main -> y -> x -> shared;
   main -> r -> r -> r -> r (depth 4).  */
#include <stdio.h>

static volatile unsigned long sink;

__attribute__ ((noinline)) void shared (int n) { for (int i = 0; i < n; i++) sink += i; }
__attribute__ ((noinline)) void x (void) { shared (100); }
__attribute__ ((noinline)) void y (void) { shared (1000); x (); x (); }

__attribute__ ((noinline)) void
r (int n)
{
  sink++;
  if (n > 1)
    r (n - 1);
  sink++;
}

int
main (void)
{
  for (int i = 0; i < 300; i++)
    x ();
  for (int i = 0; i < 70; i++)
    y ();
  for (int i = 0; i < 10; i++)
    r (4);
  printf ("%d\n", sink > 0);
  return 0;
}
