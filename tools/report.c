/* report.c - `tally report`: calls (and cycles, blocks, lines) per
 * function as a table, JSON or CSV; --tree is flame.c's, --ranks
 * ranks.c's (doc/cli.md, "tally report").  */
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
#include "srcfile.h"
#include "summed.h"
#include "tally/abi.h"
#include "tally/format.h"

/* Sort order for compare_rows: qsort takes no context argument.  */
static enum sort_key sort_key;

static int
compare_u64_desc (uint64_t a, uint64_t b)
{
  return a > b ? -1 : a < b;
}

static int
compare_rows (const void *pa, const void *pb)
{
  const struct row *a = *(const struct row *const *) pa;
  const struct row *b = *(const struct row *const *) pb;
  int c = 0;
  if (sort_key == SORT_CALLS)
    c = compare_u64_desc (a->calls, b->calls);
  else if (sort_key == SORT_EXITS)
    c = compare_u64_desc (a->exits, b->exits);
  else if (sort_key == SORT_INCL)
    c = compare_u64_desc (a->incl, b->incl);
  else if (sort_key == SORT_EXCL)
    c = compare_u64_desc (a->excl, b->excl);
  /* Then by name, file and line, and by symbol so that the order is total
     and the output the same on every run.  */
  if (!c)
    c = strcmp (a->name, b->name);
  if (!c)
    c = strcmp (a->file, b->file);
  if (!c)
    c = (a->line > b->line) - (a->line < b->line);
  if (!c)
    c = strcmp (a->symbol, b->symbol);
  return c;
}

/* R's clone symbols, ", " between them: JSON strings with JSON, else as
   text.  */
static void
put_clones (const struct row *r, int json)
{
  for (size_t k = 0; k < r->nclones; k++)
    {
      if (k)
        fputs (", ", stdout);
      if (json)
        put_json (r->clones[k]);
      else
        put_text (r->clones[k]);
    }
}

