/* tools/diff-pair.c - tally diff: which source file of A is which of B.
 *
 * A function is matched by its name and file, so the files of A must
 * first be moved to B's places when the two files come from two checkouts
 * (before and after a change, two worktrees): by the user's --map OLD=NEW
 * (diff_take_maps), or else by the one directory substitution that pairs
 * the most source files (diff_infer_map: each file of A with each of B of
 * the same name, the directories before their longest common tail voting
 * for it), when it pairs more than the files' own paths do.  The pairing
 * chosen is said on stderr, and so is a diff where nothing pairs
 * (diff_pairing_notes).  */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "diff.h"
#include "freeall.h"
#include "print.h"

/* Whether PATH is DIR or lies below it ("" is the root directory).  */
static int
under (const char *path, const char *dir)
{
  size_t n = strlen (dir);
  return strncmp (path, dir, n) == 0 && (path[n] == '/' || (n && !path[n]));
}

/* PATH of side K as it is paired: A's moved by the first map whose OLD
   holds it; a malloc'd string.  */
char *
diff_paired_path (const struct diff *df, int k, const char *path)
{
  for (size_t i = 0; k == 0 && i < df->nmaps; i++)
    if (under (path, df->maps[i].old))
      {
        const char *rest = path + strlen (df->maps[i].old);
        size_t n = strlen (df->maps[i].new);
        char *out = xmalloc (n + strlen (rest) + 2);
        memcpy (out, df->maps[i].new, n);
        strcpy (out + n, *rest || n ? rest : "/");
        return out;
      }
  return xstrdup (path);
}

/* The distinct files of side K's functions, sorted; their number in *N.  */
static const char **
side_files (const struct diff *df, int k, size_t *n)
{
  const char **v = xmalloc ((df->nents ? df->nents : 1) * sizeof *v);
  size_t m = 0;
  for (size_t i = 0; i < df->nents; i++)
    if (df->ents[i].k == k)
      v[m++] = df->ents[i].file;
  if (m > 1)
    qsort (v, m, sizeof *v, compare_strings);
  size_t u = 0;
  for (size_t i = 0; i < m; i++)
    if (!u || strcmp (v[u - 1], v[i]) != 0)
      v[u++] = v[i];
  *n = u;
  return v;
}

static int
has_file (const char **v, size_t n, const char *path)
{
  return bsearch (&path, v, n, sizeof *v, compare_strings) != NULL;
}

static const char *
base_name (const char *path)
{
  const char *slash = strrchr (path, '/');
  return slash ? slash + 1 : path;
}

static int
by_base (const void *pa, const void *pb)
{
  const char *a = *(const char *const *) pa, *b = *(const char *const *) pb;
  int c = strcmp (base_name (a), base_name (b));
  return c ? c : strcmp (a, b);
}

/* The length of the directory of A (and in *LB of B) before the longest
   tail of whole components the two paths share (at least the file
   name).  */
static size_t
common_tail (const char *a, const char *b, size_t *lb)
{
  size_t i = strlen (a), j = strlen (b);
  while (i > 0 && j > 0)
    {
      size_t s = i, t = j;
      while (s > 0 && a[s - 1] != '/')
        s--;
      while (t > 0 && b[t - 1] != '/')
        t--;
      if (i - s != j - t || memcmp (a + s, b + t, i - s) != 0 || !s || !t)
        break;
      i = s - 1; /* the slash before the shared component */
      j = t - 1;
    }
  *lb = j;
  return i;
}

/* A candidate directory substitution and the files of A it pairs.  */
struct vote
{
  const char *a, *b; /* prefixes of two file names */
  size_t na, nb;
  size_t files;
};

/* Find the directory of A's files that, replaced by one of B's, pairs
   the most files; kept in DF->maps if it pairs more than their own
   paths do.  Files of a name more than 64 files of a side share are left
   out of the vote (too ambiguous to count).  Returns how many files of A
   pair by their own path, and sets *PAIRED to how many pair in the end.  */
