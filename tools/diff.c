/* tally diff A B: what changed between two data files, per function and
 * with --lines per source line (doc/cli.md "tally diff").
 *
 * Functions are matched by source name and file (made absolute against
 * the compiler's directory), not by symbol or module checksum: the two
 * files may come from other builds of the program (at=late against
 * at=early, hooks=inline against call, before and after an edit).  The
 * clones of a function have its name, so they are folded into it; the
 * records of several modules (a header's inline function) add up.
 *
 * The commonest diff compares two checkouts (before and after a change,
 * two worktrees): the same files under other directories.  So A's files
 * are first moved to B's places: by the user's --map OLD=NEW, or else by
 * the one directory substitution that pairs the most source files (each
 * file of A with each of B of the same name, the directories before
 * their longest common tail voting for it), when it pairs more than the
 * files' own paths do; the pairing chosen is said on stderr, and so is a
 * diff where nothing pairs (diff-pair.c; what the two files share:
 * diff.h).  */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blockmap.h"
#include "cli.h"
#include "coverage.h"
#include "datafile.h"
#include "diff.h"
#include "freeall.h"
#include "hide.h"
#include "print.h"
#include "tally/abi.h"

enum diff_sort { BY_CALLS, BY_CYCLES, BY_NAME };
enum diff_format { TEXT, JSON, CSV };

static size_t
hash2 (const char *a, const char *b)
{
  uint64_t h = 14695981039346656037ull;
  for (; *a; a++)
    h = (h ^ (unsigned char) *a) * 1099511628211ull;
  h = (h ^ 0xff) * 1099511628211ull;
  for (; *b; b++)
    h = (h ^ (unsigned char) *b) * 1099511628211ull;
  return (size_t) h;
}

static void
rehash (struct diff *df)
{
  free (df->slots);
  df->nslots = df->nslots ? df->nslots * 2 : 256;
  df->slots = xmalloc (df->nslots * sizeof *df->slots);
  memset (df->slots, 0, df->nslots * sizeof *df->slots);
  for (size_t r = 0; r < df->nrows; r++)
    {
      size_t i = hash2 (df->rows[r].name, df->rows[r].file) & (df->nslots - 1);
      while (df->slots[i])
        i = (i + 1) & (df->nslots - 1);
      df->slots[i] = r + 1;
    }
}

/* The row of NAME in FILE, made if new.  */
static struct frow *
row_of (struct diff *df, const char *name, const char *file, uint32_t line)
{
  if ((df->nrows + 1) * 2 > df->nslots)
    rehash (df);
  size_t i = hash2 (name, file) & (df->nslots - 1);
  for (; df->slots[i]; i = (i + 1) & (df->nslots - 1))
    {
      struct frow *r = &df->rows[df->slots[i] - 1];
      if (strcmp (r->name, name) == 0 && strcmp (r->file, file) == 0)
        return r;
    }
  if (df->nrows == df->cap)
    {
      df->cap = df->cap ? df->cap * 2 : 64;
      df->rows = xrealloc (df->rows, df->cap * sizeof *df->rows);
    }
  struct frow *r = &df->rows[df->nrows];
  memset (r, 0, sizeof *r);
  r->name = xstrdup (name);
  r->file = xstrdup (file);
  r->line = line;
  df->slots[i] = ++df->nrows;
  return r;
}

