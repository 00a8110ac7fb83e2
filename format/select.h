/* select.h - the functions that make up P% of a profile's measured time
 * (the LOPI paper's way of choosing what to instrument).
 *
 * Shared by `tally select` (tools/cmd-select.c) and the plugin's
 * -fplugin-arg-tally-select=PROFILE:P% (plugin/select.cc): both link the
 * format library (format/), read the data files with its reader and rank
 * with the same code, so what the command prints is what the plugin
 * instruments.  C, callable from C++.  */
#ifndef TALLY_FORMAT_SELECT_H
#define TALLY_FORMAT_SELECT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One source function of the profile: every body whose origin symbol and
   source file are these (clones, split parts, copies in several modules,
   the same function in several files) summed.  */
struct tally_selected
{
  char *name;      /* printable name (from the origin's own body if any) */
  char *origin;    /* assembler name of the source function */
  char *file;      /* its source file, as the compiler named it */
  char *directory; /* working directory of the compilation that named it */
  uint32_t line;
  uint64_t excl;   /* exclusive cycles, summed */
};

/* The result of tally_select.  */
struct tally_selection
{
  struct tally_selected *fns; /* every function, most exclusive time first
                                 (ties by origin, then file) */
  size_t nfns;
  size_t nselected;    /* fns[0 .. nselected) make up the percentage */
  uint64_t total;      /* exclusive cycles of every function */
  uint64_t selected;   /* exclusive cycles of the selected ones */
  double percent;      /* as asked */
};

/* Parse a percentage: a decimal number in (0, 100], optionally followed
   by '%' ("80", "80%", "99.5%").  Returns 0 and sets *OUT, or -1.  */
int tally_parse_percent (const char *s, double *out);

/* Read the NPATHS data files at PATHS, sum every function's exclusive
   cycles (the MEAS record of measure=cycles) and choose the fewest
   functions, hottest first, whose time is at least PERCENT of the total.
   Returns 0, or -1 with a one-line message in ERR (naming the file): a
   file cannot be read or is corrupt, a file has no measured time, or
   the measured total is 0.  */
int tally_select (const char *const *paths, size_t npaths, double percent,
                  struct tally_selection *out, char *err, size_t errlen);

/* Whether ORIGIN (an assembler name) defined in FILE, compiled in the
   working directory CWD, is among the selected functions.  FILE matches
   when it is the same string as the profile's, or when both name the same
   absolute path (a relative name taken from its compilation's working
   directory).  Returns its index in fns, or -1.  */
long tally_selection_find (const struct tally_selection *s, const char *origin,
                           const char *file, const char *cwd);

/* Release what tally_select stored and empty *S; safe on an empty one.  */
void tally_selection_free (struct tally_selection *s);

#ifdef __cplusplus
}
#endif

#endif /* TALLY_FORMAT_SELECT_H */
