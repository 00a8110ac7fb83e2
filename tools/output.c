/* output.c - the file named by `-o OUT` (output.h says how it is written).
 *
 * Why not fopen (OUT, "w"): in a directory others can write, OUT may be a
 * link planted to a file of the caller's, and truncating it in place loses
 * it while the output is half written.  Why not a fixed temporary name
 * (OUT.tmp.PID, as before): the name is predictable, and a link planted
 * there is followed by O_CREAT|O_TRUNC.  Why look at OUT first, without
 * following a link: renaming a file over /dev/null run as root replaces
 * the system's device with a regular file; opening in place a link another
 * user planted in /tmp writes wherever it leads (a block device: a disk's
 * first bytes replaced by the output); and replacing a link replaces
 * /dev/stdout, a link to wherever standard output goes, with a file.  The
 * rules are the runtime's (rt/outfile.c): a symbolic link at OUT is
 * refused (neither followed nor replaced); a regular file is replaced,
 * but not one of another user in a sticky or world-writable directory;
 * only a character device or FIFO named directly, the user's or root's,
 * with one link, is written in place; a block device, a socket or a
 * directory never.  */
#define _GNU_SOURCE 1
#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

/* Attempts at an unused temporary name before giving up.  */
#define TMP_ATTEMPTS 100

/* 64 unpredictable bits: getrandom, or (on a system without it) a mix of
   the clock, the pid and the address of a stack variable.  */
static uint64_t
random_bits (void)
{
  uint64_t r;
  if (getrandom (&r, sizeof r, GRND_NONBLOCK) == (ssize_t) sizeof r)
    return r;
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  r = (uint64_t) ts.tv_nsec * 0x9E3779B97F4A7C15u ^ (uint64_t) ts.tv_sec;
  r ^= (uint64_t) getpid () << 32 ^ (uint64_t) (uintptr_t) &ts;
  r ^= r >> 29;
  r *= 0xBF58476D1CE4E5B9u;
  return r ^ r >> 32;
}

/* Create a new temporary beside O->path; returns its descriptor or -1
   with errno set.  */
static int
create_temporary (struct tally_out *o)
{
  size_t n = strlen (o->path) + sizeof ".tmp.XXXXXXXXXXXX";
  o->tmp = malloc (n);
  if (!o->tmp)
    return -1;
  for (int i = 0; i < TMP_ATTEMPTS; i++)
    {
      snprintf (o->tmp, n, "%s.tmp.%012llx", o->path,
                (unsigned long long) (random_bits () & 0xFFFFFFFFFFFFull));
      int fd = open (o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW
                     | O_CLOEXEC, 0666);
      if (fd >= 0 || errno != EEXIST)
        return fd;
    }
  errno = EEXIST;
  return -1;
}

static void
release (struct tally_out *o)
{
  free (o->path);
  free (o->tmp);
  o->path = o->tmp = NULL;
  o->f = NULL;
}

/* What the file of mode MODE is, for messages.  */
static const char *
kind (mode_t mode)
{
  return S_ISLNK (mode)    ? "a symbolic link"
         : S_ISDIR (mode)  ? "a directory"
         : S_ISREG (mode)  ? "a regular file"
         : S_ISCHR (mode)  ? "a character device"
         : S_ISBLK (mode)  ? "a block device"
         : S_ISFIFO (mode) ? "a FIFO"
         : S_ISSOCK (mode) ? "a socket"
                           : "an unknown kind of file";
}

/* Whether PATH's directory is one others may put names in: sticky (/tmp)
   or writable by every user.  A directory that cannot be looked at counts
   as one.  */
static int
shared_dir (const char *path)
{
  const char *slash = strrchr (path, '/');
  char *dir = slash ? strndup (path, slash == path ? 1 : (size_t) (slash - path))
                    : strdup (".");
  struct stat st;
  int shared = !dir || stat (dir, &st) != 0
               || (st.st_mode & (S_ISVTX | S_IWOTH)) != 0;
  free (dir);
  return shared;
}