/* Read IN->path as side K of DF.  Returns 0, or -1 after saying why.  */
static int
read_side (struct diff *df, struct input *in, int k)
{
  char err[256];
  if (tally_read_file (in->path, &in->d, err, sizeof err) != 0)
    {
      fprintf (stderr, "tally: %s: %s\n", in->path, err);
      return -1;
    }
  if (in->d.flags & TALLY_DATA_UNFINISHED)
    fprintf (stderr, "tally: %s: process did not finish: counts up to the "
             "kill (or to an exit dump that could not be written)\n", in->path);
  size_t nfns = 0;
  for (uint32_t i = 0; i < in->d.nmodules; i++)
    nfns += in->d.modules[i].nfns;
  in->maps = xmalloc ((nfns ? nfns : 1) * sizeof *in->maps);
  in->flows = xmalloc ((nfns ? nfns : 1) * sizeof *in->flows);
  in->bodies = xmalloc ((nfns ? nfns : 1) * sizeof *in->bodies);
  if (in->d.nmeas)
    df->measured = 1;
  /* Every map checked first, kind 6's call sites against their module.  */
  if (tally_data_check_maps (&in->d, err, sizeof err) != 0)
    {
      fprintf (stderr, "tally: %s: %s\n", in->path, err);
      return -1;
    }
  for (uint32_t i = 0; i < in->d.nmodules; i++)
    {
      const struct tally_data_module *m = &in->d.modules[i];
      /* The module's maps solved together: kind 6 reads other functions'
         blocks.  */
      size_t n = m->nfns ? m->nfns : 1;
      struct tally_blockmap *bm = xcalloc (n, sizeof *bm);
      struct tally_flow *flows = xcalloc (n, sizeof *flows);
      /* Checked above: this cannot fail.  */
      if (tally_data_module_solve (m, bm, flows, err, sizeof err) != 0)
        {
          fprintf (stderr, "tally: %s: internal error: %s\n", in->path, err);
          exit (EXIT_BAD_DATA);
        }
      for (uint32_t j = 0; j < m->nfns; j++)
        {
          const struct tally_data_fn *f = &m->fns[j];
          uint64_t calls = f->counters[TALLY_C_ENTRIES];
          uint64_t exits = f->counters[TALLY_C_EXITS];
          int unknown = 0;
          if (f->map_size)
            {
              size_t b = in->nbodies;
              in->maps[b] = bm[j];
              in->flows[b] = flows[j];
              if ((f->flags & TALLY_FN_CALLS_DERIVED)
                  && in->maps[b].kind != TALLY_MAP_VISITED)
                {
                  calls = in->flows[b].entries;
                  exits = in->flows[b].exits;
                  unknown = !in->flows[b].entries_known;
                }
              in->bodies[b].map = &in->maps[b];
              in->bodies[b].flow = &in->flows[b];
              in->bodies[b].directory = m->directory;
              in->bodies[b].fn_file = f->file;
              in->bodies[b].fn_line = f->line;
              in->nbodies++;
            }
          df->ents = xgrow (df->ents, &df->capents, df->nents + 1,
                            sizeof *df->ents);
          struct fent *e = &df->ents[df->nents++];
          memset (e, 0, sizeof *e);
          e->name = f->name;
          e->file = cov_resolve_path (m->directory, f->file);
          e->line = f->line;
          e->k = k;
          e->s.present = 1;
          e->s.unknown = unknown;
          e->s.calls = calls;
          e->s.exits = exits;
          if (f->meas)
            {
              e->s.measured = 1;
              e->s.incl = f->meas[0];
              e->s.excl = f->meas[1];
            }
        }
      free_all (bm, flows);
    }
  return 0;
}

static void
free_side (struct input *in)
{
  for (size_t b = 0; b < in->nbodies; b++)
    {
      tally_map_free (&in->maps[b]);
      tally_flow_free (&in->flows[b]);
    }
  free (in->maps);
  free (in->flows);
  free (in->bodies);
  cov_free (&in->cov);
  tally_data_free (&in->d);
}

/* Fold the function records into rows, A's files moved as DF->maps say.
   Returns the rows found on both sides.  */
static size_t
make_rows (struct diff *df)
{
  for (size_t i = 0; i < df->nents; i++)
    {
      const struct fent *e = &df->ents[i];
      char *file = diff_paired_path (df, e->k, e->file);
      struct frow *r = row_of (df, e->name, file, e->line);
      free (file);
      struct side *s = &r->s[e->k];
      s->present = 1;
      s->unknown |= e->s.unknown;
      s->calls = add_sat (s->calls, e->s.calls);
      s->exits = add_sat (s->exits, e->s.exits);
      if (e->s.measured)
        {
          s->measured = 1;
          s->incl = add_sat (s->incl, e->s.incl);
          s->excl = add_sat (s->excl, e->s.excl);
        }
    }
  size_t both = 0;
  for (size_t i = 0; i < df->nrows; i++)
    both += df->rows[i].s[0].present && df->rows[i].s[1].present;
  return both;
}

