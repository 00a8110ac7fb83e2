/* Signal handlers: a periodic SIGALRM handler that returns (and calls an
   instrumented function), a SIGUSR1 handler that siglongjmps out from
   three frames down, and a SIGUSR2 handler on an alternate signal
   stack.  */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>

static volatile unsigned long sink;
static volatile sig_atomic_t alarms;
static sigjmp_buf env;

__attribute__ ((noinline)) void handler_work (void) { sink++; }

__attribute__ ((noinline)) void
on_alarm (int sig)
{
  (void) sig;
  alarms++;
  handler_work ();
}

__attribute__ ((noinline)) void
on_usr1 (int sig)
{
  (void) sig;
  handler_work ();
  siglongjmp (env, 1);
}

__attribute__ ((noinline)) void
on_usr2 (int sig)
{
  (void) sig;
  handler_work ();
}

__attribute__ ((noinline)) void
work (void)
{
  for (int i = 0; i < 2000; i++)
    sink += i;
}

__attribute__ ((noinline)) void s3 (void) { raise (SIGUSR1); sink++; }
__attribute__ ((noinline)) void s2 (void) { s3 (); sink++; }
__attribute__ ((noinline)) void s1 (void) { s2 (); sink++; }

__attribute__ ((noinline)) void
jumper (void)
{
  if (sigsetjmp (env, 1) == 0)
    s1 ();
  work ();
}

__attribute__ ((noinline)) void
alt (void)
{
  raise (SIGUSR2);
  work ();
}

int
main (void)
{
  struct sigaction sa = { 0 };
  sa.sa_handler = on_alarm;
  sigaction (SIGALRM, &sa, NULL);
  sa.sa_handler = on_usr1;
  sigaction (SIGUSR1, &sa, NULL);
  stack_t ss = { 0 };
  ss.ss_size = 1 << 16;
  ss.ss_sp = malloc (ss.ss_size);
  sigaltstack (&ss, NULL);
  sa.sa_handler = on_usr2;
  sa.sa_flags = SA_ONSTACK;
  sigaction (SIGUSR2, &sa, NULL);

  struct itimerval it = { { 0, 500 }, { 0, 500 } };
  setitimer (ITIMER_REAL, &it, NULL);
  while (alarms < 50)
    work ();
  it.it_value.tv_usec = it.it_interval.tv_usec = 0;
  setitimer (ITIMER_REAL, &it, NULL);
  for (int i = 0; i < 100; i++)
    jumper ();
  for (int i = 0; i < 100; i++)
    alt ();
  printf ("%d\n", (int) alarms);
  return 0;
}
