/* Threads: no count lost or doubled (built with
   -fplugin-arg-tally-update=atomic).
   Usage: threads MODE [N]
     join N     16 threads, created and joined, each calls f N times
                (f: 16 N; worker: 16 entries, 16 exits)
     exit       16 threads; thread i (i = 0..15) does, by i % 3:
                  0  worker -> a -> b -> pthread_exit  (in b)
                  1  worker -> a -> b, both return; pthread_exit in worker
                  2  worker -> a -> b, all return
                f is called once in b; prints nothing
                (worker 16/5, a 16/10, b 16/10, f 16/16: entries/exits)
     detached N 8 detached threads each call f N times, post a semaphore
                and block forever in sigsuspend (uninstrumented) inside
                worker; main waits for the 8 posts and returns
                (f: 8 N; worker: 8 entries, 0 exits; main 1/1)
     spin N     a detached thread calls f without end; main waits until it
                has made N calls, prints how many it has made and returns
                while the thread goes on: the file has at least that many
     outlive N  main calls f N times, starts a thread, calls pthread_exit;
                the thread joins the main thread (so main has ended), then
                calls g N times and returns: the last thread's end is the
                process's exit (f: N, g: N; main: 1 entry, 0 exits;
                outliver: 1/1)  */
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 16
#define DETACHED 8

static long n_calls;
static sem_t posted;
static pthread_t main_thread;

__attribute__ ((noipa)) long
f (long x)
{
  return x + 1;
}

__attribute__ ((noipa)) long
g (long x)
{
  return x + 1;
}

/* join */
__attribute__ ((noipa)) static void *
join_worker (void *arg)
{
  long s = 0;
  for (long i = 0; i < n_calls; i++)
    s = f (s);
  return (void *) (s == n_calls ? arg : NULL);
}

/* exit */
__attribute__ ((noipa)) static void
b (long i)
{
  f (i);
  if (i % 3 == 0)
    pthread_exit (NULL);
}

__attribute__ ((noipa)) static void
a (long i)
{
  b (i);
}

__attribute__ ((noipa)) static void *
exit_worker (void *arg)
{
  long i = (long) arg;
  a (i);
  if (i % 3 == 1)
    pthread_exit (NULL);
  return NULL;
}

/* detached */
__attribute__ ((noipa)) static void *
detached_worker (void *arg)
{
  (void) arg;
  long s = 0;
  for (long i = 0; i < n_calls; i++)
    s = f (s);
  sigset_t none;
  sigemptyset (&none);
  sem_post (&posted);
  for (;;)
    sigsuspend (&none); /* uninstrumented: blocked until the process ends */
  return NULL;
}

/* spin */
static long spun;

__attribute__ ((noipa)) static void *
spinner (void *arg)
{
  (void) arg;
  for (long s = 0;;)
    {
      s = f (s);
      __atomic_store_n (&spun, s, __ATOMIC_RELEASE);
    }
  return NULL;
}

/* outlive */
__attribute__ ((noipa)) static void *
outliver (void *arg)
{
  (void) arg;
  if (pthread_join (main_thread, NULL) != 0)
    abort ();
  long s = 0;
  for (long i = 0; i < n_calls; i++)
    s = g (s);
  printf ("%ld\n", s);
  return NULL;
}

int
main (int argc, char **argv)
{
  if (argc < 2)
    return 2;
  n_calls = argc > 2 ? strtol (argv[2], NULL, 10) : 0;
  const char *mode = argv[1];
  if (strcmp (mode, "join") == 0 || strcmp (mode, "exit") == 0)
    {
      int join = mode[0] == 'j';
      pthread_t t[THREADS];
      for (long i = 0; i < THREADS; i++)
        if (pthread_create (&t[i], NULL, join ? join_worker : exit_worker,
                            (void *) (join ? i + 1 : i)) != 0)
          return 1;
      for (long i = 0; i < THREADS; i++)
        {
          void *r;
          if (pthread_join (t[i], &r) != 0 || (join && r != (void *) (i + 1)))
            return 1;
        }
      return 0;
    }
  if (strcmp (mode, "detached") == 0)
    {
      if (sem_init (&posted, 0, 0) != 0)
        return 1;
      pthread_attr_t attr;
      pthread_attr_init (&attr);
      pthread_attr_setdetachstate (&attr, PTHREAD_CREATE_DETACHED);
      for (int i = 0; i < DETACHED; i++)
        {
          pthread_t t;
          if (pthread_create (&t, &attr, detached_worker, NULL) != 0)
            return 1;
        }
      for (int i = 0; i < DETACHED; i++)
        while (sem_wait (&posted) != 0)
          ;
      return 0; /* the threads are still in detached_worker */
    }
  if (strcmp (mode, "spin") == 0)
    {
      pthread_t t;
      if (pthread_create (&t, NULL, spinner, NULL) != 0 || pthread_detach (t) != 0)
        return 1;
      long s;
      while ((s = __atomic_load_n (&spun, __ATOMIC_ACQUIRE)) < n_calls)
        ;
      printf ("%ld\n", s);
      return 0; /* the thread is still calling f */
    }
  if (strcmp (mode, "outlive") == 0)
    {
      long s = 0;
      for (long i = 0; i < n_calls; i++)
        s = f (s);
      main_thread = pthread_self ();
      pthread_t t;
      if (s != n_calls || pthread_create (&t, NULL, outliver, NULL) != 0)
        return 1;
      fflush (stdout);
      pthread_exit (NULL);
    }
  return 2;
}
