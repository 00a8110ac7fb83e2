/* ranks.c - `tally report --ranks` and `tally report --rank N` (doc/cli.md,
 * doc/mpi.md).
 *
 * The ranks of an MPI job come either from one file reduced by
 * libtally-mpi (its RNKS record gives per value the min, the max and the
 * rank of the max over the ranks holding the record; the records hold the
 * sums) or from one file per rank (TALLY_OUTPUT with %r): those are read
 * one at a time, in name order with numbers compared by value (prof.2
 * before prof.10), the Nth being rank N, and folded into the same
 * statistics, so memory is that of one file plus the statistics.  Records
 * are matched by compile checksum and occurrence, as libtally-mpi does.
 *
 * Per function: calls (value [0]) and, with measure=cycles, inclusive and
 * exclusive cycles: min, mean over the ranks holding the function's
 * module, max, the lowest rank holding the max, and the imbalance max /
 * mean (1 is balanced; 0 when nothing was counted).  */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tally/abi.h"
#include "blockmap.h"
#include "cli.h"
#include "datafile.h"
#include "freeall.h"
#include "print.h"
#include "ranks.h"

struct stat1
{
  uint64_t sum, min, max;
  uint32_t rank;
};

struct row
{
  char *name, *file;
  uint32_t line;
  uint32_t holders;
  int unknown; /* calls derived from block counts (hooks=none): per rank
                  from per-rank files; a reduced file keeps only the
                  extremes of each block's count, not of the sum, so its
                  calls statistics are unknown */
  struct stat1 calls, incl, excl;
};

/* A module record being folded from per-rank files.  */
struct acc
{
  uint64_t checksum;
  uint32_t occ;
  uint32_t nfns;
  size_t first; /* its first row */
};

struct table
{
  struct row *rows;
  size_t n, cap;
  struct acc *mods;
  size_t nmods, capmods;
  uint32_t ranks;
  int measured;
};

static void
die_oom (void)
{
  fputs ("tally: out of memory\n", stderr);
  exit (EXIT_BAD_DATA);
}

static void *
grow (void *p, size_t *cap, size_t need, size_t size)
{
  if (need <= *cap)
    return p;
  size_t n = *cap ? *cap * 2 : 64;
  while (n < need)
    n *= 2;
  void *q = realloc (p, n * size);
  if (!q)
    die_oom ();
  *cap = n;
  return q;
}

static char *
dup (const char *s)
{
  char *d = strdup (s ? s : "");
  if (!d)
    die_oom ();
  return d;
}

static void
stat_add (struct stat1 *s, uint64_t v, uint32_t rank, int first)
{
  if (first)
    {
      *s = (struct stat1){ v, v, v, rank };
      return;
    }
  s->sum += v;
  if (v < s->min)
    s->min = v;
  if (v > s->max)
    {
      s->max = v;
      s->rank = rank;
    }
}

/* Compare file names with digit runs by value.  */
static int
natural_cmp (const char *a, const char *b)
{
  while (*a && *b)
    {
      if (isdigit ((unsigned char) *a) && isdigit ((unsigned char) *b))
        {
          while (*a == '0' && isdigit ((unsigned char) a[1]))
            a++;
          while (*b == '0' && isdigit ((unsigned char) b[1]))
            b++;
          size_t la = 0, lb = 0;
          while (isdigit ((unsigned char) a[la]))
            la++;
          while (isdigit ((unsigned char) b[lb]))
            lb++;
          if (la != lb)
            return la < lb ? -1 : 1;
          int c = strncmp (a, b, la);
          if (c)
            return c;
          a += la, b += lb;
          continue;
        }
      if (*a != *b)
        return (unsigned char) *a < (unsigned char) *b ? -1 : 1;
      a++, b++;
    }
  return *a ? 1 : *b ? -1 : 0;
}

static int
cmp_paths (const void *x, const void *y)
{
  int c = natural_cmp (*(char *const *) x, *(char *const *) y);
  return c ? c : strcmp (*(char *const *) x, *(char *const *) y);
}

/* The calls of every function of module M into CALLS (M->nfns):
   counters[0], or derived from its block counts (-1 when they do not
   determine it).  The module's maps are solved together: a kind 6
   function's entry count is read from other functions' blocks.  */
