/* A dump's file from its temporary to its place (tally_rt_open_tmp,
 * tally_rt_finish_file, at the end), and where a finished data file goes
 * when its name is meant to be one process's own: a TALLY_OUTPUT with %p
 * (the default, tally.%p.data) and no %m.
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
 * 2. Otherwise the file goes under PATH, or if something is there
 *    under PATH-2, PATH-3, ... ("tally.1234-2.data": the number goes before
 *    the last extension of the file name, so tally.*.data still matches),
 *    the first name that is free, through outfile.c's commit, which puts
 *    a file under a free name with renameat2(RENAME_NOREPLACE) (or a link)
 *    and checks every name it would replace.
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

/* Whether NAME exists (as anything: a link is not followed).  */
static int
exists (const char *name)
{
  struct stat st;
#if defined __x86_64__ || defined __aarch64__
  return syscall (SYS_newfstatat, AT_FDCWD, name, &st, AT_SYMLINK_NOFOLLOW) == 0
         || errno != ENOENT;
#else
  return fstatat (AT_FDCWD, name, &st, AT_SYMLINK_NOFOLLOW) == 0
         || errno != ENOENT;
#endif
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
    return tally_rt_out_commit (tmp, path);

  /* 1. Ours from an earlier dump of this process.  */
  struct stat st;
  if (asked[0] && strcmp (asked, path) == 0 && stat (taken, &st) == 0
      && st.st_dev == taken_dev && st.st_ino == taken_ino)
    {
      copy (placed, 0, cap, taken, strlen (taken));
      return tally_rt_out_commit (tmp, taken);
    }

  /* 2. The first free name (outfile.c's commit puts the file there with
     RENAME_NOREPLACE, or a link, so that a name taken meanwhile is not
     replaced but looked at).  */
  for (unsigned n = 1; n < 100000; n++)
    {
      if (n > 1)
        numbered (placed, cap, path, n);
      if (exists (placed))
        continue;
      if (tally_rt_out_commit (tmp, placed) != 0)
        return -1; /* reported */
      remember (path, placed); /* 3. */
      if (n > 1 && tally_rt_env ("TALLY_VERBOSE"))
        tally_rt_error ("%s holds another process's counts (its pid was "
                        "this one's); writing %s", path, placed);
      return 0;
    }
  tally_rt_error ("cannot write %s: it and %s-2 to -99999 all exist; no data "
                  "written", path, path);
  errno = EEXIST;
  return -1;
}
#undef cap

/* Create PATH.tmp.RANDOM for writing (outfile.c); its name goes to TMP.
   Returns the descriptor, or -1 (reported, errno set).  PATH is looked at
   first: one that must not be written is refused (outfile.c says which);
   a FIFO or character device (/dev/null) is written in place instead, TMP
   left empty: renaming over it would replace the device with a file.  */
int
tally_rt_open_tmp (const char *path, char *tmp, size_t cap)
{
  int inplace;
  tmp[0] = 0;
  if (tally_rt_out_check (path, &inplace) != 0)
    return -1;
  if (inplace)
    return tally_rt_out_inplace (path);
  int fd = tally_rt_out_tmp (path, tmp, cap, 0);
  if (fd < 0)
    {
      int e = errno;
      tally_rt_error ("cannot create %s: %s (errno %d); no data written",
                      tmp[0] ? tmp : path, tally_rt_errno_text (e), e);
      tmp[0] = 0;
      errno = e;
    }
  return fd;
}

/* Add the trailer, close W's file and rename TMP over PATH (UNIQUE: a
   process's own name, placed by tally_rt_place, above).  Returns 0, or
   -1 (reported, errno set, TMP removed).  */
int
tally_rt_finish_file (struct tally_rt_writer *w, uint64_t file_size,
                      const char *tmp, const char *path, int unique)
{
  /* The CRC covers everything before the trailer: fold in what is still
     buffered, then write the trailer outside the checksum.  */
  unsigned char b[TALLY_TRAILER_SIZE];
  struct tally_trailer t = { tally_rt_writer_crc (w), file_size };
  tally_trailer_put (b, &t);
  tally_rt_put (w, b, TALLY_TRAILER_SIZE);
  tally_rt_flush (w);
  if (close (w->fd) != 0 && !w->failed && errno != EINTR)
    w->failed = errno;
  if (!w->failed && w->total != file_size)
    w->failed = EIO; /* cannot happen unless a module changed under us */
  if (!w->failed && tmp[0] && tally_rt_place (tmp, path, unique) != 0)
    {
      int e = errno; /* reported */
      unlink (tmp);
      errno = e;
      return -1;
    }
  if (w->failed)
    {
      tally_rt_error ("cannot write %s: %s (errno %d); no data written",
                      path, tally_rt_errno_text (w->failed), w->failed);
      if (tmp[0])
        unlink (tmp);
      errno = w->failed;
      return -1;
    }
  return 0;
}
