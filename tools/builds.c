/* Modules of one source built with settings whose counts do not add up
 * (builds.h).
 *
 * A source is its module record's source file made absolute against the
 * compiler's directory (a tally_fileset of hide.h numbers them).  The
 * first setting seen for a source and the file it came from are kept; the
 * first other setting of each source is the conflict reported.
 *
 * The same source in another checkout (the program built in two
 * worktrees, late in one and early in the other) has another absolute
 * path; its path below its data file's root (the directory holding every
 * source of that file's modules) is the same, so that path is a second
 * key: a module whose path below its file's root is an earlier module's
 * in another place, built with other settings, is a conflict too.  */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <string.h>

#include "builds.h"
#include "cli.h"
#include "coverage.h"
#include "hide.h"
#include "tally/abi.h"

struct build_slot
{
  const char *source;     /* the fileset's */
  uint32_t flags, kind;   /* first seen */
  const char *path;       /* its data file (the caller's string) */
  int conflict;           /* another kind was seen: */
  uint32_t other_flags;
  const char *other_path;
  const char *other_source; /* NULL, or the same file in another
                               checkout (the fileset's) */
  size_t order;           /* when the conflict was seen, for the message */
};

struct tally_builds
{
  struct tally_fileset *sources;
  struct build_slot *slots; /* by the source's number in SOURCES */
  size_t cap, used, conflicts;
  struct tally_fileset *below; /* sources by their path below their data
                                  file's root */
  size_t *below_slot;          /* by the number in BELOW: the slot of the
                                  first source seen there */
  size_t below_cap;
};

uint32_t
tally_builds_kind (uint32_t flags)
{
  uint32_t kind = flags & (TALLY_MOD_AT_EARLY | TALLY_MOD_AT_LATE
                           | TALLY_MOD_HOOKS_USER | TALLY_MOD_HOOKS_NONE
                           | TALLY_MOD_BLOCKS_COUNT | TALLY_MOD_BLOCKS_VISITED);
  /* Inline hooks and runtime calls count the same entries.  */
  if (flags & (TALLY_MOD_HOOKS_INLINE | TALLY_MOD_HOOKS_CALL))
    kind |= TALLY_MOD_HOOKS_INLINE;
  return kind;
}

struct tally_builds *
tally_builds_new (void)
{
  struct tally_builds *b = xcalloc (1, sizeof *b);
  b->sources = tally_fileset_new ();
  b->below = tally_fileset_new ();
  return b;
}

char *
tally_sources_root (const struct tally_data *d)
{
  char *root = NULL;
  size_t len = 0;
  for (uint32_t i = 0; i < d->nmodules; i++)
    {
      char *src = cov_resolve_path (d->modules[i].directory,
                                    d->modules[i].source);
      if (!root)
        {
          root = src;
          char *slash = strrchr (root, '/');
          len = slash ? (size_t) (slash - root) : 0;
          continue;
        }
      /* Up to the last directory the two share.  */
      while (len > 0 && !(strncmp (src, root, len) == 0 && src[len] == '/'))
        {
          while (len > 0 && root[len - 1] != '/')
            len--;
          if (len > 0)
            len--;
        }
      free (src);
    }
  if (!root || root[0] != '/')
    {
      free (root);
      return NULL;
    }
  root[len] = 0;
  return root; /* "" for the root directory */
}

/* Note on slot S, if it has none yet, the conflict with a module of
   flags FLAGS read from PATH (SOURCE: the same file in another
   checkout, or NULL).  */
static void
conflict (struct tally_builds *b, struct build_slot *s, uint32_t flags,
          const char *path, const char *source)
{
  if (s->conflict)
    return;
  s->conflict = 1;
  s->other_flags = flags;
  s->other_path = path;
  s->other_source = source;
  s->order = b->conflicts++;
}