static void
print_text (const struct merge *m, struct row **rows, size_t n)
{
  printf ("%zu %s, %" PRIu64 " %s, %zu %s, %" PRIu64 " %s", m->nfiles,
          plural (m->nfiles, "file", "files"), m->nmodules,
          plural (m->nmodules, "module", "modules"), m->nrows,
          plural (m->nrows, "function", "functions"), m->calls,
          plural (m->calls, "call", "calls"));
  if (m->hidden)
    printf (" (%zu never-called system-header %s hidden; --all shows %s)",
            m->hidden, plural (m->hidden, "function", "functions"),
            plural (m->hidden, "it", "them"));
  putchar ('\n');

  int wcalls = 5, wexits = 5;
  size_t wname = strlen ("function");
  for (size_t i = 0; i < n; i++)
    {
      if (count_digits (rows[i]->calls) > wcalls)
        wcalls = count_digits (rows[i]->calls);
      if (count_digits (rows[i]->exits) > wexits)
        wexits = count_digits (rows[i]->exits);
      size_t w = text_width (rows[i]->name);
      if (rows[i]->clone_body)
        w += 3 + text_width (rows[i]->symbol);
      if (w > wname)
        wname = w;
    }
  /* Past this, long C++ names only push their own location right.  */
  if (wname > 40)
    wname = 40;

  int wincl = 10, wexcl = 10;
  for (size_t i = 0; i < n && m->measured; i++)
    {
      if (count_digits (rows[i]->incl) > wincl)
        wincl = count_digits (rows[i]->incl);
      if (count_digits (rows[i]->excl) > wexcl)
        wexcl = count_digits (rows[i]->excl);
    }
  if (m->measured)
    printf ("%*s %*s %7s %*s %12s %12s ", wincl, "incl-cyc", wexcl,
            "excl-cyc", "excl%", wcalls, "calls", "incl/call", "excl/call");
  else
    printf ("%*s %8s ", wcalls, "calls", "%");
  int wev[TALLY_MAX_MEAS];
  for (unsigned e = 0; e < m->nev; e++)
    {
      wev[e] = (int) strlen (m->ev_names[e]) + 5;
      for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 2; k++)
          if (count_digits (rows[i]->ev[e][k]) > wev[e])
            wev[e] = count_digits (rows[i]->ev[e][k]);
      printf ("%*s-incl %*s-excl ", wev[e] - 5, m->ev_names[e], wev[e] - 5,
              m->ev_names[e]);
    }
  printf ("%*s  %-*s  %s\n", wexits, "exits", (int) wname, "function",
          "location");
  for (size_t i = 0; i < n; i++)
    {
      const struct row *r = rows[i];
      double pct = m->calls ? 100.0 * (double) r->calls / (double) m->calls
                            : 0.0;
      if (m->measured)
        {
          double epct = m->excl ? 100.0 * (double) r->excl / (double) m->excl
                                : 0.0;
          double ipc = r->calls ? (double) r->incl / (double) r->calls : 0.0;
          double epc = r->calls ? (double) r->excl / (double) r->calls : 0.0;
          printf ("%*" PRIu64 " %*" PRIu64 " %6.2f%% %*" PRIu64
                  " %12.1f %12.1f ", wincl, r->incl, wexcl, r->excl, epct,
                  wcalls, r->calls, ipc, epc);
        }
      else
        printf ("%*" PRIu64 " %7.2f%% ", wcalls, r->calls, pct);
      for (unsigned e = 0; e < m->nev; e++)
        printf ("%*" PRIu64 " %*" PRIu64 " ", wev[e], r->ev[e][0], wev[e],
                r->ev[e][1]);
      printf ("%*" PRIu64 "  ", wexits, r->exits);
      size_t w = put_text (r->name);
      if (r->clone_body)
        {
          fputs (" [", stdout);
          w += 3 + put_text (r->symbol);
          putchar (']');
        }
      printf ("%*s  ", (int) (w < wname ? wname - w : 0), "");
      put_text (r->file);
      if (r->line)
        printf (":%lu", (unsigned long) r->line);
      if (r->nclones)
        {
          fputs ("  (clones: ", stdout);
          put_clones (r, 0);
          putchar (')');
        }
      putchar ('\n');
    }
}

/* Write block count C of body B: yes/no for visited blocks, ? if
   undetermined.  Returns the text width.  */
static void
put_block_count (const struct body *b, uint32_t blk, int width)
{
  if (!b->flow.block_known[blk])
    printf ("%*s", width, "?");
  else if (b->bm.kind == TALLY_MAP_VISITED)
    printf ("%*s", width, b->flow.block[blk] ? "yes" : "no");
  else
    printf ("%*" PRIu64, width, b->flow.block[blk]);
}

/* --blocks as text: per body, its blocks with their lines and counts.  */
static void
print_blocks_text (const struct merge *m, struct row **rows, size_t n)
{
  int first = 1;
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < rows[i]->nbodies; k++)
      {
        const struct body *b = &m->bodies[rows[i]->bodies[k]];
        if (!b->solved)
          continue;
        if (!first)
          putchar ('\n');
        first = 0;
        put_text (b->name);
        if (is_clone (b))
          {
            fputs (" [", stdout);
            put_text (b->symbol);
            putchar (']');
          }
        fputs ("  ", stdout);
        put_text (b->file);
        printf (":%lu  (%s, %lu blocks, %s", (unsigned long) b->line,
                kind_name (b->bm.kind), (unsigned long) b->bm.nblocks - 2,
                b->calls_unknown ? "entries undetermined" : "entries ");
        if (!b->calls_unknown)
          printf ("%" PRIu64, b->calls);
        puts (")");
        int w = 5;
        for (uint32_t blk = 2; blk < b->bm.nblocks; blk++)
          if (count_digits (b->flow.block[blk]) > w)
            w = count_digits (b->flow.block[blk]);
        printf ("  block %*s  lines\n", w, "count");
        for (uint32_t blk = 2; blk < b->bm.nblocks; blk++)
          {
            const struct tally_map_block *mb = &b->bm.blocks[blk];
            printf ("  %5lu ", (unsigned long) blk);
            put_block_count (b, blk, w);
            fputs ("  ", stdout);
            for (uint32_t l = 0; l < mb->nlocs; l++)
              {
                int new_file = l == 0 || mb->locs[l].file != mb->locs[l - 1].file;
                if (new_file)
                  {
                    if (l)
                      putchar (' ');
                    put_text (b->bm.files[mb->locs[l].file]);
                    putchar (':');
                  }
                else
                  putchar (',');
                printf ("%lu", (unsigned long) mb->locs[l].line);
              }
            putchar ('\n');
          }
      }
}