/* Whether the file ST is the user's or root's.  */
static int
own (const struct stat *st)
{
  return st->st_uid == geteuid () || st->st_uid == 0;
}

/* Why the existing OUT, as lstat saw it (ST), in a directory others can
   write (SHARED) or not, must not be written; NULL if it may.  *INPLACE
   says whether it is written in place (a character device or FIFO) or
   replaced.  WHY is the buffer for a message with numbers.  */
static const char *
refusal (const char *path, const struct stat *st, int shared, int *inplace,
         char *why, size_t whylen)
{
  *inplace = 0;
  if (S_ISLNK (st->st_mode))
    {
      /* Never followed, never replaced: another user may have planted it
         (in /tmp), and replacing the user's own /dev/stdout, a link to
         wherever standard output goes, breaks the system.  */
      struct stat to;
      int dev = stat (path, &to) == 0
                && (S_ISCHR (to.st_mode) || S_ISFIFO (to.st_mode));
      snprintf (why, whylen, "it is a symbolic link (not followed, not "
                "replaced%s)", dev ? "; -o - writes to standard output" : "");
      return why;
    }
  if (S_ISDIR (st->st_mode))
    return "it is a directory";
  if (S_ISREG (st->st_mode))
    {
      if (shared && !own (st))
        {
          snprintf (why, whylen, "it is owned by another user (uid %lu), "
                    "in a directory others can write to",
                    (unsigned long) st->st_uid);
          return why;
        }
      return NULL;
    }
  if (!S_ISCHR (st->st_mode) && !S_ISFIFO (st->st_mode))
    {
      snprintf (why, whylen, "it is %s (only a regular file is replaced, "
                "and only a character device or FIFO written in place)",
                kind (st->st_mode));
      return why;
    }
  if (!own (st))
    {
      snprintf (why, whylen, "it is %s owned by another user (uid %lu)",
                kind (st->st_mode), (unsigned long) st->st_uid);
      return why;
    }
  if (st->st_nlink > 1)
    return "it has several hard links";
  *inplace = 1;
  return NULL;
}

/* Open the character device or FIFO PATH, which lstat saw as BEFORE, to
   write in place: no O_CREAT, no O_TRUNC (a device has nothing to cut),
   O_NOFOLLOW (a link put there meanwhile is not followed), then checked to
   be the file looked at.  A FIFO waits here for a reader.  Returns the
   descriptor, or -1 with the reason in WHY.  */
