/* lcov.c - `tally lcov`: an lcov tracefile of the line, function and
 * branch coverage (doc/cli.md, "tally lcov").  */
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
#include "markers.h"
#include "output.h"
#include "paths.h"
#include "prefetch.h"
#include "print.h"
#include "ranks.h"
#include "select.h"
#include "summed.h"
#include "tally/abi.h"
#include "tally/format.h"

/* tally lcov: an lcov tracefile (geninfo's format, read by lcov and
   genhtml): one record per source file with its functions (FN, FNDA),
   branches (BRDA) and lines (DA).  */

struct sf_fn
{
  const struct row *row;
  char *path; /* the row's file, resolved */
};

static int
compare_sf_fn (const void *pa, const void *pb)
{
  const struct sf_fn *a = pa, *b = pb;
  int c = strcmp (a->path, b->path);
  if (!c)
    c = (a->row->line > b->row->line) - (a->row->line < b->row->line);
  if (!c)
    c = strcmp (a->row->origin, b->row->origin);
  return c;
}

/* Whether a tracefile can hold S: lcov reads it line by line and has no
   escapes, so a line break in a name would start records of its own (a
   file named "x.c\nDA:1,99" adds a line count).  Every control character
   is refused.  */
static int
lcov_name_ok (const char *s)
{
  for (; *s; s++)
    if ((unsigned char) *s < 0x20 || *s == 0x7f)
      return 0;
  return 1;
}

/* Say on stderr that the WHAT named S is left out, S escaped as dump
   prints it.  */
static void
lcov_left_out (const char *what, const char *s)
{
  fflush (stdout);
  fprintf (stderr, "tally: lcov: %s \"", what);
  for (; *s; s++)
    {
      unsigned char ch = (unsigned char) *s;
      if (ch == '\n')
        fputs ("\\n", stderr);
      else if (ch == '"' || ch == '\\')
        fprintf (stderr, "\\%c", ch);
      else if (ch < 0x20 || ch == 0x7f)
        fprintf (stderr, "\\x%02x", ch);
      else
        fputc (ch, stderr);
    }
  fputs ("\" left out of the tracefile: lcov cannot hold a control "
         "character in a name\n", stderr);
}

/* Write the tracefile of M and C to OUT; with MARKERS, leave out what the
   source's LCOV_EXCL markers exclude, as lcov does (markers.h).  Returns
   the number of source files and functions left out because their names
   have control characters (lcov_name_ok).  */
static size_t
write_lcov (FILE *out, const struct merge *m, const struct cov_result *c,
            int markers)
{
  size_t left = 0;
  struct sf_fn *fns = xmalloc ((m->nrows ? m->nrows : 1) * sizeof *fns);
  size_t nfns = 0;
  for (size_t i = 0; i < m->nrows; i++)
    {
      /* Functions the compiler made are not listed, as in gcov.  */
      int artificial = m->rows[i].nbodies > 0;
      for (size_t k = 0; k < m->rows[i].nbodies; k++)
        artificial &= (m->bodies[m->rows[i].bodies[k]].flags
                       & TALLY_FN_ARTIFICIAL) != 0;
      if (artificial)
        continue;
      fns[nfns].row = &m->rows[i];
      fns[nfns].path = cov_resolve_path (m->rows[i].directory,
                                         m->rows[i].file);
      nfns++;
    }
  qsort (fns, nfns, sizeof *fns, compare_sf_fn);
  /* Walk the two sorted lists of files together.  */
  size_t fi = 0, ci = 0;
  while (fi < nfns || ci < c->nfiles)
    {
      const char *path;
      if (ci < c->nfiles
          && (fi >= nfns || strcmp (c->files[ci].path, fns[fi].path) <= 0))
        path = c->files[ci].path;
      else
        path = fns[fi].path;
      const struct cov_file *cf = ci < c->nfiles
                                  && strcmp (c->files[ci].path, path) == 0
                                  ? &c->files[ci++] : NULL;
      size_t f0 = fi;
      while (fi < nfns && strcmp (fns[fi].path, path) == 0)
        fi++;
      if (cf && !cf->nlines && f0 == fi)
        continue;
      if (!lcov_name_ok (path))
        {
          lcov_left_out ("source file", path);
          left++;
          continue;
        }
      struct tally_markers mk;
      char why[128];
      memset (&mk, 0, sizeof mk);
      if (markers && tally_markers_read (path, &mk, why, sizeof why) != 0)
        error_msg ("lcov: warning: cannot read %s for LCOV_EXCL markers: %s",
                   path, why);
      else if (mk.unterminated)
        error_msg ("lcov: warning: unterminated exclusion section in %s",
                   path);
      fprintf (out, "TN:\nSF:%s\n", path);
      size_t fnf = 0, fnh = 0;
      for (size_t k = f0; k < fi; k++)
        if (tally_markers_of (&mk, fns[k].row->line) & TALLY_EXCL_LINE)
          ;
        else if (lcov_name_ok (fns[k].row->origin))
          fprintf (out, "FN:%lu,%s\n", (unsigned long) fns[k].row->line,
                   fns[k].row->origin);
        else
          {
            lcov_left_out ("function", fns[k].row->origin);
            left++;
          }
      for (size_t k = f0; k < fi; k++)
        if (!(tally_markers_of (&mk, fns[k].row->line) & TALLY_EXCL_LINE)
            && lcov_name_ok (fns[k].row->origin))
          {
            fprintf (out, "FNDA:%" PRIu64 ",%s\n", fns[k].row->calls,
                     fns[k].row->origin);
            fnf++;
            fnh += fns[k].row->calls != 0;
          }
      fprintf (out, "FNF:%zu\nFNH:%zu\n", fnf, fnh);
      size_t brf = 0;
      if (cf)
        for (size_t k = 0; k < cf->nbranches; k++)
          brf += !tally_markers_of (&mk, cf->branches[k].line);
      if (brf)
        {
          size_t brh = 0;
          for (size_t k = 0; k < cf->nbranches; k++)
            {
              const struct cov_branch *b = &cf->branches[k];
              if (tally_markers_of (&mk, b->line))
                continue;
              fprintf (out, "BRDA:%lu,%lu,%lu,", (unsigned long) b->line,
                       (unsigned long) b->block, (unsigned long) b->branch);
              if (b->ran)
                fprintf (out, "%" PRIu64 "\n", b->taken);
              else
                fputs ("-\n", out);
              brh += b->taken != 0;
            }
          fprintf (out, "BRF:%zu\nBRH:%zu\n", brf, brh);
        }
      size_t lf = 0, lh = 0;
      if (cf)
        for (size_t k = 0; k < cf->nlines; k++)
          {
            const struct cov_line *l = &cf->lines[k];
            if (!l->known
                || (tally_markers_of (&mk, l->line) & TALLY_EXCL_LINE))
              continue;
            fprintf (out, "DA:%lu,%" PRIu64 "\n", (unsigned long) l->line,
                     l->count);
            lf++;
            lh += l->count != 0;
          }
      fprintf (out, "LF:%zu\nLH:%zu\nend_of_record\n", lf, lh);
      tally_markers_free (&mk);
    }
  for (size_t i = 0; i < nfns; i++)
    free (fns[i].path);
  free (fns);
  return left;
}

