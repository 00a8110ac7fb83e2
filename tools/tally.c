/* tally - read the data files that programs built with -fplugin=tally write.
 *
 * This file holds main, the table of subcommands and `tally --help`, made
 * from it and from the options of every subcommand (options.c); each
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
 * What they share: cli.c (errors, allocation, reading the data files, the
 * option parser and the help of a subcommand), print.c
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

#ifndef TALLY_VERSION
#error "TALLY_VERSION must be defined (meson passes -DTALLY_VERSION=\"...\")"
#endif

/* The subcommands, in the order `tally --help` lists them; ARGV[1] names
   one, which gets ARGV from there on.  Their options are in options.c.  */
const struct cli_cmd cli_commands[] = {
  { .name = "report", .bit = CMD_REPORT, .run = cmd_report,
    .synopsis = "[OPTION]... FILE...",
    .summary = "merge the files and print calls per function" },
  { .name = "dump", .bit = CMD_DUMP, .run = cmd_dump,
    .synopsis = "FILE...",
    .summary = "print every record of the files as stored",
    .no_files = "no data file given" },
  { .name = "merge", .bit = CMD_MERGE, .run = cmd_merge,
    .synopsis = "[--force] [-j N] -o OUT FILE...",
    .summary = "sum the files into one data file OUT",
    .required = OPT_OUTPUT, .no_value = "no output file given (-o OUT)",
    .no_files = "no data file given" },
  { .name = "flame", .bit = CMD_FLAME, .run = cmd_flame,
    .synopsis = "[--folded] [-o OUT] FILE...",
    .summary = "a flame graph (SVG) of the call paths of\n"
               "paths=on programs, or collapsed stacks",
    .no_files = "no data files given" },
  { .name = "lcov", .bit = CMD_LCOV, .run = cmd_lcov,
    .synopsis = "[--no-markers] [-o OUT] FILE...",
    .summary = "write an lcov tracefile (line, function and\n"
               "branch coverage) for genhtml; lines marked\n"
               "LCOV_EXCL_* in the source are left out\n"
               "unless --no-markers" },
  { .name = "select", .bit = CMD_SELECT, .run = cmd_select,
    .synopsis = "[--percent=P] [--filter] FILE...",
    .summary = "the fewest functions making up P% (default\n"
               "80) of the measured time (measure=cycles)",
    .no_files = "no data files given" },
  { .name = "diff", .bit = CMD_DIFF, .run = cmd_diff,
    .synopsis = "[OPTION]... A B",
    .summary = "per-function (--lines: per-line) changes\n"
               "from data file A to B, largest first" },
  { .name = "run", .bit = CMD_RUN, .run = cmd_run,
    .synopsis = "[OPTION]... [--] COMMAND [ARG]...",
    .summary = "run a build with -fplugin=tally and the\n"
               "runtime in CC and CXX (tally run --help)",
    .about = "Run COMMAND (a build: make, ./configure, cmake, meson setup, "
             "...) with\n-fplugin=tally and the tally runtime added to CC "
             "and CXX",
    .column = 26, .flags = CLI_LEADING | CLI_EQUALS | CLI_OWN_HELP | CLI_OTHERS,
    .after = "CC and CXX from the environment are kept and extended "
             "(default: " TALLY_CC " and " TALLY_CXX ").\n" },
  { 0 }
};

/* `tally --help`: the commands and their options, from their tables (and
   doc/cli.md says the same).  */
static void
usage (void)
{
  fputs ("usage: tally COMMAND [OPTION]... FILE...\n"
         "\n"
         "Read the data files written by programs built with -fplugin=tally.\n"
         "\n"
         "Commands:\n", stdout);
  for (const struct cli_cmd *c = cli_commands; c->name; c++)
    {
      int n = printf ("  %s %s", c->name, c->synopsis);
      if (n + 2 > 30)
        {
          putchar ('\n');
          n = 0;
        }
      cli_put_lines (c->summary, n, 30);
    }
  puts ("  help                        print this help");
  for (const struct cli_cmd *c = cli_commands; c->name; c++)
    cli_help (c, 1);
  fputs ("\n"
         "Options:\n"
         "  -h, --help    print this help and exit\n"
         "  --version     print the version and exit\n"
         "\n"
         "Exit status: 0 success, 1 a data file is missing, unreadable or invalid,\n"
         "2 usage error.\n", stdout);
}

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
      usage ();
      status = 0;
    }
  else if (strcmp (cmd, "--version") == 0)
    {
      printf ("tally %s\n", TALLY_VERSION);
      status = 0;
    }
  else
    {
      const struct cli_cmd *c = cli_command (cmd);
      if (!c->name)
        {
          if (cmd[0] == '-')
            error_msg ("unknown option '%s'; try 'tally --help'", cmd);
          else
            error_msg ("unknown command '%s'; try 'tally --help'", cmd);
          return EXIT_USAGE;
        }
      status = c->run (argc - 1, argv + 1);
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