static void
module_calls (const struct tally_data_module *m, int64_t *calls)
{
  size_t n = m->nfns ? m->nfns : 1;
  struct tally_blockmap *bm = xcalloc (n, sizeof *bm);
  struct tally_flow *flows = xcalloc (n, sizeof *flows);
  char err[256];
  tally_data_module_solve (m, bm, flows, err, sizeof err);
  for (uint32_t j = 0; j < m->nfns; j++)
    {
      const struct tally_data_fn *f = &m->fns[j];
      if (!(f->flags & TALLY_FN_CALLS_DERIVED) || !f->map_size)
        calls[j] = (int64_t) f->counters[TALLY_C_ENTRIES];
      else if (!bm[j].nblocks || bm[j].kind == TALLY_MAP_VISITED
               || !flows[j].entries_known)
        calls[j] = -1;
      else
        calls[j] = (int64_t) flows[j].entries;
      tally_flow_free (&flows[j]);
      tally_map_free (&bm[j]);
    }
  free_all (bm, flows);
}

static struct row *
add_row (struct table *t, const struct tally_data_fn *f)
{
  t->rows = grow (t->rows, &t->cap, t->n + 1, sizeof *t->rows);
  struct row *r = &t->rows[t->n++];
  memset (r, 0, sizeof *r);
  r->name = dup (f->name);
  r->file = dup (f->file);
  r->line = f->line;
  return r;
}

/* A reduced file: its records and RNKS statistics.  */
static void
load_reduced (struct table *t, const struct tally_data *d)
{
  t->ranks = d->ranks;
  t->measured = d->nmeas > 0;
  for (uint32_t mi = 0; mi < d->nmodules; mi++)
    {
      const struct tally_data_module *m = &d->modules[mi];
      const struct tally_data_ranks *rs = &d->rank_stats[mi];
      uint64_t at = 0, meas_at = 0;
      for (uint32_t fi = 0; fi < m->nfns; fi++)
        meas_at += m->fns[fi].ncounters;
      for (uint32_t fi = 0; fi < m->nfns; fi++)
        {
          const struct tally_data_fn *f = &m->fns[fi];
          struct row *r = add_row (t, f);
          r->holders = rs->nranks;
          r->calls = (struct stat1){ f->counters[0], rs->min[at], rs->max[at],
                                     rs->maxrank[at] };
          if (f->flags & TALLY_FN_CALLS_DERIVED)
            {
              r->unknown = 1;
              r->calls = (struct stat1){ 0, 0, 0, 0 };
            }
          if (d->nmeas)
            {
              uint64_t k = meas_at + (uint64_t) fi * 2 * d->nmeas;
              r->incl = (struct stat1){ f->meas[0], rs->min[k], rs->max[k],
                                        rs->maxrank[k] };
              r->excl = (struct stat1){ f->meas[1], rs->min[k + 1],
                                        rs->max[k + 1], rs->maxrank[k + 1] };
            }
          at += f->ncounters;
        }
    }
}

/* One per-rank file D of rank RANK folded into T.  */
static void
fold_rank (struct table *t, const struct tally_data *d, uint32_t rank)
{
  if (d->nmeas)
    t->measured = 1;
  for (uint32_t mi = 0; mi < d->nmodules; mi++)
    {
      const struct tally_data_module *m = &d->modules[mi];
      uint32_t occ = 0;
      for (uint32_t j = 0; j < mi; j++)
        occ += d->modules[j].checksum == m->checksum;
      struct acc *a = NULL;
      for (size_t k = 0; k < t->nmods; k++)
        if (t->mods[k].checksum == m->checksum && t->mods[k].occ == occ
            && t->mods[k].nfns == m->nfns)
          {
            a = &t->mods[k];
            break;
          }
      int first = !a;
      if (!a)
        {
          t->mods = grow (t->mods, &t->capmods, t->nmods + 1, sizeof *t->mods);
          a = &t->mods[t->nmods++];
          *a = (struct acc){ m->checksum, occ, m->nfns, t->n };
          for (uint32_t fi = 0; fi < m->nfns; fi++)
            add_row (t, &m->fns[fi]);
        }
      int64_t *calls_of = xcalloc (m->nfns ? m->nfns : 1, sizeof *calls_of);
      module_calls (m, calls_of);
      for (uint32_t fi = 0; fi < m->nfns; fi++)
        {
          const struct tally_data_fn *f = &m->fns[fi];
          struct row *r = &t->rows[a->first + fi];
          r->holders++;
          int64_t calls = calls_of[fi];
          if (calls < 0)
            r->unknown = 1;
          stat_add (&r->calls, calls < 0 ? 0 : (uint64_t) calls, rank, first);
          stat_add (&r->incl, f->meas ? f->meas[0] : 0, rank, first);
          stat_add (&r->excl, f->meas ? f->meas[1] : 0, rank, first);
        }
      free (calls_of);
    }
}