/* The sources of C that ARG names: the same absolute path, or a path
   ending in "/ARG".  Sets MATCH[i] for each; returns how many.  */
static size_t
match_sources (const struct cov_result *c, const char *arg,
               unsigned char *match)
{
  char cwd[4096];
  char *abs = cov_resolve_path (getcwd (cwd, sizeof cwd) ? cwd : "", arg);
  size_t n = 0, na = strlen (arg);
  for (size_t i = 0; i < c->nfiles; i++)
    {
      const char *p = c->files[i].path;
      size_t np = strlen (p);
      int hit = strcmp (p, abs) == 0
                || (np > na && p[np - na - 1] == '/'
                    && strcmp (p + np - na, arg) == 0);
      if (hit && !match[i])
        {
          match[i] = 1;
          n++;
        }
    }
  free (abs);
  return n;
}

/* Select the sources named by --lines; reports a name that matches none.
   Returns 0 or EXIT_BAD_DATA.  */
static int
select_sources (const struct cov_result *c, const struct report_opts *o,
                unsigned char *match)
{
  for (size_t i = 0; i < o->nlines; i++)
    if (!match_sources (c, o->lines[i], match))
      {
        size_t any = 0;
        for (size_t k = 0; k < c->nfiles; k++)
          any += !match[k];
        error_msg ("report: no line counts for '%s' in the data (%s%s)",
                   o->lines[i],
                   c->nfiles ? "sources with block counts: " : "no module was "
                   "built with -fplugin-arg-tally-blocks=count or visited",
                   c->nfiles ? "" : "");
        if (c->nfiles)
          for (size_t k = 0; k < c->nfiles && k < 20; k++)
            fprintf (stderr, "  %s\n", c->files[k].path);
        (void) any;
        return EXIT_BAD_DATA;
      }
  return 0;
}

/* Annotated source of F, as gcov -t prints it: count, '#####' for lines
   that never ran, '-' for lines without code, '?' for undetermined.  */
static int
print_source (const struct cov_file *f)
{
  char why[128];
  FILE *in = tally_source_open (f->path, why, sizeof why);
  if (!in)
    {
      /* A file that is there but not one to read needs no hint.  */
      error_msg ("report: cannot read the source %s: %s%s", f->path, why,
                 strncmp (why, "it is ", 6) == 0 ? ""
                 : " (line counts need the source file at the path it was "
                   "compiled from)");
      return EXIT_BAD_DATA;
    }
  printf ("%9s:%5u:Source:", "-", 0u);
  put_text (f->path);
  putchar ('\n');
  char *buf = NULL;
  size_t cap = 0, li = 0;
  uint32_t lineno = 0;
  ssize_t len;
  uint64_t total = 0;
  for (;;)
    {
      len = getline (&buf, &cap, in);
      if (len > 0 && (total += (uint64_t) len) > TALLY_SOURCE_MAX)
        {
          free (buf);
          fclose (in);
          error_msg ("report: cannot read the source %s: %s", f->path,
                     TALLY_SOURCE_TOO_LONG);
          return EXIT_BAD_DATA;
        }
      if (len < 0 && li >= f->nlines)
        break;
      lineno++;
      while (li < f->nlines && f->lines[li].line < lineno)
        li++;
      char count[32] = "-";
      if (li < f->nlines && f->lines[li].line == lineno)
        {
          const struct cov_line *l = &f->lines[li];
          if (!l->known)
            strcpy (count, "?");
          else if (l->count == 0)
            strcpy (count, "#####");
          else
            snprintf (count, sizeof count, "%" PRIu64, l->count);
        }
      printf ("%9s:%5lu:", count, (unsigned long) lineno);
      if (len < 0)
        fputs ("/*EOF*/", stdout);
      else
        {
          if (len && buf[len - 1] == '\n')
            buf[--len] = 0;
          put_text (buf);
        }
      putchar ('\n');
    }
  free (buf);
  fclose (in);
  return 0;
}

