/* Dumps while other threads keep adding call paths: four threads walk
   random chains of eight functions six deep (hundreds of thousands of
   distinct paths), and main dumps 20 times meanwhile, each to a file of
   its own (argv[1] is the prefix).  Every dump must succeed and every
   file must be whole.  */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <tally/tally.h>

static volatile int stop;
static volatile unsigned long sink;

static void step (int depth, unsigned long seed);

#define F(k)                                                                \
  __attribute__ ((noinline)) void f##k (int depth, unsigned long seed)      \
  {                                                                         \
    sink += k;                                                              \
    step (depth, seed);                                                     \
  }
F (0) F (1) F (2) F (3) F (4) F (5) F (6) F (7)

static void (*const fns[8]) (int, unsigned long)
    = { f0, f1, f2, f3, f4, f5, f6, f7 };

__attribute__ ((noinline)) static void
step (int depth, unsigned long seed)
{
  if (depth > 0)
    fns[seed % 8](depth - 1, seed / 8);
}

static void *
worker (void *arg)
{
  unsigned long x = (unsigned long) (size_t) arg * 2654435761u + 1;
  while (!stop)
    {
      x = x * 6364136223846793005ul + 1442695040888963407ul;
      step (6, x >> 20);
    }
  return NULL;
}

int
main (int argc, char **argv)
{
  if (argc != 2)
    return 2;
  pthread_t t[4];
  for (int i = 0; i < 4; i++)
    pthread_create (&t[i], NULL, worker, (void *) (size_t) i);
  int failed = 0;
  for (int i = 0; i < 20; i++)
    {
      char path[4096];
      snprintf (path, sizeof path, "%s.%d.data", argv[1], i);
      setenv ("TALLY_OUTPUT", path, 1);
      if (tally_dump () != 0)
        {
          perror ("tally_dump");
          failed++;
        }
      /* Let the workers run between dumps even on a loaded machine.  */
      struct timespec ms = { 0, 2000000 };
      nanosleep (&ms, NULL);
    }
  stop = 1;
  for (int i = 0; i < 4; i++)
    pthread_join (t[i], NULL);
  printf ("%d failed\n", failed);
  return failed != 0;
}
