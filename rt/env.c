/* The runtime's way to the environment, and whether it may use it.  Layer
   "base" of rt.h: calls nothing else of the runtime.  */
#include <string.h>
#include <sys/auxv.h>

#include "rt.h"

extern char **environ;

int
tally_rt_secure (void)
{
  return getauxval (AT_SECURE) != 0;
}

/* getenv without locks or allocation (getenv itself is not
   async-signal-safe in every libc); secure_getenv's rule: nothing at all in
   a secure-execution process, whose environment is its unprivileged
   caller's (a TALLY_OUTPUT naming a file root may write).  */
const char *
tally_rt_env (const char *name)
{
  if (tally_rt_secure ())
    return NULL;
  size_t n = strlen (name);
  for (char **e = environ; e && *e; e++)
    if (strncmp (*e, name, n) == 0 && (*e)[n] == '=')
      return *e + n + 1;
  return NULL;
}