/* |B - A| and its sign.  */
static uint64_t
delta (uint64_t a, uint64_t b, int *neg)
{
  *neg = b < a;
  return b < a ? a - b : b - a;
}

static void
put_delta (char *buf, size_t size, uint64_t a, uint64_t b)
{
  int neg;
  uint64_t d = delta (a, b, &neg);
  snprintf (buf, size, "%s%" PRIu64, d ? (neg ? "-" : "+") : "", d);
}

/* B / A as text ("-" when A is 0).  */
static void
put_ratio (char *buf, size_t size, uint64_t a, uint64_t b)
{
  if (!a)
    snprintf (buf, size, "-");
  else
    snprintf (buf, size, "%.2f", (double) b / (double) a);
}

static int
changed (const struct frow *r, int measured)
{
  return r->s[0].present != r->s[1].present
         || r->s[0].calls != r->s[1].calls || r->s[0].exits != r->s[1].exits
         || (measured && r->s[0].excl != r->s[1].excl);
}

static enum diff_sort sort_by;

static int
by_change (const void *pa, const void *pb)
{
  const struct frow *a = *(const struct frow *const *) pa;
  const struct frow *b = *(const struct frow *const *) pb;
  int neg;
  if (sort_by != BY_NAME)
    {
      uint64_t da = sort_by == BY_CYCLES
                    ? delta (a->s[0].excl, a->s[1].excl, &neg)
                    : delta (a->s[0].calls, a->s[1].calls, &neg);
      uint64_t db = sort_by == BY_CYCLES
                    ? delta (b->s[0].excl, b->s[1].excl, &neg)
                    : delta (b->s[0].calls, b->s[1].calls, &neg);
      if (da != db)
        return da > db ? -1 : 1;
    }
  int c = strcmp (a->name, b->name);
  if (!c)
    c = strcmp (a->file, b->file);
  return c;
}

static int
lines_by_change (const void *pa, const void *pb)
{
  const struct lrow *a = pa, *b = pb;
  int neg;
  uint64_t da = delta (a->count[0], a->count[1], &neg);
  uint64_t db = delta (b->count[0], b->count[1], &neg);
  if (sort_by != BY_NAME && da != db)
    return da > db ? -1 : 1;
  int c = strcmp (a->file, b->file);
  if (!c)
    c = (a->line > b->line) - (a->line < b->line);
  return c;
}

/* STR as a JSON string: control characters and invalid UTF-8 as \u00XX
   (report's JSON writes \n, \t and \r as such; diff's keeps its own
   form).  */
static void
put_str (const char *str)
{
  put_escaped (str, ESCAPE_JSON_U);
}

static void
put_count (const struct side *s, int width)
{
  if (!s->present)
    printf ("%*s", width, "-");
  else if (s->unknown)
    printf ("%*s", width, "?");
  else
    printf ("%*" PRIu64, width, s->calls);
}

