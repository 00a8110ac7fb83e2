/* Functions GCC clones or splits at -O2/-O3 (constprop, isra, part): every
   body must be counted under its source function, none twice.  */
#include <stdio.h>
#include <string.h>

struct big
{
  int v[64];
  int pad;
};

/* Always called with scale == 3: a candidate for .constprop.  */
__attribute__ ((noinline)) static int
scaled (const int *p, int n, int scale)
{
  int s = 0;
  for (int i = 0; i < n; i++)
    s += p[i] * scale;
  return s;
}

/* Only one field of the struct is used: a candidate for .isra.  */
__attribute__ ((noinline)) static int
first (struct big *b)
{
  return b->v[0] + b->pad;
}

/* A cheap early exit and an expensive tail: a candidate for .part.  */
static int
lookup (const char *key, int n)
{
  if (n < 0)
    return -1;
  int h = 0;
  for (int r = 0; r < 50; r++)
    for (size_t i = 0; i < strlen (key); i++)
      h = h * 31 + key[i] + r + n;
  if (h == 42)
    puts ("unlikely");
  return h & 0xff;
}

int
main (int argc, char **argv)
{
  (void) argv;
  struct big b;
  memset (&b, 0, sizeof b);
  b.v[0] = argc;
  int s = 0;
  for (int i = 0; i < 6 + argc - 1; i++)
    {
      s += scaled (b.v, 64, 3);
      s += first (&b);
      s += lookup ("key", i - 2);
    }
  printf ("%d\n", s & 1);
  return 0;
}
