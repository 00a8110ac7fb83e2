/* exec while another thread dumps: a thread calls tally_dump () in a loop
   while main calls f () 100000 times and then execs /bin/true (not
   instrumented, so it writes no file of its own), or with the argument
   "exit" calls exit, or with "term" raises SIGTERM (a default dump
   signal: the file, then the same death).  The file left must be complete and hold all 100000
   calls, and no temporary file may be left by a dump the exec cut short.
   Run on one CPU, the dumping thread lets go of the lock and takes it
   again within its time slice: the exec or exit dump, waiting, must still
   get it.  */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tally/tally.h>

static volatile int started;
static volatile unsigned long sink;

__attribute__ ((noinline)) void
f (void)
{
  sink++;
}

static void *
dumper (void *arg)
{
  (void) arg;
  for (;;)
    {
      tally_dump (); /* EBUSY while main's exec dump holds the lock */
      started = 1;
    }
  return NULL;
}

int
main (int argc, char **argv)
{
  pthread_t t;
  pthread_create (&t, NULL, dumper, NULL);
  while (!started)
    ;
  for (int i = 0; i < 100000; i++)
    f ();
  if (argc > 1 && strcmp (argv[1], "exit") == 0)
    exit (0);
  if (argc > 1 && strcmp (argv[1], "term") == 0)
    raise (SIGTERM);
  execl ("/bin/true", "true", (char *) 0);
  return 1;
}
