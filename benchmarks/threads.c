/* threads.c - the workload of benchmarks/update-modes.sh: N threads (default
   2) each sort their own array of pseudo-random numbers with a recursive
   quicksort and hash it, ROUNDS times.  The threads run the same functions
   at the same time, so counter updates from the threads meet in the same
   cache lines: where update=single loses counts and is slowed by false
   sharing, update=atomic pays for the lock prefix, and update=tls (per-
   thread counters) should pay for neither.  Prints the combined hash, which
   does not depend on the instrumentation.

   Usage: threads [THREADS [N [ROUNDS]]]  */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static size_t n = 20000;
static int rounds = 20;

static uint32_t
next_random (uint32_t *state)
{
  *state = *state * 1103515245u + 12345u;
  return *state >> 8;
}

static int
less (uint32_t a, uint32_t b)
{
  return a < b;
}

static void
swap (uint32_t *a, uint32_t *b)
{
  uint32_t t = *a;
  *a = *b;
  *b = t;
}

static size_t
partition (uint32_t *v, size_t len)
{
  uint32_t pivot = v[(len - 1) / 2];
  size_t i = 0, j = len - 1;
  for (;;)
    {
      while (less (v[i], pivot))
        i++;
      while (less (pivot, v[j]))
        j--;
      if (i >= j)
        return j;
      swap (&v[i], &v[j]);
      i++;
      j--;
    }
}

static void
quicksort (uint32_t *v, size_t len)
{
  if (len < 2)
    return;
  size_t p = partition (v, len);
  quicksort (v, p + 1);
  quicksort (v + p + 1, len - p - 1);
}

static void *
worker (void *arg)
{
  uintptr_t id = (uintptr_t) arg;
  uint32_t state = 12345u + (uint32_t) id, hash = 0;
  uint32_t *v = malloc (n * sizeof *v);
  if (!v)
    return NULL;
  for (int r = 0; r < rounds; r++)
    {
      for (size_t i = 0; i < n; i++)
        v[i] = next_random (&state);
      quicksort (v, n);
      for (size_t i = 0; i < n; i++)
        hash = hash * 31u + v[i];
    }
  free (v);
  return (void *) (uintptr_t) hash;
}

int
main (int argc, char **argv)
{
  int threads = argc > 1 ? atoi (argv[1]) : 2;
  if (argc > 2)
    n = (size_t) strtoul (argv[2], NULL, 10);
  if (argc > 3)
    rounds = atoi (argv[3]);
  if (threads < 1 || threads > 64 || n < 2 || rounds < 1)
    {
      fprintf (stderr, "usage: threads [THREADS(1-64) [N(>1) [ROUNDS(>0)]]]\n");
      return 2;
    }
  pthread_t t[64];
  for (int i = 0; i < threads; i++)
    if (pthread_create (&t[i], NULL, worker, (void *) (uintptr_t) i) != 0)
      {
        fprintf (stderr, "threads: pthread_create failed\n");
        return 1;
      }
  uint32_t hash = 0;
  for (int i = 0; i < threads; i++)
    {
      void *h;
      pthread_join (t[i], &h);
      hash ^= (uint32_t) (uintptr_t) h;
    }
  printf ("%08x\n", hash);
  return 0;
}
