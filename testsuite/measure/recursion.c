/* Recursion 100000 deep in main, and 700000 deep in a thread with a large
   stack: deeper than the shadow stack holds (524288 frames).  */
#include <pthread.h>
#include <stdio.h>

static volatile unsigned long sink;

__attribute__ ((noinline)) unsigned long
rec (unsigned long n)
{
  if (n == 0)
    return 0;
  unsigned long r = rec (n - 1);
  sink += r;
  return r + 1;
}

__attribute__ ((noinline)) void *
deep (void *arg)
{
  (void) arg;
  rec (700000);
  return NULL;
}

int
main (void)
{
  rec (100000);
  pthread_attr_t attr;
  pthread_t t;
  pthread_attr_init (&attr);
  pthread_attr_setstacksize (&attr, (size_t) 1 << 30);
  if (pthread_create (&t, &attr, deep, NULL) != 0)
    return 2;
  pthread_join (t, NULL);
  printf ("%d\n", sink > 0);
  return 0;
}
