/* paths.h - the calling-context tree of `tally report --tree` and
 * `tally flame`: the PATH records of several data files merged by call
 * path (the chain of function names from the root).  */
#ifndef TALLY_TOOLS_PATHS_H
#define TALLY_TOOLS_PATHS_H

#include <stdio.h>

#include "datafile.h"

struct tally_tree;

/* A tree of cycles (EVENT NULL), or of the PAPI event named EVENT
   (measure=papi: the PEVT record).  */
struct tally_tree *tally_tree_new (const char *event);
/* Add the PATH record of D (nothing if it has none).  Returns 0, or -1 if
   the tree is of an event D has no per-path values of.  */
int tally_tree_add (struct tally_tree *t, const struct tally_data *d);
/* Whether to show (SHOW non-zero) the frames found below a thread's first
   instrumented call ("[uninstrumented] _start", FRMS) as nodes; by default
   their callees are children of their parent.  Call before adding.  */
void tally_tree_show_frames (struct tally_tree *t, int show);
/* Paths (nodes other than the root) so far.  */
size_t tally_tree_paths (const struct tally_tree *t);
/* The indented tree, children by inclusive cycles, most first.  */
void tally_tree_print (const struct tally_tree *t, FILE *out);
/* Collapsed stacks, one line per path with exclusive cycles:
   "main;parse;lex 12345" (the format of Brendan Gregg's flamegraph.pl).  */
void tally_tree_folded (const struct tally_tree *t, FILE *out);
/* A self-contained SVG flame graph of the exclusive cycles.  */
void tally_tree_svg (const struct tally_tree *t, FILE *out, const char *title);
void tally_tree_free (struct tally_tree *t);

#endif /* TALLY_TOOLS_PATHS_H */
