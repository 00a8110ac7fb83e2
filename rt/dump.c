/* Writing the data file (layout: include/tally/format.h).
 *
 * The dump path is async-signal-safe: no malloc, no stdio, no locks that a
 * signal handler could deadlock on.  It streams the records through a static
 * buffer into "<path>.tmp.<pid>", CRC-ing as it goes, then renames the file
 * into place, so a reader never sees a half-written file.  One dump runs at
 * a time: a concurrent tally_dump() gets EBUSY, the exit dump waits for the
 * running one to finish.
 *
 * A module that unregisters before the final dump (its library is
 * dlclose'd, or the process is exiting and ELF destructors run before the
 * runtime's exit handler) is serialised, exactly as in the file, into a
 * retained area that every later dump writes after the live modules, so its
 * counts are never lost.  The area is mmap'ed memory, grown with mremap.  */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "rt.h"
#include "tally/format.h"
#include "tally/tally.h"

extern char **environ;

#define DEFAULT_OUTPUT "tally.%p.data"

/* Output staging buffer; only the holder of `dumping` touches it.  */
static unsigned char outbuf[1 << 16];

/* 1 while a dump or a retain is in progress.  */
static int dumping;

/* Module records of unregistered modules, in file format (see above);
   guarded by `dumping`.  */
static unsigned char *retained;
static size_t retained_len, retained_cap;
static uint32_t retained_count;

struct writer
{
  unsigned char *mem; /* if set, write here instead of to fd */
  int fd;
  size_t used;    /* bytes in outbuf */
  uint64_t total; /* bytes handed to the writer so far */
  uint32_t crc;
  int failed;     /* errno of the first failure, 0 if none */
};

static void
flush (struct writer *w)
{
  size_t off = 0;
  w->crc = tally_crc32 (w->crc, outbuf, w->used);
  while (off < w->used && !w->failed)
    {
      ssize_t n = write (w->fd, outbuf + off, w->used - off);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        w->failed = n < 0 ? errno : EIO;
      else
        off += (size_t) n;
    }
  w->used = 0;
}

static void
put (struct writer *w, const void *p, size_t n)
{
  const unsigned char *s = (const unsigned char *) p;
  if (w->mem)
    memcpy (w->mem + w->total, s, n);
  w->total += n;
  if (w->mem || w->fd < 0)
    return; /* to memory, or a sizing pass */
  while (n)
    {
      size_t room = sizeof outbuf - w->used;
      size_t k = n < room ? n : room;
      memcpy (outbuf + w->used, s, k);
      w->used += k;
      s += k;
      n -= k;
      if (w->used == sizeof outbuf)
        flush (w);
    }
}

static void
put_u32 (struct writer *w, uint32_t v)
{
  unsigned char b[4] = { (unsigned char) v, (unsigned char) (v >> 8),
                         (unsigned char) (v >> 16), (unsigned char) (v >> 24) };
  put (w, b, 4);
}

static void
put_u64 (struct writer *w, uint64_t v)
{
  put_u32 (w, (uint32_t) v);
  put_u32 (w, (uint32_t) (v >> 32));
}

static void
put_str (struct writer *w, const char *s)
{
  size_t n = s ? strlen (s) : 0;
  if (n > TALLY_MAX_STRING)
    n = TALLY_MAX_STRING;
  put_u32 (w, (uint32_t) n);
  put (w, s, n);
}

static int
module_live (struct tally_module *m)
{
  return __atomic_load_n (&m->rt_state, __ATOMIC_ACQUIRE) == TALLY_STATE_REGISTERED;
}

/* Emit the record of module M.  */
static void
put_module (struct writer *w, const struct tally_module *m)
{
  put_u32 (w, TALLY_TAG_MODULE);
  put_u32 (w, m->abi_version);
  put_u64 (w, m->checksum);
  put_u32 (w, m->flags);
  put_u32 (w, m->nfns);
  put_str (w, m->source);
  put_str (w, m->directory);
  for (uint32_t i = 0; i < m->nfns; i++)
    {
      const struct tally_fn *f = m->fns[i];
      put_str (w, f->name);
      put_str (w, f->symbol);
      put_str (w, f->origin);
      put_str (w, f->file);
      put_u32 (w, f->line);
      put_u32 (w, f->flags);
      put_u32 (w, f->ncounters);
      put_u32 (w, 0);
      for (uint32_t k = 0; k < f->ncounters; k++)
        put_u64 (w, __atomic_load_n (&f->counters[k], __ATOMIC_RELAXED));
    }
}

/* Emit header, live modules and retained modules; the caller adds the
   trailer.  HEAD is the list head loaded once, so both passes see the same
   modules (registration only pushes in front of it).  NLIVE is the number of
   live modules counted in the first pass.  */
