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

/* Head of the list of registered modules, newest first.  Registration
   pushes lock-free; unlinking (tally_rt_module_gone) and walking (dumps,
   reset) happen under the dump lock, so a walker that loaded the head can go
   on while others register.  */
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

/* Module M is going away: mark it gone and take it out of the list, after
   keeping its record for every later dump if KEEP.  */
void tally_rt_module_gone (struct tally_module *m, int keep) TALLY_HIDDEN;

/* Called at process exit (atexit and destructor); dumps once.  */
void tally_rt_exit_dump (void) TALLY_HIDDEN;

/* What this copy of the runtime does itself, as opposed to the public
   entry points, which go to the primary copy (instance.c).  */
void tally_rt_register_local (struct tally_module *m) TALLY_HIDDEN;
void tally_rt_unregister_local (struct tally_module *m) TALLY_HIDDEN;
void tally_rt_reset_local (void) TALLY_HIDDEN;
void tally_rt_pin_local (void) TALLY_HIDDEN;

/* The entry points of one copy of the runtime.  A layout change bumps
   TALLY_RT_INSTANCE_VERSION.  */
#define TALLY_RT_INSTANCE_MAGIC 0x49524c54u /* "TLRI" */
#define TALLY_RT_INSTANCE_VERSION 1u
struct tally_rt_instance
{
  uint32_t magic;
  uint32_t version;
  void (*register_module) (struct tally_module *m);
  void (*unregister_module) (struct tally_module *m);
  int (*dump) (int at_exit);
  void (*reset) (void);
  void (*pin) (void);
};

/* This copy's entry points.  */
extern const struct tally_rt_instance tally_rt_self TALLY_HIDDEN;

/* The copy that keeps the process's modules and writes its data file: the
   first one loaded.  */
const struct tally_rt_instance *tally_rt_primary (void) TALLY_HIDDEN;

#endif /* TALLY_RT_H */
