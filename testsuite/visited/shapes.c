/* Shapes whose blocks blocks=visited derives from their neighbours
   (plugin/blocks.cc, derive_visited), for run-visited.py: branches in
   loops, early exits, break and continue, a switch, setjmp/longjmp, a
   noreturn call, exit() from a callee, and tally_dump() mid-function.
   Usage: shapes MODE N (MODE 0 returns normally, 1 longjmps out of
   deep, 2 exits from stop, 3 dumps mid-function and _exits).  */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tally/tally.h"

static jmp_buf env;
static volatile int sink;

__attribute__ ((noinline)) static int
odd_even (const int *a, int n)
{
  int odd = 0, even = 0;
  for (int i = 0; i < n; i++)
    if (a[i] > 0)
      {
        if (a[i] & 1)
          odd++;
        else
          even++;
      }
  return odd * 1000 + even;
}

__attribute__ ((noinline)) static int
early (const int *a, int n, int key)
{
  for (int i = 0; i < n; i++)
    {
      if (a[i] == key)
        return i;
      if (a[i] < 0)
        continue;
      if (a[i] > 1000)
        break;
      sink += a[i];
    }
  return -1;
}

__attribute__ ((noinline)) static int
kind (int x)
{
  switch (x % 5)
    {
    case 0:
      return 10;
    case 1:
    case 2:
      sink++;
      return 20;
    case 3:
      if (x > 50)
        return 30;
      /* fall through */
    default:
      return 40;
    }
}

__attribute__ ((noreturn, noinline)) static void
stop (int code)
{
  fflush (stdout);
  exit (code);
}

__attribute__ ((noinline)) static int
deep (int n, int mode)
{
  int s = 0;
  do
    {
      s += n;
      if (mode == 1 && n == 3)
        longjmp (env, 7);
      if (mode == 2 && n == 2)
        stop (0);
      if (mode == 3 && n == 1)
        {
          tally_dump ();
          _exit (0);
        }
      n--;
    }
  while (n > 0);
  return s;
}

__attribute__ ((noinline)) static int
guarded (int mode, int n)
{
  int r = setjmp (env);
  if (r)
    return r + n;
  if (n > 0)
    r = deep (n, mode);
  else
    sink++;
  return r;
}

int
main (int argc, char **argv)
{
  int mode = argc > 1 ? atoi (argv[1]) : 0;
  int n = argc > 2 ? atoi (argv[2]) : 5;
  int a[64];
  for (int i = 0; i < 64; i++)
    a[i] = (i * 37 + n) % 23 - (i % 7 == 0 ? 30 : 0) + (i == 50 ? 2000 : 0);
  int t = odd_even (a, n < 64 ? n : 64);
  t += early (a, n < 64 ? n : 64, 9);
  for (int i = 0; i < n; i++)
    t += kind (i * 13 + n);
  t += guarded (mode, n);
  printf ("%d\n", t);
  return 0;
}
