/* LD_PRELOAD shim for the "merge-shrink" check: another writer truncates
   the data file while a merging process (TALLY_OUTPUT with %m) reads it.

   The first mmap call made while the process holds a descriptor of the
   file named by SHRINK_VICTIM (its merge opened it and is about to read
   it: a private mapping of the file itself, or the memory to pread it
   into) first truncates that file to half its size rounded down to whole
   pages (so that a mapping of it has pages past the end, which fault), as
   a process ignoring the advisory lock would.  Deterministic: the truncation always lands
   between the merge's fstat and its read.  */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int done;

void *
mmap (void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
  const char *victim = done ? NULL : getenv ("SHRINK_VICTIM");
  struct stat v, s;
  if (victim && stat (victim, &v) == 0 && v.st_size > 64)
    for (int f = 0; f < 256; f++)
      if (fstat (f, &s) == 0 && s.st_dev == v.st_dev && s.st_ino == v.st_ino)
        {
          done = 1;
          if (truncate (victim, v.st_size / 2 & ~(off_t) 4095) == 0)
            write (2, "shim: truncated\n", 16);
          break;
        }
  return (void *) syscall (SYS_mmap, addr, len, prot, flags, fd, off);
}

/* What a program built with _FILE_OFFSET_BITS=64 (the runtime) calls.  */
void *
mmap64 (void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
  return mmap (addr, len, prot, flags, fd, off);
}
