/* Loops whose counters plugin/blocks.cc holds in registers
   (tally_blocks_promote), and loops it must leave alone.
   Usage: loops N [fault]  (fault: walk into a page that cannot be read,
   and dump from the SIGSEGV handler; see run-promote.py).  */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tally/tally.h"

static unsigned char yy[256];

/* A pointer walk with a data-dependent exit (bzip2's move-to-front).  */
__attribute__ ((noinline)) int
mtf (unsigned char c)
{
  unsigned char *p = &yy[1], t = yy[1];
  if (yy[0] == c)
    return 0;
  yy[1] = yy[0];
  while (c != t)
    {
      unsigned char t2 = t;
      p++;
      t = *p;
      *p = t2;
    }
  yy[0] = t;
  return p - yy;
}

/* Two exits: a return from inside the loop and a break.  */
__attribute__ ((noinline)) int
search (const int *a, int n, int v)
{
  for (int i = 0; i < n; i++)
    {
      if (a[i] == v)
        return i;
      if (a[i] < 0)
        break;
    }
  return -1;
}

/* Nested loops left by a goto, counters on both arms of a branch.  */
__attribute__ ((noinline)) int
nested (int n, int m)
{
  int s = 0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < m; j++)
      {
        if ((i ^ j) & 1)
          s += j;
        else
          s -= i;
        if (s > 5000)
          goto out;
      }
out:
  return s;
}

/* An unsigned char induction variable that wraps round.  */
__attribute__ ((noinline)) unsigned
wrap (unsigned char from, int n)
{
  unsigned s = 0;
  unsigned char c = from;
  do
    {
      s += c;
      c += 3;
    }
  while (--n > 0 && c != from);
  return s;
}

/* A step of -2 and a do-while with its test at the bottom.  */
__attribute__ ((noinline)) long
down (long *a, int n)
{
  long s = 0;
  int i = n - 1;
  if (n <= 0)
    return 0;
  do
    {
      s += a[i];
      if (a[i] & 4)
        s++;
      i -= 2;
    }
  while (i >= 0);
  return s;
}

/* A loop with a call: its counters stay in memory (the callee could dump
   them).  */
__attribute__ ((noinline)) void
callee (int i)
{
  if (i == 12345)
    tally_dump ();
}

__attribute__ ((noinline)) int
with_call (int n)
{
  int s = 0;
  for (int i = 0; i < n; i++)
    {
      if (i % 7 == 0)
        callee (i);
      s++;
    }
  return s;
}

/* fault: a call-free walk into an unreadable page.  */
static volatile long walked;

static void
on_segv (int sig)
{
  (void) sig;
  /* LOOPS_KILL: die as SIGKILL would make it, without a dump (what
     counters=mapped's continuous output keeps).  */
  if (getenv ("LOOPS_KILL"))
    kill (getpid (), SIGKILL);
  tally_dump ();
  _exit (3);
}

__attribute__ ((noinline)) long
walk (const unsigned char *p)
{
  long s = 0;
  while (*p != 0xff)
    {
      s += *p;
      p++;
    }
  return s;
}

int
main (int argc, char **argv)
{
  int n = argc > 1 ? atoi (argv[1]) : 100;
  if (argc > 2 && strcmp (argv[2], "fault") == 0)
    {
      long page = sysconf (_SC_PAGESIZE);
      unsigned char *m = mmap (NULL, 2 * page, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m == MAP_FAILED)
        return 2;
      memset (m, 1, page);
      mprotect (m + page, page, PROT_NONE);
      signal (SIGSEGV, on_segv);
      /* n iterations, then a fault in the loop.  */
      walked = walk (m + page - n);
      return 1;
    }
  for (int i = 0; i < 256; i++)
    yy[i] = i;
  long s = 0;
  for (int i = 0; i < n; i++)
    s += mtf ((i * 7) & 255);
  int a[100];
  for (int i = 0; i < 100; i++)
    a[i] = i * 3 - (i == 90 ? 1000 : 0);
  for (int i = 0; i < n; i++)
    s += search (a, 100, i % 400);
  s += nested (n / 10 + 1, 37);
  for (int i = 0; i < n; i++)
    s += wrap ((unsigned char) i, i * 13 % 300);
  long b[64];
  for (int i = 0; i < 64; i++)
    b[i] = i * 5;
  for (int i = 0; i < n; i++)
    s += down (b, i % 65);
  s += with_call (n);
  printf ("%ld\n", s);
  return 0;
}
