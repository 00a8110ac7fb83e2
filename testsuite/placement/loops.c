/* Loop shapes: one with a constant trip count, whose latch count tally
   derives at -O1 and above (plugin/blocks.cc, derive_latches), and
   others whose visited bytes it stores on the loop's entry
   (hoist_visited) and whose counts must stay exact: counted loops,
   pointer walks, several exits, steps up and down, nested, zero trips,
   wrap-around, calls, longjmp.  testsuite/run-placement.py checks
   every block count against placement=block.  Usage: loops N.  */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

struct node
{
  long key;
  void *val;
  int next;
};

static jmp_buf env;
static volatile int calls;

__attribute__ ((noinline)) long
sum_ints (const int *a, int n)
{
  long s = 0;
  for (int i = 0; i < n; i++)
    s += a[i];
  return s;
}

__attribute__ ((noinline)) long
fixed (const int *a)
{
  long s = 0;
  for (int i = 0; i < 1000; i++)
    s += a[i % 7] * (i | 1);
  return s;
}

__attribute__ ((noinline)) long
count_down (unsigned n)
{
  long s = 0;
  while (n--)
    s += n * 3;
  return s;
}

__attribute__ ((noinline)) long
branchy (const int *a, int n)
{
  long s = 0;
  for (int i = 0; i < n; i += 3)
    if (a[i] & 1)
      s += a[i];
    else
      s -= 1;
  return s;
}

__attribute__ ((noinline)) long
triangle (int n, int m)
{
  long s = 0;
  for (int i = 0; i < n; i++)
    for (int j = i; j < m; j++)
      s += i ^ j;
  return s;
}

__attribute__ ((noinline)) long
find (const int *a, int n, int want)
{
  for (int i = 0; i < n; i++)
    if (a[i] == want)
      return i;
  return -1;
}

__attribute__ ((noinline)) long
walk (const char *p, const char *e)
{
  long s = 0;
  for (; p != e; p += 2)
    s += *p;
  return s;
}

__attribute__ ((noinline)) long
nodes (const struct node *t, int n, long key)
{
  const struct node *p = t;
  for (int k = 0; k < n; k++, p++)
    {
      if (p->key == key)
        return k;
      if (p->next == 0)
        break;
    }
  return -1;
}

__attribute__ ((noinline)) long
backwards (const int *a, int n)
{
  long s = 0;
  for (int i = n - 1; i >= 0; i -= 2)
    s += a[i];
  return s;
}

__attribute__ ((noinline)) long
wrap (unsigned start, unsigned end)
{
  long s = 0;
  for (unsigned i = start; i != end; i++)
    s += i & 7;
  return s;
}

__attribute__ ((noinline)) long
do_while (long from, long to)
{
  long s = 0, i = from;
  do
    s += i;
  while ((i += 5) < to);
  return s;
}

__attribute__ ((noinline)) int
odd (int x)
{
  calls++; /* not const: the call may not return, as far as tally knows */
  return x & 1;
}

__attribute__ ((noinline)) long
with_call (const int *a, int n)
{
  long s = 0;
  for (int i = 0; i < n; i++)
    s += odd (a[i]);
  return s;
}

__attribute__ ((noinline)) void
bail (int x)
{
  if (x == 11)
    longjmp (env, 1);
}

__attribute__ ((noinline)) long
jumps_out (const int *a, int n)
{
  long s = 0;
  if (setjmp (env))
    return -s;
  for (int i = 0; i < n; i++)
    {
      s += a[i];
      bail (a[i]);
    }
  return s;
}

int
main (int argc, char **argv)
{
  int n = argc > 1 ? atoi (argv[1]) : 100;
  int *a = malloc (sizeof (int) * (n + 1));
  struct node *t = calloc (n + 1, sizeof *t);
  for (int i = 0; i < n; i++)
    {
      a[i] = i * 7 % 13;
      t[i].key = i * 3;
      t[i].next = i + 1 < n;
    }
  long r = 0;
  for (int k = 0; k < 4; k++)
    {
      r += sum_ints (a, n - k > 0 ? n - k : 0) + count_down (k * 10);
      r += n >= 7 ? fixed (a) : 0;
      r += branchy (a, n) + triangle (k, n / 10) + find (a, n, k + 3);
      r += walk ((char *) a, (char *) a + 2 * k);
      r += nodes (t, n, 3 * k * k) + backwards (a, n);
      r += wrap (0xfffffff0u + k, k) + do_while (k, n);
      r += with_call (a, n) + jumps_out (a, n);
    }
  r += sum_ints (a, 0) + triangle (0, 5) + triangle (5, 0) + wrap (3, 3);
  printf ("%ld\n", r);
  free (a);
  free (t);
  return 0;
}
