/* Writing the data file before exec replaces the image.
 *
 * The plugin redirects direct calls to execve, execv, execvp, execvpe,
 * execl, execlp, execle and fexecve in instrumented units to __tally_NAME
 * here (the approach of gcov's __gcov_execve).  Each wrapper writes the
 * data file and calls the real function.  Redirection at compile time was
 * chosen over interposing the libc symbols from the runtime: interposition
 * works only when the runtime is a shared library ahead of libc in the
 * lookup order (not for the static libtally-rt.a linked into an executable
 * that does not otherwise export those names), would catch every exec of
 * every uninstrumented library too, and needs dlsym(RTLD_NEXT), which may
 * allocate.  The cost is that an exec reached through a function pointer,
 * or from uninstrumented code, is not seen: its counts since the last dump
 * are lost.
 *
 * If the exec fails the program goes on and counting goes on: nothing is
 * reset, because the next dump replaces the file with the full counts.
 *
 * Threads: the wrapper waits for a dump another thread is writing, writes
 * its own, and holds the dump lock through the exec (released if the exec
 * fails), so the exec never cuts a dump short: the file in place is
 * complete and holds everything counted before the exec.
 *
 * The wrappers call nothing that allocates: the variadic execl family
 * collects its arguments into an on-stack array sized by the call (as
 * glibc does) and bounded, then calls execv, execvp or execve.  */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <unistd.h>

#include "rt.h"

/* More arguments than this in one execl call is refused with E2BIG rather
   than risking the stack: 64 Ki pointers is 512 KiB.  */
#define MAX_EXECL_ARGS 65536

/* The process whose counters this copy of the runtime holds: set at the
   first registration and in a forked child.  A vfork or clone child shares
   the parent's memory, so an exec from it must not write the parent's
   counts under the child's pid (the parent writes them itself).  */
static pid_t owner;
static int owner_set;

static void
owner_after_fork (void)
{
  owner = getpid ();
}

void
tally_rt_exec_init (void)
{
  if (__atomic_exchange_n (&owner_set, 1, __ATOMIC_ACQ_REL))
    return;
  owner = getpid ();
  tally_rt_pin_without_dso_handle ();
  if (tally_rt_sys_atfork_child (owner_after_fork) != 0)
    tally_rt_error ("pthread_atfork failed; a forked child will not write "
                    "its counts before exec");
}

/* Write the file before the exec: after a dump running in another thread
   has finished (else the exec would cut it short, leaving its temporary
   file and maybe no file at all), and keeping any other thread from
   starting one until the exec is done.  Returns whether the dump lock is
   held, for after_exec.  */
static int
before_exec (void)
{
  int saved = errno, held = 0;
  if (getpid () == owner)
    held = tally_rt_primary ()->exec_dump (0);
  errno = saved;
  return held;
}

/* The exec returned RC (it failed): the program goes on, dumps too.  */
static int
after_exec (int held, int rc)
{
  int saved = errno;
  if (held)
    tally_rt_primary ()->exec_dump (1);
  errno = saved;
  return rc;
}

TALLY_PUBLIC int
__tally_execve (const char *path, char *const argv[], char *const envp[])
{
  int held = before_exec ();
  return after_exec (held, execve (path, argv, envp));
}

TALLY_PUBLIC int
__tally_execv (const char *path, char *const argv[])
{
  int held = before_exec ();
  return after_exec (held, execv (path, argv));
}

TALLY_PUBLIC int
__tally_execvp (const char *file, char *const argv[])
{
  int held = before_exec ();
  return after_exec (held, execvp (file, argv));
}

TALLY_PUBLIC int
__tally_execvpe (const char *file, char *const argv[], char *const envp[])
{
  int held = before_exec ();
  return after_exec (held, execvpe (file, argv, envp));
}

TALLY_PUBLIC int
__tally_fexecve (int fd, char *const argv[], char *const envp[])
{
  int held = before_exec ();
  return after_exec (held, fexecve (fd, argv, envp));
}

/* The execl wrappers: collect ARG0 and the arguments in AP up to the null
   pointer into an on-stack array, then call execv (KIND 'l'), execvp ('p')
   or execve ('e', whose environment follows the null pointer).  */
static int
execl_common (int kind, const char *path, const char *arg0, va_list ap)
{
  va_list count;
  va_copy (count, ap);
  long n = 0; /* arguments before the null pointer */
  if (arg0)
    for (n = 1; va_arg (count, const char *); n++)
      if (n >= MAX_EXECL_ARGS)
        {
          va_end (count);
          errno = E2BIG;
          return -1;
        }
  va_end (count);
  char *argv[n + 1];
  argv[0] = (char *) arg0;
  for (long i = 1; i <= n; i++) /* argv[n] gets the null pointer */
    argv[i] = va_arg (ap, char *);
  argv[n] = NULL;
  char *const *envp = kind == 'e' ? va_arg (ap, char *const *) : NULL;
  int held = before_exec ();
  if (kind == 'e')
    return after_exec (held, execve (path, argv, envp));
  if (kind == 'p')
    return after_exec (held, execvp (path, argv));
  return after_exec (held, execv (path, argv));
}

/* __tally_execl, __tally_execlp, __tally_execle: each needs its own
   va_start; the rest is execl_common's.  */
#define EXECL_WRAPPER(name, kind)                                            \
  TALLY_PUBLIC int name (const char *path, const char *arg, ...)             \
  {                                                                          \
    va_list ap;                                                              \
    va_start (ap, arg);                                                      \
    int rc = execl_common (kind, path, arg, ap);                             \
    va_end (ap);                                                             \
    return rc;                                                               \
  }
EXECL_WRAPPER (__tally_execl, 'l')
EXECL_WRAPPER (__tally_execlp, 'p')
EXECL_WRAPPER (__tally_execle, 'e')
