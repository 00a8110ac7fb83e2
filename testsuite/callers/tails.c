/* tails.c - tail calls under blocks=count (plugin/hooks.cc, steps 2 and
   10).  Usage: tails N (prints one checksum line).

   In the plain -O2 build every function below but main ends with a jump
   to its callee.  With blocks=count:
   to_step    keeps its jump: step always returns (no loop, no call), so
              nothing is counted between the call and the return;
   to_libc    calls: strtoul may not return (exit, longjmp, as far as the
              compiler knows), so a counter follows the call;
   to_loop    calls: a loop may not end, so neither may loop_sum;
   An exit hook (hooks=inline without blocks) makes every one a call.  */
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__ ((noinline, noclone))

static volatile unsigned sink;

NOINLINE static unsigned
step (unsigned x)
{
  return x * 2654435761u + 7;
}

NOINLINE unsigned
to_step (unsigned x)
{
  sink++;
  return step (x ^ 1);
}

NOINLINE unsigned long
to_libc (const char *s)
{
  sink++;
  return strtoul (s, NULL, 10);
}

NOINLINE static unsigned
loop_sum (unsigned n)
{
  unsigned s = 0;
  while (n--)
    s += n ^ sink;
  return s;
}

NOINLINE unsigned
to_loop (unsigned n)
{
  sink++;
  return loop_sum (n);
}

int
main (int argc, char **argv)
{
  unsigned n = argc > 1 ? (unsigned) atoi (argv[1]) : 10, s = 0;
  char num[16];
  for (unsigned i = 0; i < n; i++)
    {
      snprintf (num, sizeof num, "%u", i);
      s += to_step (i) + to_libc (num) + to_loop (i & 7);
    }
  printf ("%u\n", s);
  return 0;
}
