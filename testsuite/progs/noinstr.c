/* Functions marked no_instrument_function are not counted, wherever they
   are called from; everything around them is.  */
#include <stdio.h>

__attribute__ ((no_instrument_function, noinline)) int
quiet (int x)
{
  return x + 1;
}

__attribute__ ((noinline)) int
loud (int x)
{
  return quiet (x) * 2;
}

int
main (int argc, char **argv)
{
  (void) argv;
  int s = 0;
  for (int i = 0; i < 5 + argc - 1; i++)
    s += loud (i) + quiet (i);
  printf ("%d\n", s);
  return 0;
}
