/* summed.c - the files of `tally report` and `tally lcov` summed per
 * function body and folded into rows (summed.h).  */
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
#include "freeall.h"
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

static uint64_t
hash_key (const char *const key[3])
{
  uint64_t h = 0xcbf29ce484222325u; /* FNV-1a */
  for (int i = 0; i < 3; i++)
    {
      /* Include the terminator, so ("ab", "c") and ("a", "bc") differ.  */
      const unsigned char *s = (const unsigned char *) (key[i] ? key[i] : "");
      do
        h = (h ^ *s) * 0x100000001b3u;
      while (*s++);
    }
  return h;
}

static int
key_eq (const char *const a[3], const char *const b[3])
{
  for (int i = 0; i < 3; i++)
    if (strcmp (a[i] ? a[i] : "", b[i] ? b[i] : "") != 0)
      return 0;
  return 1;
}

/* The slot holding KEY, or the empty slot where it would go.  */
static struct slot *
table_probe (const struct table *t, const char *const key[3], uint64_t h)
{
  size_t i = (size_t) h & (t->size - 1);
  while (t->slots[i].used
         && !(t->slots[i].hash == h && key_eq (t->slots[i].key, key)))
    i = (i + 1) & (t->size - 1);
  return &t->slots[i];
}

/* Find KEY.  On a miss the result is the empty slot where KEY belongs; the
   caller fills it in with table_fill, as the table has room for it.  */
static struct slot *
table_find (struct table *t, const char *const key[3], uint64_t *hash)
{
  /* Keep the load under a half, so probe sequences stay short.  */
  if (t->count + 1 > t->size / 2)
    {
      struct table nt;
      nt.size = t->size ? t->size * 2 : 64;
      if (nt.size > SIZE_MAX / sizeof *nt.slots)
        {
          error_msg ("out of memory");
          exit (EXIT_BAD_DATA);
        }
      nt.count = t->count;
      nt.slots = xmalloc (nt.size * sizeof *nt.slots);
      memset (nt.slots, 0, nt.size * sizeof *nt.slots);
      for (size_t i = 0; i < t->size; i++)
        if (t->slots[i].used)
          *table_probe (&nt, t->slots[i].key, t->slots[i].hash)
            = t->slots[i];
      free (t->slots);
      *t = nt;
    }
  *hash = hash_key (key);
  return table_probe (t, key, *hash);
}

/* Store KEY, whose strings must outlive the table, in the empty slot S that
   table_find returned.  */
static void
table_fill (struct table *t, struct slot *s, uint64_t hash,
            const char *const key[3], size_t value)
{
  s->used = 1;
  s->hash = hash;
  memcpy (s->key, key, sizeof s->key);
  s->value = value;
  t->count++;
}

/* A function body's symbol differs from its origin exactly when it is a
   clone or split part; the plugin also sets TALLY_FN_CLONE on those, but
   the names are what the folding relies on.  */
int
is_clone (const struct body *f)
{
  return strcmp (f->symbol, f->origin) != 0;
}

