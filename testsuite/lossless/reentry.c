/* A program that defines, instrumented, functions the runtime and the
   libraries it uses (libunwind) would otherwise call: write, strlen,
   memcpy.  The runtime must not run them itself (no hook inside a dump, no
   hang setting up paths=on), and every call the program and the libraries
   make must be in the file exactly.  Prints the calls each definition saw,
   counted apart from tally.  With "dump", a tally_dump in the middle.  */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <tally/tally.h>

static unsigned long n_write, n_strlen, n_memcpy;

/* Not inlined into main (GCC 16 does, at -O2): they are the program's
   functions, counted as such.  */
__attribute__ ((noinline)) ssize_t
write (int fd, const void *buf, size_t n)
{
  __atomic_add_fetch (&n_write, 1, __ATOMIC_RELAXED);
  return syscall (SYS_write, fd, buf, n);
}

__attribute__ ((noinline)) size_t
strlen (const char *s)
{
  __atomic_add_fetch (&n_strlen, 1, __ATOMIC_RELAXED);
  size_t n = 0;
  while (((volatile const char *) s)[n])
    n++;
  return n;
}

__attribute__ ((noinline)) void *
memcpy (void *dst, const void *src, size_t n)
{
  __atomic_add_fetch (&n_memcpy, 1, __ATOMIC_RELAXED);
  volatile unsigned char *d = dst;
  const unsigned char *s = src;
  for (size_t i = 0; i < n; i++)
    d[i] = s[i];
  return dst;
}

__attribute__ ((noinline)) static int
f (int x)
{
  return x * 3 + 1;
}

int
main (int argc, char **argv)
{
  int s = 0;
  for (int i = 0; i < 1000; i++)
    s += f (i);
  if (argc > 1 && strcmp (argv[1], "dump") == 0 && tally_dump () != 0)
    return 2;
  char msg[32];
  int len = snprintf (msg, sizeof msg, "sum %d\n", s);
  char copy[sizeof msg];
  /* Through a pointer: GCC would otherwise expand this copy itself.  */
  void *(*volatile copier) (void *, const void *, size_t) = memcpy;
  copier (copy, msg, (size_t) len + 1);
  write (1, copy, strlen (copy));
  fprintf (stderr, "%lu %lu %lu\n", n_write, n_strlen, n_memcpy);
  return 0;
}