static void
put_json_lines (const struct cov_file *f)
{
  fputs ("{\"path\": ", stdout);
  put_json (f->path);
  fputs (", \"lines\": [", stdout);
  for (size_t i = 0; i < f->nlines; i++)
    {
      const struct cov_line *l = &f->lines[i];
      printf ("%s{\"line\": %lu, \"count\": ", i ? ", " : "",
              (unsigned long) l->line);
      if (l->known)
        printf ("%" PRIu64, l->count);
      else
        fputs ("null", stdout);
      printf (", \"unexecuted_block\": %s}", l->zero_block ? "true" : "false");
    }
  fputs ("], \"branches\": [", stdout);
  for (size_t i = 0; i < f->nbranches; i++)
    {
      const struct cov_branch *b = &f->branches[i];
      printf ("%s{\"line\": %lu, \"block\": %lu, \"branch\": %lu, \"taken\": "
              "%" PRIu64 ", \"block_ran\": %s}", i ? ", " : "",
              (unsigned long) b->line, (unsigned long) b->block,
              (unsigned long) b->branch, b->taken, b->ran ? "true" : "false");
    }
  fputs ("]}", stdout);
}

/* The "blocks" member of a JSON row: every body's blocks and edges.  */
static void
put_json_blocks (const struct merge *m, const struct row *r)
{
  fputs (", \"blocks\": [", stdout);
  int first = 1;
  for (size_t k = 0; k < r->nbodies; k++)
    {
      const struct body *b = &m->bodies[r->bodies[k]];
      if (!b->solved)
        continue;
      fputs (first ? "{\"symbol\": " : ", {\"symbol\": ", stdout);
      first = 0;
      put_json (b->symbol);
      printf (", \"placement\": \"%s\", \"entries_derived\": %s, \"blocks\": [",
              kind_name (b->bm.kind),
              (b->flags & TALLY_FN_CALLS_DERIVED) ? "true" : "false");
      for (uint32_t blk = 2; blk < b->bm.nblocks; blk++)
        {
          const struct tally_map_block *mb = &b->bm.blocks[blk];
          printf ("%s{\"block\": %lu, \"count\": ", blk > 2 ? ", " : "",
                  (unsigned long) blk);
          if (b->flow.block_known[blk])
            printf ("%" PRIu64, b->flow.block[blk]);
          else
            fputs ("null", stdout);
          fputs (", \"locations\": [", stdout);
          for (uint32_t l = 0; l < mb->nlocs; l++)
            {
              fputs (l ? ", {\"file\": " : "{\"file\": ", stdout);
              put_json (b->bm.files[mb->locs[l].file]);
              printf (", \"line\": %lu}", (unsigned long) mb->locs[l].line);
            }
          fputs ("]}", stdout);
        }
      fputs ("], \"edges\": [", stdout);
      for (uint32_t e = 0; e < b->bm.nedges; e++)
        {
          const struct tally_map_edge *me = &b->bm.edges[e];
          printf ("%s{\"from\": %lu, \"to\": %lu, \"flags\": %lu, \"count\": ",
                  e ? ", " : "", (unsigned long) me->src,
                  (unsigned long) me->dst, (unsigned long) me->flags);
          if (b->flow.edge_known[e])
            printf ("%" PRIu64 "}", b->flow.edge[e]);
          else
            fputs ("null}", stdout);
        }
      fputs ("]}", stdout);
    }
  putchar (']');
}

