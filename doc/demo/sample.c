/* The demo program: sorts pseudo-random numbers with a recursive quicksort,
   checks the result and hashes it.  Small, but with a hot leaf (less),
   recursion (quicksort) and functions called once.  */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint32_t state = 12345;

static uint32_t
next_random (void)
{
  state = state * 1103515245u + 12345u;
  return state >> 8;
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

/* Hoare partition around the lower middle element: returns j < n - 1 with
   v[0..j] <= pivot <= v[j+1..n-1], so both halves shrink.  */
static size_t
partition (uint32_t *v, size_t n)
{
  uint32_t pivot = v[(n - 1) / 2];
  size_t i = 0, j = n - 1;
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
quicksort (uint32_t *v, size_t n)
{
  if (n < 2)
    return;
  size_t p = partition (v, n);
  quicksort (v, p + 1);
  quicksort (v + p + 1, n - p - 1);
}

static int
is_sorted (const uint32_t *v, size_t n)
{
  for (size_t i = 1; i < n; i++)
    if (less (v[i], v[i - 1]))
      return 0;
  return 1;
}

static uint64_t
hash (const uint32_t *v, size_t n)
{
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ v[i]) * 1099511628211ull;
  return h;
}

int
main (int argc, char **argv)
{
  size_t n = argc > 1 ? (size_t) atol (argv[1]) : 20000;
  uint32_t *v = malloc (n * sizeof *v);
  if (!v)
    return 1;
  for (size_t i = 0; i < n; i++)
    v[i] = next_random ();
  quicksort (v, n);
  printf ("sorted %zu numbers: %s, hash %016llx\n", n,
          is_sorted (v, n) ? "ok" : "WRONG", (unsigned long long) hash (v, n));
  free (v);
  return 0;
}