static void
merge_fn (struct merge *m, size_t bi, int by_body)
{
  const struct body *f = &m->bodies[bi];
  const char *key[3] = { by_body ? f->symbol : f->origin, f->file, NULL };
  int clone = is_clone (f);
  uint64_t h;
  struct slot *s = table_find (&m->by_key, key, &h);
  struct row *r;
  if (s->used)
    r = &m->rows[s->value];
  else
    {
      m->rows = xgrow (m->rows, &m->rows_cap, m->nrows + 1, sizeof *m->rows);
      r = &m->rows[m->nrows];
      memset (r, 0, sizeof *r);
      r->name = xstrdup (f->name);
      r->symbol = xstrdup (key[0]);
      r->origin = xstrdup (f->origin);
      r->file = xstrdup (f->file);
      r->directory = xstrdup (f->directory);
      r->line = f->line;
      r->has_origin_body = !clone;
      r->clone_body = by_body && clone;
      /* Key the table by the row's copies.  */
      const char *own[3] = { r->symbol, r->file, NULL };
      table_fill (&m->by_key, s, h, own, m->nrows++);
    }
  if (!clone && !r->has_origin_body)
    {
      /* A clone was seen first; the origin's own body names the row
         better.  */
      free (r->name);
      r->name = xstrdup (f->name);
      r->line = f->line;
      r->has_origin_body = 1;
    }
  r->calls = add_sat (r->calls, f->calls);
  r->exits = add_sat (r->exits, f->exits);
  m->calls = add_sat (m->calls, f->calls);
  m->exits = add_sat (m->exits, f->exits);
  r->bodies = xgrow (r->bodies, &r->bodies_cap, r->nbodies + 1,
                     sizeof *r->bodies);
  r->bodies[r->nbodies++] = bi;
  if (f->measured)
    {
      r->incl = add_sat (r->incl, f->meas[0]);
      r->excl = add_sat (r->excl, f->meas[1]);
      m->excl = add_sat (m->excl, f->meas[1]);
      for (unsigned e = 0; e < m->nev; e++)
        {
          r->ev[e][0] = add_sat (r->ev[e][0], f->meas[2 + 2 * e]);
          r->ev[e][1] = add_sat (r->ev[e][1], f->meas[3 + 2 * e]);
        }
    }

  if (clone && !by_body)
    {
      const char *ckey[3] = { f->symbol, r->origin, r->file };
      s = table_find (&m->clone_set, ckey, &h);
      if (!s->used)
        {
          r->clones = xgrow (r->clones, &r->clones_cap, r->nclones + 1,
                             sizeof *r->clones);
          char *sym = xstrdup (f->symbol);
          r->clones[r->nclones++] = sym;
          const char *own[3] = { sym, r->origin, r->file };
          table_fill (&m->clone_set, s, h, own, 0);
        }
    }
}

static void *
xdup_bytes (const void *p, size_t n)
{
  return memcpy (xmalloc (n), p, n);
}

/* Add the record F, function INDEX of module MOD, to the body of the same
   build, or start a new body.  */
static void add_body_meas (struct merge *m, struct body *b,
                           const struct tally_data_fn *f, unsigned nvalues);

static void
add_body (struct merge *m, const struct tally_data_module *mod,
          uint32_t index, const struct tally_data_fn *f, unsigned nvalues)
{
  char ckey[17];
  snprintf (ckey, sizeof ckey, "%016" PRIx64, mod->checksum);
  const char *key[3] = { f->symbol, mod->source, ckey };
  uint64_t h;
  struct slot *s = table_find (&m->body_key, key, &h);
  if (s->used)
    {
      struct body *b = &m->bodies[s->value];
      if (b->ncounters == f->ncounters && b->map_size == f->map_size
          && b->mod_flags == mod->flags
          && (!b->map_size || memcmp (b->map, f->map, b->map_size) == 0))
        {
          for (uint32_t k = 0; k < f->ncounters; k++)
            b->counters[k] = add_sat (b->counters[k], f->counters[k]);
          add_body_meas (m, b, f, nvalues);
          return;
        }
      /* Same key, other contents (should not happen for one build): keep
         it apart, unkeyed.  */
      s = NULL;
    }
  m->bodies = xgrow (m->bodies, &m->bodies_cap, m->nbodies + 1,
                     sizeof *m->bodies);
  struct body *b = &m->bodies[m->nbodies];
  memset (b, 0, sizeof *b);
  b->name = xstrdup (f->name);
  b->symbol = xstrdup (f->symbol);
  b->origin = xstrdup (f->origin);
  b->file = xstrdup (f->file);
  b->source = xstrdup (mod->source);
  b->directory = xstrdup (mod->directory);
  b->ckey = xstrdup (ckey);
  b->line = f->line;
  b->index = index;
  b->flags = f->flags;
  b->mod_flags = mod->flags;
  b->ncounters = f->ncounters;
  b->counters = xdup_bytes (f->counters, f->ncounters * sizeof *f->counters);
  b->map_size = f->map_size;
  b->map = f->map_size ? (unsigned char *) xdup_bytes (f->map, f->map_size)
                       : NULL;
  add_body_meas (m, b, f, nvalues);
  if (s)
    {
      const char *own[3] = { b->symbol, b->source, b->ckey };
      table_fill (&m->body_key, s, h, own, m->nbodies);
    }
  m->nbodies++;
}

/* Add F's measured values (NVALUES of them: cycles, then the file's
   events, mapped to struct merge.ev_names by merge_file) to body B.  */
