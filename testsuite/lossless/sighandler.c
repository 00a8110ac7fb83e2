/* Counters updated from a signal handler.  The handler calls h, and h f,
   once per signal; main calls f in a loop, so the handler often interrupts
   an update of f's own counters, and no count may be lost or doubled.
   Prints "M H": main's f calls and the signals handled.  Expected counts:
   f M + H, h H, on_alarm H.
   Usage: sighandler MODE K
     raise  K times: f, then raise (SIGALRM)
     timer  a 50 us interval timer (setitimer ITIMER_REAL) while main calls
            f without pause, until K signals were handled; then the timer
            is stopped and SIGALRM blocked  */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

static volatile sig_atomic_t handled;

__attribute__ ((noipa)) long
f (long x)
{
  return x + 1;
}

/* f called from inside the handler's own instrumented function.  */
__attribute__ ((noipa)) long
h (long x)
{
  return f (x) + 1;
}

static void
on_alarm (int sig)
{
  (void) sig;
  h (0);
  handled = handled + 1;
}

int
main (int argc, char **argv)
{
  if (argc != 3)
    return 2;
  long k = strtol (argv[2], NULL, 10), m = 0;
  struct sigaction sa;
  memset (&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sigemptyset (&sa.sa_mask);
  if (sigaction (SIGALRM, &sa, NULL) != 0)
    return 1;
  if (strcmp (argv[1], "raise") == 0)
    for (long i = 0; i < k; i++)
      {
        m = f (m);
        raise (SIGALRM);
      }
  else if (strcmp (argv[1], "timer") == 0)
    {
      struct itimerval it = { { 0, 50 }, { 0, 50 } };
      if (setitimer (ITIMER_REAL, &it, NULL) != 0)
        return 1;
      while (handled < k)
        m = f (m);
      struct itimerval off = { { 0, 0 }, { 0, 0 } };
      sigset_t block;
      sigemptyset (&block);
      sigaddset (&block, SIGALRM);
      if (setitimer (ITIMER_REAL, &off, NULL) != 0
          || sigprocmask (SIG_BLOCK, &block, NULL) != 0)
        return 1;
    }
  else
    return 2;
  printf ("%ld %ld\n", m, (long) handled);
  return 0;
}