static double
mean (const struct row *r, const struct stat1 *s)
{
  return r->holders ? (double) s->sum / r->holders : 0;
}

static double
imbalance (const struct row *r, const struct stat1 *s)
{
  double m = mean (r, s);
  return m > 0 ? (double) s->max / m : 0;
}

static const char *sort_key;
static int sort_metric; /* 0 calls, 1 incl, 2 excl */

static const struct stat1 *
metric_of (const struct row *r, int which)
{
  return which == 0 ? &r->calls : which == 1 ? &r->incl : &r->excl;
}

static int
cmp_rows (const void *x, const void *y)
{
  const struct row *a = x, *b = y;
  const struct stat1 *sa = metric_of (a, sort_metric), *sb = metric_of (b, sort_metric);
  if (strcmp (sort_key, "name") != 0 && sort_metric == 0
      && a->unknown != b->unknown)
    return a->unknown - b->unknown; /* unknown calls last */
  if (strcmp (sort_key, "name") != 0)
    {
      double ka, kb;
      if (strcmp (sort_key, "imbalance") == 0)
        ka = imbalance (a, sa), kb = imbalance (b, sb);
      else if (strcmp (sort_key, "mean") == 0)
        ka = mean (a, sa), kb = mean (b, sb);
      else
        ka = (double) sa->max, kb = (double) sb->max;
      if (ka != kb)
        return ka > kb ? -1 : 1;
      if (sa->max != sb->max)
        return sa->max > sb->max ? -1 : 1;
    }
  int c = strcmp (a->name, b->name);
  if (c)
    return c;
  c = strcmp (a->file, b->file);
  return c ? c : (a->line > b->line) - (a->line < b->line);
}


static void
json_stat (const char *key, const struct row *r, const struct stat1 *s)
{
  printf (", \"%s\": {\"sum\": %" PRIu64 ", \"min\": %" PRIu64
          ", \"mean\": %.17g, \"max\": %" PRIu64 ", \"max_rank\": %" PRIu32
          ", \"imbalance\": %.17g}", key, s->sum, s->min, mean (r, s), s->max,
          s->rank, imbalance (r, s));
}

static void
csv_stat (const struct row *r, const struct stat1 *s)
{
  printf (",%" PRIu64 ",%.6f,%" PRIu64 ",%" PRIu32 ",%.6f", s->min,
          mean (r, s), s->max, s->rank, imbalance (r, s));
}

