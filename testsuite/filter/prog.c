/* Functions for the filter tests: a tiny leaf, a loop, a debug helper and
   a bigger function.  */
#include <stdio.h>

int tiny (int x) { return x + 1; }

int
looping (int n)
{
  int s = 0;
  for (int i = 0; i < n; i++)
    s += i;
  return s;
}

void
log_debug (int v)
{
  if (v < 0)
    printf ("debug %d\n", v);
}

int
work (int a, int b)
{
  int r = a * b + tiny (a);
  if (r > 100)
    r -= looping (a);
  else
    r += looping (b);
  log_debug (r);
  return r * 3 + (a ^ b);
}

int
main (void)
{
  printf ("%d\n", work (3, 4) + work (20, 30));
  return 0;
}
