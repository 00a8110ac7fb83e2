/* diff.h - `tally diff A B`: per-function (and with --lines per-line)
 * differences between two data files (doc/cli.md "tally diff").  */
#ifndef TALLY_TOOLS_DIFF_H
#define TALLY_TOOLS_DIFF_H

/* The options and the two files of `tally diff` (ARGV[0] is "diff");
   USAGE is the usage text --help prints.  Returns the exit status: 0, 1
   (a file cannot be used, output failed) or 2 (usage).  */
int tally_diff_main (int argc, char **argv, const char *usage);

#endif /* TALLY_TOOLS_DIFF_H */
