/* TALLY_DUMP_ON: write the data file when a signal arrives.
 *
 *   TALLY_DUMP_ON=SIGUSR1[,SIGUSR2,SIGTERM,...]
 *   TALLY_DUMP_ON=none[,...]
 *
 * By default (unless the list has "none") the signals whose default action
 * ends the process without a core and that ordinary programs die of, SIGHUP,
 * SIGINT, SIGPIPE (a pipeline's reader exited) and SIGTERM, get the fatal
 * handler below too, but only where their disposition is still SIG_DFL when
 * the handlers are installed: a signal the program ignores or handles stays
 * as it is, and a handler the program installs later replaces tally's.
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
 * and raise; errno is preserved.
 *
 * Stack overflow.  A SIGSEGV raised because a thread's stack is exhausted
 * cannot run a handler on that stack, so the handlers are installed with
 * SA_ONSTACK and, when TALLY_DUMP_ON names SIGSEGV or SIGBUS, the thread
 * that installs them (the main thread, from the first registration's
 * constructor) gets an alternate signal stack, mmap'ed there with a guard
 * page below it, unless the program already gave it one (which is kept and
 * used).  A thread the program starts later has no alternate stack unless
 * the program gives it one: its overflow is still lost.  */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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
  { "FPE", SIGFPE, 1 },   { "ILL", SIGILL, 1 },   { "PIPE", SIGPIPE, 1 },
};
#define N_SIGS (sizeof sig_names / sizeof sig_names[0])
#define ACCEPTED "SIGUSR1, SIGUSR2, SIGHUP, SIGINT, SIGQUIT, SIGTERM, " \
                 "SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGPIPE, none"

/* Installed unless TALLY_DUMP_ON has "none", where still SIG_DFL.  */
static const int default_sigs[] = { SIGHUP, SIGINT, SIGPIPE, SIGTERM };

/* What was installed before tally's handler, per entry of sig_names, and
   whether tally's handler is in place.  */
static struct sigaction previous[N_SIGS];
static int installed[N_SIGS];

/* The alternate signal stack tally gave the main thread (its mapping,
   guard page included), NULL if none.  The dump needs some 20 KiB of
   stack; this leaves room for a program's own handler run from ours.  */
#define ALT_STACK_SIZE ((size_t) 256 * 1024)
static void *alt_map;
static size_t alt_len;

/* Give the calling thread an alternate signal stack, unless it has one.  */
static void
alt_stack_init (void)
{
  stack_t old;
  if (alt_map || sigaltstack (NULL, &old) != 0 || !(old.ss_flags & SS_DISABLE))
    return; /* ours already, or the program's own: keep it */
  size_t page = (size_t) sysconf (_SC_PAGESIZE);
  size_t len = ALT_STACK_SIZE + page;
  void *p = mmap (NULL, len, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    {
      tally_rt_error ("TALLY_DUMP_ON: no memory for an alternate signal "
                      "stack; a stack overflow will not be dumped");
      return;
    }
  mprotect (p, page, PROT_NONE); /* the guard: stacks grow down */
  stack_t ss;
  memset (&ss, 0, sizeof ss);
  ss.ss_sp = (char *) p + page;
  ss.ss_size = ALT_STACK_SIZE;
  if (sigaltstack (&ss, NULL) != 0)
    {
      munmap (p, len);
      return;
    }
  alt_map = p;
  alt_len = len;
}

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

/* Install the handler for entry I of sig_names.  DEFAULT_ONLY: only if the
   disposition is SIG_DFL (the default set), silently.  */
static void
install (int i, int default_only)
{
  if (installed[i])
    return;
  struct sigaction sa;
  memset (&sa, 0, sizeof sa);
  sa.sa_sigaction = on_signal;
  /* SA_ONSTACK: on a thread's alternate stack if it has one.  */
  sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  /* No other signal may start a second dump inside this one.  */
  sigfillset (&sa.sa_mask);
  int sig = sig_names[i].sig;
  if (sigaction (sig, NULL, &previous[i]) != 0)
    {
      if (!default_only)
        tally_rt_error ("TALLY_DUMP_ON: cannot read the disposition of SIG%s",
                        sig_names[i].name);
      return;
    }
  if (default_only
      && ((previous[i].sa_flags & SA_SIGINFO)
          || previous[i].sa_handler != SIG_DFL))
    return; /* the program's own handler, or ignored: leave it so */
  if (sig_names[i].fatal && !(previous[i].sa_flags & SA_SIGINFO)
      && previous[i].sa_handler == SIG_IGN)
    return; /* ignored, so not fatal: leave it so */
  if (sigaction (sig, &sa, NULL) != 0)
    {
      if (!default_only)
        tally_rt_error ("TALLY_DUMP_ON: cannot install a handler for SIG%s",
                        sig_names[i].name);
      return;
    }
  installed[i] = 1;
  if (sig == SIGSEGV || sig == SIGBUS)
    alt_stack_init ();
}

void
tally_rt_signals_init (void)
{
  const char *list = tally_rt_env ("TALLY_DUMP_ON");
  int none = 0;
  for (const char *s = list ? list : ""; *s;)
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
      if (e - s == 4 && memcmp (s, "none", 4) == 0)
        none = 1;
      else if (found < 0 && e > s)
        {
          char buf[64];
          tally_rt_error ("TALLY_DUMP_ON=%s: unknown signal '%s' (accepted: "
                          ACCEPTED "); ignored", list,
                          item_text (buf, sizeof buf, s, e));
        }
      else if (found >= 0)
        install (found, 0);
      s = *e ? e + 1 : e;
    }
  if (!none)
    for (unsigned k = 0; k < sizeof default_sigs / sizeof default_sigs[0]; k++)
      install (find (default_sigs[k]), 1);
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
  /* The alternate stack: taken back if this thread still has it (else it
     stays mapped: another thread's, or replaced by the program).  */
  stack_t now;
  if (alt_map && sigaltstack (NULL, &now) == 0 && !(now.ss_flags & SS_ONSTACK)
      && now.ss_sp == (char *) alt_map + (alt_len - ALT_STACK_SIZE))
    {
      stack_t off;
      memset (&off, 0, sizeof off);
      off.ss_flags = SS_DISABLE;
      if (sigaltstack (&off, NULL) == 0)
        {
          munmap (alt_map, alt_len);
          alt_map = NULL;
        }
    }
}
