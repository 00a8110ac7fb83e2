/* exec while another thread dumps: a thread calls tally_dump () in a loop
   while main calls f () 100000 times and then execs /bin/true (not
   instrumented, so it writes no file of its own).  The file left must be
   complete and hold all 100000 calls, and no temporary file may be left
   by a dump the exec cut short.  */
#include <pthread.h>
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
main (void)
{
  pthread_t t;
  pthread_create (&t, NULL, dumper, NULL);
  while (!started)
    ;
  for (int i = 0; i < 100000; i++)
    f ();
  execl ("/bin/true", "true", (char *) 0);
  return 1;
}
