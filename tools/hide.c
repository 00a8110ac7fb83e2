/* What reports leave out unless --all (hide.h).
 *
 * A system header is what GCC treats as one (in_system_header_at: the
 * directories of -isystem and the default include path), as the plugin
 * records it per function.  Files of older plugins carry no mark; for
 * those, and for lines with no function of their own (code inlined from a
 * header), the default include directories stand in.  */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "hide.h"
#include "tally/abi.h"

static const char *const system_dirs[] = {
  "/usr/include/", "/usr/local/include/", "/usr/lib/gcc/",
};

int
tally_system_path (const char *path)
{
  for (size_t i = 0; i < sizeof system_dirs / sizeof *system_dirs; i++)
    if (strncmp (path, system_dirs[i], strlen (system_dirs[i])) == 0)
      return 1;
  return 0;
}

int
tally_system_fn (uint32_t mod_flags, uint32_t fn_flags,
                 const char *directory, const char *file)
{
  if (mod_flags & TALLY_MOD_SYSTEM_MARKED)
    return (fn_flags & TALLY_FN_SYSTEM) != 0;
  char *path = cov_resolve_path (directory, file);
  int sys = tally_system_path (path);
  free (path);
  return sys;
}

struct tally_fileset
{
  char **paths;  /* in the order they were added */
  size_t n, paths_cap;
  size_t *slots; /* open addressing: 1 + the index into paths, 0 empty */
  size_t cap;
};

static size_t
slot_of (const struct tally_fileset *s, const size_t *slots, size_t cap,
         const char *path)
{
  size_t h = 5381;
  for (const char *p = path; *p; p++)
    h = h * 33 + (unsigned char) *p;
  size_t i = h & (cap - 1);
  while (slots[i] && strcmp (s->paths[slots[i] - 1], path) != 0)
    i = (i + 1) & (cap - 1);
  return i;
}

struct tally_fileset *
tally_fileset_new (void)
{
  struct tally_fileset *s = xcalloc (1, sizeof *s);
  s->cap = 64;
  s->slots = xcalloc (s->cap, sizeof *s->slots);
  return s;
}

size_t
tally_fileset_put (struct tally_fileset *s, const char *directory,
                   const char *file, int *added)
{
  char *path = cov_resolve_path (directory, file);
  size_t i = slot_of (s, s->slots, s->cap, path);
  *added = !s->slots[i];
  if (!*added)
    {
      free (path);
      return s->slots[i] - 1;
    }
  s->paths = xgrow (s->paths, &s->paths_cap, s->n + 1, sizeof *s->paths);
  s->paths[s->n] = path;
  s->slots[i] = ++s->n;
  if (s->n * 2 > s->cap)
    {
      size_t cap = s->cap * 2;
      size_t *slots = xcalloc (cap, sizeof *slots);
      for (size_t k = 0; k < s->n; k++)
        slots[slot_of (s, slots, cap, s->paths[k])] = k + 1;
      free (s->slots);
      s->slots = slots;
      s->cap = cap;
    }
  return s->n - 1;
}

void
tally_fileset_add (struct tally_fileset *s, const char *directory,
                   const char *file)
{
  int added;
  tally_fileset_put (s, directory, file, &added);
}

const char *
tally_fileset_path (const struct tally_fileset *s, size_t index)
{
  return s->paths[index];
}

int
tally_fileset_has (const struct tally_fileset *s, const char *path)
{
  return s->slots[slot_of (s, s->slots, s->cap, path)] != 0;
}

void
tally_fileset_free (struct tally_fileset *s)
{
  if (!s)
    return;
  for (size_t i = 0; i < s->n; i++)
    free (s->paths[i]);
  free (s->paths);
  free (s->slots);
  free (s);
}

size_t
tally_cov_drop_system (struct cov_result *c, const struct tally_fileset *system,
                       const struct tally_fileset *user)
{
  size_t kept = 0;
  for (size_t i = 0; i < c->nfiles; i++)
    {
      struct cov_file *f = &c->files[i];
      if (tally_fileset_has (system, f->path)
          || (tally_system_path (f->path) && !tally_fileset_has (user, f->path)))
        {
          free (f->path);
          free (f->lines);
          free (f->branches);
          continue;
        }
      c->files[kept++] = *f;
    }
  size_t dropped = c->nfiles - kept;
  c->nfiles = kept;
  return dropped;
}
