/* Continuous output: counters that live in the data file (TALLY_OUTPUT
 * with %c), so that _exit, SIGKILL or a crash lose nothing.
 *
 * A unit built with -fplugin-arg-tally-counters=mapped updates every
 * counter (and visited byte) at its address plus the unit's bias
 * (struct tally_module.bias), which is 0 until this file sets it.  When
 * TALLY_OUTPUT has %c, the registration of such a unit (before it joins
 * the module list, under the dump lock):
 *
 * 1. opens the continuous file the first time: a new one is written to
 *    PATH.tmp.RANDOM and renamed into place (a header only); an existing one
 *    that this very process wrote before an exec (same pid, same process
 *    start time) is continued, as a new session, so the exec'd image does
 *    not clobber it;
 * 2. appends a CMOD chunk: the unit's module record (with the counts so
 *    far) and a table of where each function's counters are in the region,
 *    then grows the file by the region, allocated (fallocate: a sparse
 *    region on a full file system would fault with SIGBUS at the first
 *    store into a page it has no room for), page-aligned: the span from the
 *    unit's first counter to its last (the plugin puts them all in one
 *    section, so the span holds nothing else), rounded out to whole pages;
 * 3. maps the region MAP_SHARED, copies the counts so far into it and sets
 *    the bias to (region - span's first page), so from then on every update
 *    is a store into the page cache of the file: the kernel keeps it
 *    whatever becomes of the process.
 *
 * Every dump (exit, tally_dump, exec, TALLY_DUMP_ON) appends a DUMP chunk:
 * a whole ordinary data file (an "image") of the modules whose counts are
 * not in a region; the reader takes the regions and the last complete
 * image (format/continuous.c), so a file whose last image was written at exit
 * is complete, and one without is the file of a killed process.
 *
 * fork: the child maps a file of its own over the parent's regions at the
 * same addresses (MAP_FIXED), so the bias, possibly held in a register by
 * a function active across the fork, stays right and the child never
 * writes into the parent's file; its regions start from zero, as the
 * child's counters do.  A region stays mapped after its unit unloads (code
 * of the library running after the unit unregistered still writes to it);
 * a reload registers a new unit with a new region.
 *
 * Failures (no space, no file, a mapping refused) are named once on stderr
 * and the unit keeps its bias 0: its counts are written by the dumps, as
 * without %c.  */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rt.h"
#include "tally/format.h"

/* One unit's region: the shared mapping at ADDR, LEN bytes, mirrors the
   pages from START of the unit's counters.  M is NULL once the unit is
   gone.  */
struct region
{
  struct tally_module *m;
  unsigned char *addr;
  size_t len;
  uintptr_t start;
  uint64_t chunk; /* file offset of its CMOD chunk */
};

/* Everything below is guarded by the dump lock.  */
static struct region *regions; /* the regions mapped, mmap'ed */
static size_t nregions;        /* entries in regions */
static size_t regions_cap;     /* bytes mapped at regions */
static int state;              /* 0 undecided, 1 on, -1 off */
static int cont_fd = -1;       /* the continuous file, open read-write */
static uint64_t cont_end;      /* where the next chunk goes */
static uint32_t session;       /* of this image's DUMP chunks */
static char cont_file[4096];   /* the continuous file's path */
static dev_t cont_dev;         /* and its identity, to notice a program */
static ino_t cont_ino;         /* that closed cont_fd (see file_ok) */
static size_t page;            /* the page size: regions are aligned to it */
static int cont_created;       /* this image created the file (not exec'd
                                  into one it continues) */
static int cont_dumped;        /* a DUMP chunk of this image is in it */

/* pread exactly N bytes at OFF; whether it worked.  */
static int
pread_all (int fd, void *buf, size_t n, uint64_t off)
{
  unsigned char *p = (unsigned char *) buf;
  while (n)
    {
      ssize_t k = pread (fd, p, n, (off_t) off);
      if (k < 0 && errno == EINTR)
        continue;
      if (k <= 0)
        return 0;
      p += k;
      n -= (size_t) k;
      off += (uint64_t) k;
    }
  return 1;
}

/* Allocate the file's blocks for [OFF, OFF + LEN) and extend the file to
   OFF + LEN: 0 or an errno value (ENOSPC on a full file system).  A region
   only sized with ftruncate is sparse, and the first store into a page the
   file system then has no room for kills the process with SIGBUS; an
   allocated one takes every store.  A file system without fallocate gets
   the region written with zeros (what posix_fallocate does then), which
   allocates it as well.  */
