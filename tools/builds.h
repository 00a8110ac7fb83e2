/* builds.h - modules of one source built with settings whose counts do not
 * add up (at=, hooks=, blocks=): `tally report`, `lcov`, `flame` and
 * `merge` refuse to sum them unless --force; in one place or in two
 * checkouts of the program.  */
#ifndef TALLY_TOOLS_BUILDS_H
#define TALLY_TOOLS_BUILDS_H

#include <stdint.h>

#include "datafile.h"

struct tally_builds;

struct tally_builds *tally_builds_new (void);
/* Note the settings of every module record of D, read from PATH.  */
void tally_builds_add (struct tally_builds *b, const char *path,
                       const struct tally_data *d);
/* Report the sources built with other settings (WHAT: the command, for
   the message): an error without FORCE (returns -1), a warning with it
   (returns 0).  Returns 0 if there are none.  */
int tally_builds_check (const struct tally_builds *b, const char *what,
                        int force);
void tally_builds_free (struct tally_builds *b);

/* The directory holding every module source of D (each made absolute
   against its compiler's directory), "" for the root directory, or NULL
   when D has none; a malloc'd string.  Two checkouts of a program have
   their files at the same paths below it.  */
char *tally_sources_root (const struct tally_data *d);

/* The settings of module flags FLAGS that change what a count means:
   at=, hooks= (inline and call count alike) and blocks=.  Two modules
   whose counts add up have the same value.  */
uint32_t tally_builds_kind (uint32_t flags);

#endif /* TALLY_TOOLS_BUILDS_H */
