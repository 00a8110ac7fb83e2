/* update=tls across thread boundaries (run-tlsneg.py, "boundaries"): each
   count below is made by a known number of calls; the driver derives the
   expected totals from the same constants.  */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tally/tally.h>

volatile long sink;
__attribute__ ((noinline)) void f (int x) { sink += x; }
__attribute__ ((noinline)) void g (int x) { sink -= x; }
__attribute__ ((noinline)) void s (int x) { sink ^= x; }
__attribute__ ((noinline)) void c (int x) { sink += 2 * x; }

static pthread_barrier_t bar;
static pthread_key_t key;
static void (*lib_fn) (int);

/* T1..T4: f i times, then exit (before the dump).  */
static void *
counted (void *arg)
{
  for (long i = 0; i < (long) arg; i++)
    f (1);
  return NULL;
}

/* The user's key destructor runs after the runtime's flush (its key was
   made first): f's calls there count again.  */
static void
late (void *p)
{
  (void) p;
  for (int i = 0; i < 3; i++)
    f (2);
}

static void *
with_destructor (void *arg)
{
  (void) arg;
  pthread_setspecific (key, (void *) 1);
  f (3);
  return NULL;
}

/* Attached through g, f never called: alive at the exit dump.  */
static void *
idle (void *arg)
{
  (void) arg;
  g (1);
  pthread_barrier_wait (&bar);
  for (;;)
    pause ();
  return NULL;
}

/* Live across tally_reset: 2 calls before (dropped), 3 after.  */
static void *
across_reset (void *arg)
{
  (void) arg;
  f (1);
  f (1);
  pthread_barrier_wait (&bar); /* main resets */
  pthread_barrier_wait (&bar);
  for (int i = 0; i < 3; i++)
    f (1);
  return NULL;
}

static void
handler (int sig)
{
  (void) sig;
  s (1);
  s (2);
}

/* s's first call in this thread is in the signal handler.  */
static void *
signalled (void *arg)
{
  (void) arg;
  raise (SIGUSR1);
  return NULL;
}

/* Started before the dlopen, calls the library after it.  */
static void *
before_dlopen (void *arg)
{
  (void) arg;
  pthread_barrier_wait (&bar); /* main opens the library */
  pthread_barrier_wait (&bar);
  lib_fn (1);
  lib_fn (1);
  return NULL;
}

static void *
after_dlopen (void *arg)
{
  (void) arg;
  for (int i = 0; i < 3; i++)
    lib_fn (1);
  return NULL;
}

int
main (int argc, char **argv)
{
  (void) argc;
  pthread_t t[8];
  pthread_key_create (&key, late);
  signal (SIGUSR1, handler);
  for (int i = 0; i < 7; i++)
    f (1);

  /* tally_reset with a thread attached on both sides.  */
  pthread_barrier_init (&bar, NULL, 2);
  pthread_create (&t[0], NULL, across_reset, NULL);
  pthread_barrier_wait (&bar);
  tally_reset ();
  pthread_barrier_wait (&bar);
  pthread_join (t[0], NULL);

  for (long i = 1; i <= 4; i++)
    pthread_create (&t[i], NULL, counted, (void *) i);
  for (int i = 1; i <= 4; i++)
    pthread_join (t[i], NULL);
  pthread_create (&t[5], NULL, with_destructor, NULL);
  pthread_join (t[5], NULL);
  pthread_create (&t[6], NULL, signalled, NULL);
  pthread_join (t[6], NULL);

  /* A library opened while a thread exists, and called by it.  */
  pthread_create (&t[7], NULL, before_dlopen, NULL);
  pthread_barrier_wait (&bar);
  void *h = dlopen (argv[1], RTLD_NOW);
  if (!h || !(lib_fn = (void (*) (int)) dlsym (h, "lib_fn")))
    {
      fprintf (stderr, "dlopen: %s\n", dlerror ());
      return 1;
    }
  pthread_barrier_wait (&bar);
  pthread_join (t[7], NULL);
  pthread_create (&t[7], NULL, after_dlopen, NULL);
  pthread_join (t[7], NULL);
  lib_fn (1);

  pid_t pid = fork ();
  if (pid == 0)
    {
      for (int i = 0; i < 5; i++)
        c (1);
      f (1);
      f (1);
      exit (0);
    }
  int st;
  waitpid (pid, &st, 0);
  f (1);

  pthread_create (&t[0], NULL, idle, NULL);
  pthread_barrier_wait (&bar);
  return WIFEXITED (st) && WEXITSTATUS (st) == 0 ? 0 : 1;
}
