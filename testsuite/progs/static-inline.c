/* static, static inline, always_inline, function pointers and a
   no_instrument_function function.  */
#include <stdio.h>

static inline int sq (int x) { return x * x; }
static inline __attribute__ ((always_inline)) int twice (int x) { return 2 * x; }
static int add (int a, int b) { return a + b; }
static int sub (int a, int b) { return a - b; }

__attribute__ ((no_instrument_function)) int
hidden (int x)
{
  return sq (x) + 1;
}

int
apply (int (*op) (int, int), int a, int b)
{
  return op (a, b);
}

int
main (int argc, char **argv)
{
  (void) argv;
  int s = 0;
  for (int i = 0; i < 8 + argc - 1; i++)
    {
      s += sq (i) + twice (i);
      s = apply (i % 2 ? add : sub, s, i);
    }
  s += hidden (3);
  printf ("%d\n", s);
  return 0;
}
