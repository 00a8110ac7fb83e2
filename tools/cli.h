/* cli.h - what the subcommands of `tally` share (cli.c): the one error
 * reporter, allocation that exits when memory runs out, the option
 * parser and help of every subcommand (struct cli_cmd); and the
 * subcommands' entry points, which their tables name.  */
#ifndef TALLY_TOOLS_CLI_H
#define TALLY_TOOLS_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "datafile.h"

#define EXIT_BAD_DATA 1
#define EXIT_USAGE 2

void error_msg (const char *fmt, ...);
void note_unfinished (const char *path, const struct tally_data *d);
void *xmalloc (size_t n);
void *xcalloc (size_t n, size_t size);
void *xrealloc (void *p, size_t n);
void *xgrow (void *p, size_t *cap, size_t need, size_t size);
char *xstrdup (const char *s);
int compare_strings (const void *a, const void *b);
uint64_t add_sat (uint64_t a, uint64_t b);

int parse_count (const char *s, size_t *out);

/* One option of a subcommand, as its table in the subcommand's file
   declares it: the parser (cli_next) and the help (cli_help) both read
   it.  */
struct cli_opt
{
  const char *name; /* "--output", or NULL for a letter alone */
  char letter;      /* 'o' for -o, or 0 */
  const char *arg;  /* the value's name in the help ("OUT"), NULL if none */
  int id;           /* what cli_next returns for it (> 0); 0: a line of
                       the help only, never matched */
  const char *help; /* its help, lines separated by '\n' */
};

/* A subcommand: its name, its help and its options.  */
struct cli_cmd
{
  const char *name;     /* "report" */
  const char *synopsis; /* "[OPTION]... FILE..." */
  const char *summary;  /* its line in `tally --help`, '\n' between lines */
  const char *about;    /* the opening of its own --help (default: the
                           summary) */
  const struct cli_opt *opts; /* ends with an entry of all zeros */
  int (*run) (int argc, char **argv); /* ARGV[0] is the name; returns the
                                         exit status */
  int flags;            /* CLI_* below */
  int column;           /* where the help of an option starts (16 if 0) */
  const char *after;    /* a paragraph after its options, or NULL */
};

enum
{
  CLI_LEADING = 1,  /* options only before the first word that is not one
                       (run: the rest is the command) */
  CLI_EQUALS = 2,   /* values only as --NAME=VALUE */
  CLI_OWN_HELP = 4, /* `tally --help` points to `tally NAME --help` instead
                       of listing the options */
  CLI_OTHERS = 8    /* unknown options are the caller's (CLI_OTHER) */
};

/* What cli_next found (or an option's id, > 0).  */
enum
{
  CLI_END = 0,     /* no more words (CLI_LEADING: the next is argv[i]) */
  CLI_FILE = -1,   /* a file name in P->value */
  CLI_ERROR = -2,  /* a usage error, reported: exit EXIT_USAGE */
  CLI_HELP = -3,   /* -h or --help, the help printed: exit 0 */
  CLI_OTHER = -4   /* with CLI_OTHERS: an unknown option, P->arg */
};

/* Where the parser is in a subcommand's ARGV.  */
struct cli_args
{
  const struct cli_cmd *cmd;
  int argc;
  char **argv;
  int i;              /* the word last read */
  int only_files;     /* after "--" */
  const char *arg;    /* that word */
  const char *value;  /* an option's value, or the file name */
};

int cli_choice (const char *v, const char *const *choices);
void cli_start (struct cli_args *p, const struct cli_cmd *cmd, int argc,
                char **argv);
int cli_next (struct cli_args *p);
int cli_usage (const struct cli_cmd *cmd, const char *fmt, ...)
  __attribute__ ((format (printf, 2, 3)));
void cli_help (const struct cli_cmd *cmd, int whole);
void cli_put_lines (const char *text, int used, int col);

/* The subcommands' tables (tally.c lists them for `tally --help`).  */
extern const struct cli_cmd cli_report, cli_dump, cli_merge, cli_flame,
  cli_lcov, cli_select, cli_diff, cli_run;

/* report --tree and flame (flame.c).  */
int tree_command (const char *what, const char **files, size_t nfiles,
                  const char *out, int folded, const char *event, int force,
                  int all);

#endif /* TALLY_TOOLS_CLI_H */
