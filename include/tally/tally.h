/* tally/tally.h - public API of the tally runtime (link with -ltally-rt).
 *
 * Programs do not need this header to be profiled: `-fplugin=tally` and the
 * runtime library are enough.  It is for programs that want to control when
 * data is written.  */
#ifndef TALLY_TALLY_H
#define TALLY_TALLY_H

#ifndef TALLY_PUBLIC
/* Exported from the runtime even when it is built with hidden visibility.  */
#define TALLY_PUBLIC __attribute__ ((visibility ("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Write the data file now (path from TALLY_OUTPUT, default tally.%p.data),
   replacing an earlier dump of this process.  Returns 0, or -1 with errno
   set (EBUSY if another thread is dumping at this moment).
   Async-signal-safe.  */
TALLY_PUBLIC int tally_dump (void);

/* Set every counter of every registered module to zero.  */
TALLY_PUBLIC void tally_reset (void);

#ifdef __cplusplus
}
#endif

#endif /* TALLY_TALLY_H */
