/* Threads running call-free loops whose counters plugin/promote.cc holds
   in registers with update=tls (run-tlspromote.py).
   Usage: threads N        four workers and the main thread walk and
                           search; one more thread is still alive (waiting,
                           outside any loop) at the exit dump; prints how
                           often walk's loop body ran, search's
                           positions and mtf's results
          threads spin     a thread spins in a call-free loop while the
                           main thread calls tally_dump (TALLY_OUTPUT's
                           file is then written twice: SPIN_FIRST names
                           where the first dump is copied); prints the
                           spin loop's iterations  */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tally/tally.h"

#define WORKERS 4

static unsigned char buf[1024];
static long walked[WORKERS + 1], searched[WORKERS + 1], moved[WORKERS + 1];

/* A data-dependent walk: its body runs once per byte before the 0xff.  */
__attribute__ ((noinline)) long
walk (const unsigned char *p, long *body)
{
  long s = 0;
  const unsigned char *q = p;
  while (*q != 0xff)
    {
      s += *q;
      q++;
    }
  *body += q - p;
  return s;
}

/* A search whose loop has two exits (the end of A and a match) joining
   before the one return.  */
__attribute__ ((noinline)) int
search (const int *a, int n, int v)
{
  const int *p = a, *end = a + n;
  while (p != end && *p != v)
    p++;
  return p == end ? -1 : (int) (p - a);
}

/* Move-to-front on the thread's own list, as a do-while that shifts each
   entry up until C comes out (promote/loops.c has bzip2's while form):
   returns C's old position.  */
__attribute__ ((noinline)) int
mtf (unsigned char *yy, unsigned char c)
{
  unsigned char *p = yy, up = yy[0];
  if (up == c)
    return 0;
  do
    {
      unsigned char next = *++p;
      *p = up;
      up = next;
    }
  while (up != c);
  yy[0] = c;
  return p - yy;
}

static int table[200];

static void
work (int k, int rounds)
{
  unsigned char yy[256];
  for (int i = 0; i < 256; i++)
    yy[i] = i;
  for (int r = 0; r < rounds; r++)
    {
      moved[k] += mtf (yy, (r * 7 + k) & 255);
      walk (buf + (r * 37 + k * 101) % 1000, &walked[k]);
      int at = search (table, 200, (r * 13 + k) % 300);
      searched[k] += at < 0 ? 200 : at + 1;
    }
}

static int rounds;

static void *
worker (void *arg)
{
  int k = (int) (long) arg;
  work (k, rounds * (k + 1));
  return NULL;
}

/* Alive, attached (it walked once), and waiting at the exit dump.  */
static pthread_mutex_t hold = PTHREAD_MUTEX_INITIALIZER;
static long idle_walked;
static pthread_barrier_t walked_once;

static void *
idle (void *arg)
{
  (void) arg;
  walk (buf + 990, &idle_walked);
  pthread_barrier_wait (&walked_once);
  pthread_mutex_lock (&hold);
  return NULL;
}

static volatile int stop, started;
static volatile long progress;

/* Goes round until the main thread says stop; PROGRESS is the count so
   far, for the main thread to see.  */
__attribute__ ((noinline)) long
spin (void)
{
  long i = 0;
  while (!stop)
    {
      i++;
      progress = i;
    }
  return i;
}

static long spun;

static void *
spinner (void *arg)
{
  (void) arg;
  started = 1;
  spun = spin ();
  return NULL;
}

int
main (int argc, char **argv)
{
  for (int i = 0; i < 1024; i++)
    buf[i] = (i * 7 + 3) % 250;
  for (int i = 99; i < 1024; i += 100)
    buf[i] = 0xff;
  buf[1023] = 0xff;
  for (int i = 0; i < 200; i++)
    table[i] = i * 3 / 2;
  if (argc > 1 && strcmp (argv[1], "spin") == 0)
    {
      pthread_t t;
      pthread_create (&t, NULL, spinner, NULL);
      while (progress < 100000)
        ;
      tally_dump ();
      const char *out = getenv ("TALLY_OUTPUT"), *first = getenv ("SPIN_FIRST");
      if (out && first && rename (out, first) != 0)
        return 2;
      stop = 1;
      pthread_join (t, NULL);
      printf ("spin %ld\n", spun);
      return 0;
    }
  rounds = argc > 1 ? atoi (argv[1]) : 100;
  pthread_mutex_lock (&hold);
  pthread_barrier_init (&walked_once, NULL, 2);
  pthread_t t[WORKERS], w;
  pthread_create (&w, NULL, idle, NULL);
  for (int k = 0; k < WORKERS; k++)
    pthread_create (&t[k], NULL, worker, (void *) (long) (k + 1));
  work (0, rounds);
  for (int k = 0; k < WORKERS; k++)
    pthread_join (t[k], NULL);
  pthread_barrier_wait (&walked_once);
  long wsum = idle_walked, ssum = 0, msum = 0;
  for (int k = 0; k <= WORKERS; k++)
    {
      wsum += walked[k];
      ssum += searched[k];
      msum += moved[k];
    }
  printf ("walk %ld\nsearch %ld\nmtf %ld\n", wsum, ssum, msum);
  return 0;
}