int
cmd_lcov (int argc, char **argv)
{
  struct cli_parsed a;
  int status = cli_parse (argc, argv, &a, NULL);
  const char *out = a.v[OPT_OUTPUT];
  int markers = !a.v[OPT_NO_MARKERS];
  if (status == CLI_GO && out && !*out)
    status = cli_usage ("lcov", "-o needs a file name");
  else if (status == CLI_GO && a.nfiles == 0)
    status = cli_usage ("lcov", "no data files given");
  if (status != CLI_GO)
    {
      cli_parsed_free (&a);
      return status;
    }
  struct merge m;
  memset (&m, 0, sizeof m);
  m.what = "lcov";
  m.force = a.v[OPT_FORCE] != NULL;
  status = merge_paths (&m, a.files, a.nfiles, 0);
  if (!status)
    {
      size_t nb;
      struct cov_body *cb = cov_bodies (&m, &nb);
      struct cov_result cov;
      cov_compute (cb, nb, &cov);
      free (cb);
      if (!a.v[OPT_ALL])
        {
          cov_hide_system (&m, &cov);
          merge_hide_system (&m, 1);
        }
      size_t unknown = 0;
      for (size_t i = 0; i < cov.nfiles; i++)
        for (size_t k = 0; k < cov.files[i].nlines; k++)
          unknown += !cov.files[i].lines[k].known;
      size_t left = 0;
      if (!out)
        left = write_lcov (stdout, &m, &cov, markers);
      else
        {
          struct tally_out o;
          char err[512];
          if (tally_out_open (&o, out, err, sizeof err) != 0)
            {
              error_msg ("lcov: %s", err);
              status = EXIT_BAD_DATA;
            }
          else
            {
              left = write_lcov (o.f, &m, &cov, markers);
              if (tally_out_close (&o, err, sizeof err) != 0)
                {
                  error_msg ("lcov: %s", err);
                  status = EXIT_BAD_DATA;
                }
            }
        }
      if (unknown)
        fprintf (stderr, "tally: warning: %zu %s left out: %s count could "
                 "not be determined\n", unknown,
                 unknown == 1 ? "line" : "lines",
                 unknown == 1 ? "its" : "their");
      /* Said, not silent: a tracefile without DA lines reads as code
         that never ran in some viewers, and as nothing to see in others.  */
      if (m.plain_modules == m.nmodules && m.nmodules)
        error_msg ("lcov: warning: no module was built with block counters "
                   "(-fplugin-arg-tally-blocks=count or visited): the "
                   "tracefile has function records (FN, FNDA) only, no line "
                   "or branch data");
      else if (m.plain_modules)
        error_msg ("lcov: warning: %" PRIu64 " of %" PRIu64 " modules %s "
                   "built without block counters "
                   "(-fplugin-arg-tally-blocks=count or visited): their "
                   "functions have function records (FN, FNDA) only, no line "
                   "or branch data", m.plain_modules, m.nmodules,
                   plural (m.plain_modules, "was", "were"));
      if (left && !status)
        status = EXIT_BAD_DATA; /* the tracefile lacks them: say so */
      merge_notes (&m);
      cov_free (&cov);
    }
  merge_free (&m);
  cli_parsed_free (&a);
  return status;
}

