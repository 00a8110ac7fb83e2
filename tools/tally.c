/* tally - read the data files that programs built with -fplugin=tally write.
 *
 * This file holds the usage text and the table of subcommands; each
 * subcommand is a file of its own:
 *
 *   tally report [OPTION]... FILE...   merged calls per function (report.c;
 *                                      --tree flame.c, --ranks ranks.c)
 *   tally dump FILE...                 every record as stored (dump.c)
 *   tally merge [--force] -o OUT FILE...  sum files into one data file
 *                                      (merge.c)
 *   tally flame [--folded] [-o OUT] FILE...  a flame graph (flame.c)
 *   tally lcov [-o OUT] FILE...        an lcov tracefile (lcov.c)
 *   tally select [--percent=P] FILE...  the functions making up P% of the
 *                                      measured time (cmd-select.c,
 *                                      select.c)
 *   tally diff [OPTION]... A B         changes from A to B (diff.c)
 *   tally run [OPTION]... -- COMMAND...   a build with the plugin (run.c)
 *
 * What they share: cli.c (errors, allocation, arguments), print.c
 * (escaped text, JSON, CSV), summed.c (the files summed per function for
 * report and lcov).
 *
 * doc/cli.md describes the command line and the output.  Exit status: 0 on
 * success, 1 if a data file cannot be used or output fails, 2 for a usage
 * error.  */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "diff.h"
#include "run.h"

#ifndef TALLY_VERSION
#error "TALLY_VERSION must be defined (meson passes -DTALLY_VERSION=\"...\")"
#endif

/* Text shown by --help; keep it in step with doc/cli.md.  */
const char usage_text[] =
  "usage: tally COMMAND [OPTION]... FILE...\n"
  "\n"
  "Read the data files written by programs built with -fplugin=tally.\n"
  "\n"
  "Commands:\n"
  "  report [OPTION]... FILE...  merge the files and print calls per "
  "function\n"
  "  dump FILE...                print every record of the files as stored\n"
  "  merge [--force] [-j N] -o OUT FILE...\n"
  "                              sum the files into one data file OUT\n"
  "  flame [--folded] [-o OUT] FILE...\n"
  "                              a flame graph (SVG) of the call paths of\n"
  "                              paths=on programs, or collapsed stacks\n"
  "  lcov [--no-markers] [-o OUT] FILE...\n"
  "                              write an lcov tracefile (line, function and\n"
  "                              branch coverage) for genhtml; lines marked\n"
  "                              LCOV_EXCL_* in the source are left out\n"
  "                              unless --no-markers\n"
  "  select [--percent=P] [--filter] FILE...\n"
  "                              the fewest functions making up P% (default\n"
  "                              80) of the measured time (measure=cycles)\n"
  "  diff [OPTION]... A B         per-function (--lines: per-line) changes\n"
  "                              from data file A to B, largest first\n"
  "  run [OPTION]... [--] COMMAND [ARG]...\n"
  "                              run a build with -fplugin=tally and the\n"
  "                              runtime in CC and CXX (tally run --help)\n"
  "  help                        print this help\n"
  "\n"
  "Report options:\n"
  "  --sort=KEY    order rows by KEY: calls (default, most first),\n"
  "                exits (most first), name, or with measure=cycles incl\n"
  "                or excl (inclusive or exclusive cycles, most first)\n"
  "  --top=N       print only the first N rows\n"
  "  --clones      one row per compiled body (\"f.constprop.0\") instead of\n"
  "                folding clones into their source function\n"
  "  --json        print one JSON object instead of a table\n"
  "  --csv         print CSV (calls,exits,function,symbol,origin,file,line)\n"
  "  --tree        print the calling-context tree of paths=on programs\n"
  "  --event=NAME  with --tree: the PAPI event NAME (measure=papi) per call\n"
  "                path instead of cycles\n"
  "  --blocks      print every block with its lines and count\n"
  "                (modules built with -fplugin-arg-tally-blocks=...)\n"
  "  --lines=FILE  print source FILE annotated with line counts, as gcov\n"
  "                does; may be repeated\n"
  "  --all         (report, lcov, flame) also show the functions of system\n"
  "                headers never called (lcov: all of them) and the frames\n"
  "                below the first instrumented call\n"
  "  --force       (report, lcov, flame) sum modules of one source built\n"
  "                with other at=, hooks= or blocks= settings instead of\n"
  "                refusing\n"
  "  --ranks       the ranks of an MPI job (a file libtally-mpi reduced, or\n"
  "                one file per rank): per function min, mean, max, rank of\n"
  "                the max and imbalance; --sort=imbalance|max|mean|name\n"
  "  --metric=M    with --ranks: calls, cycles or self (exclusive cycles)\n"
  "  --rank=N      report only rank N of the per-rank files given\n"
  "  --            end of options\n"
  "\n"
  "Flame options:\n"
  "  -o OUT, --output=OUT  write to OUT instead of standard output\n"
  "  --folded      collapsed stacks (\"main;f;g 1234\", exclusive cycles)\n"
  "                instead of SVG, for other flame graph viewers\n"
  "  --event=NAME  widths from the PAPI event NAME (measure=papi) instead\n"
  "                of cycles\n"
  "\n"
  "Select options:\n"
  "  --percent=P   the share of the exclusive cycles to cover, 0 < P <= 100\n"
  "                (\"80\" or \"80%\"; default 80)\n"
  "  --filter      print a filter file (-fplugin-arg-tally-filter) including\n"
  "                them instead of the table\n"
  "\n"
  "Diff options:\n"
  "  --sort=KEY    order by the largest change in calls (default) or\n"
  "                cycles (exclusive, measure=cycles), or by name\n"
  "  --top=N       print only the first N rows\n"
  "  --lines       line counts that differ (blocks=count) instead of\n"
  "                functions\n"
  "  --all         also list what did not change (and system headers)\n"
  "  --json, --csv  one JSON object or CSV instead of the table\n"
  "\n"
  "Merge options:\n"
  "  -o OUT, --output=OUT  the file to write (replaced atomically; may be\n"
  "                one of the inputs)\n"
  "  --force       also merge other builds of the same source (functions\n"
  "                pair by symbol); by default they stay separate modules,\n"
  "                and builds with other at=, hooks= or blocks= settings\n"
  "                are refused\n"
  "\n"
  "Lcov options:\n"
  "  -o OUT, --output=OUT  the tracefile to write (default: standard output)\n"
  "\n"
  "Options:\n"
  "  -h, --help    print this help and exit\n"
  "  --version     print the version and exit\n"
  "\n"
  "Exit status: 0 success, 1 a data file is missing, unreadable or invalid,\n"
  "2 usage error.\n";

