/* hide.h - what reports leave out unless --all: functions defined in
 * system headers (`report`: those never called; `lcov`: all of them, and
 * the system headers' lines).  */
#ifndef TALLY_TOOLS_HIDE_H
#define TALLY_TOOLS_HIDE_H

#include <stddef.h>
#include <stdint.h>

#include "coverage.h"

/* Whether the absolute PATH lies in a default system include directory:
   /usr/include, /usr/local/include, or GCC's own under /usr/lib/gcc.  */
int tally_system_path (const char *path);

/* Whether a function with flags FN_FLAGS, of a module with flags
   MOD_FLAGS, defined in FILE (relative to DIRECTORY) is in a system
   header: as the plugin marked it (TALLY_MOD_SYSTEM_MARKED), or for
   modules of older plugins by its file's path.  */
int tally_system_fn (uint32_t mod_flags, uint32_t fn_flags,
                     const char *directory, const char *file);

/* A set of absolute file names (FILE made absolute against DIRECTORY),
   numbered from 0 in the order they were added.  */
struct tally_fileset;
struct tally_fileset *tally_fileset_new (void);
void tally_fileset_add (struct tally_fileset *s, const char *directory,
                        const char *file);
/* The same, returning the file's number; *ADDED says whether it was
   new.  */
size_t tally_fileset_put (struct tally_fileset *s, const char *directory,
                          const char *file, int *added);
/* The absolute name of the file numbered INDEX, S's own.  */
const char *tally_fileset_path (const struct tally_fileset *s, size_t index);
int tally_fileset_has (const struct tally_fileset *s, const char *path);
void tally_fileset_free (struct tally_fileset *s);

/* Remove from C the files that are system headers: those in SYSTEM (the
   files of system-header functions), and those under a default system
   include directory unless in USER (the files of other functions).
   Returns how many were removed.  */
size_t tally_cov_drop_system (struct cov_result *c,
                              const struct tally_fileset *system,
                              const struct tally_fileset *user);

#endif /* TALLY_TOOLS_HIDE_H */
