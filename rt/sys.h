/* rt/sys.h - the runtime calls no function a program could define itself.
 *
 * A program may define its own, instrumented, strlen, memcpy or write (a
 * logging wrapper, a libc-free build).  ELF interposition then sends the
 * runtime's own calls there: hooks would run inside the dump, counts would
 * move while the file is written, and a hook needing the runtime's state
 * (the calling-context tree being set up, a thread's shadow stack being
 * mapped) would wait for itself.  So every source of the runtime includes
 * this header (through rt.h), which gives the string and memory functions
 * and the file-system calls of the dump path other assembler names: the
 * runtime's own copies (sys.c), the calls direct system calls.  GCC uses
 * the same names for the block copies and clears it emits itself, and the
 * runtime is built with -fno-tree-loop-distribute-patterns so that no loop
 * becomes a call.
 *
 * What remains are calls no program defines in practice (mmap, pthread,
 * dl*) and the libraries the runtime uses (PAPI, libunwind), which may
 * allocate; rt/shadow.c's re-entry guard covers those.  */
#ifndef TALLY_RT_SYS_H
#define TALLY_RT_SYS_H

#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define TALLY_RT_REDIRECT(name) __asm__ ("tally_rt_sys_" #name)

#ifndef TALLY_RT_SYS_IMPL
extern size_t strlen (const char *) TALLY_RT_REDIRECT (strlen);
extern size_t strnlen (const char *, size_t) TALLY_RT_REDIRECT (strnlen);
extern int strcmp (const char *, const char *) TALLY_RT_REDIRECT (strcmp);
extern int strncmp (const char *, const char *, size_t)
    TALLY_RT_REDIRECT (strncmp);
extern int memcmp (const void *, const void *, size_t)
    TALLY_RT_REDIRECT (memcmp);
extern void *memcpy (void *, const void *, size_t) TALLY_RT_REDIRECT (memcpy);
extern void *memmove (void *, const void *, size_t)
    TALLY_RT_REDIRECT (memmove);
extern void *memset (void *, int, size_t) TALLY_RT_REDIRECT (memset);
extern ssize_t write (int, const void *, size_t) TALLY_RT_REDIRECT (write);
extern int close (int) TALLY_RT_REDIRECT (close);
extern int rename (const char *, const char *) TALLY_RT_REDIRECT (rename);
extern int unlink (const char *) TALLY_RT_REDIRECT (unlink);
extern pid_t getpid (void) TALLY_RT_REDIRECT (getpid);
extern ssize_t readlink (const char *, char *, size_t)
    TALLY_RT_REDIRECT (readlink);
/* The name in parentheses: C23's string.h (glibc 2.42 and later, also
   under _GNU_SOURCE) makes strrchr a macro that keeps the argument's
   const; a call still goes through the macro to this declaration.  */
extern char *(strrchr) (const char *, int) TALLY_RT_REDIRECT (strrchr);
extern ssize_t read (int, void *, size_t) TALLY_RT_REDIRECT (read);
extern int dup (int) TALLY_RT_REDIRECT (dup);
/* glibc already renames these (open64, ...), so they are macros.  */
int tally_rt_sys_open (const char *path, int flags, ...) TALLY_HIDDEN;
int tally_rt_sys_fcntl (int fd, int cmd, ...) TALLY_HIDDEN;
int tally_rt_sys_fstat (int fd, struct stat *st) TALLY_HIDDEN;
int tally_rt_sys_stat (const char *path, struct stat *st) TALLY_HIDDEN;
ssize_t tally_rt_sys_pread (int fd, void *buf, size_t n, off_t off) TALLY_HIDDEN;
ssize_t tally_rt_sys_pwrite (int fd, const void *buf, size_t n, off_t off)
    TALLY_HIDDEN;
off_t tally_rt_sys_lseek (int fd, off_t off, int whence) TALLY_HIDDEN;
int tally_rt_sys_ftruncate (int fd, off_t len) TALLY_HIDDEN;
int tally_rt_sys_fallocate (int fd, int mode, off_t off, off_t len)
    TALLY_HIDDEN;
#define open tally_rt_sys_open
#define pread tally_rt_sys_pread
#define pwrite tally_rt_sys_pwrite
#define lseek tally_rt_sys_lseek
#define ftruncate tally_rt_sys_ftruncate
#define fallocate tally_rt_sys_fallocate
#define fcntl tally_rt_sys_fcntl
#define fstat tally_rt_sys_fstat
#define stat(path, st) tally_rt_sys_stat (path, st)
#endif

/* atexit and pthread_atfork are, in glibc, wrappers in libc_nonshared.a
   that hand the linking object's __dso_handle (from the start file
   crtbegin*.o) to __cxa_atexit and __register_atfork, so that the
   handlers of a library go with it when it is dlclose'd.  A link with no
   start files has no __dso_handle and fails on those wrappers: libtool
   2.6 (Debian sid) links C++ shared libraries -nostdlib and without
   them, and a runtime linked into such a library broke its link.  These
   call the functions behind the wrappers, with __dso_handle where the
   link has one (a weak reference); without one nothing would drop the
   handlers at a dlclose, so the runtime pins its object first
   (tally_rt_pin_without_dso_handle, rt.h).  0 on success, non-zero on
   failure, as the wrappers.  */
int tally_rt_sys_atexit (void (*fn) (void *)) TALLY_HIDDEN;
/* Whether the object was linked with a __dso_handle (start files).  */
int tally_rt_sys_have_dso_handle (void) TALLY_HIDDEN;
int tally_rt_sys_atfork_child (void (*fn) (void)) TALLY_HIDDEN;

/* Write all N bytes of BUF to FD: at OFF (pwrite), or at the file offset
   (write) if OFF < 0; EINTR retried.  0, or the errno value (EIO for a
   write that wrote nothing).  */
int tally_rt_write_all (int fd, const void *buf, size_t n, int64_t off)
    TALLY_HIDDEN;

#endif /* TALLY_RT_SYS_H */
