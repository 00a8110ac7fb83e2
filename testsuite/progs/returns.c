/* Many return statements, a switch, early exits and a void function that
   falls off its end: every exit path must be counted once.  */
#include <stdio.h>

int
classify (int x)
{
  if (x < 0)
    return -1;
  switch (x % 5)
    {
    case 0:
      return 10;
    case 1:
      return 11;
    case 2:
      if (x > 20)
        return 120;
      return 12;
    default:
      break;
    }
  if (x == 7)
    return 7;
  return 99;
}

static int total;

void
accumulate (int v)
{
  if (v == 99)
    {
      total += 1000;
      return;
    }
  total += v;
}

int
main (int argc, char **argv)
{
  (void) argv;
  for (int i = -3; i < 30 + argc - 1; i++)
    accumulate (classify (i));
  printf ("%d\n", total);
  return 0;
}