static int
open_in_place (const char *path, const struct stat *before, char *why,
               size_t whylen)
{
  int fd = open (path, O_WRONLY | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    {
      snprintf (why, whylen, "%s", errno == ELOOP ? "it became a symbolic "
                "link (not followed)" : strerror (errno));
      return -1;
    }
  struct stat st;
  if (fstat (fd, &st) != 0 || st.st_dev != before->st_dev
      || st.st_ino != before->st_ino
      || (st.st_mode & S_IFMT) != (before->st_mode & S_IFMT))
    {
      close (fd);
      snprintf (why, whylen, "it changed while it was opened");
      return -1;
    }
  return fd;
}

int
tally_out_open (struct tally_out *o, const char *path, char *err,
                size_t errlen)
{
  memset (o, 0, sizeof *o);
  if (strcmp (path, "-") == 0)
    {
      o->f = stdout;
      return 0;
    }
  o->path = strdup (path);
  if (!o->path)
    {
      snprintf (err, errlen, "cannot write %s: %s", path, strerror (ENOMEM));
      return -1;
    }
  int fd = -1;
  struct stat st;
  char why[256];
  if (lstat (path, &st) != 0)
    {
      if (errno != ENOENT)
        {
          snprintf (err, errlen, "cannot write %s: %s", path,
                    strerror (errno));
          release (o);
          return -1;
        }
    }
  else
    {
      int inplace;
      const char *no = refusal (path, &st, shared_dir (path), &inplace, why,
                                sizeof why);
      if (!no && inplace && (fd = open_in_place (path, &st, why,
                                                 sizeof why)) < 0)
        no = why;
      if (no)
        {
          snprintf (err, errlen, "cannot write %s: %s", path, no);
          release (o);
          return -1;
        }
    }
  if (fd < 0)
    {
      fd = create_temporary (o);
      if (fd < 0)
        {
          snprintf (err, errlen, "cannot create a temporary file beside %s: "
                    "%s", path, strerror (errno));
          release (o);
          return -1;
        }
    }
  o->f = fdopen (fd, "w");
  if (!o->f)
    {
      snprintf (err, errlen, "cannot write %s: %s", path, strerror (errno));
      close (fd);
      if (o->tmp)
        unlink (o->tmp);
      release (o);
      return -1;
    }
  return 0;
}

/* Put the finished temporary O->tmp at O->path: OUT is looked at again
   (what was there at the open may have been replaced meanwhile) and must
   still be one to replace; a name that was free is taken with
   RENAME_NOREPLACE, so that nothing that appeared meanwhile is replaced
   unseen.  Returns 0, or -1 with the message in ERR.  */
static int
commit (struct tally_out *o, char *err, size_t errlen)
{
  char why[256];
  for (int tries = 0; tries < 3; tries++)
    {
      struct stat st;
      if (lstat (o->path, &st) == 0)
        {
          int inplace;
          const char *no = refusal (o->path, &st, shared_dir (o->path),
                                    &inplace, why, sizeof why);
          if (!no && inplace)
            no = "it is no longer a regular file";
          if (no)
            {
              snprintf (err, errlen, "cannot write %s: %s (the output was "
                        "not written)", o->path, no);
              return -1;
            }
          if (rename (o->tmp, o->path) == 0)
            return 0;
          break;
        }
      if (errno != ENOENT)
        break;
      if (syscall (SYS_renameat2, AT_FDCWD, o->tmp, AT_FDCWD, o->path,
                   RENAME_NOREPLACE) == 0)
        return 0;
      if (errno == EINVAL || errno == ENOSYS)
        {
          /* No RENAME_NOREPLACE here (an old kernel or file system).  */
          if (rename (o->tmp, o->path) == 0)
            return 0;
          break;
        }
      if (errno != EEXIST)
        break;
      /* Something took the name meanwhile: look at it.  */
    }
  snprintf (err, errlen, "cannot rename %s to %s: %s", o->tmp, o->path,
            strerror (errno ? errno : EEXIST));
  return -1;
}

int
tally_out_close (struct tally_out *o, char *err, size_t errlen)
{
  if (o->f == stdout && !o->path)
    {
      /* -o -: standard output stays open; its errors are still said.  */
      int bad = fflush (stdout) != 0 || ferror (stdout);
      if (bad)
        snprintf (err, errlen, "cannot write to standard output: %s",
                  strerror (errno ? errno : EIO));
      o->f = NULL;
      return bad ? -1 : 0;
    }
  int bad = ferror (o->f);
  int saved = errno;
  if (fclose (o->f) != 0 || bad)
    {
      snprintf (err, errlen, "cannot write %s: %s", o->tmp ? o->tmp : o->path,
                strerror (bad ? (saved ? saved : EIO) : errno));
      if (o->tmp)
        unlink (o->tmp);
      release (o);
      return -1;
    }
  if (o->tmp && commit (o, err, errlen) != 0)
    {
      unlink (o->tmp);
      release (o);
      return -1;
    }
  release (o);
  return 0;
}

void
tally_out_discard (struct tally_out *o)
{
  if (o->f == stdout && !o->path)
    {
      fflush (stdout);
      o->f = NULL;
      return;
    }
  if (o->f)
    fclose (o->f);
  if (o->tmp)
    unlink (o->tmp);
  release (o);
}
