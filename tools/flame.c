/* flame.c - `tally flame` and `tally report --tree`: the calling-context
 * tree of paths=on programs, as text, SVG or collapsed stacks (doc/cli.md,
 * "tally flame").  */
/* getline, getcwd.  */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "blockmap.h"
#include "builds.h"
#include "cli.h"
#include "coverage.h"
#include "datafile.h"
#include "hide.h"
#include "output.h"
#include "paths.h"
#include "prefetch.h"
#include "print.h"
#include "ranks.h"
#include "select.h"
#include "summed.h"
#include "tally/abi.h"
#include "tally/format.h"

/* What tree_add hands on.  */
struct tree_ctx
{
  struct tally_tree *t;
  const char *what, *event;
};

/* Add D, the file PATH, to the tree (read_files' ADD).  */
static int
tree_add (void *ctx, const char *path, struct tally_data *d, int bad)
{
  const struct tree_ctx *c = ctx;
  if (!d->npaths)
    {
      error_msg ("%s: %s: no call paths in this file (build the program "
                 "with -fplugin-arg-tally-paths=on)", c->what, path);
      return 1;
    }
  if (d->path_lost)
    fprintf (stderr, "tally: note: %s: %" PRIu64 " calls on paths that "
             "did not fit in the program's tree (TALLY_PATH_NODES) are "
             "not in it\n", path, d->path_lost);
  if (!bad && tally_tree_add (c->t, d) != 0)
    {
      error_msg ("%s: %s: no call-path values of event %s in this file "
                 "(build with -fplugin-arg-tally-measure=papi and "
                 "-fplugin-arg-tally-paths=on, and name the event in "
                 "TALLY_PAPI_EVENTS)", c->what, path, c->event);
      return 1;
    }
  return 0;
}

/* Read FILES into one calling-context tree and print it (OUT NULL), or
   write its flame graph or collapsed stacks to OUT ("-": standard
   output).  */
int
tree_command (const char *what, const char **files, size_t nfiles,
              const char *out, int folded, const char *event, int force,
              int all)
{
  struct tree_ctx c = { tally_tree_new (event), what, event };
  struct tally_tree *t = c.t;
  tally_tree_show_frames (t, all);
  if (read_files (files, nfiles, what, force, tree_add, &c) != 0)
    {
      tally_tree_free (t);
      return EXIT_BAD_DATA;
    }
  int rc = 0;
  if (!out)
    tally_tree_print (t, stdout);
  else
    {
      struct tally_out o;
      char err[512];
      if (tally_out_open (&o, out, err, sizeof err) != 0)
        {
          error_msg ("%s: %s", what, err);
          tally_tree_free (t);
          return EXIT_BAD_DATA;
        }
      if (folded)
        tally_tree_folded (t, o.f);
      else
        tally_tree_svg (t, o.f, nfiles == 1 ? files[0] : "tally flame");
      if (tally_out_close (&o, err, sizeof err) != 0)
        {
          error_msg ("%s: %s", what, err);
          rc = EXIT_BAD_DATA;
        }
    }
  tally_tree_free (t);
  return rc;
}

/* tally flame [--folded] [-o OUT] FILE...  */
int
cmd_flame (int argc, char **argv)
{
  struct cli_parsed a;
  int status = cli_parse (argc, argv, &a, NULL);
  if (status == CLI_GO)
    status = tree_command ("flame", a.files, a.nfiles,
                           a.v[OPT_OUTPUT] ? a.v[OPT_OUTPUT] : "-",
                           a.v[OPT_FOLDED] != NULL, a.v[OPT_EVENT],
                           a.v[OPT_FORCE] != NULL, a.v[OPT_ALL] != NULL);
  cli_parsed_free (&a);
  return status;
}

