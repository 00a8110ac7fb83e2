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

/* Read FILES into one calling-context tree and print it (OUT NULL), or
   write its flame graph or collapsed stacks to OUT ("-": standard
   output).  */
int
tree_command (const char *what, const char **files, size_t nfiles,
              const char *out, int folded, const char *event, int force,
              int all)
{
  struct tally_tree *t = tally_tree_new (event);
  tally_tree_show_frames (t, all);
  struct tally_builds *builds = tally_builds_new ();
  int bad = 0;
  for (size_t i = 0; i < nfiles; i++)
    {
      struct tally_data d;
      char err[256];
      if (tally_read_file (files[i], &d, err, sizeof err) != 0)
        {
          error_msg ("%s: %s", files[i], err);
          bad = 1;
          continue;
        }
      note_unfinished (files[i], &d);
      tally_builds_add (builds, files[i], &d);
      if (!d.npaths)
        {
          error_msg ("%s: %s: no call paths in this file (build the program "
                     "with -fplugin-arg-tally-paths=on)", what, files[i]);
          bad = 1;
        }
      else if (d.path_lost)
        fprintf (stderr, "tally: note: %s: %" PRIu64 " calls on paths that "
                 "did not fit in the program's tree (TALLY_PATH_NODES) are "
                 "not in it\n", files[i], d.path_lost);
      if (!bad && tally_tree_add (t, &d) != 0)
        {
          error_msg ("%s: %s: no call-path values of event %s in this file "
                     "(build with -fplugin-arg-tally-measure=papi and "
                     "-fplugin-arg-tally-paths=on, and name the event in "
                     "TALLY_PAPI_EVENTS)", what, files[i], event);
          bad = 1;
        }
      tally_data_free (&d);
    }
  if (!bad && tally_builds_check (builds, what, force) != 0)
    bad = 1;
  tally_builds_free (builds);
  if (bad)
    {
      tally_tree_free (t);
      return EXIT_BAD_DATA;
    }
  int rc = 0;
  if (!out)
    tally_tree_print (t, stdout);
  else
    {
      struct tally_out o = { stdout, NULL, NULL };
      char err[512];
      if (strcmp (out, "-") != 0
          && tally_out_open (&o, out, err, sizeof err) != 0)
        {
          error_msg ("%s: %s", what, err);
          tally_tree_free (t);
          return EXIT_BAD_DATA;
        }
      if (folded)
        tally_tree_folded (t, o.f);
      else
        tally_tree_svg (t, o.f, nfiles == 1 ? files[0] : "tally flame");
      if (o.f != stdout && tally_out_close (&o, err, sizeof err) != 0)
        {
          error_msg ("%s: %s", what, err);
          rc = EXIT_BAD_DATA;
        }
    }
  tally_tree_free (t);
  return rc;
}

enum { FLAME_FOLDED = 1, FLAME_OUTPUT, FLAME_EVENT, FLAME_FORCE, FLAME_ALL };

static const struct cli_opt flame_opts[] = {
  { "--output", 'o', "OUT", FLAME_OUTPUT,
    "write to OUT instead of standard output" },
  { "--folded", 0, NULL, FLAME_FOLDED,
    "collapsed stacks (\"main;f;g 1234\", exclusive cycles)\n"
    "instead of SVG, for other flame graph viewers" },
  { "--event", 0, "NAME", FLAME_EVENT,
    "widths from the PAPI event NAME (measure=papi) instead\n"
    "of cycles" },
  { "--force", 0, NULL, FLAME_FORCE,
    "sum modules of one source built with other at=,\n"
    "hooks= or blocks= settings instead of refusing" },
  { "--all", 0, NULL, FLAME_ALL,
    "also the frames below the first instrumented call" },
  { 0 }
};

/* tally flame [--folded] [-o OUT] FILE...  */
static int
cmd_flame (int argc, char **argv)
{
  const char **files = xmalloc ((size_t) argc * sizeof *files);
  size_t nfiles = 0;
  const char *out = "-", *event = NULL;
  int folded = 0, force = 0, all = 0, r;
  struct cli_args p;
  cli_start (&p, &cli_flame, argc, argv);
  while ((r = cli_next (&p)) > 0 || r == CLI_FILE)
    if (r == CLI_FILE)
      files[nfiles++] = p.value;
    else if (r == FLAME_FOLDED)
      folded = 1;
    else if (r == FLAME_OUTPUT)
      out = p.value;
    else if (r == FLAME_EVENT)
      event = p.value;
    else if (r == FLAME_FORCE)
      force = 1;
    else
      all = 1;
  if (r == CLI_END && nfiles == 0)
    r = cli_usage (&cli_flame, "no data files given");
  if (r == CLI_END)
    r = tree_command ("flame", files, nfiles, out, folded, event, force, all);
  else
    r = r == CLI_HELP ? 0 : EXIT_USAGE;
  free (files);
  return r;
}

const struct cli_cmd cli_flame = {
  .name = "flame", .synopsis = "[--folded] [-o OUT] FILE...",
  .summary = "a flame graph (SVG) of the call paths of\n"
             "paths=on programs, or collapsed stacks",
  .opts = flame_opts, .run = cmd_flame,
};
