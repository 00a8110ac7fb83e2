/* Built without the plugin.  Keeps a log of events in a static buffer
   (no libc: note may run from .preinit_array), and wraps the runtime's
   __tally_register (linked with -Wl,--wrap=__tally_register) to log each
   module registration as "register:BASENAME", so that the test sees that
   the early code really ran before the module it counts in registered.
   note_late says on stdout whether the data file (TALLY_OUTPUT) exists
   already, that is whether the exit dump has run.  */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tally/abi.h>
#include <unistd.h>

static char log_buf[4096];
static unsigned log_len;

static void
put (const char *s)
{
  for (; *s && log_len < sizeof log_buf - 1; s++)
    log_buf[log_len++] = *s;
}

void
note (const char *event)
{
  if (log_len)
    put (" ");
  put (event);
}

void __real___tally_register (struct tally_module *m);

void
__wrap___tally_register (struct tally_module *m)
{
  const char *base = m->source;
  for (const char *p = m->source; *p; p++)
    if (*p == '/')
      base = p + 1;
  note ("register:");
  put (base);
  __real___tally_register (m);
}

void
print_log (void)
{
  printf ("%s\n", log_buf);
  fflush (stdout);
}

void
note_late (const char *event)
{
  const char *out = getenv ("TALLY_OUTPUT");
  const char *when = out && access (out, F_OK) == 0 ? " after the exit dump\n"
                                                    : " before the exit dump\n";
  if (write (1, event, strlen (event)) < 0 || write (1, when, strlen (when)) < 0)
    _exit (9);
}
