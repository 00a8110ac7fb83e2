/* An interpreter-like loop with calls (run-tlspromote.py tpoff): with
   update=tls its many counters are thread-local, and GCC would keep their
   offset from the thread pointer in a register across the function.
   Usage: dispatch N  */
#include <stdio.h>
#include <stdlib.h>

__attribute__ ((noinline)) int
op (int x)
{
  return x * 3 + 1;
}

__attribute__ ((noinline)) long
run (const int *code, int n)
{
  long s = 0;
  for (int i = 0; i < n; i++)
    {
      switch (code[i] & 7)
        {
        case 0:
          s += op (i);
          break;
        case 1:
          s -= op ((int) s);
          break;
        case 2:
          s ^= code[(i + 1) % n];
          break;
        case 3:
          if (s & 1)
            s += op (3);
          else
            s -= 5;
          break;
        case 4:
          s += op ((int) s + 1);
          break;
        case 5:
          s = s * 3 + op (i & 15);
          break;
        default:
          s *= 3;
          break;
        }
      if (s > 1000000 || s < -1000000)
        s %= 1009;
    }
  return s;
}

int
main (int argc, char **argv)
{
  int n = argc > 1 ? atoi (argv[1]) : 100;
  int *code = malloc (sizeof (int) * (n + 1));
  if (!code)
    return 2;
  for (int i = 0; i <= n; i++)
    code[i] = (i * 7 + i / 3) % 11;
  printf ("%ld\n", run (code, n));
  free (code);
  return 0;
}
