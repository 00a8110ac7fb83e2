/* select.c - the functions that make up P% of a profile's measured time.
 *
 * 1. Every function record of every file is keyed by (origin symbol,
 *    source file) with its exclusive cycles: clones and split parts carry
 *    their source function's origin, and a body built early or late names
 *    the same origin, so the selection is of source functions.
 * 2. The records are sorted by key and equal keys summed.
 * 3. The functions are ranked by exclusive cycles, most first, and the
 *    shortest prefix whose sum reaches P% of the total is the selection.
 *
 * Exclusive, not inclusive, time: inclusive times overlap (main's covers
 * everything), so only exclusive times add up to the program's total, and
 * a function is chosen for the time spent in its own code.  A profile
 * without measured time (no MEAS record) is refused rather than ranked by
 * calls: a call count says nothing about where the time went.  */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datafile.h"
#include "select.h"

int
tally_parse_percent (const char *s, double *out)
{
  /* By hand, not strtod: no locale, no "inf", "nan", hex or blanks.  */
  double v = 0, scale = 1;
  int digits = 0, dot = 0;
  const char *p = s;
  for (; *p && *p != '%'; p++)
    {
      if (*p == '.' && !dot)
        dot = 1;
      else if (*p >= '0' && *p <= '9' && digits < 12)
        {
          digits++;
          if (dot)
            v += (scale /= 10) * (*p - '0');
          else
            v = v * 10 + (*p - '0');
        }
      else
        return -1;
    }
  if (!digits || (*p == '%' && p[1]) || !(v > 0) || v > 100)
    return -1;
  *out = v;
  return 0;
}

static char *
dup (const char *s)
{
  size_t n = strlen (s) + 1;
  char *d = malloc (n);
  return d ? memcpy (d, s, n) : NULL;
}

/* A function record while the files are read: it points into the file's
   data, which stays alive until the selection is copied out.  */
struct rec
{
  const struct tally_data_fn *fn;
  const char *directory;
};

static int
compare_key (const struct tally_data_fn *a, const struct tally_data_fn *b)
{
  int c = strcmp (a->origin, b->origin);
  return c ? c : strcmp (a->file, b->file);
}

static int
compare_rec (const void *pa, const void *pb)
{
  const struct rec *a = pa, *b = pb;
  return compare_key (a->fn, b->fn);
}

static int
compare_selected (const void *pa, const void *pb)
{
  const struct tally_selected *a = pa, *b = pb;
  if (a->excl != b->excl)
    return a->excl > b->excl ? -1 : 1;
  int c = strcmp (a->origin, b->origin);
  return c ? c : strcmp (a->file, b->file);
}

static uint64_t
add_sat (uint64_t a, uint64_t b)
{
  return a + b < a ? UINT64_MAX : a + b;
}

int
tally_select (const char *const *paths, size_t npaths, double percent,
              struct tally_selection *out, char *err, size_t errlen)
{
  memset (out, 0, sizeof *out);
  out->percent = percent;
  int rc = -1;
  struct tally_data *data = calloc (npaths ? npaths : 1, sizeof *data);
  struct rec *recs = NULL;
  size_t nrecs = 0, cap = 0;
  if (!data)
    return tally_errf (err, errlen, "out of memory");
  for (size_t i = 0; i < npaths; i++)
    {
      char why[256];
      if (tally_read_file (paths[i], &data[i], why, sizeof why) != 0)
        {
          tally_errf (err, errlen, "%s: %s", paths[i], why);
          goto out;
        }
      if (!data[i].nmeas)
        {
          tally_errf (err, errlen, "%s has no measured time; build the profiling "
                "run with -fplugin-arg-tally-measure=cycles", paths[i]);
          goto out;
        }
      /* 1. */
      for (uint32_t m = 0; m < data[i].nmodules; m++)
        for (uint32_t f = 0; f < data[i].modules[m].nfns; f++)
          {
            if (nrecs == cap)
              {
                size_t ncap = cap ? cap * 2 : 256;
                struct rec *n = realloc (recs, ncap * sizeof *recs);
                if (!n)
                  {
                    tally_errf (err, errlen, "out of memory");
                    goto out;
                  }
                recs = n;
                cap = ncap;
              }
            recs[nrecs].fn = &data[i].modules[m].fns[f];
            recs[nrecs].directory = data[i].modules[m].directory;
            nrecs++;
          }
    }