static void
print_json (const struct merge *m, struct row **rows, size_t n,
            const struct report_opts *o, const struct cov_result *c,
            const unsigned char *match)
{
  fputs ("{\n  \"files\": [", stdout);
  for (size_t i = 0; i < m->nfiles; i++)
    {
      const struct file_info *f = &m->files[i];
      fputs (i ? ",\n    {\"path\": " : "\n    {\"path\": ", stdout);
      put_json (f->path);
      fputs (", \"program\": ", stdout);
      put_json (f->program);
      printf (", \"pid\": %" PRIu64 ", \"time\": %" PRIu64
              ", \"modules\": %lu}", f->pid, f->time,
              (unsigned long) f->nmodules);
    }
  printf ("\n  ],\n  \"totals\": {\"files\": %zu, \"modules\": %" PRIu64
          ", \"functions\": %zu, \"calls\": %" PRIu64 ", \"exits\": %"
          PRIu64 ", \"hidden\": %zu},\n  \"functions\": [", m->nfiles,
          m->nmodules, m->nrows, m->calls, m->exits, m->hidden);
  for (size_t i = 0; i < n; i++)
    {
      const struct row *r = rows[i];
      fputs (i ? ",\n    {" : "\n    {", stdout);
      put_fn_names ("\"%s\": ", ", \"%s\": ", ESCAPE_JSON, r->name, r->symbol,
                    r->origin, r->file);
      printf (", \"line\": %lu, \"calls\": %" PRIu64 ", \"exits\": %" PRIu64,
              (unsigned long) r->line, r->calls, r->exits);
      if (m->measured)
        printf (", \"incl_cycles\": %" PRIu64 ", \"excl_cycles\": %" PRIu64,
                r->incl, r->excl);
      if (m->nev)
        {
          fputs (", \"events\": {", stdout);
          for (unsigned e = 0; e < m->nev; e++)
            {
              if (e)
                fputs (", ", stdout);
              put_json (m->ev_names[e]);
              printf (": [%" PRIu64 ", %" PRIu64 "]", r->ev[e][0], r->ev[e][1]);
            }
          putchar ('}');
        }
      fputs (", \"clones\": [", stdout);
      put_clones (r, 1);
      putchar (']');
      if (o->blocks)
        put_json_blocks (m, r);
      putchar ('}');
    }
  fputs (n ? "\n  ]" : "]", stdout);
  if (o->nlines)
    {
      fputs (",\n  \"sources\": [", stdout);
      int first = 1;
      for (size_t i = 0; i < c->nfiles; i++)
        if (match[i])
          {
            fputs (first ? "\n    " : ",\n    ", stdout);
            first = 0;
            put_json_lines (&c->files[i]);
          }
      fputs (first ? "]" : "\n  ]", stdout);
    }
  fputs ("\n}\n", stdout);
}

static void
print_csv (struct row **rows, size_t n)
{
  fputs ("calls,exits,function,symbol,origin,file,line\n", stdout);
  for (size_t i = 0; i < n; i++)
    {
      const struct row *r = rows[i];
      printf ("%" PRIu64 ",%" PRIu64 ",", r->calls, r->exits);
      put_csv (r->name);
      putchar (',');
      put_csv (r->symbol);
      putchar (',');
      put_csv (r->origin);
      putchar (',');
      put_csv (r->file);
      printf (",%lu\n", (unsigned long) r->line);
    }
}

/* Whether ARGV asks for --ranks (before "--"): the other options are
   checked against it.  */
