/* rt/rt.h - internals shared by the runtime's source files.  */
#ifndef TALLY_RT_H
#define TALLY_RT_H

#include <stddef.h>
#include <stdint.h>

#include "tally/abi.h"

#define TALLY_HIDDEN __attribute__ ((visibility ("hidden")))

/* struct tally_module.rt_state values.  */
#define TALLY_STATE_REGISTERED 1u
#define TALLY_STATE_GONE 2u

/* Head of the list of registered modules, newest first.  Modules are only
   ever pushed (lock-free) and marked gone, never unlinked, so a reader that
   loaded the head can walk the list while others register.  */
extern struct tally_module *tally_modules TALLY_HIDDEN;

/* Set once the final dump at process exit has run.  */
extern int tally_exit_dumped TALLY_HIDDEN;

/* Write one "tally: ..." line to stderr.  Only %s, %d, %u, %lu and %% are
   understood; async-signal-safe, no stdio, errno preserved.  */
void tally_rt_error (const char *fmt, ...) TALLY_HIDDEN
    __attribute__ ((format (printf, 1, 2)));

/* Decimal digits of V into BUF, NUL-terminated; returns their count.  */
size_t tally_rt_utoa (char buf[24], unsigned long v) TALLY_HIDDEN;

/* Write the data file.  AT_EXIT marks the final dump.  Returns 0 or -1
   with errno set.  */
int tally_rt_dump (int at_exit) TALLY_HIDDEN;

/* Called at process exit (atexit and destructor); dumps once.  */
void tally_rt_exit_dump (void) TALLY_HIDDEN;

#endif /* TALLY_RT_H */