static void
print_table (const struct table *t, const struct ranks_opts *o, const char *what,
             size_t n)
{
  if (o->json)
    {
      printf ("{\"ranks\": %" PRIu32 ", \"from\": \"%s\", \"metric\": \"%s\", "
              "\"functions\": [", t->ranks, what,
              sort_metric == 0 ? "calls" : sort_metric == 1 ? "cycles" : "self");
      for (size_t i = 0; i < n; i++)
        {
          const struct row *r = &t->rows[i];
          printf ("%s\n  {\"name\": ", i ? "," : "");
          put_escaped (r->name, ESCAPE_JSON_U);
          printf (", \"file\": ");
          put_escaped (r->file, ESCAPE_JSON_U);
          printf (", \"line\": %" PRIu32 ", \"ranks\": %" PRIu32, r->line,
                  r->holders);
          if (r->unknown)
            printf (", \"calls\": null");
          else
            json_stat ("calls", r, &r->calls);
          if (t->measured)
            {
              json_stat ("cycles", r, &r->incl);
              json_stat ("self_cycles", r, &r->excl);
            }
          putchar ('}');
        }
      printf ("\n]}\n");
      return;
    }
  if (o->csv)
    {
      printf ("function,file,line,ranks,calls_min,calls_mean,calls_max,"
              "calls_max_rank,calls_imbalance%s\n",
              t->measured ? ",cycles_min,cycles_mean,cycles_max,"
                            "cycles_max_rank,cycles_imbalance,self_min,"
                            "self_mean,self_max,self_max_rank,self_imbalance"
                          : "");
      for (size_t i = 0; i < n; i++)
        {
          const struct row *r = &t->rows[i];
          put_csv (r->name);
          putchar (',');
          put_csv (r->file);
          printf (",%" PRIu32 ",%" PRIu32, r->line, r->holders);
          if (r->unknown)
            fputs (",,,,,", stdout);
          else
            csv_stat (r, &r->calls);
          if (t->measured)
            {
              csv_stat (r, &r->incl);
              csv_stat (r, &r->excl);
            }
          putchar ('\n');
        }
      return;
    }
  const char *mname = sort_metric == 0 ? "calls" : sort_metric == 1
                                                      ? "cycles (inclusive)"
                                                      : "cycles (exclusive)";
  printf ("%" PRIu32 " ranks (%s), %zu functions, %s per rank\n", t->ranks,
          what, t->n, mname);
  /* The function column as report's table has it: as wide as the
     longest name printed, up to 40 columns.  */
  size_t wname = strlen ("function");
  for (size_t i = 0; i < n; i++)
    if (text_width (t->rows[i].name) > wname)
      wname = text_width (t->rows[i].name);
  if (wname > 40)
    wname = 40;
  printf ("%9s %6s %14s %16s %14s  %-*s  %s\n", "imbalance", "rank", "max",
          "mean", "min", (int) wname, "function", "location");
  for (size_t i = 0; i < n; i++)
    {
      const struct row *r = &t->rows[i];
      const struct stat1 *s = metric_of (r, sort_metric);
      if (sort_metric == 0 && r->unknown)
        printf ("%9s %6s %14s %16s %14s  ", "-", "-", "-", "-", "-");
      else
        printf ("%9.3f %6" PRIu32 " %14" PRIu64 " %16.2f %14" PRIu64 "  ",
                imbalance (r, s), s->rank, s->max, mean (r, s), s->min);
      size_t w = put_text (r->name);
      printf ("%*s  ", (int) (w < wname ? wname - w : 0), "");
      put_text (r->file);
      printf (":%" PRIu32, r->line);
      if (r->holders != t->ranks)
        printf (" (%" PRIu32 " ranks)", r->holders);
      putchar ('\n');
    }
}

