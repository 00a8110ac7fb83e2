/* Eight threads running the same functions, and one that calls
   pthread_exit two instrumented frames down.  */
#include <pthread.h>
#include <stdio.h>

static volatile unsigned long sink;

__attribute__ ((noinline)) void
b (void)
{
  for (int i = 0; i < 100; i++)
    sink += i;
}

__attribute__ ((noinline)) void a (void) { b (); b (); }

__attribute__ ((noinline)) void *
worker (void *arg)
{
  (void) arg;
  for (int i = 0; i < 5000; i++)
    a ();
  return NULL;
}

__attribute__ ((noinline)) void e2 (void) { b (); pthread_exit (NULL); }
__attribute__ ((noinline)) void e1 (void) { e2 (); sink++; }

__attribute__ ((noinline)) void *
exiter (void *arg)
{
  (void) arg;
  e1 ();
  return NULL;
}

int
main (void)
{
  pthread_t t[9];
  for (int i = 0; i < 8; i++)
    pthread_create (&t[i], NULL, worker, NULL);
  pthread_create (&t[8], NULL, exiter, NULL);
  for (int i = 0; i < 9; i++)
    pthread_join (t[i], NULL);
  printf ("%d\n", sink > 0);
  return 0;
}
