/* callers.c: a static function called only directly from two functions of
   its unit, the model of a kind 6 map (testsuite/run-callers.py).  */
#include <stdio.h>
#include <stdlib.h>

static int __attribute__ ((noinline))
callee (int x)
{
  if (x & 1)
    return x * 3;
  return x / 2;
}

int __attribute__ ((noinline))
loop (int n)
{
  int s = 0;
  for (int i = 0; i < n; i++)
    s += callee (i);
  return s;
}

int __attribute__ ((noinline))
twice (int n)
{
  if (n > 5)
    return callee (n) + callee (n + 1);
  return 0;
}

int
main (int argc, char **argv)
{
  int n = argc > 1 ? atoi (argv[1]) : 10;
  printf ("%d\n", loop (n) + twice (n) + twice (3));
  return 0;
}
