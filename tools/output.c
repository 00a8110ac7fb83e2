/* output.c - the file named by `-o OUT` (output.h says how it is written).
 *
 * Why not fopen (OUT, "w"): in a directory others can write, OUT may be a
 * link planted to a file of the caller's, and truncating it in place loses
 * it while the output is half written.  Why not a fixed temporary name
 * (OUT.tmp.PID, as before): the name is predictable, and a link planted
 * there is followed by O_CREAT|O_TRUNC.  Why look at OUT first: renaming a
 * file over /dev/null run as root replaces the system's device with a
 * regular file.  */
#define _GNU_SOURCE 1
#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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

int
tally_out_open (struct tally_out *o, const char *path, char *err,
                size_t errlen)
{
  memset (o, 0, sizeof *o);
  o->path = strdup (path);
  if (!o->path)
    {
      snprintf (err, errlen, "cannot write %s: %s", path, strerror (ENOMEM));
      return -1;
    }
  int fd = -1;
  struct stat st;
  /* What OUT leads to decides: a link to /dev/stdout is written through,
     a dangling link (ENOENT) is replaced.  */
  if (stat (path, &st) != 0)
    {
      if (errno != ENOENT)
        {
          snprintf (err, errlen, "cannot write %s: %s", path,
                    strerror (errno));
          release (o);
          return -1;
        }
    }
  else if (S_ISDIR (st.st_mode))
    {
      snprintf (err, errlen, "cannot write %s: it is a directory", path);
      release (o);
      return -1;
    }
  else if (!S_ISREG (st.st_mode))
    {
      /* In place: no O_CREAT, no O_TRUNC (a device has nothing to cut, and
         a regular file swapped in meanwhile must not be truncated).  A FIFO
         blocks here until a reader opens it; a socket cannot be opened.  */
      fd = open (path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
      if (fd < 0)
        {
          snprintf (err, errlen, "cannot write %s: %s", path,
                    strerror (errno));
          release (o);
          return -1;
        }
      if (fstat (fd, &st) == 0 && S_ISREG (st.st_mode))
        {
          close (fd); /* it became a regular file: go the temporary's way */
          fd = -1;
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

int
tally_out_close (struct tally_out *o, char *err, size_t errlen)
{
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
  if (o->tmp && rename (o->tmp, o->path) != 0)
    {
      snprintf (err, errlen, "cannot rename %s to %s: %s", o->tmp, o->path,
                strerror (errno));
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
  if (o->f)
    fclose (o->f);
  if (o->tmp)
    unlink (o->tmp);
  release (o);
}
