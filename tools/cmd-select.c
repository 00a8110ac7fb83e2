/* cmd-select.c - `tally select`: the fewest functions making up P% of
 * the measured time, or a filter file of them (the selection itself is
 * select.c; doc/cli.md, "tally select").  */
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

/* A filter-file word (plugin/filter.cc splits on blanks and fnmatch()es):
   S with the glob characters escaped.  Assembler names have no blanks.  */
static void
put_glob_literal (const char *s)
{
  for (; *s; s++)
    {
      if (strchr ("*?[]\\", *s))
        putchar ('\\');
      putchar (*s);
    }
}

/* tally select [--percent=P] [--filter] FILE...  */
int
cmd_select (int argc, char **argv)
{
  struct cli_parsed a;
  double percent = 80;
  int status = cli_parse (argc, argv, &a, NULL);
  if (status == CLI_GO && a.v[OPT_PERCENT]
      && tally_parse_percent (a.v[OPT_PERCENT], &percent) != 0)
    {
      error_msg ("select: bad value '%s' for --percent: give a number above "
                 "0 and at most 100, like 80 or 99.5%%", a.v[OPT_PERCENT]);
      status = EXIT_USAGE;
    }
  if (status != CLI_GO)
    {
      cli_parsed_free (&a);
      return status;
    }
  struct tally_selection sel;
  char err[512];
  if (tally_select (a.files, a.nfiles, percent, &sel, err, sizeof err) != 0)
    {
      error_msg ("select: %s", err);
      cli_parsed_free (&a);
      return EXIT_BAD_DATA;
    }
  double got = 100.0 * (double) sel.selected / (double) sel.total;
  if (a.v[OPT_FILTER])
    {
      printf ("# tally select --percent=%s: %zu of %zu functions, %.2f%% of "
              "the measured time\n# (-fplugin-arg-tally-filter=THIS_FILE; a "
              "static function of the same name\n# in another file is "
              "included too: select=PROFILE tells them apart)\n",
              a.v[OPT_PERCENT] ? a.v[OPT_PERCENT] : "80%", sel.nselected, sel.nfns, got);
      for (size_t i = 0; i < sel.nselected; i++)
        {
          fputs ("include function ", stdout);
          put_glob_literal (sel.fns[i].origin);
          putchar ('\n');
        }
    }
  else
    {
      printf ("%zu of %zu %s make up %.2f%% of %" PRIu64 " cycles "
              "(asked: %g%%)\n", sel.nselected, sel.nfns,
              plural (sel.nfns, "function", "functions"), got, sel.total,
              percent);
      int wexcl = 8;
      size_t wname = strlen ("function");
      for (size_t i = 0; i < sel.nselected; i++)
        {
          if (count_digits (sel.fns[i].excl) > wexcl)
            wexcl = count_digits (sel.fns[i].excl);
          if (text_width (sel.fns[i].name) > wname)
            wname = text_width (sel.fns[i].name);
        }
      if (wname > 40)
        wname = 40;
      printf ("%*s %7s %7s  %-*s  %s\n", wexcl, "excl-cyc", "share", "cumul",
              (int) wname, "function", "location");
      uint64_t cum = 0;
      for (size_t i = 0; i < sel.nselected; i++)
        {
          const struct tally_selected *f = &sel.fns[i];
          cum += f->excl;
          printf ("%*" PRIu64 " %6.2f%% %6.2f%%  ", wexcl, f->excl,
                  100.0 * (double) f->excl / (double) sel.total,
                  100.0 * (double) cum / (double) sel.total);
          size_t w = put_text (f->name);
          printf ("%*s  ", (int) (w < wname ? wname - w : 0), "");
          put_text (f->file);
          if (f->line)
            printf (":%lu", (unsigned long) f->line);
          putchar ('\n');
        }
    }
  tally_selection_free (&sel);
  cli_parsed_free (&a);
  return 0;
}

