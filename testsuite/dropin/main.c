/* The drop-in example program: calls into libshapes and the C++ unit a
   number of times that depends on argc, then prints how often each function
   ran, as counted by the functions themselves: "NAME CALLS" lines.  */
#include <stdio.h>

#include "shapes.h"

static long helper_calls;

/* Small and static: inlined at -O2, so counted with at=early only.  */
static int
helper (int i)
{
  helper_calls++;
  return i % 7;
}

int
main (int argc, char **argv)
{
  long sum = 0;
  int n = 40 + argc;
  (void) argv;
  for (int i = 0; i < n; i++)
    {
      sum += area (i, helper (i));
      if (i % 3 == 0)
        sum += perimeter (i, i + 1);
      if (i % 4 == 0)
        sum += cxx_twice (i);
    }
  printf ("sum %ld\n", sum);
  printf ("area %ld\n", shapes_calls.area);
  printf ("perimeter %ld\n", shapes_calls.perimeter);
  printf ("twice %ld\n", twice_calls ());
  printf ("helper %ld\n", helper_calls);
  return 0;
}