static void
print_text (const struct input *in, const struct diff *df, struct frow **rows,
            size_t n, size_t differ, size_t unchanged, int all,
            const struct lrow *lines, size_t nlines, int show_lines)
{
  uint64_t total[2] = { 0, 0 };
  for (size_t i = 0; i < df->nrows; i++)
    for (int k = 0; k < 2; k++)
      total[k] = add_sat (total[k], df->rows[i].s[k].calls);
  for (int k = 0; k < 2; k++)
    {
      printf ("%c: ", 'A' + k);
      put_text (in[k].path);
      printf (" (%" PRIu64 " calls)\n", total[k]);
    }
  char d[32], r[32];
  put_delta (d, sizeof d, total[0], total[1]);
  put_ratio (r, sizeof r, total[0], total[1]);
  if (show_lines)
    printf ("%zu %s differ\n", nlines, nlines == 1 ? "line" : "lines");
  else
    printf ("%zu %s, %zu unchanged%s; calls %s, ratio %s\n", differ,
            differ == 1 ? "function differs" : "functions differ", unchanged,
            unchanged && !all ? " (--all lists them)" : "", d, r);
  if (show_lines)
    {
      printf ("%12s %12s %12s  %s\n", "count-A", "count-B", "delta",
              "location");
      for (size_t i = 0; i < nlines; i++)
        {
          const struct lrow *l = &lines[i];
          for (int k = 0; k < 2; k++)
            {
              if (l->known[k])
                printf ("%12" PRIu64 " ", l->count[k]);
              else
                printf ("%12s ", "-");
            }
          put_delta (d, sizeof d, l->count[0], l->count[1]);
          printf ("%12s  ", d);
          put_text (l->file);
          printf (":%lu\n", (unsigned long) l->line);
        }
      return;
    }
  printf ("%12s %12s %12s %8s ", "calls-A", "calls-B", "delta", "ratio");
  if (df->measured)
    printf ("%14s %14s %14s %8s ", "excl-cyc-A", "excl-cyc-B", "delta",
            "ratio");
  printf (" %s  %s\n", "function", "location");
  for (size_t i = 0; i < n; i++)
    {
      const struct frow *w = rows[i];
      put_count (&w->s[0], 12);
      putchar (' ');
      put_count (&w->s[1], 12);
      put_delta (d, sizeof d, w->s[0].calls, w->s[1].calls);
      put_ratio (r, sizeof r, w->s[0].calls, w->s[1].calls);
      printf (" %12s %8s ", d, r);
      if (df->measured)
        {
          put_delta (d, sizeof d, w->s[0].excl, w->s[1].excl);
          put_ratio (r, sizeof r, w->s[0].excl, w->s[1].excl);
          for (int k = 0; k < 2; k++)
            if (w->s[k].measured)
              printf ("%14" PRIu64 " ", w->s[k].excl);
            else
              printf ("%14s ", "-");
          printf ("%14s %8s ", d, r);
        }
      putchar (' ');
      put_text (w->name);
      fputs ("  ", stdout);
      put_text (w->file);
      if (w->line)
        printf (":%lu", (unsigned long) w->line);
      putchar ('\n');
    }
}

/* A JSON number or null.  */
static void
json_u64 (const char *key, int present, uint64_t v)
{
  if (present)
    printf (", \"%s\": %" PRIu64, key, v);
  else
    printf (", \"%s\": null", key);
}

static void
json_delta (const char *key, const char *rkey, uint64_t a, uint64_t b)
{
  int neg;
  uint64_t d = delta (a, b, &neg);
  printf (", \"%s\": %s%" PRIu64, key, neg ? "-" : "", d);
  if (a)
    printf (", \"%s\": %.6g", rkey, (double) b / (double) a);
  else
    printf (", \"%s\": null", rkey);
}