static void
put_body (struct writer *w, struct tally_module *head, uint64_t file_size,
          uint32_t nlive, uint32_t flags, const char *program)
{
  put (w, TALLY_FILE_MAGIC, TALLY_FILE_MAGIC_LEN);
  put_u32 (w, TALLY_FILE_VERSION);
  put_u32 (w, TALLY_BYTE_ORDER_MARK);
  put_u64 (w, file_size);
  put_u64 (w, (uint64_t) getpid ());
  put_u64 (w, (uint64_t) time (NULL));
  put_u32 (w, nlive + retained_count);
  put_u32 (w, flags);
  put_str (w, program);
  uint32_t written = 0;
  for (struct tally_module *m = head; m && written < nlive; m = m->next)
    if (module_live (m))
      {
        written++;
        put_module (w, m);
      }
  put (w, retained, retained_len);
}

static const char *
env (const char *name)
{
  size_t n = strlen (name);
  for (char **e = environ; e && *e; e++)
    if (strncmp (*e, name, n) == 0 && (*e)[n] == '=')
      return *e + n + 1;
  return NULL;
}

static size_t
append (char *dst, size_t pos, size_t cap, const char *s)
{
  while (*s && pos + 1 < cap)
    dst[pos++] = *s++;
  return pos;
}

/* Expand the TALLY_OUTPUT pattern into PATH.  Returns 0, or -1 if the result
   does not fit.  An unknown %-sequence is kept literally and reported.  */
static int
expand_path (char *path, size_t cap, const char *pattern)
{
  size_t pos = 0;
  for (const char *p = pattern; *p; p++)
    {
      char tmp[sizeof ((struct utsname *) 0)->nodename + 1];
      if (*p != '%')
        {
          if (pos + 1 >= cap)
            return -1;
          path[pos++] = *p;
          continue;
        }
      switch (p[1])
        {
        case 'p':
          tally_rt_utoa (tmp, (unsigned long) getpid ());
          pos = append (path, pos, cap, tmp);
          p++;
          break;
        case 'h':
          {
            struct utsname u;
            if (uname (&u) != 0)
              strcpy (u.nodename, "unknown-host");
            pos = append (path, pos, cap, u.nodename);
            p++;
            break;
          }
        case '%':
          pos = append (path, pos, cap, "%");
          p++;
          break;
        default:
          tally_rt_error ("TALLY_OUTPUT=%s: unknown pattern '%%%s' kept as "
                          "written (accepted: %%p pid, %%h host, %%%% a "
                          "percent sign)", pattern, p[1] ? (char[2]){ p[1], 0 } : "");
          pos = append (path, pos, cap, "%");
          break;
        }
      if (pos + 1 >= cap)
        return -1;
    }
  path[pos] = 0;
  return 0;
}

static const char *
errno_text (int e)
{
  switch (e)
    {
    case ENOENT: return "no such file or directory";
    case EACCES: return "permission denied";
    case EROFS: return "read-only file system";
    case ENOSPC: return "no space left on device";
    case EDQUOT: return "disk quota exceeded";
    case ENOTDIR: return "a path component is not a directory";
    case EISDIR: return "is a directory";
    case ENAMETOOLONG: return "file name too long";
    case EIO: return "input/output error";
    default: return "system error";
    }
}

