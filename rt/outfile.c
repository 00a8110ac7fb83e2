/* How the runtime creates, opens and replaces its files (doc/guarantees.md,
 * "Security").
 *
 * A profiled program may run as root, setuid, in a CI container or in a
 * directory others can write, and the names it writes are predictable.  So:
 *
 * - in a secure-execution process (AT_SECURE: setuid, setgid, file
 *   capabilities) the environment is not read at all (tally_rt_env), and
 *   the default name is written only into a directory owned by the real
 *   user, created exclusively, mode 0600, never replacing a file it did
 *   not write itself;
 * - every name is created with O_CREAT|O_EXCL|O_NOFOLLOW: temporaries get
 *   a random suffix (getrandom(2), else AT_RANDOM mixed with a counter and
 *   the clock) and a new name on EEXIST;
 * - the target is looked at without following a link before anything is
 *   written, and again just before the rename: a symbolic link, a
 *   directory, a block device, a socket, or a file owned by another user
 *   (not the effective user, not root) is refused with a message and
 *   nothing is written; a FIFO or character device owned by the user or
 *   root (/dev/null) is written in place, never replaced by a file;
 * - files are created 0644 (the umask applies), lock files 0600, so
 *   nothing is ever world-writable.
 *
 * All async-signal-safe: direct system calls (sys.h), no allocation.  */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "rt.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef GRND_NONBLOCK
#define GRND_NONBLOCK 0x0001
#endif

static uid_t
euid (void)
{
  return (uid_t) syscall (SYS_geteuid);
}

static uid_t
ruid (void)
{
  return (uid_t) syscall (SYS_getuid);
}

