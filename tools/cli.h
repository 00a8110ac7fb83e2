/* cli.h - what the subcommands of `tally` share (cli.c): the one error
 * reporter, allocation that exits when memory runs out, the pieces of
 * every command's argument loop; and the subcommands' entry points, which
 * the table in tally.c names.  */
#ifndef TALLY_TOOLS_CLI_H
#define TALLY_TOOLS_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "datafile.h"

#define EXIT_BAD_DATA 1
#define EXIT_USAGE 2

/* Text shown by --help (tally.c); keep it in step with doc/cli.md.  */
extern const char usage_text[];

void error_msg (const char *fmt, ...);
void note_unfinished (const char *path, const struct tally_data *d);
void *xmalloc (size_t n);
void *xcalloc (size_t n, size_t size);
void *xgrow (void *p, size_t *cap, size_t need, size_t size);
char *xstrdup (const char *s);
int compare_strings (const void *a, const void *b);
uint64_t add_sat (uint64_t a, uint64_t b);

int parse_count (const char *s, size_t *out);
int option_value (int argc, char **argv, int *i, const char *name,
                  const char **value);

/* What a command-line word of a subcommand is.  */
enum arg_kind
{
  ARG_FILE,   /* a file name (also anything after "--", and a lone "-") */
  ARG_HELP,   /* -h or --help */
  ARG_OPTION, /* anything else starting with '-': the caller's to parse */
  ARG_DONE    /* "--", consumed */
};

enum arg_kind classify_arg (const char *a, int *only_files);
enum arg_kind take_arg (const char *a, int *only_files, const char **list,
                        size_t *n);

/* The subcommands: ARGV[0] is the command's name; each returns the exit
   status (0, EXIT_BAD_DATA or EXIT_USAGE).  */
int cmd_report (int argc, char **argv); /* report.c */
int cmd_lcov (int argc, char **argv);   /* lcov.c */
int cmd_flame (int argc, char **argv);  /* flame.c */
int cmd_select (int argc, char **argv); /* cmd-select.c */
int cmd_dump (int argc, char **argv);   /* dump.c */
int cmd_merge (int argc, char **argv);  /* merge.c */

/* report --tree and flame (flame.c).  */
int tree_command (const char *what, const char **files, size_t nfiles,
                  const char *out, int folded, const char *event, int force,
                  int all);

#endif /* TALLY_TOOLS_CLI_H */