static int
dump_locked (int at_exit)
{
  char path[4096], tmp[4096 + 32], program[4096];
  const char *pattern = env ("TALLY_OUTPUT");
  if (!pattern || !*pattern)
    pattern = DEFAULT_OUTPUT;
  if (expand_path (path, sizeof path, pattern) != 0)
    {
      tally_rt_error ("TALLY_OUTPUT=%s: expanded path is too long; no data "
                      "written", pattern);
      errno = ENAMETOOLONG;
      return -1;
    }
  ssize_t plen = readlink ("/proc/self/exe", program, sizeof program - 1);
  program[plen > 0 ? plen : 0] = 0;

  struct tally_module *head = __atomic_load_n (&tally_modules, __ATOMIC_ACQUIRE);
  uint32_t nmodules = 0;
  for (struct tally_module *m = head; m; m = m->next)
    nmodules += module_live (m);
  uint32_t flags = at_exit ? TALLY_FILE_AT_EXIT : 0;

  struct writer w = { NULL, -1, 0, 0, 0, 0 };
  put_body (&w, head, 0, nmodules, flags, program);
  uint64_t file_size = w.total + TALLY_TRAILER_SIZE;

  char digits[24];
  tally_rt_utoa (digits, (unsigned long) getpid ());
  size_t n = append (tmp, 0, sizeof tmp, path);
  n = append (tmp, n, sizeof tmp, ".tmp.");
  n = append (tmp, n, sizeof tmp, digits);
  tmp[n] = 0;

  w = (struct writer){ NULL, -1, 0, 0, 0, 0 };
  do
    w.fd = open (tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  while (w.fd < 0 && errno == EINTR);
  if (w.fd < 0)
    {
      int e = errno;
      tally_rt_error ("cannot create %s: %s (errno %d); no data written",
                      tmp, errno_text (e), e);
      errno = e;
      return -1;
    }
  put_body (&w, head, file_size, nmodules, flags, program);
  /* The CRC covers everything before the trailer: fold in what is still
     buffered, then write the trailer outside the checksum.  */
  uint32_t crc = tally_crc32 (w.crc, outbuf, w.used);
  put_u32 (&w, TALLY_TAG_END);
  put_u32 (&w, crc);
  put_u64 (&w, file_size);
  flush (&w);
  if (close (w.fd) != 0 && !w.failed && errno != EINTR)
    w.failed = errno;
  if (!w.failed && w.total != file_size)
    w.failed = EIO; /* cannot happen unless a module changed under us */
  if (!w.failed && rename (tmp, path) != 0)
    w.failed = errno;
  if (w.failed)
    {
      tally_rt_error ("cannot write %s: %s (errno %d); no data written",
                      path, errno_text (w.failed), w.failed);
      unlink (tmp);
      errno = w.failed;
      return -1;
    }
  if (env ("TALLY_VERBOSE"))
    tally_rt_error ("wrote %s (%u modules)", path, nmodules);
  return 0;
}

/* Take the dump lock.  WAIT: spin until it is free (exit dump, retain);
   otherwise fail with EBUSY at once (tally_dump, maybe in a signal
   handler that interrupted a dump).  */
static int
lock_dump (int wait)
{
  int expected = 0;
  unsigned spins = 0;
  while (!__atomic_compare_exchange_n (&dumping, &expected, 1, 0,
                                       __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
    {
      expected = 0;
      if (!wait || ++spins > 2000000u)
        {
          if (wait)
            tally_rt_error ("another dump never finished; giving up");
          errno = EBUSY;
          return -1;
        }
      sched_yield ();
    }
  return 0;
}

static void
unlock_dump (void)
{
  __atomic_store_n (&dumping, 0, __ATOMIC_RELEASE);
}

int
tally_rt_dump (int at_exit)
{
  int saved = errno;
  if (lock_dump (at_exit) != 0)
    return -1;
  int rc = dump_locked (at_exit);
  int e = errno;
  unlock_dump ();
  errno = rc == 0 ? saved : e;
  return rc;
}

/* Append the record of M to the retained area.  Returns 0, or -1 if no
   memory could be had.  Called with the dump lock held.  */
static int
retain_locked (struct tally_module *m)
{
  struct writer w = { NULL, -1, 0, 0, 0, 0 };
  put_module (&w, m);
  size_t need = retained_len + (size_t) w.total;
  if (need > retained_cap)
    {
      size_t cap = retained_cap ? retained_cap : (size_t) 1 << 20;
      while (cap < need)
        cap *= 2;
      void *p = retained
                    ? mremap (retained, retained_cap, cap, MREMAP_MAYMOVE)
                    : mmap (NULL, cap, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED)
        return -1;
      retained = (unsigned char *) p;
      retained_cap = cap;
    }
  w = (struct writer){ retained + retained_len, -1, 0, 0, 0, 0 };
  put_module (&w, m);
  retained_len += (size_t) w.total;
  retained_count++;
  return 0;
}

/* Take M out of the module list.  Called with the dump lock held, so no
   dump walks the list meanwhile; registrations only ever replace the head,
   so only unlinking the head needs a compare-and-swap.  */
static void
unlink_locked (struct tally_module *m)
{
  struct tally_module *head = m;
  if (__atomic_compare_exchange_n (&tally_modules, &head, m->next, 0,
                                   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return;
  for (struct tally_module *p = head; p; p = p->next)
    if (p->next == m)
      {
        p->next = m->next;
        return;
      }
}

void
tally_rt_module_gone (struct tally_module *m, int keep)
{
  int saved = errno;
  if (lock_dump (1) != 0)
    return;
  if (keep && retain_locked (m) != 0)
    {
      dump_locked (0);
      tally_rt_error ("%s: no memory to keep the counts of this unloaded "
                      "module; they are in the data file written now, not "
                      "in the one written at exit", m->source);
    }
  __atomic_store_n (&m->rt_state, TALLY_STATE_GONE, __ATOMIC_RELEASE);
  unlink_locked (m);
  unlock_dump ();
  errno = saved;
}

void
tally_rt_reset_local (void)
{
  if (lock_dump (1) != 0)
    return;
  for (struct tally_module *m = __atomic_load_n (&tally_modules, __ATOMIC_ACQUIRE);
       m; m = m->next)
    for (uint32_t i = 0; i < m->nfns; i++)
      for (uint32_t k = 0; k < m->fns[i]->ncounters; k++)
        __atomic_store_n (&m->fns[i]->counters[k], 0, __ATOMIC_RELAXED);
  unlock_dump ();
}

int
tally_dump (void)
{
  return tally_rt_primary ()->dump (0);
}
