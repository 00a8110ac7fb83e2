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
int read_files (const char **files, size_t nfiles, const char *what,
                int force,
                int (*add) (void *ctx, const char *path, struct tally_data *d,
                            int bad),
                void *ctx);
void *xmalloc (size_t n);
void *xcalloc (size_t n, size_t size);
void *xrealloc (void *p, size_t n);
void *xgrow (void *p, size_t *cap, size_t need, size_t size);
char *xstrdup (const char *s);
int compare_strings (const void *a, const void *b);
uint64_t add_sat (uint64_t a, uint64_t b);

int parse_count (const char *s, size_t *out);

/* The options of all subcommands (the rows of options.c name them).  */
enum cli_id
{
  OPT_NONE, /* a line of the help only, never matched */
  OPT_OUTPUT, OPT_FORCE, OPT_ALL, OPT_JSON, OPT_CSV, OPT_SORT, OPT_TOP,
  OPT_CLONES, OPT_TREE, OPT_EVENT, OPT_BLOCKS, OPT_LINES, OPT_RANKS,
  OPT_METRIC, OPT_RANK, OPT_FOLDED, OPT_NO_MARKERS, OPT_PERCENT, OPT_FILTER,
  OPT_JOBS, OPT_RUNTIME, OPT_OVERRIDE, OPT_PRINT_ENV, OPT_MAP,
  OPT_COUNT
};

/* The subcommands, as bits of struct cli_opt's COMMANDS.  */
enum
{
  CMD_REPORT = 1, CMD_DUMP = 2, CMD_MERGE = 4, CMD_FLAME = 8, CMD_LCOV = 16,
  CMD_SELECT = 32, CMD_DIFF = 64, CMD_RUN = 128
};

/* One option: a row of the table in options.c, which the parser
   (cli_next, cli_parse) and the help (cli_help) both read.  */
struct cli_opt
{
  const char *name;   /* "--output", or NULL for a letter alone */
  char letter;        /* 'o' for -o, or 0 */
  const char *arg;    /* the value's name in the help ("OUT"), NULL if none */
  enum cli_id id;
  unsigned commands;  /* the CMD_* that take it */
  const char *help;   /* its help, lines separated by '\n' */
};

extern const struct cli_opt cli_opts[]; /* options.c; ends with a zero row */

/* A subcommand: its name, its help and its entry point.  */
struct cli_cmd
{
  const char *name;     /* "report" */
  unsigned bit;         /* CMD_REPORT */
  const char *synopsis; /* "[OPTION]... FILE..." */
  const char *summary;  /* its line in `tally --help`, '\n' between lines */
  const char *about;    /* the opening of its own --help (default: the
                           summary) */
  int (*run) (int argc, char **argv); /* ARGV[0] is the name; returns the
                                         exit status */
  int flags;            /* CLI_* below */
  int column;           /* where the help of an option starts (16 if 0) */
  const char *after;    /* a paragraph after its options, or NULL */
  enum cli_id required; /* cli_parse: an option that must be given */
  const char *no_value; /* the usage error without it */
  const char *no_files; /* cli_parse: the usage error without files, or
                           NULL if none are needed */
};

/* The subcommands (tally.c), ending with a row of zeros.  */
extern const struct cli_cmd cli_commands[];
const struct cli_cmd *cli_command (const char *name);

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
  CLI_OTHER = -4,  /* with CLI_OTHERS: an unknown option, P->arg */
  CLI_GO = -5      /* cli_parse: go on */
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
  const char *note;   /* after "unknown option 'X'" (cli_parse's) */
};

/* A subcommand's ARGV parsed at once (cli_parse).  */
struct cli_parsed
{
  const char *v[OPT_COUNT];    /* an option's (last) value, "" for one that
                                  takes none; NULL if not given */
  const char *word[OPT_COUNT]; /* the word that gave it */
  const char **files;          /* the file names */
  size_t nfiles;
  const char **lines;          /* every value of --lines, in order */
  size_t nlines;
  const char **maps;           /* every value of --map, in order */
  size_t nmaps;
};

int cli_choice (const char *v, const char *const *choices);
void cli_start (struct cli_args *p, int argc, char **argv);
int cli_next (struct cli_args *p);
int cli_parse (int argc, char **argv, struct cli_parsed *p,
               const char *unknown_note);
void cli_parsed_free (struct cli_parsed *p);
int cli_usage (const char *cmd, const char *fmt, ...)
  __attribute__ ((format (printf, 2, 3)));
void cli_help (const struct cli_cmd *cmd, int whole);
void cli_put_lines (const char *text, int used, int col);

/* The subcommands: ARGV[0] is the command's name; each returns the exit
   status (0, EXIT_BAD_DATA or EXIT_USAGE).  */
int cmd_report (int argc, char **argv); /* report.c */
int cmd_dump (int argc, char **argv);   /* dump.c */
int cmd_merge (int argc, char **argv);  /* merge.c */
int cmd_flame (int argc, char **argv);  /* flame.c */
int cmd_lcov (int argc, char **argv);   /* lcov.c */
int cmd_select (int argc, char **argv); /* cmd-select.c */
int cmd_diff (int argc, char **argv);   /* diff.c */
int cmd_run (int argc, char **argv);    /* run.c */

/* report --tree and flame (flame.c).  */
int tree_command (const char *what, const char **files, size_t nfiles,
                  const char *out, int folded, const char *event, int force,
                  int all);

#endif /* TALLY_TOOLS_CLI_H */