static int
ranks_wanted (int argc, char **argv)
{
  for (int i = 1; i < argc && strcmp (argv[i], "--") != 0; i++)
    if (strcmp (argv[i], "--ranks") == 0)
      return 1;
  return 0;
}

/* The values of report's options A into *O and *RANK; with --ranks
   (RANKS) only those ranks.c takes.  Returns CLI_GO or EXIT_USAGE
   (reported).  */
static int
report_values (const struct cli_parsed *a, int ranks, struct report_opts *o,
               long *rank)
{
  static const char *const keys[] = { "calls", "exits", "name", "incl",
                                      "excl", NULL };
  const char *v;
  int k;
  if ((v = a->v[OPT_RANK]))
    {
      char *end;
      *rank = strtol (v, &end, 10);
      if (!*v || *end || *rank < 0 || *rank > 0x7fffffffL)
        return cli_usage ("report", "--rank=%s is not a rank (0, 1, ...)",
                          v);
    }
  if ((v = a->v[OPT_TOP]) && parse_count (v, &o->top) != 0)
    return ranks ? cli_usage ("report", "--top=%s is not a positive "
                              "number", v)
                 : cli_usage ("report", "--top needs a positive whole "
                              "number, not '%s'", v);
  if (ranks)
    {
      for (int id = 0; id < OPT_COUNT; id++)
        if (a->word[id] && id != OPT_RANKS && id != OPT_JSON
            && id != OPT_CSV && id != OPT_RANK && id != OPT_SORT
            && id != OPT_METRIC && id != OPT_TOP)
          return cli_usage ("report", "unknown option '%s' with --ranks",
                            a->word[id]);
      return CLI_GO;
    }
  if (a->v[OPT_METRIC])
    return cli_usage ("report", "unknown option '%s'", a->word[OPT_METRIC]);
  for (size_t i = 0; i < a->nlines; i++)
    if (!*a->lines[i])
      return cli_usage ("report", "--lines needs a source file name");
  if ((v = a->v[OPT_SORT]) && (k = cli_choice (v, keys)) < 0)
    return cli_usage ("report", "unknown sort key '%s' (use calls, exits, "
                      "name, incl or excl)", v);
  if (v)
    o->sort = (enum sort_key) k;
  o->lines = a->lines;
  o->nlines = a->nlines;
  o->clones = a->v[OPT_CLONES] != NULL;
  o->blocks = a->v[OPT_BLOCKS] != NULL;
  return CLI_GO;
}

/* report --ranks (ranks.c).  */
static int
report_ranks (const struct cli_parsed *a, const struct report_opts *o,
              long rank)
{
  struct ranks_opts ro = { a->files, a->nfiles, a->v[OPT_JSON] != NULL,
                           a->v[OPT_CSV] != NULL, a->v[OPT_SORT],
                           a->v[OPT_METRIC], o->top };
  if (rank >= 0)
    return cli_usage ("report", "--ranks and --rank cannot be used "
                      "together");
  if (ro.json && ro.csv)
    return cli_usage ("report", "--json and --csv cannot be used "
                      "together");
  if (ro.nfiles == 0)
    return cli_usage ("report", "no data file given");
  return tally_ranks_report (&ro);
}