static void
print_json (const struct input *in, const struct diff *df, struct frow **rows,
            size_t n, size_t unchanged, const struct lrow *lines,
            size_t nlines, int show_lines)
{
  printf ("{\n");
  for (int k = 0; k < 2; k++)
    {
      printf ("  \"%c\": {\"path\": ", 'a' + k);
      put_str (in[k].path);
      printf (", \"program\": ");
      put_str (in[k].d.program);
      printf (", \"pid\": %" PRIu64 ", \"modules\": %lu},\n", in[k].d.pid,
              (unsigned long) in[k].d.nmodules);
    }
  printf ("  \"measured\": %s,\n  \"unchanged\": %zu,\n  \"paired\": %zu,\n"
          "  \"map\": [", df->measured ? "true" : "false", unchanged, df->both);
  for (size_t i = 0; i < df->nmaps; i++)
    {
      fputs (i ? ", {\"a\": " : "{\"a\": ", stdout);
      put_str (*df->maps[i].old ? df->maps[i].old : "/");
      fputs (", \"b\": ", stdout);
      put_str (*df->maps[i].new ? df->maps[i].new : "/");
      putchar ('}');
    }
  printf ("],\n  \"functions\": [");
  for (size_t i = 0; i < n; i++)
    {
      const struct frow *w = rows[i];
      fputs (i ? ",\n    {\"name\": " : "\n    {\"name\": ", stdout);
      put_str (w->name);
      fputs (", \"file\": ", stdout);
      put_str (w->file);
      printf (", \"line\": %lu", (unsigned long) w->line);
      json_u64 ("calls_a", w->s[0].present && !w->s[0].unknown, w->s[0].calls);
      json_u64 ("calls_b", w->s[1].present && !w->s[1].unknown, w->s[1].calls);
      json_delta ("delta_calls", "ratio_calls", w->s[0].calls, w->s[1].calls);
      json_u64 ("exits_a", w->s[0].present, w->s[0].exits);
      json_u64 ("exits_b", w->s[1].present, w->s[1].exits);
      if (df->measured)
        {
          json_u64 ("incl_cycles_a", w->s[0].measured, w->s[0].incl);
          json_u64 ("incl_cycles_b", w->s[1].measured, w->s[1].incl);
          json_u64 ("excl_cycles_a", w->s[0].measured, w->s[0].excl);
          json_u64 ("excl_cycles_b", w->s[1].measured, w->s[1].excl);
          json_delta ("delta_excl_cycles", "ratio_excl_cycles", w->s[0].excl,
                      w->s[1].excl);
        }
      putchar ('}');
    }
  fputs (n ? "\n  ]" : "]", stdout);
  if (show_lines)
    {
      fputs (",\n  \"lines\": [", stdout);
      for (size_t i = 0; i < nlines; i++)
        {
          const struct lrow *l = &lines[i];
          fputs (i ? ",\n    {\"file\": " : "\n    {\"file\": ", stdout);
          put_str (l->file);
          printf (", \"line\": %lu", (unsigned long) l->line);
          json_u64 ("count_a", l->known[0], l->count[0]);
          json_u64 ("count_b", l->known[1], l->count[1]);
          int neg;
          uint64_t d = delta (l->count[0], l->count[1], &neg);
          printf (", \"delta\": %s%" PRIu64 "}", neg ? "-" : "", d);
        }
      fputs (nlines ? "\n  ]" : "]", stdout);
    }
  fputs ("\n}\n", stdout);
}

static void
csv_u64 (int present, uint64_t v)
{
  if (present)
    printf ("%" PRIu64, v);
}

/* ",DELTA,RATIO" for CSV: a plain signed integer, and B / A or nothing
   when A is 0.  */
static void
csv_delta (uint64_t a, uint64_t b)
{
  int neg;
  uint64_t d = delta (a, b, &neg);
  printf (",%s%" PRIu64 ",", neg ? "-" : "", d);
  if (a)
    printf ("%.6g", (double) b / (double) a);
}

static void
print_csv (const struct diff *df, struct frow **rows, size_t n,
           const struct lrow *lines, size_t nlines, int show_lines)
{
  if (show_lines)
    {
      puts ("count_a,count_b,delta,file,line");
      for (size_t i = 0; i < nlines; i++)
        {
          const struct lrow *l = &lines[i];
          csv_u64 (l->known[0], l->count[0]);
          putchar (',');
          csv_u64 (l->known[1], l->count[1]);
          int neg;
          uint64_t d = delta (l->count[0], l->count[1], &neg);
          printf (",%s%" PRIu64 ",", neg ? "-" : "", d);
          put_csv (l->file);
          printf (",%lu\n", (unsigned long) l->line);
        }
      return;
    }
  puts ("calls_a,calls_b,delta_calls,ratio_calls,excl_cycles_a,"
        "excl_cycles_b,delta_excl_cycles,ratio_excl_cycles,function,file,"
        "line");
  for (size_t i = 0; i < n; i++)
    {
      const struct frow *w = rows[i];
      csv_u64 (w->s[0].present && !w->s[0].unknown, w->s[0].calls);
      putchar (',');
      csv_u64 (w->s[1].present && !w->s[1].unknown, w->s[1].calls);
      csv_delta (w->s[0].calls, w->s[1].calls);
      putchar (',');
      if (df->measured)
        {
          csv_u64 (w->s[0].measured, w->s[0].excl);
          putchar (',');
          csv_u64 (w->s[1].measured, w->s[1].excl);
          csv_delta (w->s[0].excl, w->s[1].excl);
          putchar (',');
        }
      else
        fputs (",,,,", stdout);
      put_csv (w->name);
      putchar (',');
      put_csv (w->file);
      printf (",%lu\n", (unsigned long) w->line);
    }
}