size_t
diff_infer_map (struct diff *df, size_t *paired)
{
  size_t na, nb;
  const char **fa = side_files (df, 0, &na), **fb = side_files (df, 1, &nb);
  size_t own = 0;
  for (size_t i = 0; i < na; i++)
    own += has_file (fb, nb, fa[i]);
  *paired = own;
  const char **bb = xmalloc ((nb ? nb : 1) * sizeof *bb);
  memcpy (bb, fb, nb * sizeof *bb);
  if (nb > 1)
    qsort (bb, nb, sizeof *bb, by_base);
  struct vote *votes = NULL;
  size_t nvotes = 0, capvotes = 0;
  for (size_t i = 0; i < na; i++)
    {
      const char *base = base_name (fa[i]);
      /* The run of B's files with this name.  */
      size_t lo = 0, hi = nb;
      while (lo < hi)
        {
          size_t mid = lo + (hi - lo) / 2;
          if (strcmp (base_name (bb[mid]), base) < 0)
            lo = mid + 1;
          else
            hi = mid;
        }
      size_t end = lo;
      while (end < nb && strcmp (base_name (bb[end]), base) == 0)
        end++;
      if (end - lo > 64)
        continue;
      for (size_t j = lo; j < end; j++)
        {
          size_t lb, la = common_tail (fa[i], bb[j], &lb);
          if (la == lb && memcmp (fa[i], bb[j], la) == 0)
            continue; /* the same directory: their own path */
          size_t v = 0;
          while (v < nvotes
                 && !(votes[v].na == la && votes[v].nb == lb
                      && memcmp (votes[v].a, fa[i], la) == 0
                      && memcmp (votes[v].b, bb[j], lb) == 0))
            v++;
          if (v == nvotes)
            {
              if (nvotes >= 4096)
                continue; /* enough candidates for any real pair of trees */
              votes = xgrow (votes, &capvotes, nvotes + 1, sizeof *votes);
              votes[nvotes++] = (struct vote) { fa[i], bb[j], la, lb, 0 };
            }
          votes[v].files++;
        }
    }
  /* The most files; of equals the shortest, then the first by name.  */
  struct vote *best = NULL;
  for (size_t v = 0; v < nvotes; v++)
    if (!best || votes[v].files > best->files
        || (votes[v].files == best->files
            && (votes[v].na < best->na
                || (votes[v].na == best->na
                    && strncmp (votes[v].a, best->a, best->na) < 0))))
      best = &votes[v];
  if (best && best->files > own)
    {
      df->maps = xcalloc (1, sizeof *df->maps);
      df->maps[0].old = xmalloc (best->na + 1);
      memcpy (df->maps[0].old, best->a, best->na);
      df->maps[0].old[best->na] = 0;
      df->maps[0].new = xmalloc (best->nb + 1);
      memcpy (df->maps[0].new, best->b, best->nb);
      df->maps[0].new[best->nb] = 0;
      df->nmaps = 1;
      size_t now = 0;
      for (size_t i = 0; i < na; i++)
        {
          char *p = diff_paired_path (df, 0, fa[i]);
          now += has_file (fb, nb, p);
          free (p);
        }
      if (now > own)
        {
          df->inferred = 1;
          *paired = now;
        }
      else
        {
          free_all (df->maps[0].old, df->maps[0].new, df->maps);
          df->maps = NULL;
          df->nmaps = 0;
        }
    }
  free_all (votes, bb, fa, fb);
  return own;
}

/* The longest directory that holds every file of side K ("/" at
   least); a malloc'd string.  */
static char *
side_root (const struct diff *df, int k)
{
  size_t n;
  const char **v = side_files (df, k, &n);
  size_t len = 0;
  if (n)
    {
      const char *x = v[0];
      len = strrchr (x, '/') ? (size_t) (strrchr (x, '/') - x) : 0;
      for (size_t i = 1; i < n; i++)
        while (len > 0 && !(strncmp (v[i], x, len) == 0 && v[i][len] == '/'))
          {
            while (len > 0 && x[len - 1] != '/')
              len--;
            if (len > 0)
              len--; /* the slash */
          }
    }
  char *root = xmalloc (len + 2);
  if (len)
    memcpy (root, v[0], len);
  strcpy (root + len, len ? "" : "/");
  free (v);
  return root;
}

/* Read the --map values MAPS into DF: "OLD=NEW", each made absolute
   against the current directory.  Returns 0, or the usage error's
   status.  */
int
diff_take_maps (struct diff *df, const char **maps, size_t nmaps)
{
  if (!nmaps)
    return 0;
  char cwd[4096];
  if (!getcwd (cwd, sizeof cwd))
    cwd[0] = 0;
  df->maps = xcalloc (nmaps, sizeof *df->maps);
  for (size_t i = 0; i < nmaps; i++)
    {
      const char *eq = strchr (maps[i], '=');
      if (!eq || eq == maps[i] || !eq[1])
        return cli_usage ("diff", "--map needs OLD=NEW, two directories, "
                          "not '%s'", maps[i]);
      char *old = xmalloc ((size_t) (eq - maps[i]) + 1);
      memcpy (old, maps[i], (size_t) (eq - maps[i]));
      old[eq - maps[i]] = 0;
      struct pmap *m = &df->maps[df->nmaps++];
      m->old = cov_resolve_path (cwd, old);
      m->new = cov_resolve_path (cwd, eq + 1);
      free (old);
      /* The root directory is the empty prefix.  */
      if (strcmp (m->old, "/") == 0)
        m->old[0] = 0;
      if (strcmp (m->new, "/") == 0)
        m->new[0] = 0;
    }
  return 0;
}

/* Say on stderr how A and B were paired when it is not by the files' own
   paths, and when nothing pairs.  */
void
diff_pairing_notes (const struct diff *df, size_t own, size_t paired,
                    size_t both)
{
  size_t na = 0, nb = 0;
  for (size_t i = 0; i < df->nents; i++)
    {
      if (df->ents[i].k)
        nb++;
      else
        na++;
    }
  if (df->inferred)
    fprintf (stderr, "tally: note: diff: A's files under %s are paired with "
             "B's under %s (%zu source %s so, %zu by %s own path); "
             "--map=OLD=NEW pairs otherwise\n",
             *df->maps[0].old ? df->maps[0].old : "/",
             *df->maps[0].new ? df->maps[0].new : "/", paired,
             plural (paired, "file pairs", "files pair"), own,
             plural (own, "its", "their"));
  if (!both && na && nb)
    {
      char *ra = side_root (df, 0), *rb = side_root (df, 1);
      if (df->nmaps && !df->inferred)
        fprintf (stderr, "tally: warning: diff: no function of A is in B, "
                 "with the --map given (A's files are under %s, B's under "
                 "%s)\n", ra, rb);
      else
        fprintf (stderr, "tally: warning: diff: no function of A is in B "
                 "(A's files are under %s, B's under %s); if they are one "
                 "program in two places, --map=%s=%s pairs them\n", ra, rb,
                 ra, rb);
      free_all (ra, rb);
    }
}