static int
reserve (int fd, uint64_t off, uint64_t len)
{
  int r;
  do
    r = fallocate (fd, 0, (off_t) off, (off_t) len);
  while (r != 0 && errno == EINTR);
  if (r == 0)
    return 0;
  if (errno != EOPNOTSUPP && errno != ENOSYS)
    return errno;
  /* Not const: zero-filled in .bss, not 4 KB of every binary's file.  */
  static unsigned char zeros[4096];
  while (len)
    {
      size_t n = len < sizeof zeros ? (size_t) len : sizeof zeros;
      int e = tally_rt_write_all (fd, zeros, n, (int64_t) off);
      if (e)
        return e;
      off += n;
      len -= n;
    }
  return 0;
}

static size_t
round_up (size_t v, size_t to)
{
  return (v + to - 1) / to * to;
}

/* The start time of this process (clock ticks after boot), which exec
   keeps and a later process with a reused pid does not share; 0 if
   unknown.  */
static uint64_t
process_start (void)
{
  char buf[1024];
  int fd = open ("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  ssize_t n = read (fd, buf, sizeof buf - 1);
  close (fd);
  if (n <= 0)
    return 0;
  buf[n] = 0;
  /* Field 2 is "(comm)", which may hold spaces: count after the last ')'.  */
  char *p = strrchr (buf, ')');
  if (!p)
    return 0;
  int field = 2;
  uint64_t v = 0;
  for (p++; *p && field < 22; p++)
    if (*p == ' ')
      field++;
  for (; *p >= '0' && *p <= '9'; p++)
    v = v * 10 + (uint64_t) (*p - '0');
  return v;
}

static void
note_identity (void)
{
  struct stat st;
  if (fstat (cont_fd, &st) == 0)
    {
      cont_dev = st.st_dev;
      cont_ino = st.st_ino;
    }
}

/* Whether cont_fd is still the continuous file.  A program may close every
   descriptor it did not open itself (daemons do), and the number may then
   name another file, which a dump must not write into: the file is opened
   again by its path if it is still the same one.  */
static int
file_ok (void)
{
  struct stat st;
  if (fstat (cont_fd, &st) == 0 && st.st_dev == cont_dev && st.st_ino == cont_ino)
    return 1;
  int fd = open (cont_file, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return 0;
  if (fstat (fd, &st) != 0 || st.st_dev != cont_dev || st.st_ino != cont_ino)
    {
      close (fd);
      return 0;
    }
  cont_fd = fd; /* the old number is not ours any more: left alone */
  return 1;
}

/* Whether FD is a continuous file this process wrote before an exec; if
   so, continue it: find its end (leaving out a chunk cut short) and the
   next session number.  */
static int
adopt (int fd, uint64_t start)
{
  struct stat st;
  unsigned char h[TALLY_HEADER_FIXED + TALLY_STR_FIXED];
  struct tally_hdr hdr;
  if (fstat (fd, &st) != 0 || !S_ISREG (st.st_mode)
      || !pread_all (fd, h, sizeof h, 0)
      || memcmp (h, TALLY_FILE_MAGIC, TALLY_FILE_MAGIC_LEN) != 0)
    return 0;
  tally_hdr_get (h, &hdr);
  if (hdr.version != TALLY_FILE_VERSION_CONT
      || hdr.byte_order != TALLY_BYTE_ORDER_MARK
      || hdr.pid != (uint64_t) getpid ()
      || !(hdr.flags & TALLY_FILE_CONTINUOUS))
    return 0;
  uint64_t size = (uint64_t) st.st_size;
  uint64_t pos = sizeof h + tally_le_get32 (h + TALLY_HEADER_FIXED);
  unsigned char s[TALLY_CSTART_SIZE];
  struct tally_cstart cs;
  if (pos + sizeof s > size || !pread_all (fd, s, sizeof s, pos))
    return 0;
  tally_cstart_get (s, &cs);
  if (cs.start != start || start == 0)
    return 0;
  pos += sizeof s;
  uint32_t next = 0;
  while (pos + TALLY_DUMP_FIXED <= size)
    {
      unsigned char c[TALLY_DUMP_FIXED];
      if (!pread_all (fd, c, TALLY_DUMP_FIXED, pos))
        return 0;
      uint32_t tag = tally_le_get32 (c);
      uint64_t len;
      if (tag == TALLY_TAG_CMOD)
        len = tally_le_get64 (c + TALLY_CMOD_LEN);
      else if (tag == TALLY_TAG_DUMP)
        {
          struct tally_dumphdr d;
          tally_dumphdr_get (c, &d);
          len = d.image_size > size ? size : d.image_size + TALLY_DUMP_FIXED;
          if (d.session >= next)
            next = d.session + 1;
        }
      else
        return 0; /* not ours to continue: it is replaced */
      if (len < TALLY_DUMP_FIXED || len > size - pos)
        break;
      pos += len;
    }
  /* A chunk cut short by the exec'd image's death is dropped.  */
  if (pos != size && ftruncate (fd, (off_t) pos) != 0)
    return 0;
  cont_end = pos;
  session = next ? next : 1;
  return 1;
}

/* Step 1: open or create the continuous file PATH.  0, or an errno value
   (reported by the caller).  */
static int
open_file (const char *path, const char *program)
{
  /* A device or FIFO (/dev/null) cannot hold regions, and renaming over it
     would replace it; a link, a directory, another user's file are refused
     (outfile.c, reported).  */
  int inplace;
  if (tally_rt_out_check (path, &inplace) != 0)
    return errno;
  if (inplace)
    return EISDIR;
  uint64_t start = process_start ();
  int fd;
  do
    fd = open (path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  while (fd < 0 && errno == EINTR);
  if (fd >= 0)
    {
      struct stat st;
      if (fstat (fd, &st) == 0 && (st.st_uid == geteuid () || st.st_uid == 0)
          && adopt (fd, start))
        {
          cont_fd = fd;
          note_identity ();
          return 0;
        }
      close (fd);
    }
  char tmp[4096 + 32];
  fd = tally_rt_out_tmp (path, tmp, sizeof tmp, 1);
  if (fd < 0)
    return errno;
  size_t plen = strlen (program);
  if (plen > TALLY_MAX_STRING)
    plen = TALLY_MAX_STRING;
  unsigned char h[TALLY_HEADER_FIXED + TALLY_STR_FIXED];
  struct tally_hdr hdr = { TALLY_FILE_VERSION_CONT, TALLY_BYTE_ORDER_MARK, 0,
                           (uint64_t) getpid (), (uint64_t) time (NULL), 0,
                           TALLY_FILE_CONTINUOUS };
  tally_hdr_put (h, &hdr);
  tally_le_put32 (h + TALLY_HEADER_FIXED, (uint32_t) plen);
  unsigned char s[TALLY_CSTART_SIZE];
  struct tally_cstart cs = { start };
  tally_cstart_put (s, &cs);
  int e = tally_rt_write_all (fd, h, sizeof h, 0);
  if (!e)
    e = tally_rt_write_all (fd, program, plen, sizeof h);
  if (!e)
    e = tally_rt_write_all (fd, s, sizeof s, (int64_t) (sizeof h + plen));
  if (!e && tally_rt_out_commit (tmp, path) != 0)
    e = errno; /* reported */
  if (e)
    {
      close (fd);
      unlink (tmp);
      return e;
    }
  cont_fd = fd;
  note_identity ();
  cont_end = sizeof h + plen + TALLY_CSTART_SIZE;
  session = 0;
  cont_created = 1;
  return 0;
}

/* The first registration of a counters=mapped unit: is there continuous
   output, and where.  */
static void
decide (void)
{
  char program[4096];
  const char *pattern = tally_rt_output_pattern ();
  tally_rt_program (program, sizeof program);
  int merge = 0, cont = 0;
  state = -1;
  if (tally_rt_expand_path (cont_file, sizeof cont_file, pattern, program,
                            &merge, &cont) != 0 || !cont)
    return; /* dump_locked names a path that is too long */
  if (merge)
    {
      tally_rt_error ("TALLY_OUTPUT=%s: %%c (continuous output) cannot be "
                      "combined with %%m (merge-on-write); continuous output "
                      "is off, the counts are merged when the program dumps",
                      pattern);
      return;
    }
  page = (size_t) sysconf (_SC_PAGESIZE);
  if (page == 0 || page == (size_t) -1)
    page = 4096;
  int e = open_file (cont_file, program);
  if (e)
    {
      tally_rt_error ("cannot create %s for continuous output: %s (errno "
                      "%d); the counts will be written when the program "
                      "dumps, as without %%c", cont_file,
                      e == EISDIR ? "not a regular file"
                                  : tally_rt_errno_text (e), e);
      return;
    }
  state = 1;
}

/* Room for one more region entry; whether there is.  */
static int
grow_regions (void)
{
  if ((nregions + 1) * sizeof *regions <= regions_cap)
    return 1;
  size_t cap = regions_cap ? regions_cap * 2 : 4096;
  void *p = regions ? mremap (regions, regions_cap, cap, MREMAP_MAYMOVE)
                    : mmap (NULL, cap, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return 0;
  regions = (struct region *) p;
  regions_cap = cap;
  return 1;
}

/* The span of M's counters and visited bytes: [*LO, *HI).  */
static void
span_of (const struct tally_module *m, uintptr_t *lo, uintptr_t *hi)
{
  *lo = UINTPTR_MAX;
  *hi = 0;
  for (uint32_t i = 0; i < m->nfns; i++)
    {
      const struct tally_fn *f = m->fns[i];
      uintptr_t a = (uintptr_t) f->counters, b = a + (uintptr_t) f->ncounters * 8;
      if (f->ncounters && a < *lo)
        *lo = a;
      if (f->ncounters && b > *hi)
        *hi = b;
      if (f->visited && f->nvisited)
        {
          a = (uintptr_t) f->visited;
          b = a + f->nvisited;
          if (a < *lo)
            *lo = a;
          if (b > *hi)
            *hi = b;
        }
    }
}

/* Step 2: the CMOD chunk of M at OFF, for a region of LEN bytes mirroring
   the pages from START, at file offset REGION.  0 or an errno value.  */
static int
write_chunk (int fd, const struct tally_module *m, uint64_t off,
             uintptr_t start, size_t len, uint64_t region)
{
  size_t rec = tally_rt_module_record (m, NULL);
  size_t head = TALLY_CMOD_FIXED + (size_t) m->nfns * TALLY_CMOD_FN + rec;
  void *mem = mmap (NULL, head, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED)
    return errno;
  unsigned char *b = (unsigned char *) mem;
  struct tally_cmod c = { 0, region + len - off, region - off, len, m->nfns,
                          (uint32_t) rec };
  tally_cmod_put (b, &c);
  unsigned char *t = b + TALLY_CMOD_FIXED;
  for (uint32_t i = 0; i < m->nfns; i++, t += TALLY_CMOD_FN)
    {
      const struct tally_fn *f = m->fns[i];
      int vis = f->visited && f->nvisited;
      struct tally_cmodfn cf = {
        (uint64_t) ((uintptr_t) f->counters - start),
        vis ? (uint64_t) ((uintptr_t) f->visited - start) : UINT64_MAX,
        f->ncounters, vis ? f->nvisited : 0 };
      tally_cmodfn_put (t, &cf);
    }
  tally_rt_module_record (m, t);
  /* The CRC covers the chunk from its length on (TALLY_CMOD_LEN).  */
  c.crc = tally_crc32 (0, b + TALLY_CMOD_LEN, head - TALLY_CMOD_LEN);
  tally_cmod_put (b, &c);
  int e = tally_rt_write_all (fd, b, head, (int64_t) off);
  munmap (mem, head);
  return e;
}

/* Steps 2 and 3 for M; 0 or an errno value, with *WHAT the step.  */
static int
map_module (struct tally_module *m, const char **what)
{
  uintptr_t lo, hi;
  span_of (m, &lo, &hi);
  if (lo >= hi)
    return 0; /* no counters: its record goes with the dumps */
  uintptr_t start = lo & ~(uintptr_t) (page - 1);
  size_t len = round_up (hi - start, page);
  size_t rec = tally_rt_module_record (m, NULL);
  uint64_t region = round_up ((size_t) cont_end + TALLY_CMOD_FIXED
                                  + (size_t) m->nfns * TALLY_CMOD_FN + rec,
                              page);
  *what = "grow regions";
  if (!grow_regions ())
    return ENOMEM;
  *what = "reopen";
  if (!file_ok ())
    return EBADF;
  *what = "write";
  int e = write_chunk (cont_fd, m, cont_end, start, len, region);
  if (e)
    return e;
  *what = "allocate";
  e = reserve (cont_fd, region, len);
  if (e)
    return e;
  *what = "map";
  void *addr = mmap (NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, cont_fd,
                     (off_t) region);
  if (addr == MAP_FAILED)
    return errno;
  /* The counts so far (code run before registration), then the switch:
     nothing else runs the unit's code yet.  */
  memcpy ((unsigned char *) addr + (lo - start), (const void *) lo, hi - lo);
  /* From now on the dumps ask which modules are here (rt.h: a callback
     of the records layer).  */
  __atomic_store_n (&tally_rt_cont_mapped_cb, tally_rt_cont_mapped,
                    __ATOMIC_RELEASE);
  regions[nregions++] = (struct region){ m, (unsigned char *) addr, len,
                                         start, cont_end };
  __atomic_store_n (m->bias, (intptr_t) addr - (intptr_t) start,
                    __ATOMIC_RELEASE);
  cont_end = region + len;
  return 0;
}

void
tally_rt_cont_register (struct tally_module *m)
{
  if (!(m->flags & TALLY_MOD_COUNTERS_MAPPED) || !m->bias)
    return;
  if (tally_rt_lock (1) != 0)
    {
      tally_rt_error ("%s: registered while a dump of this thread runs; its "
                      "counts are written by the dumps, not continuously",
                      m->source);
      return;
    }
  if (state == 0)
    decide ();
  if (state == 1)
    {
      const char *what = "";
      uint64_t end = cont_end;
      int e = map_module (m, &what);
      if (e)
        {
          if (e != EBADF && ftruncate (cont_fd, (off_t) end) != 0)
            e = errno; /* best effort: leave no half chunk behind */
          tally_rt_error ("%s: cannot %s its region of %s (%s, errno %d); "
                          "its counts will be written when the program "
                          "dumps, not continuously", m->source, what,
                          cont_file, tally_rt_errno_text (e), e);
        }
    }
  tally_rt_unlock ();
}

int
tally_rt_cont_on (void)
{
  return state == 1;
}

const char *
tally_rt_cont_path (void)
{
  return cont_file;
}

int
tally_rt_cont_mapped (const struct tally_module *m)
{
  for (size_t i = 0; i < nregions; i++)
    if (regions[i].m == m)
      return 1;
  return 0;
}

int
tally_rt_cont_gone (const struct tally_module *m)
{
  for (size_t i = 0; i < nregions; i++)
    if (regions[i].m == m)
      {
        regions[i].m = NULL;
        return 1;
      }
  return 0;
}

/* A dump into the file failed (reported).  If the file holds nothing but
   the header this image wrote (no region could be had and no dump was
   written), a reader would take it for a finished empty profile, or one
   of a killed process: it is removed, and the dumps that follow write an
   ordinary file, as without %c.  */
static void
drop_if_empty (void)
{
  if (!cont_created || nregions || cont_dumped || !file_ok ())
    return;
  if (unlink (cont_file) == 0)
    tally_rt_error ("%s: removed: it held only its header (no counts)",
                    cont_file);
  close (cont_fd);
  cont_fd = -1;
  state = -1;
}

int
tally_rt_cont_dump_begin (uint64_t size)
{
  unsigned char h[TALLY_DUMP_FIXED];
  struct tally_dumphdr d = { session, size };
  tally_dumphdr_put (h, &d);
  if (!file_ok ())
    {
      tally_rt_error ("%s: its descriptor was closed by the program and the "
                      "file is gone or replaced; no data written",
                      cont_file);
      errno = EBADF;
      return -1;
    }
  int e = tally_rt_write_all (cont_fd, h, sizeof h, (int64_t) cont_end);
  int fd = e ? -1 : dup (cont_fd);
  if (fd >= 0 && lseek (fd, (off_t) (cont_end + sizeof h), SEEK_SET) < 0)
    {
      close (fd);
      fd = -1;
    }
  if (fd < 0)
    {
      e = e ? e : errno;
      if (ftruncate (cont_fd, (off_t) cont_end) != 0)
        e = e ? e : errno;
      tally_rt_error ("cannot write %s: %s (errno %d); no data written",
                      cont_file, tally_rt_errno_text (e), e);
      drop_if_empty ();
      errno = e;
    }
  return fd;
}

void
tally_rt_cont_dump_end (uint64_t size, int ok)
{
  if (ok)
    {
      cont_end += TALLY_DUMP_FIXED + size;
      cont_dumped = 1;
    }
  else if (ftruncate (cont_fd, (off_t) cont_end) != 0)
    tally_rt_error ("%s: a failed dump could not be cut off; readers will "
                    "leave it out", cont_file);
  else
    drop_if_empty ();
}

/* The fork child could not have a file of its own: every region becomes
   private zeroed memory at the same address (never the parent's file), and
   the units count in their own memory again, written by the dumps.  */
static void
child_fallback (void)
{
  for (size_t i = 0; i < nregions; i++)
    {
      struct region *r = &regions[i];
      if (!r->len)
        continue; /* already unmapped */
      mmap (r->addr, r->len, PROT_READ | PROT_WRITE,
            MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
      if (r->m)
        __atomic_store_n (r->m->bias, 0, __ATOMIC_RELEASE);
    }
  nregions = 0;
  state = -1;
}

void
tally_rt_cont_fork_child (void)
{
  if (state != 1)
    return;
  struct stat st;
  if (fstat (cont_fd, &st) == 0 && st.st_dev == cont_dev && st.st_ino == cont_ino)
    close (cont_fd); /* the parent's file; another descriptor is left alone */
  cont_fd = -1;
  char program[4096], path[sizeof cont_file];
  const char *pattern = tally_rt_output_pattern ();
  tally_rt_program (program, sizeof program);
  int merge = 0, cont = 0;
  int e = tally_rt_expand_path (path, sizeof path, pattern, program, &merge,
                                &cont) != 0 ? ENAMETOOLONG : 0;
  if (!e && strcmp (path, cont_file) == 0)
    {
      /* No %p: the child must not replace its parent's file.  */
      char digits[24];
      size_t n = strlen (path), d = tally_rt_utoa (digits, (unsigned long) getpid ());
      if (n + d + 2 > sizeof path)
        e = ENAMETOOLONG;
      else
        {
          path[n] = '.';
          memcpy (path + n + 1, digits, d + 1);
          tally_rt_error ("TALLY_OUTPUT=%s has no %%p: the forked child "
                          "writes %s, not its parent's file", pattern, path);
        }
    }
  if (!e)
    {
      memcpy (cont_file, path, sizeof path);
      cont_dumped = 0;
      e = open_file (cont_file, program);
    }
  /* The units still loaded get a chunk and a fresh (zero) region each,
     mapped where the parent's was; regions of units gone are dropped.  */
  for (size_t i = 0; !e && i < nregions; i++)
    {
      struct region *r = &regions[i];
      if (!r->m)
        {
          munmap (r->addr, r->len);
          r->len = 0;
          continue;
        }
      size_t rec = tally_rt_module_record (r->m, NULL);
      uint64_t region = round_up ((size_t) cont_end + TALLY_CMOD_FIXED
                                      + (size_t) r->m->nfns * TALLY_CMOD_FN
                                      + rec,
                                  page);
      e = write_chunk (cont_fd, r->m, cont_end, r->start, r->len, region);
      if (!e)
        e = reserve (cont_fd, region, r->len);
      if (!e && mmap (r->addr, r->len, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_FIXED, cont_fd, (off_t) region)
                    == MAP_FAILED)
        e = errno;
      if (!e)
        {
          r->chunk = cont_end;
          cont_end = region + r->len;
        }
    }
  if (e)
    {
      tally_rt_error ("forked child: cannot give it a continuous file of its "
                      "own (%s, errno %d); it writes its counts when it "
                      "dumps", tally_rt_errno_text (e), e);
      /* The chunk that found no room is cut off (cont_end is where it
         began), so the child's file does not end in a half chunk.  */
      if (cont_fd >= 0)
        {
          int r;
          do
            r = ftruncate (cont_fd, (off_t) cont_end);
          while (r != 0 && errno == EINTR);
          close (cont_fd); /* the child's own, or none */
        }
      cont_fd = -1;
      child_fallback ();
      return;
    }
  size_t kept = 0;
  for (size_t i = 0; i < nregions; i++)
    if (regions[i].len)
      regions[kept++] = regions[i];
  nregions = kept;
}
