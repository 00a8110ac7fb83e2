/* TALLY_DUMP_ON: write the data file when a signal arrives.
 *
 *   TALLY_DUMP_ON=SIGUSR1[,SIGUSR2,SIGTERM,...]
 *
 * SIGUSR1 and SIGUSR2 write the file and the program goes on (SA_RESTART,
 * so an interrupted read or wait resumes instead of failing with EINTR).
 * The fatal signals (SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGABRT, SIGSEGV,
 * SIGBUS, SIGFPE, SIGILL) write the file, put back the disposition that was
 * there before and deliver the signal again, so the program ends exactly as
 * it would have: same status, same core dump, or the program's own handler
 * if it had one.  A fault raised by an instruction (si_code > 0) is not
 * re-raised: returning re-runs the instruction, which faults again under
 * the restored disposition with its true siginfo.  A fatal signal that is
 * ignored when the handlers are installed stays ignored.
 *
 * Handlers are installed once, from the first module registration (a
 * constructor), so a program that later installs its own handler for the
 * same signal replaces tally's.  The handler only calls async-signal-safe
 * code: the dump (no malloc, no stdio, no locks it could deadlock on: a
 * dump interrupted in the same thread is detected and skipped), sigaction
 * and raise; errno is preserved.  No alternate signal stack is set up, so a
 * SIGSEGV from a stack overflow cannot run the handler.  */
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "rt.h"

struct sig_name
{
  const char *name; /* without the "SIG" prefix */
  int sig;
  int fatal;
};

static const struct sig_name sig_names[] = {
  { "USR1", SIGUSR1, 0 }, { "USR2", SIGUSR2, 0 }, { "HUP", SIGHUP, 1 },
  { "INT", SIGINT, 1 },   { "QUIT", SIGQUIT, 1 }, { "TERM", SIGTERM, 1 },
  { "ABRT", SIGABRT, 1 }, { "SEGV", SIGSEGV, 1 }, { "BUS", SIGBUS, 1 },
  { "FPE", SIGFPE, 1 },   { "ILL", SIGILL, 1 },
};
#define N_SIGS (sizeof sig_names / sizeof sig_names[0])
#define ACCEPTED "SIGUSR1, SIGUSR2, SIGHUP, SIGINT, SIGQUIT, SIGTERM, " \
                 "SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL"

/* What was installed before tally's handler, per entry of sig_names, and
   whether tally's handler is in place.  */
static struct sigaction previous[N_SIGS];
static int installed[N_SIGS];

static int
find (int sig)
{
  for (unsigned i = 0; i < N_SIGS; i++)
    if (sig_names[i].sig == sig)
      return (int) i;
  return -1;
}

static void
on_signal (int sig, siginfo_t *info, void *context)
{
  (void) context;
  int saved = errno;
  int i = find (sig);
  if (i < 0 || !sig_names[i].fatal)
    {
      /* EBUSY: a dump is running (perhaps the one this signal
         interrupted); it writes the counts itself.  */
      tally_rt_dump (0);
      errno = saved;
      return;
    }
  if (tally_rt_dump_fatal () != 0 && errno == EBUSY)
    tally_rt_error ("SIG%s arrived during a dump in the same thread; the "
                    "counts since the last complete dump are lost",
                    sig_names[i].name);
  sigaction (sig, &previous[i], NULL);
  installed[i] = 0;
  int fault = info && info->si_code > 0
              && (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE
                  || sig == SIGILL);
  if (!fault)
    raise (sig); /* pending until this handler returns: sig is blocked */
  errno = saved;
}

/* Copy the item [S, E) of the list into BUF (truncated) for a message.  */
static const char *
item_text (char *buf, size_t cap, const char *s, const char *e)
{
  size_t n = (size_t) (e - s) < cap - 1 ? (size_t) (e - s) : cap - 1;
  memcpy (buf, s, n);
  buf[n] = 0;
  return buf;
}

void
tally_rt_signals_init (void)
{
  const char *list = tally_rt_env ("TALLY_DUMP_ON");
  if (!list)
    return;
  for (const char *s = list; *s;)
    {
      const char *e = s;
      while (*e && *e != ',')
        e++;
      const char *name = s;
      if (e - s > 3 && memcmp (s, "SIG", 3) == 0)
        name += 3;
      int found = -1;
      for (unsigned i = 0; i < N_SIGS && found < 0; i++)
        if (strlen (sig_names[i].name) == (size_t) (e - name)
            && memcmp (sig_names[i].name, name, (size_t) (e - name)) == 0)
          found = (int) i;
      if (found < 0 && e > s)
        {
          char buf[64];
          tally_rt_error ("TALLY_DUMP_ON=%s: unknown signal '%s' (accepted: "
                          ACCEPTED "); ignored", list,
                          item_text (buf, sizeof buf, s, e));
        }
      else if (found >= 0 && !installed[found])
        {
          struct sigaction sa;
          memset (&sa, 0, sizeof sa);
          sa.sa_sigaction = on_signal;
          sa.sa_flags = SA_SIGINFO | SA_RESTART;
          /* No other signal may start a second dump inside this one.  */
          sigfillset (&sa.sa_mask);
          int sig = sig_names[found].sig;
          if (sigaction (sig, NULL, &previous[found]) != 0)
            tally_rt_error ("TALLY_DUMP_ON: cannot read the disposition of "
                            "SIG%s", sig_names[found].name);
          else if (sig_names[found].fatal
                   && previous[found].sa_handler == SIG_IGN)
            ; /* ignored, so not fatal: leave it so */
          else if (sigaction (sig, &sa, NULL) != 0)
            tally_rt_error ("TALLY_DUMP_ON: cannot install a handler for "
                            "SIG%s", sig_names[found].name);
          else
            installed[found] = 1;
        }
      s = *e ? e + 1 : e;
    }
}

void
tally_rt_signals_fini (void)
{
  for (unsigned i = 0; i < N_SIGS; i++)
    if (installed[i])
      {
        struct sigaction now;
        /* Put the old disposition back only if ours is still there: the
           program may have installed its own since.  */
        if (sigaction (sig_names[i].sig, NULL, &now) == 0
            && (now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_signal)
          sigaction (sig_names[i].sig, &previous[i], NULL);
        installed[i] = 0;
      }
}
