/* Where a finished data file goes when its name is meant to be one
 * process's own: a TALLY_OUTPUT with %p (the default, tally.%p.data) and
 * no %m.
 *
 * A pid names one process only while it runs.  A test suite starting
 * hundreds of processes wraps the pids, a pid namespace (a container, a
 * build sandbox) starts at 1 every time, an exec keeps the pid, and a file
 * from an earlier session may lie in the directory: a plain rename over
 * PATH would silently replace another process's counts.  So:
 *
 * 1. A PATH this process placed itself, still the same file (device and
 *    inode), is replaced (rename): a process dumping again, tally_dump()
 *    and then the exit dump.
 * 2. Otherwise the file is linked in under PATH, or if something is there
 *    under PATH-2, PATH-3, ... ("tally.1234-2.data": the number goes before
 *    the last extension of the file name, so tally.*.data still matches),
 *    the first name that is free; link(2) fails if the name exists, so two
 *    processes can never take the same name.  The temporary name is then
 *    removed.  Where links are not supported, renameat2(RENAME_NOREPLACE)
 *    does the same; where neither is, the file is renamed over PATH as
 *    before.
 * 3. The name taken is remembered for the next dumps of this process (a
 *    forked child has another pid, so another PATH).
 *
 * A name without %p (a fixed TALLY_OUTPUT) keeps being replaced: that is
 * what a user who names one file for every run asks for.  */
#include <errno.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rt.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE 1
#endif
#ifndef AT_FDCWD
#define AT_FDCWD -100
#endif

/* The last file this process placed: the PATH asked for, the name taken,
   its device and inode.  */
static char asked[4096];
static char taken[4096 + 32];
static dev_t taken_dev;
static ino_t taken_ino;

int
tally_rt_pattern_unique (const char *pattern, int merge)
{
  if (merge)
    return 0;
  for (const char *p = pattern; *p; p++)
    if (*p == '%')
      {
        if (p[1] == 'p')
          return 1;
        if (p[1])
          p++; /* %%, %h, ...: skip the letter */
      }
  return 0;
}

static size_t
copy (char *dst, size_t pos, size_t cap, const char *s, size_t n)
{
  for (size_t i = 0; i < n && s[i] && pos + 1 < cap; i++)
    dst[pos++] = s[i];
  dst[pos] = 0;
  return pos;
}

/* PATH with "-N" before the last extension of its file name.  */
static void
numbered (char *out, size_t cap, const char *path, unsigned n)
{
  const char *base = strrchr (path, '/');
  base = base ? base + 1 : path;
  const char *dot = strrchr (base, '.');
  size_t head = dot && dot > base ? (size_t) (dot - path) : strlen (path);
  char num[1 + 24];
  num[0] = '-';
  tally_rt_utoa (num + 1, n);
  size_t pos = copy (out, 0, cap, path, head);
  pos = copy (out, pos, cap, num, sizeof num);
  copy (out, pos, cap, path + head, strlen (path + head));
}

/* Give TMP the name NAME unless NAME exists.  0, or -1 with errno (EEXIST:
   taken; ENOTSUP: neither links nor RENAME_NOREPLACE here).  */
static int
place_new (const char *tmp, const char *name)
{
  if (syscall (SYS_linkat, AT_FDCWD, tmp, AT_FDCWD, name, 0) == 0)
    {
      unlink (tmp);
      return 0;
    }
  if (errno == EEXIST)
    return -1;
  if (syscall (SYS_renameat2, AT_FDCWD, tmp, AT_FDCWD, name,
               RENAME_NOREPLACE) == 0)
    return 0;
  if (errno == EINVAL || errno == ENOSYS || errno == EPERM
      || errno == EOPNOTSUPP)
    errno = ENOTSUP;
  return -1;
}

static void
remember (const char *path, const char *name)
{
  struct stat st;
  if (stat (name, &st) != 0)
    {
      asked[0] = 0;
      return;
    }
  copy (asked, 0, sizeof asked, path, strlen (path));
  copy (taken, 0, sizeof taken, name, strlen (name));
  taken_dev = st.st_dev;
  taken_ino = st.st_ino;
}

/* The name the last tally_rt_place took (the dump lock serialises them).  */
static char placed[4096 + 32];
#define cap sizeof placed

const char *
tally_rt_placed (void)
{
  return placed;
}

int
tally_rt_place (const char *tmp, const char *path, int unique)
{
  copy (placed, 0, cap, path, strlen (path));
  if (!unique)
    return rename (tmp, path);

  /* 1. Ours from an earlier dump of this process.  */
  struct stat st;
  if (asked[0] && strcmp (asked, path) == 0 && stat (taken, &st) == 0
      && st.st_dev == taken_dev && st.st_ino == taken_ino)
    {
      copy (placed, 0, cap, taken, strlen (taken));
      return rename (tmp, taken);
    }

  /* 2. The first free name.  */
  for (unsigned n = 1; n < 100000; n++)
    {
      if (n > 1)
        numbered (placed, cap, path, n);
      if (place_new (tmp, placed) == 0)
        {
          remember (path, placed); /* 3. */
          if (n > 1 && tally_rt_env ("TALLY_VERBOSE"))
            tally_rt_error ("%s holds another process's counts (its pid was "
                            "this one's); writing %s", path, placed);
          return 0;
        }
      if (errno == ENOTSUP)
        {
          copy (placed, 0, cap, path, strlen (path));
          if (rename (tmp, path) != 0)
            return -1;
          remember (path, path);
          return 0;
        }
      if (errno != EEXIST)
        return -1;
    }
  errno = EEXIST;
  return -1;
}
#undef cap