  /* 2. */
  if (nrecs)
    qsort (recs, nrecs, sizeof *recs, compare_rec);
  out->fns = calloc (nrecs ? nrecs : 1, sizeof *out->fns);
  if (!out->fns)
    {
      tally_errf (err, errlen, "out of memory");
      goto out;
    }
  for (size_t i = 0; i < nrecs;)
    {
      struct tally_selected *s = &out->fns[out->nfns++];
      const struct tally_data_fn *name_from = recs[i].fn;
      size_t j = i;
      for (; j < nrecs && compare_key (recs[i].fn, recs[j].fn) == 0; j++)
        {
          const struct tally_data_fn *f = recs[j].fn;
          if (f->meas)
            s->excl = add_sat (s->excl, f->meas[1]);
          /* The origin's own body names the function best.  */
          if (strcmp (f->symbol, f->origin) == 0
              && strcmp (name_from->symbol, name_from->origin) != 0)
            name_from = f;
        }
      s->name = dup (name_from->name);
      s->origin = dup (name_from->origin);
      s->file = dup (name_from->file);
      s->directory = dup (recs[i].directory);
      s->line = name_from->line;
      if (!s->name || !s->origin || !s->file || !s->directory)
        {
          tally_errf (err, errlen, "out of memory");
          goto out;
        }
      out->total = add_sat (out->total, s->excl);
      i = j;
    }
  if (out->total == 0)
    {
      tally_errf (err, errlen, "%s: the measured time is 0 cycles: nothing to "
            "choose from", npaths == 1 ? paths[0] : "the profiles");
      goto out;
    }

  /* 3. Integer sums compared in long double, which holds every u64: the
     sum reaches P% when sum * 100 >= P * total.  */
  qsort (out->fns, out->nfns, sizeof *out->fns, compare_selected);
  long double want = (long double) percent * out->total;
  while (out->nselected < out->nfns
         && (long double) out->selected * 100 < want)
    out->selected = add_sat (out->selected, out->fns[out->nselected++].excl);
  rc = 0;
out:
  free (recs);
  for (size_t i = 0; i < npaths; i++)
    tally_data_free (&data[i]);
  free (data);
  if (rc != 0)
    tally_selection_free (out);
  return rc;
}

/* Write the absolute, lexically normal form of FILE (relative to DIR) into
   BUF: "." and empty components dropped, ".." removing the one before.
   Symbolic links are not followed: the file may not exist here.  */
static void
normal_path (const char *file, const char *dir, char *buf, size_t size)
{
  char tmp[8192];
  if (file[0] == '/' || !dir || !*dir)
    snprintf (tmp, sizeof tmp, "%s", file);
  else
    snprintf (tmp, sizeof tmp, "%s/%s", dir, file);
  size_t n = 0;
  const char *p = tmp;
  while (*p)
    {
      while (*p == '/')
        p++;
      size_t len = strcspn (p, "/");
      if (len == 0 || (len == 1 && p[0] == '.'))
        ;
      else if (len == 2 && p[0] == '.' && p[1] == '.')
        {
          while (n > 0 && buf[n - 1] != '/')
            n--;
          if (n > 0)
            n--;
        }
      else if (n + 1 + len < size)
        {
          buf[n++] = '/';
          memcpy (buf + n, p, len);
          n += len;
        }
      p += len;
    }
  if (n == 0 && size > 1)
    buf[n++] = '/';
  buf[n] = 0;
}

long
tally_selection_find (const struct tally_selection *s, const char *origin,
                      const char *file, const char *cwd)
{
  for (size_t i = 0; i < s->nselected; i++)
    {
      const struct tally_selected *f = &s->fns[i];
      if (strcmp (f->origin, origin) != 0)
        continue;
      if (strcmp (f->file, file) == 0)
        return (long) i;
      char a[4096], b[4096];
      normal_path (f->file, f->directory, a, sizeof a);
      normal_path (file, cwd, b, sizeof b);
      if (strcmp (a, b) == 0)
        return (long) i;
    }
  return -1;
}

void
tally_selection_free (struct tally_selection *s)
{
  if (!s)
    return;
  for (size_t i = 0; s->fns && i < s->nfns; i++)
    {
      free (s->fns[i].name);
      free (s->fns[i].origin);
      free (s->fns[i].file);
      free (s->fns[i].directory);
    }
  free (s->fns);
  memset (s, 0, sizeof *s);
}
