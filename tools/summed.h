/* summed.h - the data files given to `tally report` or `tally lcov`
 * summed per compiled function body and folded into report rows
 * (summed.c), with the options of the report.  */
#ifndef TALLY_TOOLS_SUMMED_H
#define TALLY_TOOLS_SUMMED_H

#include <stddef.h>
#include <stdint.h>

#include "blockmap.h"
#include "coverage.h"
#include "datafile.h"
#include "tally/format.h"

/* Hash table from a key of up to three strings to a number, with open
   addressing; the key strings belong to the caller and must outlive the
   table.  */
struct slot
{
  uint64_t hash;
  const char *key[3];
  size_t value;
  int used;
};

struct table
{
  struct slot *slots;
  size_t size; /* a power of two */
  size_t count;
};

/* One compiled function body, summed over every record of the same build
   in the files read (same module checksum and source, same symbol, same
   block map), with its block map decoded and solved.  */
struct body
{
  char *name, *symbol, *origin, *file;
  char *source, *directory; /* of its module */
  char *ckey;               /* the module checksum in hex, for the table
                               (its own allocation: the table keeps a
                               pointer, and the bodies array moves) */
  uint32_t line, flags, mod_flags, ncounters;
  uint32_t index;           /* of its function in its module record, which
                               kind 6 call sites name */
  uint64_t *counters;
  uint32_t map_size;
  unsigned char *map;       /* as stored, or NULL */
  struct tally_blockmap bm; /* decoded map (when map) */
  struct tally_flow flow;   /* solved counts (when map) */
  int solved;
  uint64_t calls, exits;    /* counted, or derived from the blocks */
  int calls_unknown;        /* derived but undetermined */
  int measured;             /* meas holds values (MEAS record) */
  uint64_t meas[2 * TALLY_MAX_MEAS + 2]; /* cycles (inclusive, exclusive),
                                            then struct merge.ev_names' */
};

/* One row of the report: a source function (origin, file), or with
   --clones one compiled body (symbol, file).  */
struct row
{
  char *name;
  char *symbol; /* the origin when clones are folded */
  char *origin;
  char *file;
  char *directory; /* of the first module seen with it */
  uint32_t line;
  int has_origin_body; /* name and line come from the origin's own body */
  int clone_body;      /* with --clones: a clone, shown with its symbol */
  uint64_t calls;
  uint64_t exits;
  uint64_t incl; /* measure=cycles: inclusive cycles */
  uint64_t excl; /* exclusive (self) cycles */
  uint64_t ev[TALLY_MAX_MEAS][2]; /* measure=papi: inclusive and exclusive
                                     values of struct merge.ev_names */
  char **clones; /* clone symbols folded into this row */
  size_t nclones, clones_cap;
  size_t *bodies; /* indexes of the bodies folded into this row */
  size_t nbodies, bodies_cap;
};

/* What was read from one data file, kept for the JSON output.  */
struct file_info
{
  const char *path;
  char *program;
  uint64_t pid;
  uint64_t time;
  uint32_t nmodules;
};

enum sort_key { SORT_CALLS, SORT_EXITS, SORT_NAME, SORT_INCL, SORT_EXCL };
enum format { FORMAT_TEXT, FORMAT_JSON, FORMAT_CSV };

/* Options of `tally report`.  */
struct report_opts
{
  enum sort_key sort;
  enum format format;
  size_t top; /* 0: all rows */
  int clones; /* one row per body */
  int blocks; /* --blocks: block counts per body */
  const char **lines; /* --lines FILE: annotated sources */
  size_t nlines;
};

/* The merged data of every file given to `tally report` or `tally lcov`.  */
struct merge
{
  struct body *bodies;
  size_t nbodies, bodies_cap;
  struct table body_key;  /* (symbol, source, checksum) -> body index */
  struct row *rows;
  size_t nrows, rows_cap;
  struct table by_key;    /* (origin or symbol, file) -> row index */
  struct table clone_set; /* (symbol, origin, file) of clones listed */
  struct file_info *files;
  size_t nfiles, files_cap;
  uint64_t nmodules;
  uint64_t user_modules; /* built with hooks=user: tally counted nothing */
  uint64_t plain_modules; /* built without block counters (blocks=none):
                             no line or branch data */
  uint64_t calls;
  uint64_t exits;
  int measured;  /* some file has cycles (a MEAS record) */
  const char *ev_names[TALLY_MAX_MEAS]; /* PAPI events seen (owned) */
  unsigned nev;
  unsigned ev_map[TALLY_MAX_MEAS]; /* the file being merged: its value
                                      K + 1 is event ev_map[K] */
  uint64_t excl; /* sum of the exclusive cycles: the measured total */
  uint64_t negative;     /* block or edge counts that came out negative,
                            in update=single bodies */
  uint64_t inconsistent; /* the same in update=atomic and tls bodies */
  size_t underived;      /* bodies whose entries could not be derived */
  size_t hidden;         /* rows left out as system-header functions */
  const char *what;      /* the command, for messages */
  int force;             /* --force: sum builds with other settings */
};

int is_clone (const struct body *f);
int merge_paths (struct merge *m, const char **paths, size_t npaths,
                 int by_body);
void merge_hide_system (struct merge *m, int called_too);
void cov_hide_system (const struct merge *m, struct cov_result *c);
void merge_notes (const struct merge *m);
void merge_free (struct merge *m);
struct cov_body *cov_bodies (const struct merge *m, size_t *n);

#endif /* TALLY_TOOLS_SUMMED_H */