static void
add_body_meas (struct merge *m, struct body *b, const struct tally_data_fn *f,
               unsigned nvalues)
{
  if (!f->meas)
    return;
  b->measured = 1;
  b->meas[0] = add_sat (b->meas[0], f->meas[0]);
  b->meas[1] = add_sat (b->meas[1], f->meas[1]);
  for (unsigned k = 0; k + 1 < nvalues; k++)
    {
      unsigned e = m->ev_map[k];
      if (e < TALLY_MAX_MEAS)
        {
          b->meas[2 + 2 * e] = add_sat (b->meas[2 + 2 * e], f->meas[2 * (k + 1)]);
          b->meas[3 + 2 * e] = add_sat (b->meas[3 + 2 * e],
                                        f->meas[2 * (k + 1) + 1]);
        }
    }
}

/* Check the block maps of D (naming PATH in messages) and add its records
   to the bodies.  Returns 0, or -1 after reporting a bad map.  */
static int
merge_file (struct merge *m, const char *path, const struct tally_data *d)
{
  char err[512];
  if (tally_data_check_maps (d, err, sizeof err) != 0)
    {
      error_msg ("%s: %s", path, err);
      return -1;
    }
  m->files = xgrow (m->files, &m->files_cap, m->nfiles + 1,
                    sizeof *m->files);
  struct file_info *fi = &m->files[m->nfiles++];
  fi->path = path;
  fi->program = xstrdup (d->program);
  fi->pid = d->pid;
  fi->time = d->time;
  fi->nmodules = d->nmodules;
  m->nmodules += d->nmodules;
  if (d->nmeas)
    m->measured = 1;
  /* The file's events (values after the cycles), by name.  */
  for (uint32_t k = 1; k < d->nmeas; k++)
    {
      unsigned e = 0;
      while (e < m->nev && strcmp (m->ev_names[e], d->meas_names[k]) != 0)
        e++;
      if (e == m->nev && m->nev < TALLY_MAX_MEAS)
        m->ev_names[m->nev++] = xstrdup (d->meas_names[k]);
      m->ev_map[k - 1] = e < m->nev ? e : TALLY_MAX_MEAS;
    }
  for (uint32_t i = 0; i < d->nmodules; i++)
    {
      m->user_modules += (d->modules[i].flags & TALLY_MOD_HOOKS_USER) != 0;
      m->plain_modules += !(d->modules[i].flags & (TALLY_MOD_BLOCKS_COUNT
                                                   | TALLY_MOD_BLOCKS_VISITED));
      for (uint32_t j = 0; j < d->modules[i].nfns; j++)
        add_body (m, &d->modules[i], j, &d->modules[i].fns[j], d->nmeas);
    }
  return 0;
}

/* The bodies qsort orders (by_module).  */
static const struct body *sorted_bodies;

/* Bodies by module build (checksum, source), then function index.  */
static int
by_module (const void *pa, const void *pb)
{
  const struct body *a = &sorted_bodies[*(const size_t *) pa];
  const struct body *b = &sorted_bodies[*(const size_t *) pb];
  int c = strcmp (a->ckey, b->ckey);
  if (!c)
    c = strcmp (a->source, b->source);
  if (!c)
    c = a->index < b->index ? -1 : a->index > b->index;
  if (!c)
    c = (*(const size_t *) pa > *(const size_t *) pb)
        - (*(const size_t *) pa < *(const size_t *) pb);
  return c;
}

/* Decode and solve every body's map, the bodies of one module build
   together: a kind 6 body's entry count is the sum of blocks of other
   bodies of its build (tally_module_solve), found by their function index
   in the module record.  */
