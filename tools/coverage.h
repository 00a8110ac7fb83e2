/* coverage.h - per-line counts and branch data from solved block maps,
 * computed the way gcov computes them (doc/cli.md "Line counts").  */
#ifndef TALLY_TOOLS_COVERAGE_H
#define TALLY_TOOLS_COVERAGE_H

#include <stddef.h>
#include <stdint.h>

#include "blockmap.h"

/* One function body: its decoded map, its solved counts, and the
   directory its module was compiled in (relative file names are relative
   to it).  */
struct cov_body
{
  const struct tally_blockmap *map;
  const struct tally_flow *flow;
  const char *directory;
  const char *fn_file; /* the function's own file and line, where gcov */
  uint32_t fn_line;    /* starts it (bodies sharing one are a "group") */
};

/* A source line that has code.  */
struct cov_line
{
  uint32_t line;
  uint64_t count;   /* times it ran (blocks=visited: 1 or 0) */
  int known;        /* 0: a count it needs could not be determined */
  int zero_block;   /* one of its blocks never ran */
  int counted;      /* from exact counts (0: only blocks=visited data) */
};

/* One outcome of a conditional (a block with two or more normal exits).  */
struct cov_branch
{
  uint32_t line;   /* the line its block ends on */
  uint32_t block;  /* the block's number in its function */
  uint32_t branch; /* the outcome's index among the block's exits */
  uint64_t taken;  /* times taken */
  int ran;         /* the block ran at all */
};

struct cov_file
{
  char *path; /* absolute, '.' and '..' folded */
  struct cov_line *lines; /* by line number */
  size_t nlines;
  struct cov_branch *branches; /* by line, block, branch */
  size_t nbranches;
};

struct cov_result
{
  struct cov_file *files; /* by path */
  size_t nfiles;
};

/* Line counts and branches of NBODIES bodies, summed over the bodies per
   (file, line).  */
void cov_compute (const struct cov_body *bodies, size_t nbodies,
                  struct cov_result *out);

void cov_free (struct cov_result *r);

/* FILE made absolute against DIRECTORY (if relative) with '.', '..' and
   repeated slashes folded; a malloc'd string.  */
char *cov_resolve_path (const char *directory, const char *file);

#endif /* TALLY_TOOLS_COVERAGE_H */
