/* tools/diff.h - what the files of `tally diff` share: diff.c (reading
 * the two files, the rows, the line diff and the output) and diff-pair.c
 * (the pairing of A's source files with B's).  */
#ifndef TALLY_DIFF_H
#define TALLY_DIFF_H

#include <stddef.h>
#include <stdint.h>

#include "blockmap.h"
#include "coverage.h"
#include "datafile.h"

/* One side's figures of a function.  */
struct side
{
  int present;
  int measured;      /* has cycles (a MEAS record) */
  int unknown;       /* calls derived from blocks, undetermined */
  uint64_t calls, exits, incl, excl;
};

struct frow
{
  char *name, *file; /* file: absolute, A's moved to B's places */
  uint32_t line;
  struct side s[2];
};

/* One function record of side K, kept until the pairing is known.  */
struct fent
{
  const char *name; /* the side's data */
  char *file;       /* absolute */
  uint32_t line;
  int k;
  struct side s;
};

/* One source line with code, on either side.  */
struct lrow
{
  const char *file; /* a struct kfile's key */
  uint32_t line;
  int known[2];
  uint64_t count[2];
};

/* A covered file of one side, under the name it is paired by.  */
struct kfile
{
  char *key;                /* A's: moved to B's places */
  const struct cov_file *f; /* its path is the file's own */
};

/* A's directory OLD is B's NEW ("" for the root directory).  */
struct pmap
{
  char *old, *new;
};

/* One side: the file read, its decoded maps and solved flows.  */
struct input
{
  const char *path;
  struct tally_data d;
  struct tally_blockmap *maps;
  struct tally_flow *flows;
  struct cov_body *bodies;
  size_t nbodies;
  struct cov_result cov;
};

struct diff
{
  struct frow *rows;
  size_t nrows, cap;
  size_t *slots; /* hash of (name, file) -> row index + 1 */
  size_t nslots;
  int measured;
  struct fent *ents; /* both sides' function records */
  size_t nents, capents;
  struct pmap *maps; /* how A's files are moved (none: as they are) */
  size_t nmaps;
  int inferred;      /* maps[0] was found, not given */
  size_t both;       /* rows with the function on both sides */
};

/* diff-pair.c: PATH of side K as it is paired, a malloc'd string; the
   directory substitution that pairs the most source files, put in DF
   (*PAIRED: the files it pairs) and the files paired by their own
   paths; the --map values MAPS read into DF (0, or the usage error's
   status); the notes on stderr about how A and B were paired.  */
char *diff_paired_path (const struct diff *df, int k, const char *path);
size_t diff_infer_map (struct diff *df, size_t *paired);
int diff_take_maps (struct diff *df, const char **maps, size_t nmaps);
void diff_pairing_notes (const struct diff *df, size_t own, size_t paired,
                         size_t both);

#endif /* TALLY_DIFF_H */