static int
by_key (const void *pa, const void *pb)
{
  return strcmp (((const struct kfile *) pa)->key,
                 ((const struct kfile *) pb)->key);
}

/* Side K's covered files under the names they are paired by, sorted by
   them; their number in *N.  */
static struct kfile *
keyed_files (const struct diff *df, const struct input *in, int k, size_t *n)
{
  const struct cov_result *c = &in[k].cov;
  struct kfile *v = xmalloc ((c->nfiles ? c->nfiles : 1) * sizeof *v);
  for (size_t i = 0; i < c->nfiles; i++)
    {
      v[i].key = diff_paired_path (df, k, c->files[i].path);
      v[i].f = &c->files[i];
    }
  if (c->nfiles > 1)
    qsort (v, c->nfiles, sizeof *v, by_key);
  *n = c->nfiles;
  return v;
}

/* The lines of both sides' coverage (K[s], N[s]: side s's files as
   keyed_files gives them), those that differ (all with ALL), system
   headers left out unless ALL.  */
static struct lrow *
diff_lines (struct kfile *const kf[2], const size_t nk[2], int all,
            size_t *n)
{
  size_t cap = 64;
  struct lrow *v = xmalloc (cap * sizeof *v);
  *n = 0;
  size_t i[2] = { 0, 0 };
  /* Both file lists are sorted by key; walk them together.  */
  while (i[0] < nk[0] || i[1] < nk[1])
    {
      const struct cov_file *f[2] = { NULL, NULL };
      int cmp = i[0] >= nk[0]   ? 1
                : i[1] >= nk[1] ? -1
                : strcmp (kf[0][i[0]].key, kf[1][i[1]].key);
      const char *key = cmp <= 0 ? kf[0][i[0]].key : kf[1][i[1]].key;
      if (cmp <= 0)
        f[0] = kf[0][i[0]++].f;
      if (cmp >= 0)
        f[1] = kf[1][i[1]++].f;
      if (!all && tally_system_path (f[0] ? f[0]->path : f[1]->path))
        continue;
      size_t j[2] = { 0, 0 };
      size_t nl[2] = { f[0] ? f[0]->nlines : 0, f[1] ? f[1]->nlines : 0 };
      while (j[0] < nl[0] || j[1] < nl[1])
        {
          const struct cov_line *l[2] = { NULL, NULL };
          uint32_t a = j[0] < nl[0] ? f[0]->lines[j[0]].line : UINT32_MAX;
          uint32_t b = j[1] < nl[1] ? f[1]->lines[j[1]].line : UINT32_MAX;
          if (j[0] < nl[0] && a <= b)
            l[0] = &f[0]->lines[j[0]++];
          if (j[1] < nl[1] && b <= a)
            l[1] = &f[1]->lines[j[1]++];
          struct lrow w;
          w.file = key;
          w.line = l[0] ? l[0]->line : l[1]->line;
          for (int k = 0; k < 2; k++)
            {
              w.known[k] = l[k] && l[k]->known;
              w.count[k] = w.known[k] ? l[k]->count : 0;
            }
          if (!all && w.known[0] == w.known[1] && w.count[0] == w.count[1])
            continue;
          if (*n == cap)
            {
              cap *= 2;
              v = xrealloc (v, cap * sizeof *v);
            }
          v[(*n)++] = w;
        }
    }
  return v;
}