static int
lstat_at (const char *path, struct stat *st)
{
#if defined __x86_64__ || defined __aarch64__
  return (int) syscall (SYS_newfstatat, AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
#else
  return fstatat (AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
#endif
}

/* N unpredictable bytes.  */
static void
random_bytes (unsigned char *buf, size_t n)
{
  long got = syscall (SYS_getrandom, buf, n, GRND_NONBLOCK);
  if (got == (long) n)
    return;
  /* No getrandom (old kernel, seccomp) or no entropy yet: the 16 random
     bytes the kernel gave the process, a counter and the clock.  */
  static uint64_t counter;
  uint64_t h = __atomic_add_fetch (&counter, 1, __ATOMIC_RELAXED);
  const unsigned char *at = (const unsigned char *) getauxval (AT_RANDOM);
  for (int i = 0; at && i < 16; i++)
    h = (h ^ at[i]) * 0x100000001b3ull;
  struct timespec ts;
  if (clock_gettime (CLOCK_MONOTONIC, &ts) == 0)
    h ^= (uint64_t) ts.tv_nsec * 0x9e3779b97f4a7c15ull + (uint64_t) ts.tv_sec;
  h ^= (uint64_t) getpid () << 32;
  for (size_t i = 0; i < n; i++)
    {
      /* splitmix64 */
      uint64_t z = (h += 0x9e3779b97f4a7c15ull);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      buf[i] = (unsigned char) (z ^ (z >> 31));
    }
}

/* The file this process last put in place under AT_SECURE, which a later
   dump of the same process may replace.  */
static dev_t own_dev;
static ino_t own_ino;
static int own_set;

/* Why the existing file ST must not be written or replaced, or NULL.
   *INPLACE is set for a FIFO or character device, written in place.  */
static const char *
refusal (const struct stat *st, int *inplace)
{
  *inplace = 0;
  if (S_ISLNK (st->st_mode))
    return "it is a symbolic link (not followed)";
  if (S_ISDIR (st->st_mode))
    return "it is a directory";
  if (!S_ISREG (st->st_mode) && !S_ISFIFO (st->st_mode)
      && !S_ISCHR (st->st_mode))
    return "it is not a regular file, a FIFO or a character device";
  if (st->st_uid != euid () && st->st_uid != 0)
    return "it is owned by another user";
  if (tally_rt_secure ()
      && !(own_set && st->st_dev == own_dev && st->st_ino == own_ino))
    return "it exists, and a setuid or setgid program never replaces a file";
  *inplace = !S_ISREG (st->st_mode);
  if (*inplace && st->st_nlink > 1)
    return "it has several hard links";
  return NULL;
}

/* Under AT_SECURE, only into a directory of the real user: the program's
   privilege must not create files where its user could not.  Apart, so
   that its buffer takes stack (maybe a program's small signal stack) only
   in such a process.  */
static __attribute__ ((noinline)) const char *
secure_dir_refusal (const char *path)
{
  char dir[4096];
  const char *slash = strrchr (path, '/');
  size_t n = slash ? (size_t) (slash - path) : 0;
  if (n >= sizeof dir)
    return "its directory's name is too long";
  if (slash && n == 0)
    n = 1; /* "/name" */
  memcpy (dir, slash ? path : ".", slash ? n : 1);
  dir[slash ? n : 1] = 0;
  struct stat st;
  if (stat (dir, &st) != 0 || !S_ISDIR (st.st_mode) || st.st_uid != ruid ())
    return "a setuid or setgid program writes only into a directory "
           "owned by the user who runs it";
  return NULL;
}

static int
open_retry (const char *path, int flags, mode_t mode)
{
  int fd;
  do
    fd = open (path, flags, mode);
  while (fd < 0 && errno == EINTR);
  return fd;
}

static void
report_refusal (const char *path, const char *why)
{
  tally_rt_error ("cannot write %s: %s; no data written", path, why);
}

int
tally_rt_out_tmp (const char *path, char *tmp, size_t cap, int rw)
{
  size_t n = strlen (path);
  if (n + 5 + 12 + 1 > cap)
    {
      errno = ENAMETOOLONG;
      return -1;
    }
  memcpy (tmp, path, n);
  memcpy (tmp + n, ".tmp.", 5);
  n += 5;
  mode_t mode = tally_rt_secure () ? 0600 : 0644;
  for (int tries = 0; tries < 100; tries++)
    {
      unsigned char r[6];
      random_bytes (r, sizeof r);
      for (int i = 0; i < 6; i++)
        {
          tmp[n + 2 * i] = "0123456789abcdef"[r[i] >> 4];
          tmp[n + 2 * i + 1] = "0123456789abcdef"[r[i] & 15];
        }
      tmp[n + 12] = 0;
      int fd = open_retry (tmp, (rw ? O_RDWR : O_WRONLY) | O_CREAT | O_EXCL
                                | O_NOFOLLOW | O_CLOEXEC, mode);
      if (fd >= 0 || errno != EEXIST)
        return fd;
    }
  errno = EEXIST;
  return -1;
}

/* Say PATH cannot be written, for errno's reason (kept): -1.  */
static int
cannot_write (const char *path)
{
  int e = errno;
  tally_rt_error ("cannot write %s: %s (errno %d); no data written", path,
                  tally_rt_errno_text (e), e);
  errno = e;
  return -1;
}

int
tally_rt_out_check (const char *path, int *inplace)
{
  struct stat st;
  const char *why = tally_rt_secure () ? secure_dir_refusal (path) : NULL;
  *inplace = 0;
  if (!why && lstat_at (path, &st) == 0)
    why = refusal (&st, inplace);
  else if (!why && errno != ENOENT)
    return cannot_write (path);
  if (why)
    {
      report_refusal (path, why);
      errno = EPERM;
      return -1;
    }
  return 0;
}

int
tally_rt_out_inplace (const char *path)
{
  struct stat before, st;
  if (lstat_at (path, &before) != 0)
    return -1;
  /* O_NONBLOCK only so that a FIFO without a reader fails.  */
  int fd = open_retry (path, O_WRONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC, 0);
  if (fd < 0)
    return cannot_write (path);
  int inplace;
  const char *why = NULL;
  if (fstat (fd, &st) != 0 || st.st_dev != before.st_dev
      || st.st_ino != before.st_ino)
    why = "it changed while it was opened";
  else if ((why = refusal (&st, &inplace)) == NULL && !inplace)
    why = "it changed while it was opened";
  if (why)
    {
      close (fd);
      report_refusal (path, why);
      errno = EPERM;
      return -1;
    }
  fcntl (fd, F_SETFL, fcntl (fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

static int
rename_noreplace (const char *from, const char *to)
{
  if (syscall (SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE)
      == 0)
    return 0;
  if (errno != EINVAL && errno != ENOSYS)
    return -1;
  /* A file system without RENAME_NOREPLACE: link, then unlink; without
     hard links either (vfat), a plain rename if the name is still free,
     except in a secure-execution process.  */
  if (syscall (SYS_linkat, AT_FDCWD, from, AT_FDCWD, to, 0) == 0)
    {
      unlink (from);
      return 0;
    }
  struct stat st;
  if (errno == EEXIST || tally_rt_secure ())
    return -1;
  if (lstat_at (to, &st) == 0)
    {
      errno = EEXIST;
      return -1;
    }
  return rename (from, to);
}

int
tally_rt_out_commit (const char *tmp, const char *path)
{
  struct stat st, mine;
  int have_mine = lstat_at (tmp, &mine) == 0;
  int rc;
  if (lstat_at (path, &st) != 0)
    {
      /* Missing: it must still be when the file arrives.  */
      rc = rename_noreplace (tmp, path);
      if (rc != 0 && errno == EEXIST && lstat_at (path, &st) == 0)
        goto exists; /* appeared meanwhile: look at it */
    }
  else
    {
    exists:;
      int inplace;
      const char *why = refusal (&st, &inplace);
      if (!why && inplace)
        why = "it is not a regular file any more";
      if (why)
        {
          report_refusal (path, why);
          errno = EPERM;
          return -1;
        }
      rc = rename (tmp, path);
    }
  if (rc != 0)
    return cannot_write (path);
  if (have_mine)
    {
      own_dev = mine.st_dev;
      own_ino = mine.st_ino;
      own_set = 1;
    }
  return 0;
}

/* Open PATH with FLAGS and O_NOFOLLOW, O_NONBLOCK, O_CLOEXEC (MODE if
   it creates); a failure is reported ("cannot WHAT PATH: ..."), but for
   ENOENT if QUIET_ENOENT.  */
static int
open_reported (const char *path, int flags, mode_t mode, const char *what,
               int quiet_enoent)
{
  int fd = open_retry (path, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
                       mode);
  if (fd < 0 && !(quiet_enoent && errno == ENOENT))
    {
      int e = errno;
      tally_rt_error ("cannot %s %s: %s (errno %d); no data written", what,
                      path, e == ELOOP ? "it is a symbolic link (not followed)"
                                       : tally_rt_errno_text (e), e);
      errno = e;
    }
  return fd;
}

/* Why the file open at FD may not be used: NOT_REGULAR if it is not a
   regular file, FOREIGN if another user than the effective user and root
   owns it; 0 if it may.  */
enum { NOT_REGULAR = 1, FOREIGN };
static int
unusable (int fd)
{
  struct stat st;
  if (fstat (fd, &st) != 0 || !S_ISREG (st.st_mode))
    return NOT_REGULAR;
  if (st.st_uid != euid () && st.st_uid != 0)
    return FOREIGN;
  return 0;
}

int
tally_rt_out_open_own (const char *path, int flags, const char *what)
{
  int fd = open_reported (path, flags, 0, what, 1);
  if (fd < 0)
    return -1;
  int r = unusable (fd);
  if (r == FOREIGN)
    {
      close (fd);
      errno = EPERM;
      return -2;
    }
  if (r)
    {
      close (fd);
      tally_rt_error ("cannot %s %s: it is not a regular file; no data "
                      "written", what, path);
      errno = EINVAL;
      return -1;
    }
  fcntl (fd, F_SETFL, fcntl (fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

int
tally_rt_out_foreign_aside (const char *path, char *out, size_t cap)
{
  struct stat st;
  unsigned long uid = lstat_at (path, &st) == 0 ? (unsigned long) st.st_uid : 0;
  if (tally_rt_out_aside (path, ".other-owner", out, cap) == 0)
    {
      tally_rt_error ("%s: owned by another user (uid %lu), not trusted; not "
                      "merged, moved aside to %s", path, uid, out);
      return 0;
    }
  int e = errno;
  tally_rt_error ("cannot merge into %s: it is owned by another user (uid "
                  "%lu) and cannot be moved aside (%s, errno %d); no data "
                  "written", path, uid, tally_rt_errno_text (e), e);
  errno = e;
  return -1;
}

int
tally_rt_out_lock (const char *path)
{
  int fd = open_reported (path, O_RDWR | O_CREAT, 0600, "lock", 0);
  if (fd < 0)
    return -1;
  int r = unusable (fd);
  if (r)
    {
      close (fd);
      tally_rt_error ("cannot lock %s: %s; no data written", path,
                      r == FOREIGN ? "it is owned by another user"
                                   : "it is not a regular file");
      errno = EPERM;
      return -1;
    }
  return fd;
}

int
tally_rt_out_aside (const char *path, const char *suffix, char *out,
                    size_t cap)
{
  size_t n = strlen (path), s = strlen (suffix);
  if (n + s + 14 > cap)
    {
      errno = ENAMETOOLONG;
      return -1;
    }
  memcpy (out, path, n);
  memcpy (out + n, suffix, s + 1);
  n += s;
  /* PATH.bad, PATH.bad.1 ... PATH.bad.999, then PATH.bad.<12 random hex
     digits>: a file moved aside is never replaced, however many are
     there already.  */
  for (unsigned k = 1; k < 1100; k++)
    {
      if (rename_noreplace (path, out) == 0)
        return 0;
      if (errno != EEXIST)
        return -1;
      out[n] = '.';
      if (k < 1000)
        {
          char digits[24];
          size_t d = tally_rt_utoa (digits, k);
          memcpy (out + n + 1, digits, d + 1);
          continue;
        }
      unsigned char r[6];
      random_bytes (r, sizeof r);
      for (int i = 0; i < 6; i++)
        {
          out[n + 1 + 2 * i] = "0123456789abcdef"[r[i] >> 4];
          out[n + 2 + 2 * i] = "0123456789abcdef"[r[i] & 15];
        }
      out[n + 13] = 0;
    }
  errno = EEXIST;
  return -1;
}
