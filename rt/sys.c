/* The runtime's own string and memory functions and system-call wrappers
   (rt/sys.h says why).  Nothing here calls a function a program could
   define: the loops stay loops (-fno-tree-loop-distribute-patterns), the
   calls are syscall(2).  */
#define TALLY_RT_SYS_IMPL 1
#include "rt.h"

#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <sys/syscall.h>

#define SYS_FN(ret, name) TALLY_HIDDEN ret tally_rt_sys_##name

SYS_FN (size_t, strlen) (const char *s)
{
  const char *p = s;
  while (*p)
    p++;
  return (size_t) (p - s);
}

SYS_FN (size_t, strnlen) (const char *s, size_t max)
{
  size_t n = 0;
  while (n < max && s[n])
    n++;
  return n;
}

SYS_FN (int, strncmp) (const char *a, const char *b, size_t n)
{
  for (; n; n--, a++, b++)
    if (*a != *b || !*a)
      return (unsigned char) *a - (unsigned char) *b;
  return 0;
}

SYS_FN (int, strcmp) (const char *a, const char *b)
{
  return tally_rt_sys_strncmp (a, b, (size_t) -1);
}

SYS_FN (int, memcmp) (const void *a, const void *b, size_t n)
{
  const unsigned char *x = a, *y = b;
  for (; n; n--, x++, y++)
    if (*x != *y)
      return *x - *y;
  return 0;
}

/* Word at a time where both sides allow it: the dump copies megabytes of
   block maps.  */
SYS_FN (void *, memcpy) (void *dst, const void *src, size_t n)
{
  unsigned char *d = dst;
  const unsigned char *s = src;
  if ((((uintptr_t) d | (uintptr_t) s) & (sizeof (uint64_t) - 1)) == 0)
    for (; n >= sizeof (uint64_t); n -= sizeof (uint64_t))
      {
        *(uint64_t *) (void *) d = *(const uint64_t *) (const void *) s;
        d += sizeof (uint64_t);
        s += sizeof (uint64_t);
      }
  while (n--)
    *d++ = *s++;
  return dst;
}

SYS_FN (void *, memmove) (void *dst, const void *src, size_t n)
{
  unsigned char *d = dst;
  const unsigned char *s = src;
  if (d <= s || d >= s + n)
    return tally_rt_sys_memcpy (dst, src, n);
  while (n--)
    d[n] = s[n];
  return dst;
}

SYS_FN (void *, memset) (void *dst, int c, size_t n)
{
  unsigned char *d = dst;
  while (n--)
    *d++ = (unsigned char) c;
  return dst;
}

SYS_FN (char *, strrchr) (const char *s, int c)
{
  const char *last = NULL;
  for (;; s++)
    {
      if (*s == (char) c)
        last = s;
      if (!*s)
        return (char *) last;
    }
}

SYS_FN (ssize_t, read) (int fd, void *buf, size_t n)
{
  return syscall (SYS_read, fd, buf, n);
}

SYS_FN (ssize_t, pread) (int fd, void *buf, size_t n, off_t off)
{
  return syscall (SYS_pread64, fd, buf, n, off);
}

SYS_FN (ssize_t, pwrite) (int fd, const void *buf, size_t n, off_t off)
{
  return syscall (SYS_pwrite64, fd, buf, n, off);
}

SYS_FN (off_t, lseek) (int fd, off_t off, int whence)
{
  return (off_t) syscall (SYS_lseek, fd, off, whence);
}

SYS_FN (int, ftruncate) (int fd, off_t len)
{
  return (int) syscall (SYS_ftruncate, fd, len);
}

SYS_FN (int, fallocate) (int fd, int mode, off_t off, off_t len)
{
  return (int) syscall (SYS_fallocate, fd, mode, off, len);
}

SYS_FN (int, dup) (int fd)
{
  return (int) syscall (SYS_dup, fd);
}

SYS_FN (ssize_t, write) (int fd, const void *buf, size_t n)
{
  return syscall (SYS_write, fd, buf, n);
}

SYS_FN (int, close) (int fd)
{
  return (int) syscall (SYS_close, fd);
}

SYS_FN (int, rename) (const char *from, const char *to)
{
  return (int) syscall (SYS_renameat, AT_FDCWD, from, AT_FDCWD, to);
}

SYS_FN (int, unlink) (const char *path)
{
  return (int) syscall (SYS_unlinkat, AT_FDCWD, path, 0);
}

SYS_FN (pid_t, getpid) (void)
{
  return (pid_t) syscall (SYS_getpid);
}

SYS_FN (ssize_t, readlink) (const char *path, char *buf, size_t n)
{
  return syscall (SYS_readlinkat, AT_FDCWD, path, buf, n);
}

SYS_FN (int, open) (const char *path, int flags, ...)
{
  unsigned mode = 0;
  if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE)
    {
      va_list ap;
      va_start (ap, flags);
      mode = va_arg (ap, unsigned);
      va_end (ap);
    }
  return (int) syscall (SYS_openat, AT_FDCWD, path, flags | O_LARGEFILE, mode);
}

SYS_FN (int, fcntl) (int fd, int cmd, ...)
{
  va_list ap;
  va_start (ap, cmd);
  unsigned long arg = va_arg (ap, unsigned long);
  va_end (ap);
  return (int) syscall (SYS_fcntl, fd, cmd, arg);
}

/* struct stat is the kernel's on the 64-bit targets the runtime is built
   for (x86-64, AArch64); elsewhere libc's wrappers do the conversion.  */
#if defined __x86_64__ || defined __aarch64__
SYS_FN (int, fstat) (int fd, struct stat *st)
{
  return (int) syscall (SYS_fstat, fd, st);
}

SYS_FN (int, stat) (const char *path, struct stat *st)
{
  return (int) syscall (SYS_newfstatat, AT_FDCWD, path, st, 0);
}
#else
SYS_FN (int, fstat) (int fd, struct stat *st)
{
  return fstat (fd, st);
}

SYS_FN (int, stat) (const char *path, struct stat *st)
{
  return stat (path, st);
}
#endif

int
tally_rt_write_all (int fd, const void *buf, size_t n, int64_t off)
{
  const unsigned char *p = (const unsigned char *) buf;
  while (n)
    {
      ssize_t k = off < 0 ? tally_rt_sys_write (fd, p, n)
                          : tally_rt_sys_pwrite (fd, p, n, (off_t) off);
      if (k < 0 && errno == EINTR)
        continue;
      if (k <= 0)
        return k < 0 ? errno : EIO;
      p += k;
      n -= (size_t) k;
      if (off >= 0)
        off += k;
    }
  return 0;
}

/* sys.h: atexit and pthread_atfork without their libc_nonshared.a
   wrappers.  */
extern void *__dso_handle __attribute__ ((weak));
extern int __cxa_atexit (void (*) (void *), void *, void *);

int
tally_rt_sys_have_dso_handle (void)
{
  return &__dso_handle != NULL;
}

int
tally_rt_sys_atexit (void (*fn) (void *))
{
  return __cxa_atexit (fn, NULL, &__dso_handle);
}

#ifdef __GLIBC__
extern int __register_atfork (void (*) (void), void (*) (void),
                              void (*) (void), void *);

int
tally_rt_sys_atfork_child (void (*fn) (void))
{
  return __register_atfork (NULL, NULL, fn, &__dso_handle);
}
#else
int
tally_rt_sys_atfork_child (void (*fn) (void))
{
  return pthread_atfork (NULL, NULL, fn);
}
#endif