int
cmd_diff (int argc, char **argv)
{
  static const char *const keys[] = { "calls", "cycles", "name", NULL };
  struct cli_parsed a;
  const char *v;
  size_t top = 0;
  int k = 0, status = cli_parse (argc, argv, &a, NULL);
  if (status != CLI_GO)
    ;
  else if (a.nfiles > 2)
    status = cli_usage ("diff", "give two data files, A and B (%s is a "
                        "third)", a.files[2]);
  else if ((v = a.v[OPT_SORT]) && (k = cli_choice (v, keys)) < 0)
    status = cli_usage ("diff", "unknown sort key '%s' (use calls, "
                        "cycles or name)", v);
  else if ((v = a.v[OPT_TOP]) && parse_count (v, &top) != 0)
    status = cli_usage ("diff", "--top needs a positive whole number, "
                        "not '%s'", v);
  else if (a.v[OPT_JSON] && a.v[OPT_CSV])
    status = cli_usage ("diff", "--json and --csv cannot be used "
                        "together");
  else if (a.nfiles != 2)
    status = cli_usage ("diff", "give two data files, A and B");
  if (status != CLI_GO)
    {
      cli_parsed_free (&a);
      return status;
    }
  const char *paths[2] = { a.files[0], a.files[1] };
  int all = a.v[OPT_ALL] != NULL, show_lines = a.v[OPT_LINES] != NULL;
  enum diff_format format = a.v[OPT_JSON] ? JSON : a.v[OPT_CSV] ? CSV : TEXT;
  sort_by = k == 0 ? BY_CALLS : k == 1 ? BY_CYCLES : BY_NAME;

  struct input in[2];
  struct diff df;
  memset (in, 0, sizeof in);
  memset (&df, 0, sizeof df);
  status = diff_take_maps (&df, a.maps, a.nmaps);
  cli_parsed_free (&a);
  if (status)
    goto out;
  for (int k = 0; k < 2; k++)
    {
      in[k].path = paths[k];
      if (read_side (&df, &in[k], k) != 0)
        status = EXIT_BAD_DATA;
    }
  if (!status && sort_by == BY_CYCLES && !df.measured)
    {
      fprintf (stderr, "tally: diff: --sort=cycles: neither file has "
               "measured cycles (build with "
               "-fplugin-arg-tally-measure=cycles)\n");
      status = EXIT_BAD_DATA;
    }
  if (!status && show_lines && !in[0].nbodies && !in[1].nbodies)
    {
      fprintf (stderr, "tally: diff: --lines: neither file has block counts "
               "(build with -fplugin-arg-tally-blocks=count)\n");
      status = EXIT_BAD_DATA;
    }
  if (status)
    goto out;

  size_t own = 0, paired = 0;
  if (!df.nmaps)
    own = diff_infer_map (&df, &paired);
  df.both = make_rows (&df);
  diff_pairing_notes (&df, own, paired, df.both);
  struct frow **rows = xmalloc ((df.nrows ? df.nrows : 1)
                                            * sizeof *rows);
  size_t n = 0, unchanged = 0;
  for (size_t i = 0; i < df.nrows; i++)
    {
      const struct frow *r = &df.rows[i];
      if (!changed (r, df.measured))
        {
          unchanged++;
          if (!all)
            continue;
        }
      rows[n++] = &df.rows[i];
    }
  qsort (rows, n, sizeof *rows, by_change);
  struct lrow *lines = NULL;
  size_t nlines = 0;
  struct kfile *kf[2] = { NULL, NULL };
  size_t nk[2] = { 0, 0 };
  if (show_lines)
    {
      for (int k = 0; k < 2; k++)
        {
          cov_compute (in[k].bodies, in[k].nbodies, &in[k].cov);
          kf[k] = keyed_files (&df, in, k, &nk[k]);
        }
      lines = diff_lines (kf, nk, all, &nlines);
      qsort (lines, nlines, sizeof *lines, lines_by_change);
      if (top && top < nlines)
        nlines = top;
    }
  size_t shown = top && top < n ? top : n;
  if (format == JSON)
    print_json (in, &df, rows, shown, unchanged, lines, nlines, show_lines);
  else if (format == CSV)
    print_csv (&df, rows, shown, lines, nlines, show_lines);
  else
    print_text (in, &df, rows, shown, df.nrows - unchanged, unchanged, all,
                lines, nlines, show_lines);
  free (lines);
  free (rows);
  for (int k = 0; k < 2; k++)
    {
      for (size_t i = 0; i < nk[k]; i++)
        free (kf[k][i].key);
      free (kf[k]);
    }
out:
  for (int k = 0; k < 2; k++)
    free_side (&in[k]);
  for (size_t i = 0; i < df.nrows; i++)
    free_all (df.rows[i].name, df.rows[i].file);
  for (size_t i = 0; i < df.nents; i++)
    free (df.ents[i].file);
  for (size_t i = 0; i < df.nmaps; i++)
    free_all (df.maps[i].old, df.maps[i].new);
  free_all (df.rows, df.slots, df.ents, df.maps);
  return status;
}

