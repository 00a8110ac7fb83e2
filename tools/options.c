/* options.c - every option of every `tally` subcommand, once: its
 * spellings, whether it takes a value, the subcommands that take it and
 * its help.  cli.c's parser matches a subcommand's words against the rows
 * of that subcommand, and its help (`tally COMMAND --help`, `tally
 * --help`) prints them in this order; doc/cli.md and tally(1) describe
 * them at length.  */
#include "cli.h"

#define R CMD_REPORT
#define M CMD_MERGE
#define F CMD_FLAME
#define L CMD_LCOV
#define S CMD_SELECT
#define D CMD_DIFF

const struct cli_opt cli_opts[] = {
  /* report (and diff: --top, --json) */
  { "--sort", 0, "KEY", OPT_SORT, R,
    "order rows by KEY: calls (default, most first),\n"
    "exits (most first), name, or with measure=cycles incl\n"
    "or excl (inclusive or exclusive cycles, most first)" },
  { "--sort", 0, "KEY", OPT_SORT, D,
    "order by the largest change in calls (default) or\n"
    "cycles (exclusive, measure=cycles), or by name" },
  { "--top", 0, "N", OPT_TOP, R | D, "print only the first N rows" },
  { "--clones", 0, NULL, OPT_CLONES, R,
    "one row per compiled body (\"f.constprop.0\") instead of\n"
    "folding clones into their source function" },
  { "--json", 0, NULL, OPT_JSON, R | D,
    "print one JSON object instead of the table" },
  { "--csv", 0, NULL, OPT_CSV, R,
    "print CSV (calls,exits,function,symbol,origin,file,line)" },
  { "--csv", 0, NULL, OPT_CSV, D, "print CSV instead of the table" },
  { "--tree", 0, NULL, OPT_TREE, R,
    "print the calling-context tree of paths=on programs" },
  { "--event", 0, "NAME", OPT_EVENT, R,
    "with --tree: the PAPI event NAME (measure=papi) per call\n"
    "path instead of cycles" },
  { "--blocks", 0, NULL, OPT_BLOCKS, R,
    "print every block with its lines and count\n"
    "(modules built with -fplugin-arg-tally-blocks=...)" },
  { "--lines", 0, "FILE", OPT_LINES, R,
    "print source FILE annotated with line counts, as gcov\n"
    "does; may be repeated" },
  { "--lines", 0, NULL, OPT_LINES, D,
    "line counts that differ (blocks=count) instead of\n"
    "functions" },
  { "--all", 0, NULL, OPT_ALL, R,
    "also show the functions of system headers never\n"
    "called and the frames below the first instrumented call" },
  { "--all", 0, NULL, OPT_ALL, D,
    "also list what did not change (and system headers)" },
  { "--map", 0, "OLD=NEW", OPT_MAP, D,
    "pair A's files under directory OLD with B's under\n"
    "NEW (two checkouts of one program); may be repeated;\n"
    "by default the one directory that pairs the most" },
  { "--ranks", 0, NULL, OPT_RANKS, R,
    "the ranks of an MPI job (a file libtally-mpi reduced, or\n"
    "one file per rank): per function min, mean, max, rank of\n"
    "the max and imbalance; --sort=imbalance|max|mean|name" },
  { "--metric", 0, "M", OPT_METRIC, R,
    "with --ranks: calls, cycles or self (exclusive cycles)" },
  { "--rank", 0, "N", OPT_RANK, R,
    "report only rank N of the per-rank files given" },

  /* merge, flame, lcov */
  { "--output", 'o', "OUT", OPT_OUTPUT, M,
    "the file to write (replaced atomically; may be\n"
    "one of the inputs; - for standard output)" },
  { "--output", 'o', "OUT", OPT_OUTPUT, F,
    "write to OUT instead of standard output (-)" },
  { "--output", 'o', "OUT", OPT_OUTPUT, L,
    "the tracefile to write (default, and -: standard\n"
    "output)" },
  { "--jobs", 'j', "N", OPT_JOBS, M,
    "read the files ahead on N - 1 threads (1 to 256;\n"
    "default 1: one file at a time)" },
  { "--folded", 0, NULL, OPT_FOLDED, F,
    "collapsed stacks (\"main;f;g 1234\", exclusive cycles)\n"
    "instead of SVG, for other flame graph viewers" },
  { "--event", 0, "NAME", OPT_EVENT, F,
    "widths from the PAPI event NAME (measure=papi) instead\n"
    "of cycles" },
  { "--no-markers", 0, NULL, OPT_NO_MARKERS, L,
    "keep the lines marked LCOV_EXCL_* in the source\n"
    "(left out by default)" },
  { "--force", 0, NULL, OPT_FORCE, R | F | L,
    "sum modules of one source built with other at=,\n"
    "hooks= or blocks= settings instead of refusing" },
  { "--force", 0, NULL, OPT_FORCE, M,
    "also merge other builds of the same source (functions\n"
    "pair by symbol); by default they stay separate modules,\n"
    "and builds with other at=, hooks= or blocks= settings\n"
    "are refused" },
  { "--all", 0, NULL, OPT_ALL, F,
    "also the frames below the first instrumented call" },
  { "--all", 0, NULL, OPT_ALL, L,
    "also the functions of system headers never called" },

  /* select */
  { "--percent", 0, "P", OPT_PERCENT, S,
    "the share of the exclusive cycles to cover, 0 < P <= 100\n"
    "(\"80\" or \"80%\"; default 80)" },
  { "--filter", 0, NULL, OPT_FILTER, S,
    "print a filter file (-fplugin-arg-tally-filter) including\n"
    "them instead of the table" },
  { "--", 0, NULL, OPT_NONE, R,
    "end of options" },

  /* run: plugin options pass through (run.c), in the order given */
  { "--KEY[=VALUE]", 0, NULL, OPT_NONE, CMD_RUN,
    "passed to the plugin as -fplugin-arg-tally-KEY[=VALUE]\n"
    "(--hooks=call, --at=early, --blocks=count,\n"
    "--update=atomic, --filter=FILE,\n"
    "--select=PROFILE[:P%], --profile=FILE, --verbose;\n"
    "see tally-plugin(7)), for C and C++" },
  { "--c-KEY[=VALUE], --cxx-KEY[=VALUE]", 0, NULL, OPT_NONE, CMD_RUN,
    "the same for C only (CC) or C++ only (CXX)" },
  { "-fplugin-arg-tally-KEY[=VALUE]", 0, NULL, OPT_NONE, CMD_RUN,
    "the same as --KEY, as the compiler spells it" },
  { "--runtime", 0, "shared|static", OPT_RUNTIME, CMD_RUN,
    "link the shared runtime (default) or the static\n"
    "one, whole, into every program and library" },
  { "--output", 0, "PATTERN", OPT_OUTPUT, CMD_RUN,
    "set TALLY_OUTPUT for COMMAND (where the programs\n"
    "it runs write their data files; for a test\n"
    "suite, DIR/%m.data: one file per program, every\n"
    "process merged into it)" },
  { "--override", 0, NULL, OPT_OVERRIDE, CMD_RUN,
    "for a make command: also pass CC= and CXX= on its\n"
    "command line, which beat a Makefile's own CC" },
  { "--print-env", 0, NULL, OPT_PRINT_ENV, CMD_RUN,
    "print the variables as shell assignments and exit" },
  { 0 }
};