static void
solve_bodies (struct merge *m)
{
  size_t *idx = xmalloc ((m->nbodies ? m->nbodies : 1) * sizeof *idx), n = 0;
  for (size_t i = 0; i < m->nbodies; i++)
    if (m->bodies[i].map)
      idx[n++] = i;
  sorted_bodies = m->bodies;
  qsort (idx, n, sizeof *idx, by_module);
  for (size_t g = 0, h; g < n; g = h)
    {
      const struct body *first = &m->bodies[idx[g]];
      for (h = g + 1; h < n; h++)
        if (strcmp (m->bodies[idx[h]].ckey, first->ckey) != 0
            || strcmp (m->bodies[idx[h]].source, first->source) != 0)
          break;
      uint32_t nfns = m->bodies[idx[h - 1]].index + 1;
      const struct tally_blockmap **maps = xcalloc (nfns, sizeof *maps);
      const uint64_t **values = xcalloc (nfns, sizeof *values);
      uint32_t *nvalues = xcalloc (nfns, sizeof *nvalues);
      struct tally_flow *flows = xcalloc (nfns, sizeof *flows);
      for (size_t k = g; k < h; k++)
        {
          struct body *b = &m->bodies[idx[k]];
          char err[256];
          /* Checked when read: this cannot fail.  */
          if (tally_map_decode (b->map, b->map_size, b->ncounters, &b->bm,
                                err, sizeof err) != 0)
            {
              error_msg ("internal error: %s: %s", b->symbol, err);
              exit (EXIT_BAD_DATA);
            }
          if (!maps[b->index])
            {
              maps[b->index] = &b->bm;
              values[b->index] = b->counters;
              nvalues[b->index] = b->ncounters;
            }
        }
      tally_module_solve (nfns, maps, values, nvalues, flows);
      for (size_t k = g; k < h; k++)
        {
          struct body *b = &m->bodies[idx[k]];
          if (maps[b->index] == &b->bm)
            b->flow = flows[b->index];
          else
            /* Another body at the same index (a record of the same key
               but other contents, kept apart): solved alone, its callers
               unknown.  */
            tally_flow_solve (&b->bm, b->counters, b->ncounters, &b->flow);
          b->solved = 1;
        }
      free_all (maps, values, nvalues, flows);
    }
  free (idx);
}

/* Solve every body's map, set its calls and exits (derived from the
   blocks where the plugin did not count them), and fold the bodies into
   rows.  */
static void
merge_finish (struct merge *m, int by_body)
{
  solve_bodies (m);
  for (size_t i = 0; i < m->nbodies; i++)
    {
      struct body *b = &m->bodies[i];
      b->calls = b->counters[TALLY_C_ENTRIES];
      b->exits = b->counters[TALLY_C_EXITS];
      if (b->solved)
        {
          if (b->mod_flags & (TALLY_MOD_UPDATE_ATOMIC | TALLY_MOD_UPDATE_TLS))
            m->inconsistent += b->flow.negative;
          else
            m->negative += b->flow.negative;
          if ((b->flags & TALLY_FN_CALLS_DERIVED)
              && b->bm.kind != TALLY_MAP_VISITED)
            {
              b->calls = b->flow.entries;
              b->exits = b->flow.exits;
              if (!b->flow.entries_known || !b->flow.exits_known)
                {
                  b->calls_unknown = 1;
                  m->underived++;
                }
            }
        }
      merge_fn (m, i, by_body);
    }
}

/* What row R owns.  */
static void
row_free (struct row *r)
{
  free_all (r->name, r->symbol, r->origin, r->file, r->directory);
  for (size_t k = 0; k < r->nclones; k++)
    free (r->clones[k]);
  free_all (r->clones, r->bodies);
}

void
merge_free (struct merge *m)
{
  for (size_t i = 0; i < m->nrows; i++)
    row_free (&m->rows[i]);
  for (size_t i = 0; i < m->nbodies; i++)
    {
      struct body *b = &m->bodies[i];
      free_all (b->name, b->symbol, b->origin, b->file, b->source, b->ckey,
                b->directory, b->counters, b->map);
      if (b->solved)
        {
          tally_map_free (&b->bm);
          tally_flow_free (&b->flow);
        }
    }
  free_all (m->bodies, m->body_key.slots, m->rows, m->by_key.slots,
            m->clone_set.slots);
  for (size_t i = 0; i < m->nfiles; i++)
    free (m->files[i].program);
  for (unsigned e = 0; e < m->nev; e++)
    free ((char *) m->ev_names[e]);
  free (m->files);
}

static int
merge_one (void *m, const char *path, struct tally_data *d, int bad)
{
  return !bad && merge_file (m, path, d) != 0;
}

/* Read every file in PATHS into M, reporting each bad one.  Returns 0, or
   EXIT_BAD_DATA if any was bad (M then holds nothing useful).  */