int
cmd_report (int argc, char **argv)
{
  struct report_opts opts = { SORT_CALLS, FORMAT_TEXT, 0, 0, 0, NULL, 0 };
  struct cli_parsed a;
  int ranks = ranks_wanted (argc, argv);
  long rank = -1;
  int status = cli_parse (argc, argv, &a,
                          ranks ? " with --ranks" : NULL);
  if (status == CLI_GO)
    status = report_values (&a, ranks, &opts, &rank);
  if (status == CLI_GO && ranks)
    status = report_ranks (&a, &opts, rank);
  if (status != CLI_GO || ranks)
    goto done;
  const char **paths = a.files, *event = a.v[OPT_EVENT];
  size_t npaths = a.nfiles;
  if (rank >= 0)
    {
      /* --rank N: the report of that file alone.  */
      if (!(paths[0] = tally_ranks_pick (paths, npaths, rank)))
        {
          status = EXIT_USAGE;
          goto done;
        }
      npaths = 1;
    }
  int json = a.v[OPT_JSON] != NULL, csv = a.v[OPT_CSV] != NULL;
  int tree = a.v[OPT_TREE] != NULL;
  if (json && csv)
    status = cli_usage ("report", "--json and --csv cannot be used "
                        "together");
  else if (event && !tree)
    status = cli_usage ("report", "--event shows a PAPI event in the call "
                        "tree; it needs --tree");
  else if (tree && (json || csv))
    status = cli_usage ("report", "--tree prints text only; it cannot be "
                        "used with --json or --csv");
  else if (csv && (opts.blocks || opts.nlines))
    status = cli_usage ("report", "--csv cannot be used with --blocks or "
                        "--lines");
  else if (npaths == 0)
    status = cli_usage ("report", "no data files given");
  else if (tree)
    status = tree_command ("report --tree", paths, npaths, NULL, 0, event,
                           a.v[OPT_FORCE] != NULL, a.v[OPT_ALL] != NULL);
  if (status != CLI_GO || tree)
    goto done;
  opts.format = json ? FORMAT_JSON : csv ? FORMAT_CSV : FORMAT_TEXT;

  struct merge m;
  memset (&m, 0, sizeof m);
  m.what = "report";
  m.force = a.v[OPT_FORCE] != NULL;
  if (merge_paths (&m, paths, npaths, opts.clones) != 0)
    {
      merge_free (&m);
      status = EXIT_BAD_DATA;
      goto done;
    }
  if (!a.v[OPT_ALL])
    merge_hide_system (&m, 0);

  struct row **order = xmalloc ((m.nrows ? m.nrows : 1) * sizeof *order);
  for (size_t i = 0; i < m.nrows; i++)
    order[i] = &m.rows[i];
  sort_key = opts.sort;
  qsort (order, m.nrows, sizeof *order, compare_rows);
  for (size_t i = 0; i < m.nrows; i++)
    if (order[i]->nclones > 1)
      qsort (order[i]->clones, order[i]->nclones, sizeof (char *),
             compare_strings);
  size_t shown = opts.top && opts.top < m.nrows ? opts.top : m.nrows;

  struct cov_result cov;
  unsigned char *match = NULL;
  status = 0;
  memset (&cov, 0, sizeof cov);
  if (opts.nlines)
    {
      size_t nb;
      struct cov_body *cb = cov_bodies (&m, &nb);
      cov_compute (cb, nb, &cov);
      free (cb);
      match = xmalloc (cov.nfiles + 1);
      memset (match, 0, cov.nfiles + 1);
      status = select_sources (&cov, &opts, match);
    }
  if (status)
    ;
  else if (opts.format == FORMAT_JSON)
    print_json (&m, order, shown, &opts, &cov, match);
  else if (opts.format == FORMAT_CSV)
    print_csv (order, shown);
  else if (opts.blocks || opts.nlines)
    {
      if (opts.blocks)
        print_blocks_text (&m, order, shown);
      for (size_t i = 0; i < cov.nfiles && !status; i++)
        if (match[i])
          {
            if (opts.blocks || i)
              putchar ('\n');
            status = print_source (&cov.files[i]);
          }
    }
  else
    print_text (&m, order, shown);
  if (m.user_modules)
    fprintf (stderr,
             "tally: note: %" PRIu64 " %s built with hooks=user: the user's "
             "hooks measured those functions, tally counted nothing there "
             "(their rows show 0)\n",
             m.user_modules, plural (m.user_modules, "module was", "modules were"));
  merge_notes (&m);
  free (match);
  cov_free (&cov);
  free (order);
  merge_free (&m);
done:
  cli_parsed_free (&a);
  return status;
}