void
tally_builds_add (struct tally_builds *b, const char *path,
                  const struct tally_data *d)
{
  char *root = tally_sources_root (d);
  for (uint32_t i = 0; i < d->nmodules; i++)
    {
      const struct tally_data_module *m = &d->modules[i];
      int added;
      size_t k = tally_fileset_put (b->sources, m->directory, m->source,
                                    &added);
      uint32_t kind = tally_builds_kind (m->flags);
      if (added)
        {
          b->slots = xgrow (b->slots, &b->cap, k + 1, sizeof *b->slots);
          b->slots[k] = (struct build_slot) {
            .source = tally_fileset_path (b->sources, k),
            .flags = m->flags, .kind = kind, .path = path };
          b->used = k + 1;
        }
      else if (b->slots[k].kind != kind)
        conflict (b, &b->slots[k], m->flags, path, NULL);
      if (!root)
        continue;
      /* Its path below the file's root: the same in another checkout.  */
      const char *source = b->slots[k].source;
      size_t n = strlen (root);
      if (strncmp (source, root, n) != 0 || source[n] != '/')
        continue; /* not an absolute path below it */
      size_t r = tally_fileset_put (b->below, NULL, source + n + 1, &added);
      if (added)
        {
          b->below_slot = xgrow (b->below_slot, &b->below_cap, r + 1,
                                 sizeof *b->below_slot);
          b->below_slot[r] = k;
          continue;
        }
      struct build_slot *first = &b->slots[b->below_slot[r]];
      if (first->source != source && first->kind != kind)
        conflict (b, first, m->flags, path, source);
    }
  free (root);
}

/* "at=early hooks=call blocks=count" of module flags FLAGS.  */
static void
describe (char *buf, size_t size, uint32_t flags)
{
  snprintf (buf, size, "at=%s hooks=%s blocks=%s",
            flags & TALLY_MOD_AT_EARLY ? "early" : "late",
            flags & TALLY_MOD_HOOKS_CALL ? "call"
            : flags & TALLY_MOD_HOOKS_USER ? "user"
            : flags & TALLY_MOD_HOOKS_NONE ? "none" : "inline",
            flags & TALLY_MOD_BLOCKS_COUNT ? "count"
            : flags & TALLY_MOD_BLOCKS_VISITED ? "visited" : "none");
}

static int
by_order (const void *pa, const void *pb)
{
  const struct build_slot *a = *(const struct build_slot *const *) pa;
  const struct build_slot *b = *(const struct build_slot *const *) pb;
  return (a->order > b->order) - (a->order < b->order);
}

int
tally_builds_check (const struct tally_builds *b, const char *what, int force)
{
  if (!b->conflicts)
    return 0;
  const struct build_slot **list = xcalloc (b->conflicts, sizeof *list);
  size_t n = 0;
  for (size_t i = 0; i < b->used; i++)
    if (b->slots[i].conflict)
      list[n++] = &b->slots[i];
  qsort (list, n, sizeof *list, by_order);
  /* The first few, in the order they were met; the rest counted.  */
  size_t shown = n < 5 ? n : 5;
  for (size_t i = 0; i < shown; i++)
    {
      char one[96], other[96];
      describe (one, sizeof one, list[i]->flags);
      describe (other, sizeof other, list[i]->other_flags);
      if (list[i]->other_source)
        fprintf (stderr, "tally: %s%s: %s was built with %s (%s) and %s, "
                 "the same file in another checkout, with %s (%s)\n",
                 force ? "warning: " : "", what, list[i]->source, one,
                 list[i]->path, list[i]->other_source, other,
                 list[i]->other_path);
      else
        fprintf (stderr, "tally: %s%s: %s was built with %s (%s) and with "
                 "%s (%s)\n", force ? "warning: " : "", what,
                 list[i]->source, one, list[i]->path, other,
                 list[i]->other_path);
    }
  if (n > shown)
    fprintf (stderr, "tally: %s%s: and %zu more sources built with other "
             "settings\n", force ? "warning: " : "", what, n - shown);
  if (force)
    fprintf (stderr, "tally: warning: %s: --force: their counts are summed "
             "although they do not count the same things\n", what);
  else
    fprintf (stderr, "tally: %s: counts of builds with other at=, hooks= "
             "or blocks= settings do not add up; read them apart, or pass "
             "--force to sum them anyway\n", what);
  free (list);
  return force ? 0 : -1;
}

void
tally_builds_free (struct tally_builds *b)
{
  if (!b)
    return;
  tally_fileset_free (b->sources);
  tally_fileset_free (b->below);
  free (b->slots);
  free (b->below_slot);
  free (b);
}
