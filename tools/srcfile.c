/* srcfile.c - open a source file that a data file names (srcfile.h).  */
#define _POSIX_C_SOURCE 200809L
#include "srcfile.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What ST is, when not a regular file, or NULL.  */
static const char *
not_regular (const struct stat *st)
{
  if (S_ISREG (st->st_mode))
    return NULL;
  return S_ISFIFO (st->st_mode)  ? "a FIFO"
         : S_ISCHR (st->st_mode) ? "a character device"
         : S_ISBLK (st->st_mode) ? "a block device"
         : S_ISDIR (st->st_mode) ? "a directory"
         : S_ISSOCK (st->st_mode) ? "a socket"
                                  : "not a file";
}

/* Whether ST may be read, else the reason in WHY.  */
static int
readable (const struct stat *st, char *why, size_t whylen)
{
  const char *what = not_regular (st);
  if (what)
    {
      snprintf (why, whylen, "it is %s, not a regular file", what);
      return 0;
    }
  if ((uint64_t) st->st_size > TALLY_SOURCE_MAX)
    {
      snprintf (why, whylen, "it is larger than " TALLY_SOURCE_MAX_TEXT
                ", more than a source file tally reads");
      return 0;
    }
  return 1;
}

FILE *
tally_source_open (const char *path, char *why, size_t whylen)
{
  struct stat st, fst;
  /* Looked at before it is opened: opening a device may act on it.  A
     link is followed (a source may be one); what it leads to decides.  */
  if (stat (path, &st) != 0)
    {
      snprintf (why, whylen, "%s", strerror (errno));
      return NULL;
    }
  if (!readable (&st, why, whylen))
    return NULL;
  /* O_NONBLOCK: should a FIFO be swapped in meanwhile, the open does not
     wait for a writer (and fstat refuses it); kept for the reads, which
     it does not change for a regular file.  */
  int fd = open (path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    {
      snprintf (why, whylen, "%s", strerror (errno));
      return NULL;
    }
  if (fstat (fd, &fst) != 0)
    {
      snprintf (why, whylen, "%s", strerror (errno));
      close (fd);
      return NULL;
    }
  if (!readable (&fst, why, whylen))
    {
      close (fd);
      return NULL;
    }
  FILE *f = fdopen (fd, "rb");
  if (!f)
    {
      snprintf (why, whylen, "%s", strerror (errno));
      close (fd);
    }
  return f;
}
