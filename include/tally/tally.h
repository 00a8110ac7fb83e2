/* tally/tally.h - public API of the tally runtime (link with -ltally-rt).
 *
 * Programs do not need this header to be profiled: `-fplugin=tally` and the
 * runtime library are enough.  It is for programs that want to control when
 * data is written.  */
#ifndef TALLY_TALLY_H
#define TALLY_TALLY_H

#include "tally/public.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Write the data file now (path from TALLY_OUTPUT, default tally.%p.data),
   replacing an earlier dump of this process.  Returns 0, or -1 with errno
   set (EBUSY if another thread is dumping at this moment, or the exit,
   exec or fatal-signal dump is waiting for the lock).
   Async-signal-safe.  */
TALLY_PUBLIC int tally_dump (void);

/* Set every counter of every registered module to zero.  */
TALLY_PUBLIC void tally_reset (void);

/* The calling thread's stack: up to MAX return addresses into ADDRS,
   innermost first (ADDRS[0] is in the caller of tally_backtrace), as
   glibc's backtrace () gives them.  Returns their number, or -1 with errno
   ENOSYS when the runtime has no libunwind (a static runtime linked without
   -lunwind), EINVAL for a negative MAX.  Async-signal-safe.  */
TALLY_PUBLIC int tally_backtrace (void **addrs, int max);

/* The same written to file descriptor FD, one frame a line, "#N 0xADDR
   symbol+0xOFFSET".  Returns the number of frames, or -1 as above.
   Async-signal-safe (for a crash handler).  */
TALLY_PUBLIC int tally_backtrace_print (int fd);

#ifdef __cplusplus
}
#endif

#endif /* TALLY_TALLY_H */