static int
cmd_diff (int argc, char **argv)
{
  return tally_diff_main (argc, argv, usage_text);
}

/* The subcommands: ARGV[1] names one, which gets ARGV from there on.  */
static const struct
{
  const char *name;
  int (*run) (int argc, char **argv);
} commands[] = {
  { "report", cmd_report },
  { "dump", cmd_dump },
  { "merge", cmd_merge },
  { "flame", cmd_flame },
  { "lcov", cmd_lcov },
  { "select", cmd_select },
  { "diff", cmd_diff },
  { "run", cmd_run },
};

int
main (int argc, char **argv)
{
  int status;
  if (argc < 2)
    {
      error_msg ("no command given (commands: report, dump, merge, lcov, flame, select, diff, run, help); try 'tally "
             "--help'");
      return EXIT_USAGE;
    }
  const char *cmd = argv[1];
  if (strcmp (cmd, "--help") == 0 || strcmp (cmd, "-h") == 0
      || strcmp (cmd, "help") == 0)
    {
      fputs (usage_text, stdout);
      status = 0;
    }
  else if (strcmp (cmd, "--version") == 0)
    {
      printf ("tally %s\n", TALLY_VERSION);
      status = 0;
    }
  else
    {
      size_t c = 0, n = sizeof commands / sizeof commands[0];
      while (c < n && strcmp (cmd, commands[c].name) != 0)
        c++;
      if (c == n)
        {
          if (cmd[0] == '-')
            error_msg ("unknown option '%s'; try 'tally --help'", cmd);
          else
            error_msg ("unknown command '%s'; try 'tally --help'", cmd);
          return EXIT_USAGE;
        }
      status = commands[c].run (argc - 1, argv + 1);
    }
  /* Output that did not reach its destination is a failure, not a
     success with a short report.  */
  if (fflush (stdout) != 0 || ferror (stdout))
    {
      error_msg ("write error: %s", strerror (errno));
      return EXIT_BAD_DATA;
    }
  return status;
}