int
merge_paths (struct merge *m, const char **paths, size_t npaths, int by_body)
{
  /* Read every file before printing anything: a report missing one of
     them would look complete.  Each file is merged and dropped at once, so
     memory follows the number of distinct functions, not of files.  */
  if (read_files (paths, npaths, m->what, m->force, merge_one, m) != 0)
    return EXIT_BAD_DATA;
  merge_finish (m, by_body);
  return 0;
}

/* Whether body B is a function defined in a system header.  */
static int
body_system (const struct body *b)
{
  return tally_system_fn (b->mod_flags, b->flags, b->directory, b->file);
}

/* Leave out the rows of functions defined in system headers (every body
   of the row): all of them with CALLED_TOO, else those never called.  */
void
merge_hide_system (struct merge *m, int called_too)
{
  size_t kept = 0;
  for (size_t i = 0; i < m->nrows; i++)
    {
      struct row *r = &m->rows[i];
      int sys = r->nbodies > 0;
      for (size_t k = 0; k < r->nbodies && sys; k++)
        sys = body_system (&m->bodies[r->bodies[k]]);
      if (sys && !called_too)
        for (size_t k = 0; k < r->nbodies && sys; k++)
          sys = !m->bodies[r->bodies[k]].calls_unknown;
      if (!sys || (!called_too && (r->calls || r->exits || r->incl)))
        {
          m->rows[kept++] = *r;
          continue;
        }
      row_free (r);
    }
  /* The row tables are not looked in after merge_finish.  */
  m->hidden = m->nrows - kept;
  m->nrows = kept;
}

/* Leave out of C the system headers' files (as merge_hide_system judges
   M's bodies, and code of headers in the system include directories
   inlined into other functions).  */
void
cov_hide_system (const struct merge *m, struct cov_result *c)
{
  struct tally_fileset *sys = tally_fileset_new ();
  struct tally_fileset *user = tally_fileset_new ();
  for (size_t i = 0; i < m->nbodies; i++)
    {
      const struct body *b = &m->bodies[i];
      tally_fileset_add (body_system (b) ? sys : user, b->directory, b->file);
    }
  tally_cov_drop_system (c, sys, user);
  tally_fileset_free (sys);
  tally_fileset_free (user);
}

/* Notes on stderr about counts the report could not take as they are.  */
void
merge_notes (const struct merge *m)
{
  if (m->negative)
    fprintf (stderr, "tally: warning: %" PRIu64 " block or edge %s came out "
             "negative and %s shown as 0 (update=single counts from several "
             "threads race, or a dump read them while other threads were "
             "counting; use update=atomic or tls)\n", m->negative,
             plural (m->negative, "count", "counts"),
             plural (m->negative, "is", "are"));
  if (m->inconsistent)
    fprintf (stderr, "tally: warning: %" PRIu64 " block or edge %s of "
             "update=atomic or tls code came out negative and %s shown as 0 "
             "(the counts are not those of one moment: a dump read them while "
             "other threads were counting, or the file was altered)\n",
             m->inconsistent, plural (m->inconsistent, "count", "counts"),
             plural (m->inconsistent, "is", "are"));
  if (m->underived)
    fprintf (stderr, "tally: warning: the entries of %zu %s cannot be derived "
             "from %s block counts (an older plugin's placement=block left "
             "some edges undetermined, or the calls of a function whose "
             "entries come from its callers are not all known); %s 0\n",
             m->underived,
             m->underived == 1 ? "function" : "functions",
             m->underived == 1 ? "its" : "their",
             m->underived == 1 ? "it shows" : "they show");
}

/* The bodies of M that have solved maps, for cov_compute; as in gcov, not
   those the compiler made (TALLY_FN_ARTIFICIAL).  */
struct cov_body *
cov_bodies (const struct merge *m, size_t *n)
{
  struct cov_body *cb = xmalloc ((m->nbodies ? m->nbodies : 1) * sizeof *cb);
  *n = 0;
  for (size_t i = 0; i < m->nbodies; i++)
    if (m->bodies[i].solved && !(m->bodies[i].flags & TALLY_FN_ARTIFICIAL))
      {
        cb[*n].map = &m->bodies[i].bm;
        cb[*n].flow = &m->bodies[i].flow;
        cb[*n].directory = m->bodies[i].directory;
        cb[*n].fn_file = m->bodies[i].file;
        cb[*n].fn_line = m->bodies[i].line;
        (*n)++;
      }
  return cb;
}
