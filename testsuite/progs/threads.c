/* Four threads call the same function; with update=atomic the count is
   exact (with update=single it may lose increments, by design).  */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define CALLS 50000

__attribute__ ((noinline)) int
work (int x)
{
  return x ^ 0x5a;
}

static void *
worker (void *arg)
{
  long s = 0;
  for (int i = 0; i < CALLS; i++)
    s += work (i);
  return (void *) s;
}

int
main (void)
{
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++)
    pthread_create (&t[i], NULL, worker, NULL);
  for (int i = 0; i < THREADS; i++)
    pthread_join (t[i], NULL);
  puts ("done");
  return 0;
}
