/* a calls b calls c: the smallest call chain.  */
#include <stdio.h>

int c (int x) { return x * 2; }
int b (int x) { return c (x) + 1; }
int a (int n)
{
  int s = 0;
  for (int i = 0; i < n; i++)
    s += b (i);
  return s;
}

int
main (void)
{
  printf ("%d\n", a (10));
  return 0;
}
