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

#ifndef TALLY_VERSION
#error "TALLY_VERSION must be defined (meson passes -DTALLY_VERSION=\"...\")"
#endif

/* The subcommands, in the order `tally --help` lists them; ARGV[1] names
   one, which gets ARGV from there on.  */
static const struct cli_cmd *const commands[] = {
  &cli_report, &cli_dump, &cli_merge, &cli_flame, &cli_lcov, &cli_select,
  &cli_diff, &cli_run,
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

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
  for (size_t c = 0; c < NCOMMANDS; c++)
    {
      int n = printf ("  %s %s", commands[c]->name, commands[c]->synopsis);
      if (n + 2 > 30)
        {
          putchar ('\n');
          n = 0;
        }
      cli_put_lines (commands[c]->summary, n, 30);
    }
  puts ("  help                        print this help");
  for (size_t c = 0; c < NCOMMANDS; c++)
    cli_help (commands[c], 1);
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
      size_t c = 0;
      while (c < NCOMMANDS && strcmp (cmd, commands[c]->name) != 0)
        c++;
      if (c == NCOMMANDS)
        {
          if (cmd[0] == '-')
            error_msg ("unknown option '%s'; try 'tally --help'", cmd);
          else
            error_msg ("unknown command '%s'; try 'tally --help'", cmd);
          return EXIT_USAGE;
        }
      status = commands[c]->run (argc - 1, argv + 1);
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