int
tally_ranks_report (const struct ranks_opts *opts)
{
  struct ranks_opts o = *opts;
  struct table t;
  memset (&t, 0, sizeof t);
  int status = 0;
  if (!o.sort)
    o.sort = "imbalance";
  if (strcmp (o.sort, "imbalance") != 0 && strcmp (o.sort, "max") != 0
      && strcmp (o.sort, "mean") != 0 && strcmp (o.sort, "name") != 0)
    return cli_usage ("report", "--sort=%s with --ranks: use imbalance, "
                      "max, mean or name", o.sort);
  if (o.metric && strcmp (o.metric, "calls") != 0
      && strcmp (o.metric, "cycles") != 0 && strcmp (o.metric, "self") != 0)
    return cli_usage ("report", "--metric=%s: use calls, cycles or self",
                      o.metric);
  qsort (o.files, o.nfiles, sizeof *o.files, cmp_paths);
  const char *what = "reduced file";
  char whatbuf[64];
  for (size_t i = 0; i < o.nfiles; i++)
    {
      struct tally_data d;
      char err[256];
      if (tally_read_file (o.files[i], &d, err, sizeof err) != 0)
        {
          fflush (stdout);
          fprintf (stderr, "tally: %s: %s\n", o.files[i], err);
          status = EXIT_BAD_DATA;
          break;
        }
      if (d.ranks && o.nfiles > 1)
        {
          fprintf (stderr, "tally: report --ranks: %s is a file reduced from "
                   "%" PRIu32 " ranks; give it alone, or the per-rank files "
                   "alone\n", o.files[i], d.ranks);
          tally_data_free (&d);
          status = EXIT_USAGE;
          break;
        }
      if (d.ranks)
        load_reduced (&t, &d);
      else
        fold_rank (&t, &d, (uint32_t) i);
      tally_data_free (&d);
    }
  if (!status)
    {
      if (o.nfiles > 1 || !t.ranks)
        {
          t.ranks = (uint32_t) o.nfiles;
          snprintf (whatbuf, sizeof whatbuf, "%zu per-rank file%s", o.nfiles,
                    o.nfiles == 1 ? "" : "s");
          what = whatbuf;
        }
      sort_metric = o.metric ? (strcmp (o.metric, "calls") == 0 ? 0
                                : strcmp (o.metric, "cycles") == 0 ? 1 : 2)
                             : t.measured ? 1 : 0;
      if (sort_metric && !t.measured)
        {
          fprintf (stderr, "tally: report --ranks: --metric=%s needs files "
                   "of measure=cycles programs\n", o.metric);
          status = EXIT_USAGE;
        }
    }
  size_t unknown = 0;
  for (size_t i = 0; i < t.n; i++)
    unknown += t.rows[i].unknown;
  if (!status && unknown && sort_metric == 0)
    fprintf (stderr, "tally: note: %zu function%s count%s calls from block "
             "counts (hooks=none) and %s shown as '-': %s\n", unknown,
             unknown == 1 ? "" : "s", unknown == 1 ? "s" : "",
             unknown == 1 ? "is" : "are",
             t.n && o.nfiles == 1 && strcmp (what, "reduced file") == 0
                 ? "a reduced file keeps the extremes of each block's count, "
                   "not of the calls; use per-rank files (TALLY_MPI=both)"
                 : "their block counts do not determine the calls");
  if (!status)
    {
      sort_key = o.sort;
      if (t.n > 1) /* t.rows is NULL without functions: qsort wants a
                      pointer */
        qsort (t.rows, t.n, sizeof *t.rows, cmp_rows);
      size_t n = o.top && o.top < t.n ? o.top : t.n;
      print_table (&t, &o, what, n);
    }
  for (size_t i = 0; i < t.n; i++)
    free_all (t.rows[i].name, t.rows[i].file);
  free_all (t.rows, t.mods);
  return status;
}

const char *
tally_ranks_pick (const char **files, size_t nfiles, long rank)
{
  if ((size_t) rank >= nfiles)
    {
      fprintf (stderr, "tally: report --rank=%ld: %zu per-rank file%s given "
               "(ranks 0 to %zu)\n", rank, nfiles, nfiles == 1 ? "" : "s",
               nfiles ? nfiles - 1 : 0);
      if (nfiles == 1)
        fputs ("tally: a file reduced by libtally-mpi keeps the sums and "
               "extremes of the ranks, not each rank's counts\n", stderr);
      return NULL;
    }
  qsort (files, nfiles, sizeof *files, cmp_paths);
  return files[rank];
}

void
tally_ranks_dump (const struct tally_data *d)
{
  if (!d->ranks)
    return;
  printf ("ranks version=%u size=%" PRIu32 " records=%" PRIu32 "\n",
          (unsigned) TALLY_RANKS_VERSION, d->ranks, d->nmodules);
  for (uint32_t mi = 0; mi < d->nmodules; mi++)
    {
      const struct tally_data_ranks *r = &d->rank_stats[mi];
      printf ("  module %" PRIu32 " holders=%" PRIu32 " values=%" PRIu64
              " (min/max@rank):", mi, r->nranks, r->nvalues);
      for (uint64_t k = 0; k < r->nvalues; k++)
        printf (" %" PRIu64 "/%" PRIu64 "@%" PRIu32, r->min[k], r->max[k],
                r->maxrank[k]);
      putchar ('\n');
    }
}
