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
 * counts are never lost.  The area is mmap'ed memory, grown with mremap.
 *
 * Also here: the rewrite for counts made after the exit dump, the fork
 * child's reset, and merge-on-write (a TALLY_OUTPUT with %m), whose only
 * additions to the async-signal-safe path are mmap, munmap and an fcntl
 * lock (the merge may wait for another process's write).  */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "rt.h"
#include "tally/format.h"
#include "tally/image.h"
#include "tally/tally.h"

extern char **environ;

/* Output staging buffer; only the holder of `dumping` touches it.  */
static unsigned char outbuf[1 << 16];

/* The thread id of the thread holding the dump lock (a dump, a retain, a
   reset), 0 when free.  Keeping the holder's id rather than 1 lets a
   signal handler see that it interrupted its own thread's dump, which it
   must not wait for (see lock_dump).  */
static pid_t dumping;

/* Module records of unregistered modules, in file format (see above);
   guarded by `dumping`.  */
static unsigned char *retained;
static size_t retained_len, retained_cap;
static uint32_t retained_count;

/* The function id of the first function of each retained record, for its
   measured values (shadow.c); RETAINED_IDS_MAX entries reserved.  */
#define RETAINED_IDS_MAX ((size_t) 1 << 16)
static uint32_t *retained_ids;

/* Each live module's counter sum at the last at-exit dump, in list order
   (see "Counts made after the exit dump" below); guarded by `dumping`.  */
struct exit_sum
{
  struct tally_module *m;
  uint64_t sum;
};
static struct exit_sum *exit_sums; /* guarded by `dumping` */
static size_t exit_sums_len, exit_sums_cap, exit_sums_cursor;
static int exit_written; /* the last at-exit dump succeeded */
static int exit_dump_off; /* tally_exit_dump_off: no file at exit */

/* Defined further down, used by merge-on-write.  */
static void zero_retained (void);
static unsigned char *skip_str (unsigned char *p);

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
  if (w->mem && n) /* memcpy from NULL is undefined even for 0 bytes */
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

/* Whether a dump writes M's record: a live module whose counts are not in
   a region of the continuous file (those are on disk already).  */
static int
module_written (struct tally_module *m)
{
  return module_live (m) && !tally_rt_cont_mapped (m);
}

uint32_t
tally_rt_fn_nvalues (const struct tally_fn *f)
{
  return f->ncounters + (f->visited ? f->nvisited : 0);
}

uint64_t
tally_rt_fn_value (const struct tally_module *m, uint32_t fn, uint32_t k)
{
  const struct tally_fn *f = m->fns[fn];
  if (k >= f->ncounters)
    return __atomic_load_n (&tally_rt_live_visited (m, f->visited)[k - f->ncounters],
                            __ATOMIC_RELAXED)
           != 0;
  uint64_t v = __atomic_load_n (&tally_rt_live_counters (m, f->counters)[k],
                                __ATOMIC_RELAXED);
  if (m->flags & TALLY_MOD_UPDATE_TLS)
    v += tally_rt_tls_value (m, fn, k);
  return v;
}

/* Emit the record of module M.  */
static void
put_module (struct writer *w, const struct tally_module *m)
{
  /* From the unit's compile-time blob if it has one (mapblob.c), after
     what is buffered.  */
  if (w->fd >= 0 && !w->mem && tally_rt_blob_usable (m))
    flush (w);
  struct tally_rt_sink s = { w->mem, w->fd, w->total, w->crc, w->failed };
  if (tally_rt_blob_put (m, &s))
    {
      w->total = s.total;
      w->crc = s.crc;
      w->failed = s.failed;
      return;
    }
  put_u32 (w, TALLY_TAG_MODULE);
  put_u32 (w, m->abi_version);
  put_u64 (w, m->checksum);
  put_u32 (w, m->flags & ~TALLY_MOD_BLOB);
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
      uint32_t nv = tally_rt_fn_nvalues (f);
      put_u32 (w, nv);
      put_u32 (w, 0);
      for (uint32_t k = 0; k < nv; k++)
        put_u64 (w, tally_rt_fn_value (m, i, k));
      put_u32 (w, f->map ? f->map_size : 0);
      if (f->map)
        put (w, f->map, f->map_size);
    }
}

size_t
tally_rt_module_record (const struct tally_module *m, unsigned char *mem)
{
  struct writer w = { mem, -1, 0, 0, 0, 0 };
  put_module (&w, m);
  return (size_t) w.total;
}

static void
put_header (struct writer *w, uint64_t file_size, uint32_t nmodules,
            uint32_t flags, const char *program)
{
  put (w, TALLY_FILE_MAGIC, TALLY_FILE_MAGIC_LEN);
  put_u32 (w, TALLY_FILE_VERSION);
  put_u32 (w, TALLY_BYTE_ORDER_MARK);
  put_u64 (w, file_size);
  put_u64 (w, (uint64_t) getpid ());
  put_u64 (w, (uint64_t) time (NULL));
  put_u32 (w, nmodules);
  put_u32 (w, flags);
  put_str (w, program);
}

/* Emit the live modules and the retained ones.  HEAD is the list head
   loaded once, so every pass sees the same modules (registration only
   pushes in front of it).  NLIVE is the number of live modules counted in
   the first pass.  */
static void
put_records (struct writer *w, struct tally_module *head, uint32_t nlive)
{
  uint32_t written = 0;
  for (struct tally_module *m = head; m && written < nlive; m = m->next)
    if (module_written (m))
      {
        written++;
        put_module (w, m);
      }
  put (w, retained, retained_len);
}

/* The NEV PAPI event totals (inclusive, exclusive) of function ID.  */
static void
put_events (struct writer *w, uint32_t id, unsigned nev)
{
  for (unsigned e = 0; e < nev; e++)
    {
      uint64_t incl = 0, excl = 0;
      if (id != UINT32_MAX)
        tally_rt_papi_totals (id, e, &incl, &excl);
      put_u64 (w, incl);
      put_u64 (w, excl < incl ? excl : incl);
    }
}

/* The PAPI events a dump writes (measure=papi), fixed once per dump (a
   thread's first hook may set PAPI up between its two passes).  */
static unsigned
papi_events (void)
{
  const char *ev_names[TALLY_PAPI_MAX];
  return tally_rt_papi_events ? tally_rt_papi_events (ev_names) : 0;
}

/* The measured values (measure=cycles) of NMODULES module records: the
   live modules in HEAD's list order, then the retained ones, as
   put_records writes them, with NEV PAPI events.  Written only when some
   module measures.  */
static void
put_meas (struct writer *w, struct tally_module *head, uint32_t nlive,
          unsigned nev)
{
  uint32_t cap;
  const struct tally_meas *meas = tally_rt_meas (&cap);
  const char *ev_names[TALLY_PAPI_MAX];
  if (nev)
    nev = tally_rt_papi_events (ev_names); /* set once: the same now */
  put_u32 (w, TALLY_TAG_MEAS);
  put_u32 (w, 1 + nev);
  put_str (w, "cycles");
  for (unsigned e = 0; e < nev; e++)
    put_str (w, ev_names[e]);
  put_u32 (w, nlive + retained_count);
  uint32_t written = 0;
  for (struct tally_module *m = head; m && written < nlive; m = m->next)
    if (module_written (m))
      {
        written++;
        put_u32 (w, m->nfns);
        for (uint32_t i = 0; i < m->nfns; i++)
          {
            uint32_t id = m->fns[i]->id;
            put_u64 (w, id < cap ? meas[id].incl : 0);
            put_u64 (w, id < cap ? meas[id].excl : 0);
            put_events (w, id, nev);
          }
      }
  /* The retained records, walked like zero_retained does.  */
  const unsigned char *p = retained, *end = retained + retained_len;
  for (uint32_t r = 0; p && p < end; r++)
    {
      uint32_t nfns = tally_rt_get_u32 (p + 20);
      uint32_t base = retained_ids && r < RETAINED_IDS_MAX ? retained_ids[r]
                                                           : UINT32_MAX;
      put_u32 (w, nfns);
      p = skip_str (skip_str ((unsigned char *) p + 24));
      for (uint32_t i = 0; i < nfns; i++)
        {
          for (int s = 0; s < 4; s++)
            p = skip_str ((unsigned char *) p);
          p += 16 + (size_t) tally_rt_get_u32 (p + 8) * 8;
          p += 4 + (size_t) tally_rt_get_u32 (p); /* block map */
          uint64_t id = (uint64_t) base + i;
          put_u64 (w, base != UINT32_MAX && id < cap ? meas[id].incl : 0);
          put_u64 (w, base != UINT32_MAX && id < cap ? meas[id].excl : 0);
          put_events (w, base != UINT32_MAX && id < UINT32_MAX ? (uint32_t) id
                                                               : UINT32_MAX,
                      nev);
        }
    }
}

/* The calling-context tree (paths=on): the function-id base of each module
   record, in put_records' order, then the first N nodes after the root.
   Other threads may add nodes meanwhile, so the dump fixes N once for both
   of its passes (the sizing pass and the write must see the same count);
   a node in that range still being made is written empty, as are values
   read while an activation was adding to them out of order.  */
static void
put_paths (struct writer *w, struct tally_module *head, uint32_t nlive,
           uint32_t n)
{
  uint32_t now, depth;
  uint64_t lost;
  const struct tally_path_node *nodes = tally_rt_paths (&now, &depth, &lost);
  if (!nodes)
    n = 0;
  put_u32 (w, TALLY_TAG_PATH);
  put_u32 (w, depth);
  put_u64 (w, lost);
  put_u32 (w, nlive + retained_count);
  uint32_t written = 0;
  for (struct tally_module *m = head; m && written < nlive; m = m->next)
    if (module_written (m))
      {
        written++;
        put_u32 (w, m->nfns ? m->fns[0]->id : UINT32_MAX);
      }
  for (uint32_t r = 0; r < retained_count; r++)
    put_u32 (w, retained_ids && r < RETAINED_IDS_MAX ? retained_ids[r]
                                                     : UINT32_MAX);
  put_u32 (w, n ? n - 1 : 0);
  for (uint32_t i = 1; i < n; i++)
    {
      /* A node being made right now is written as an empty child of the
         root with no function; readers skip those.  */
      uint32_t fn1 = __atomic_load_n (&nodes[i].fn_plus1, __ATOMIC_ACQUIRE);
      /* So is the node of an outside frame this dump's FRMS lacks.  */
      if (fn1 > TALLY_FRAME_ID_BASE && !tally_rt_frame_dumped (fn1 - 1))
        fn1 = 0;
      uint32_t parent = fn1 ? nodes[i].parent : 0;
      put_u32 (w, parent < i ? parent : 0);
      put_u32 (w, fn1 ? fn1 - 1 : UINT32_MAX);
      uint64_t incl = fn1 ? __atomic_load_n (&nodes[i].incl, __ATOMIC_RELAXED) : 0;
      uint64_t excl = fn1 ? __atomic_load_n (&nodes[i].excl, __ATOMIC_RELAXED) : 0;
      put_u64 (w, fn1 ? __atomic_load_n (&nodes[i].calls, __ATOMIC_RELAXED) : 0);
      put_u64 (w, incl);
      put_u64 (w, excl < incl ? excl : incl);
    }
}

/* measure=papi with paths=on: the NEV events of the first N nodes (as
   put_paths), zero for a node still being made (readers ignore the values
   of nodes without a function: one may have been filled meanwhile).  */
static void
put_path_events (struct writer *w, uint32_t n, unsigned nev)
{
  uint32_t now, depth;
  uint64_t lost;
  const struct tally_path_node *nodes = tally_rt_paths (&now, &depth, &lost);
  const uint64_t *ev = tally_rt_path_events ();
  if (!nodes)
    n = 0;
  put_u32 (w, TALLY_TAG_PATH_EVENTS);
  put_u32 (w, nev);
  put_u32 (w, n ? n - 1 : 0);
  for (uint32_t i = 1; i < n; i++)
    {
      int have = ev && __atomic_load_n (&nodes[i].fn_plus1, __ATOMIC_ACQUIRE);
      const uint64_t *at = ev + (size_t) i * TALLY_PAPI_MAX * 2;
      for (unsigned k = 0; k < nev; k++)
        {
          uint64_t incl = have ? __atomic_load_n (&at[2 * k], __ATOMIC_RELAXED) : 0;
          uint64_t excl = have ? __atomic_load_n (&at[2 * k + 1], __ATOMIC_RELAXED) : 0;
          put_u64 (w, incl);
          put_u64 (w, excl < incl ? excl : incl);
        }
    }
}

/* The functions of outside frames on the paths (unwind.c), NFRAMES of
   them, as tally_rt_frames_snapshot fixed them for this dump.  */
static void
put_frames (struct writer *w, uint32_t nframes)
{
  put_u32 (w, TALLY_TAG_FRAMES);
  put_u32 (w, nframes);
  uint64_t addr;
  const char *name;
  uint32_t len;
  for (uint32_t i = 0; nframes; i++)
    if (tally_rt_frame_get (i, &addr, &name, &len))
      {
        nframes--;
        put_u32 (w, TALLY_FRAME_ID_BASE + i);
        put_u64 (w, addr);
        put_u32 (w, len);
        put (w, name, len);
      }
}

static int any_measured (struct tally_module *head);

/* The records after the modules: MEAS (with NEV events) if MEAS, FRMS of
   NFRAMES frames, PATH of PATHS nodes if any, and their events.  */
static void
put_extras (struct writer *w, struct tally_module *head, uint32_t nlive,
            int meas, unsigned nev, uint32_t nframes, uint32_t paths)
{
  if (meas)
    put_meas (w, head, nlive, nev);
  if (nframes)
    put_frames (w, nframes);
  if (paths)
    put_paths (w, head, nlive, paths);
  if (paths && meas && nev)
    put_path_events (w, paths, nev);
}

/* The nodes of the calling-context tree, the root included, read once
   for a dump; 0 without a tree.  */
static uint32_t
any_paths (void)
{
  uint32_t n, depth;
  uint64_t lost;
  return tally_rt_paths (&n, &depth, &lost) ? n : 0;
}

/* Whether any module, live or retained, measures (TALLY_MOD_MEASURE_*).  */
static int
any_measured (struct tally_module *head)
{
  uint32_t cap;
  if (!tally_rt_meas (&cap))
    return 0;
  for (struct tally_module *m = head; m; m = m->next)
    if (module_live (m) && (m->flags & TALLY_MOD_MEASURE_CYCLES))
      return 1;
  return retained_count != 0; /* their flags are in the records: keep it simple */
}

/* getenv without locks or allocation (getenv itself is not
   async-signal-safe in every libc); secure_getenv's rule: nothing at all in
   a secure-execution process, whose environment is its unprivileged
   caller's (a TALLY_OUTPUT naming a file root may write).  */
const char *
tally_rt_env (const char *name)
{
  if (tally_rt_secure ())
    return NULL;
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
/* The %m token: the executable's base name (bytes other than [A-Za-z0-9._-]
   as '_', at most 64) and 8 hex digits of a hash of its full path, so all
   processes of one program, and only those, share the file.  */
static size_t
append_program_token (char *dst, size_t pos, size_t cap, const char *program)
{
  const char *base = program;
  for (const char *p = program; *p; p++)
    if (*p == '/')
      base = p + 1;
  if (!*base)
    base = "unknown";
  for (size_t i = 0; base[i] && i < 64 && pos + 1 < cap; i++)
    {
      char c = base[i];
      int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
               || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
      dst[pos++] = ok ? c : '_';
    }
  uint32_t h = 2166136261u; /* FNV-1a */
  for (const char *p = program; *p; p++)
    h = (h ^ (unsigned char) *p) * 16777619u;
  char hex[10];
  hex[0] = '-';
  for (int i = 0; i < 8; i++)
    hex[1 + i] = "0123456789abcdef"[(h >> (28 - 4 * i)) & 0xf];
  hex[9] = 0;
  return append (dst, pos, cap, hex);
}

int
tally_rt_expand_path (char *path, size_t cap, const char *pattern,
                      const char *program, int *merge, int *cont)
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
        case 'm':
          pos = append_program_token (path, pos, cap, program);
          *merge = 1;
          p++;
          break;
        case 'r': /* job rank (rank.c); outside a job "pid" and the pid */
          if (!tally_rt_job_rank (tmp))
            {
              pos = append (path, pos, cap, "pid");
              tally_rt_utoa (tmp, (unsigned long) getpid ());
            }
          pos = append (path, pos, cap, tmp);
          p++;
          break;
        case 'R': /* job size; "0" outside a job */
          if (!tally_rt_job_size (tmp))
            tmp[0] = '0', tmp[1] = 0;
          pos = append (path, pos, cap, tmp);
          p++;
          break;
        case 'c': /* continuous output: expands to nothing (continuous.c) */
          *cont = 1;
          p++;
          break;
        case '%':
          pos = append (path, pos, cap, "%");
          p++;
          break;
        default:
          tally_rt_error ("TALLY_OUTPUT=%s: unknown pattern '%%%s' kept as "
                          "written (accepted: %%p pid, %%h host, %%r job rank, "
                          "%%R job size, %%m program "
                          "(and merge into the file), %%c continuous "
                          "output, %%%% a percent sign)",
                          pattern, p[1] ? (char[2]){ p[1], 0 } : "");
          pos = append (path, pos, cap, "%");
          break;
        }
      if (pos + 1 >= cap)
        return -1;
    }
  path[pos] = 0;
  return 0;
}

const char *
tally_rt_errno_text (int e)
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
    case EEXIST: return "file exists";
    case EPERM: return "operation not permitted";
    case ELOOP: return "a symbolic link (not followed)";
    case EXDEV: return "another file system";
    default: return "system error";
    }
}

/* Create PATH.tmp.RANDOM for writing (outfile.c); its name goes to TMP.
   Returns the descriptor, or -1 (reported, errno set).  PATH is looked at
   first: one that must not be written is refused (outfile.c says which);
   a FIFO or character device (/dev/null) is written in place instead, TMP
   left empty: renaming over it would replace the device with a file.  */
static int
open_tmp (const char *path, char *tmp, size_t cap)
{
  int inplace;
  tmp[0] = 0;
  if (tally_rt_out_check (path, &inplace) != 0)
    return -1;
  if (inplace)
    return tally_rt_out_inplace (path);
  int fd = tally_rt_out_tmp (path, tmp, cap, 0);
  if (fd < 0)
    {
      int e = errno;
      tally_rt_error ("cannot create %s: %s (errno %d); no data written",
                      tmp[0] ? tmp : path, tally_rt_errno_text (e), e);
      tmp[0] = 0;
      errno = e;
    }
  return fd;
}

/* Add the trailer, close W's file and rename TMP over PATH (UNIQUE: a
   process's own name, placed by tally_rt_place, outname.c).  Returns 0, or
   -1 (reported, errno set, TMP removed).  */
static int
finish_file (struct writer *w, uint64_t file_size, const char *tmp,
             const char *path, int unique)
{
  /* The CRC covers everything before the trailer: fold in what is still
     buffered, then write the trailer outside the checksum.  */
  uint32_t crc = tally_crc32 (w->crc, outbuf, w->used);
  put_u32 (w, TALLY_TAG_END);
  put_u32 (w, crc);
  put_u64 (w, file_size);
  flush (w);
  if (close (w->fd) != 0 && !w->failed && errno != EINTR)
    w->failed = errno;
  if (!w->failed && w->total != file_size)
    w->failed = EIO; /* cannot happen unless a module changed under us */
  if (!w->failed && tmp[0] && tally_rt_place (tmp, path, unique) != 0)
    {
      int e = errno; /* reported */
      unlink (tmp);
      errno = e;
      return -1;
    }
  if (w->failed)
    {
      tally_rt_error ("cannot write %s: %s (errno %d); no data written",
                      path, tally_rt_errno_text (w->failed), w->failed);
      if (tmp[0])
        unlink (tmp);
      errno = w->failed;
      return -1;
    }
  return 0;
}

/* Merge-on-write (a TALLY_OUTPUT with %m): several processes, one file.
 *
 * 1. This process's records (live and retained) are serialised into
 *    scratch memory (mmap), reading each counter once.
 * 2. An fcntl write lock on PATH.lock serialises the writers (processes;
 *    the dump lock already serialises this process's threads).
 * 3. The existing PATH, if any, is read (pread, into private anonymous
 *    memory: a mapping of the file would die of SIGBUS if another process
 *    truncated it, since the lock is advisory) and checked whole (size,
 *    trailer, CRC, every record's bounds, every block map as strictly as
 *    tally report decodes it).  A damaged one, or one whose size changed
 *    while it was read, is moved to PATH.bad and reported, never merged
 *    and never silently lost.
 * 4. Each of our records takes the first unclaimed existing record of the
 *    same build (tally_rt_rec_match: same checksum, source and function
 *    symbols) and the two are summed; a record of another build of the
 *    same source stays a record of its own.  Unclaimed existing records
 *    are copied as they are.  The partner's offset is kept in our record's
 *    tag, and a claimed record's tag is cleared in the private mapping, so
 *    the sizing and the writing walk need no other memory.
 * 5. The new file goes to PATH.tmp.PID and is renamed over PATH; then the
 *    lock is released.
 * 6. The values read in step 1 become this process's baseline, and the
 *    retained records are zeroed, so that a later dump of this process
 *    (tally_dump, a signal, exec, exit, late counts) adds only what came
 *    after: our records are written as (now - baseline) + existing.  */

#define TAG_CLAIMED 0u

/* Emit record R, its counters less those of B (R's baseline) if B is set,
   plus those of O (a matching record: the same functions and counter
   counts) if O is set.  */
static void
put_merged (struct writer *w, const unsigned char *r, const unsigned char *b,
            const unsigned char *o)
{
  put_u32 (w, TALLY_TAG_MODULE);
  put (w, r + 4, 20);
  uint32_t nfns = tally_rt_get_u32 (r + 20);
  const unsigned char *p = r + 24, *q = o ? o + 24 : NULL;
  for (int s = 0; s < 2; s++)
    {
      put (w, p, 4 + tally_rt_get_u32 (p));
      p += 4 + tally_rt_get_u32 (p);
      if (q)
        q += 4 + tally_rt_get_u32 (q);
    }
  for (uint32_t i = 0; i < nfns; i++)
    {
      for (int s = 0; s < 4; s++)
        {
          put (w, p, 4 + tally_rt_get_u32 (p));
          p += 4 + tally_rt_get_u32 (p);
          if (q)
            q += 4 + tally_rt_get_u32 (q);
        }
      uint32_t nc = tally_rt_get_u32 (p + 8);
      put (w, p, 16);
      p += 16;
      if (q)
        q += 16;
      for (uint32_t k = 0; k < nc; k++, p += 8)
        {
          uint64_t v = tally_rt_get_u64 (p);
          if (b)
            v -= tally_rt_get_u64 (b + (p - r));
          if (q)
            {
              uint64_t x = tally_rt_get_u64 (q);
              v = v + x < v ? UINT64_MAX : v + x; /* saturate */
              q += 8;
            }
          put_u64 (w, v);
        }
      uint32_t map = tally_rt_get_u32 (p);
      put (w, p, 4 + (size_t) map);
      p += 4 + (size_t) map;
      if (q)
        q += 4 + (size_t) map;
    }
}

/* Step 6: the baseline.  The records serialised for the last successful
   merged write (absolute counter values, as read then) are kept, with the
   module each live record belongs to, so that the next merged write adds
   only the difference.  The counters themselves are never written: a
   subtraction could be undone by an increment racing with it (another
   thread, or the very code a signal interrupted, holding the old value in
   a register) and counts would be written twice.  */
struct base_entry
{
  struct tally_module *m; /* NULL once the module is retained */
  size_t off;             /* of its record in base_recs */
};
static unsigned char *base_recs; /* guarded by `dumping` */
static size_t base_len;
static struct base_entry *base_entries;
static size_t base_n, base_cursor;

static void
drop_baseline (void)
{
  if (base_recs)
    munmap (base_recs, base_len);
  if (base_entries)
    munmap (base_entries, base_n * sizeof *base_entries);
  base_recs = NULL;
  base_entries = NULL;
  base_len = base_n = base_cursor = 0;
}

/* M's record at the last merged write, or NULL.  Looked up in list order,
   the order of the entries, so the cursor makes it O(1) per module.  */
static const unsigned char *
baseline_of (const struct tally_module *m)
{
  for (size_t k = 0; k < base_n; k++)
    {
      size_t i = (base_cursor + k) % base_n;
      if (base_entries[i].m == m)
        {
          base_cursor = i + 1;
          return base_recs + base_entries[i].off;
        }
    }
  return NULL;
}

/* Subtract the counters of record B from those of record R (same layout:
   B is R's module at an earlier time), in place.  */
static void
sub_record (unsigned char *r, const unsigned char *b)
{
  uint32_t nfns = tally_rt_get_u32 (r + 20);
  size_t off = (size_t) (skip_str (skip_str (r + 24)) - r);
  for (uint32_t i = 0; i < nfns; i++)
    {
      for (int s = 0; s < 4; s++)
        off = (size_t) (skip_str (r + off) - r);
      uint32_t nc = tally_rt_get_u32 (r + off + 8);
      off += 16;
      for (uint32_t k = 0; k < nc; k++, off += 8)
        {
          uint64_t v = tally_rt_get_u64 (r + off) - tally_rt_get_u64 (b + off);
          for (int x = 0; x < 8; x++)
            r[off + x] = (unsigned char) (v >> (8 * x));
        }
      off += 4 + (size_t) tally_rt_get_u32 (r + off); /* block map */
    }
}

/* LEN bytes of private anonymous memory for a merge, or NULL with the
   failure reported (naming PATH) and its errno in *E.  */
static void *
merge_memory (size_t len, const char *path, int *e)
{
  void *m = mmap (NULL, len, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m != MAP_FAILED)
    return m;
  *e = errno;
  tally_rt_error ("%s: no memory to merge (errno %d); no data written",
                  path, *e);
  return NULL;
}

static int
merge_dump_locked (int at_exit, const char *path, const char *program,
                   struct tally_module *head, uint32_t nlive)
{
  int rc = -1, e = 0, lfd = -1;
  unsigned char *ours = NULL, *old = NULL, *xbuf = NULL;
  struct base_entry *entries = NULL;
  uint32_t *arrays = NULL;
  size_t ours_len = 0, ours_size = 0, old_len = 0, old_rec = 0, xlen = 0;
  size_t arrays_len = 0;
  uint32_t old_n = 0;
  struct tally_rt_extras ox, oldx;
  char tmp[4096 + 32];
  memset (&ox, 0, sizeof ox);
  memset (&oldx, 0, sizeof oldx);

  /* 1. Our records, then our measured values and call paths.  */
  int meas = any_measured (head);
  unsigned nev = papi_events ();
  uint32_t paths = any_paths ();
  uint32_t nframes = paths ? tally_rt_frames_snapshot () : 0;
  struct writer w = { NULL, -1, 0, 0, 0, 0 };
  put_records (&w, head, nlive);
  ours_len = (size_t) w.total;
  if (ours_len)
    put_extras (&w, head, nlive, meas, nev, nframes, paths);
  ours_size = (size_t) w.total;
  uint32_t ours_n = nlive + retained_count;
  if (ours_len)
    {
      void *m = merge_memory (ours_size, path, &e);
      if (!m)
        goto out;
      ours = (unsigned char *) m;
      w = (struct writer){ ours, -1, 0, 0, 0, 0 };
      put_records (&w, head, nlive);
      put_extras (&w, head, nlive, meas, nev, nframes, paths);
      tally_rt_extras_locate (ours, ours_len, ours_size, &ox);
    }
  /* Which module each live record is: the next baseline's index.  */
  if (nlive)
    {
      void *m = merge_memory (nlive * sizeof *entries, path, &e);
      if (!m)
        goto out;
      entries = (struct base_entry *) m;
      size_t off = 0;
      uint32_t i = 0;
      for (struct tally_module *mod = head; mod && i < nlive; mod = mod->next)
        if (module_written (mod))
          {
            entries[i++] = (struct base_entry){ mod, off };
            off += tally_rt_rec_size (ours + off, ours_len - off);
          }
    }

  /* 2. The lock.  */
  size_t n = append (tmp, 0, sizeof tmp, path);
  n = append (tmp, n, sizeof tmp, ".lock");
  tmp[n] = 0;
  lfd = tally_rt_out_lock (tmp);
  if (lfd < 0)
    {
      e = errno;
      goto out;
    }
  struct flock lk;
  memset (&lk, 0, sizeof lk);
  lk.l_type = F_WRLCK;
  lk.l_whence = SEEK_SET;
  int locked = 1;
  while (locked && fcntl (lfd, F_SETLKW, &lk) != 0)
    locked = errno == EINTR;
  if (!locked)
    {
      e = errno;
      tally_rt_error ("cannot lock %s: %s (errno %d); no data written", tmp,
                      tally_rt_errno_text (e), e);
      goto out;
    }

  /* 3. The existing file: never followed through a link, never read if it
     is not a regular file, and never merged if another user owns it (it
     could plant counts): moved aside, and a fresh file written.  */
  int ofd = tally_rt_out_open_own (path, O_RDONLY, "merge into");
  if (ofd == -2 && tally_rt_out_foreign_aside (path, tmp, sizeof tmp) == 0)
    ofd = -1, errno = ENOENT;
  if (ofd < 0 && errno != ENOENT)
    {
      e = errno; /* reported */
      goto out;
    }
  if (ofd >= 0)
    {
      struct stat st;
      const char *why = NULL;
      if (fstat (ofd, &st) != 0)
        why = "cannot be examined";
      else if ((uint64_t) st.st_size > UINT32_MAX)
        why = "over 4 GiB";
      else if (st.st_size > 0)
        {
          int r = tally_rt_read_whole (ofd, (size_t) st.st_size, &old, &e);
          if (r < 0)
            {
              close (ofd);
              tally_rt_error ("cannot read %s to merge into it: %s (errno "
                              "%d); no data written", path, tally_rt_errno_text (e), e);
              goto out;
            }
          if (r > 0)
            why = "changed size while it was read (a writer that does not "
                  "take the lock?)";
          else
            {
              old_len = (size_t) st.st_size;
              why = tally_rt_check_file (old, old_len, &old_rec, &old_n,
                                         &oldx);
            }
        }
      else
        why = "empty";
      close (ofd);
      const char *suffix = ".bad";
      if (!why && (why = tally_rt_meas_conflict (ours, &ox, old, &oldx)))
        suffix = ".other"; /* a valid file: kept apart, never replaced */
      if (why)
        {
          if (tally_rt_out_aside (path, suffix, tmp, sizeof tmp) == 0)
            tally_rt_error ("%s: %s; not merged, moved aside to %s", path,
                            why, tmp);
          else
            tally_rt_error ("%s: %s; not merged, and could not be moved "
                            "aside: replaced", path, why);
          if (old)
            munmap (old, old_len);
          old = NULL;
          old_len = old_n = 0;
          memset (&oldx, 0, sizeof oldx);
        }
    }

  /* 4. Pair our records with the existing ones.  */
  uint32_t extra_n = 0;
  size_t extra_len = 0;
  const size_t old_end = old_len ? old_len - TALLY_TRAILER_SIZE : 0;
  for (size_t p = 0; p < ours_len;)
    {
      size_t size = tally_rt_rec_size (ours + p, ours_len - p);
      uint32_t partner = 0;
      size_t q = old_rec;
      for (uint32_t i = 0; i < old_n && !partner; i++)
        {
          size_t osize = tally_rt_rec_size (old + q, old_end - q);
          if (tally_rt_get_u32 (old + q) == TALLY_TAG_MODULE
              && tally_rt_rec_match (ours + p, old + q))
            {
              memset (old + q, 0, 4); /* TAG_CLAIMED */
              partner = (uint32_t) q;
            }
          q += osize;
        }
      memcpy (ours + p, &partner, 4); /* read back in host order below */
      p += size;
    }
  /* The output record of each record, ours first; their function counts
     and first function ids.  */
  /* Three arrays of each side, and the output's function counts.  */
  arrays_len = ((size_t) 4 * ours_n + 4 * (size_t) old_n + 1) * 4;
  arrays = (uint32_t *) merge_memory (arrays_len, path, &e);
  if (!arrays)
    goto out;
  uint32_t *ours_nfns = arrays, *ours_ids = arrays + ours_n;
  uint32_t *ours_out = ours_ids + ours_n, *old_nfns = ours_out + ours_n;
  uint32_t *old_out = old_nfns + old_n, *old_off = old_out + old_n;
  uint32_t *out_nfns = old_off + old_n;
  for (size_t q = old_rec, i = 0; i < old_n; i++)
    {
      size_t osize = tally_rt_rec_size (old + q, old_end - q);
      old_off[i] = (uint32_t) q;
      old_nfns[i] = tally_rt_get_u32 (old + q + 20);
      old_out[i] = UINT32_MAX;
      if (tally_rt_get_u32 (old + q) == TALLY_TAG_MODULE)
        {
          old_out[i] = ours_n + extra_n;
          out_nfns[ours_n + extra_n] = old_nfns[i];
          extra_n++;
          extra_len += osize;
        }
      q += osize;
    }
  {
    uint32_t i = 0;
    for (struct tally_module *m = head; m && i < nlive; m = m->next)
      if (module_live (m))
        ours_ids[i++] = m->nfns ? m->fns[0]->id : UINT32_MAX;
    for (uint32_t r = 0; r < retained_count; r++)
      ours_ids[nlive + r] = retained_ids && r < RETAINED_IDS_MAX
                                ? retained_ids[r] : UINT32_MAX;
    size_t p = 0;
    for (i = 0; i < ours_n; i++)
      {
        uint32_t partner;
        memcpy (&partner, ours + p, 4);
        ours_nfns[i] = out_nfns[i] = tally_rt_get_u32 (ours + p + 20);
        ours_out[i] = i;
        /* The old record it took: offsets increase with the index.  */
        uint32_t lo = 0, hi = old_n;
        while (partner && lo < hi)
          {
            uint32_t mid = lo + (hi - lo) / 2;
            if (old_off[mid] < partner)
              lo = mid + 1;
            else
              hi = mid;
          }
        if (partner && lo < old_n && old_off[lo] == partner)
          old_out[lo] = i;
        p += tally_rt_rec_size (ours + p, ours_len - p);
      }
  }
  /* The measured values and call paths: ours since the last write, plus
     the file's.  */
  tally_rt_extras_delta (ours, &ox, ours_n, ours_nfns, ours_ids);
  struct tally_rt_xside xs_ours = { ours, &ox, ours_n, ours_nfns, ours_out };
  struct tally_rt_xside xs_old = { old, &oldx, old_n, old_nfns, old_out };
  xlen = tally_rt_merge_extras (&xs_ours, &xs_old, ours_n + extra_n,
                                out_nfns, &xbuf);
  if (xlen == (size_t) -1)
    {
      xlen = 0;
      e = ENOMEM;
      tally_rt_error ("%s: no memory to merge the measurements; no data "
                      "written", path);
      goto out;
    }

  /* 5. Write.  */
  uint32_t flags = at_exit ? TALLY_FILE_AT_EXIT : 0;
  uint32_t nmodules = ours_n + extra_n;
  w = (struct writer){ NULL, -1, 0, 0, 0, 0 };
  put_header (&w, 0, nmodules, flags, program);
  uint64_t file_size = w.total + ours_len + extra_len + xlen
                       + TALLY_TRAILER_SIZE;
  w = (struct writer){ NULL, -1, 0, 0, 0, 0 };
  w.fd = open_tmp (path, tmp, sizeof tmp);
  if (w.fd < 0)
    {
      e = errno;
      goto out;
    }
  put_header (&w, file_size, nmodules, flags, program);
  for (size_t p = 0, i = 0; p < ours_len; i++)
    {
      size_t size = tally_rt_rec_size (ours + p, ours_len - p);
      uint32_t partner;
      memcpy (&partner, ours + p, 4);
      /* Retained records (after the live ones) were made relative to the
         baseline when they were retained.  */
      put_merged (&w, ours + p, i < nlive ? baseline_of (entries[i].m) : NULL,
                  partner ? old + partner : NULL);
      p += size;
    }
  for (size_t q = old_rec, i = 0; i < old_n; i++)
    {
      size_t osize = tally_rt_rec_size (old + q, old_end - q);
      if (tally_rt_get_u32 (old + q) == TALLY_TAG_MODULE)
        put (&w, old + q, osize);
      q += osize;
    }
  put (&w, xbuf, xlen);
  if (finish_file (&w, file_size, tmp, path, 0) != 0)
    {
      e = errno;
      goto out;
    }
  rc = 0;

  /* 6. Written: what was read is the new baseline, and the retained
     records are in the file.  */
  drop_baseline ();
  tally_rt_extras_commit ();
  base_recs = ours;
  base_len = ours_size;
  base_entries = entries;
  base_n = nlive;
  ours = NULL;
  entries = NULL;
  zero_retained ();
  if (tally_rt_env ("TALLY_VERBOSE"))
    tally_rt_error ("wrote %s (%u modules, %u merged from the existing file)",
                    path, nmodules, old_n - extra_n);

out:
  if (lfd >= 0)
    close (lfd); /* releases the lock, after the rename */
  if (old)
    munmap (old, old_len);
  if (ours)
    munmap (ours, ours_size);
  if (xbuf)
    munmap (xbuf, xlen ? xlen : 1);
  if (arrays)
    munmap (arrays, arrays_len);
  if (entries)
    munmap (entries, nlive * sizeof *entries);
  errno = e;
  return rc;
}

static int
dump_locked (int at_exit)
{
  char path[4096], tmp[4096 + 32], program[4096];
  const char *pattern = tally_rt_env ("TALLY_OUTPUT");
  if (!pattern || !*pattern)
    pattern = TALLY_DEFAULT_OUTPUT;
  ssize_t plen = readlink ("/proc/self/exe", program, sizeof program - 1);
  program[plen > 0 ? plen : 0] = 0;
  int merge = 0, cont = 0;
  if (tally_rt_cont_on ())
    {
      /* Continuous output goes on in the file it started (continuous.c).  */
      size_t n = append (path, 0, sizeof path, tally_rt_cont_path ());
      path[n] = 0;
    }
  else if (tally_rt_expand_path (path, sizeof path, pattern, program, &merge,
                                 &cont) != 0)
    {
      tally_rt_error ("TALLY_OUTPUT=%s: expanded path is too long; no data "
                      "written", pattern);
      errno = ENAMETOOLONG;
      return -1;
    }

  struct tally_module *head = __atomic_load_n (&tally_modules, __ATOMIC_ACQUIRE);
  uint32_t nlive = 0;
  for (struct tally_module *m = head; m; m = m->next)
    nlive += module_written (m);
  if (merge)
    return merge_dump_locked (at_exit, path, program, head, nlive);

  uint32_t flags = at_exit ? TALLY_FILE_AT_EXIT : 0;
  uint32_t nmodules = nlive + retained_count;
  int meas = any_measured (head);
  unsigned nev = papi_events ();
  uint32_t paths = any_paths ();
  uint32_t nframes = paths ? tally_rt_frames_snapshot () : 0;
  struct writer w = { NULL, -1, 0, 0, 0, 0 };
  put_header (&w, 0, nmodules, flags, program);
  put_records (&w, head, nlive);
  put_extras (&w, head, nlive, meas, nev, nframes, paths);
  uint64_t file_size = w.total + TALLY_TRAILER_SIZE;

  w = (struct writer){ NULL, -1, 0, 0, 0, 0 };
  /* Continuous output: the image goes into a DUMP chunk at the end of the
     continuous file, which is never replaced (its regions are mapped).  */
  int in_cont = tally_rt_cont_on ();
  if (in_cont)
    {
      tmp[0] = 0;
      w.fd = tally_rt_cont_dump_begin (file_size);
    }
  else
    w.fd = open_tmp (path, tmp, sizeof tmp);
  if (w.fd < 0)
    return -1;
  put_header (&w, file_size, nmodules, flags, program);
  put_records (&w, head, nlive);
  put_extras (&w, head, nlive, meas, nev, nframes, paths);
  int rc = finish_file (&w, file_size, tmp, path,
                        tally_rt_pattern_unique (pattern, merge));
  if (in_cont)
    tally_rt_cont_dump_end (file_size, rc == 0);
  if (rc != 0)
    return -1;
  if (tally_rt_env ("TALLY_VERBOSE"))
    tally_rt_error ("wrote %s (%u modules)", tmp[0] ? tally_rt_placed () : path,
                    nmodules);
  return 0;
}

/* Take the dump lock.  WAIT: spin until it is free (exit dump, retain);
   otherwise fail with EBUSY at once (tally_dump, maybe in a signal
   handler that interrupted a dump).  Even when told to wait, fail at once
   if this very thread holds the lock: then we are a signal handler (or an
   exit handler reached from one) running on top of that dump, and waiting
   would never end.  */
static int
lock_dump (int wait)
{
  pid_t self = gettid ();
  pid_t expected = 0;
  unsigned spins = 0;
  while (!__atomic_compare_exchange_n (&dumping, &expected, self, 0,
                                       __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
    {
      int mine = expected == self;
      expected = 0;
      if (!wait || mine || ++spins > 2000000u)
        {
          if (wait && !mine)
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
tally_rt_lock (int wait)
{
  return lock_dump (wait);
}

void
tally_rt_unlock (void)
{
  unlock_dump ();
}

/* Counts made after the exit dump (by instrumented code in atexit
 * handlers registered before the runtime's, C++ destructors of objects
 * built before the first registration, ELF destructors) must not vanish.
 * The exit dump notes the sum of every live module's counters in an
 * mmap'ed table; at the last moments the runtime gets (its own destructor,
 * and each module unregistering after the exit dump, which is the last
 * point its counters can be read) the sums are compared again, and if one
 * moved the file is written again (atomically replaced) with everything.
 * Sums only grow, except across tally_reset, which is just as much a
 * change.  The sums are taken before the dump reads the counters, so a
 * count racing with the dump is caught by the next check, never missed.
 * Modules unregister in list order, so a rolling cursor finds each one in
 * O(1) and the whole exit costs O(counters) once.  */

static uint64_t
module_sum (const struct tally_module *m)
{
  return tally_rt_values_sum (m); /* mapblob.c */
}

/* Note the sum of every live module.  On no memory, late counts go
   undetected (as before this feature), said once.  */
static void
note_exit_sums_locked (void)
{
  size_t n = 0;
  struct tally_module *head = __atomic_load_n (&tally_modules, __ATOMIC_ACQUIRE);
  for (struct tally_module *m = head; m; m = m->next)
    n += module_live (m);
  size_t need = n * sizeof *exit_sums;
  if (need > exit_sums_cap)
    {
      if (exit_sums)
        munmap (exit_sums, exit_sums_cap);
      void *p = mmap (NULL, need, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      exit_sums = p == MAP_FAILED ? NULL : (struct exit_sum *) p;
      exit_sums_cap = exit_sums ? need : 0;
      if (!exit_sums)
        tally_rt_error ("no memory to watch for counts made after the exit "
                        "dump; such counts will not be written");
    }
  exit_sums_len = 0;
  exit_sums_cursor = 0;
  for (struct tally_module *m = head; m && exit_sums && exit_sums_len < n;
       m = m->next)
    if (module_live (m))
      exit_sums[exit_sums_len++] = (struct exit_sum){ m, module_sum (m) };
}

/* Whether the counters of M moved since the exit dump.  */
static int
moved_locked (struct tally_module *m)
{
  /* Counts in a region of the continuous file are on disk already.  */
  if (!exit_sums || tally_rt_cont_mapped (m))
    return 0;
  uint64_t sum = module_sum (m);
  for (size_t k = 0; k < exit_sums_len; k++)
    {
      size_t i = (exit_sums_cursor + k) % exit_sums_len;
      if (exit_sums[i].m == m)
        {
          exit_sums_cursor = i + 1;
          return sum != exit_sums[i].sum;
        }
    }
  return sum != 0; /* registered after the exit dump */
}

/* The at-exit dump, and its repetitions for late counts.  */
static int
exit_dump_locked (void)
{
  if (__atomic_load_n (&exit_dump_off, __ATOMIC_ACQUIRE))
    return 0; /* exit_written stays 0: no late repeats either */
  note_exit_sums_locked ();
  int rc = dump_locked (1);
  exit_written = rc == 0;
  return rc;
}

int
tally_rt_dump (int at_exit)
{
  int saved = errno;
  if (lock_dump (at_exit) != 0)
    return -1;
  int rc = at_exit ? exit_dump_locked () : dump_locked (0);
  int e = errno;
  unlock_dump ();
  errno = rc == 0 ? saved : e;
  return rc;
}

void
tally_rt_late_check (void)
{
  int saved = errno;
  if (lock_dump (1) != 0)
    return;
  if (exit_written)
    for (struct tally_module *m = __atomic_load_n (&tally_modules, __ATOMIC_ACQUIRE);
         m; m = m->next)
      if (module_live (m) && moved_locked (m))
        {
          exit_dump_locked ();
          break;
        }
  unlock_dump ();
  errno = saved;
}

int
tally_rt_dump_fatal (void)
{
  int saved = errno;
  if (lock_dump (1) != 0)
    return -1;
  int rc = dump_locked (0);
  unlock_dump ();
  errno = saved;
  return rc;
}

int
tally_rt_exec_dump (int done)
{
  if (done)
    {
      unlock_dump ();
      return 0;
    }
  int saved = errno;
  /* In a signal handler that interrupted this thread's own dump, the lock
     cannot be had: that dump stays unfinished, as it would without us.  */
  if (lock_dump (1) != 0)
    {
      errno = saved;
      return 0;
    }
  dump_locked (0);
  errno = saved;
  return 1;
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
  /* What a merged write already took is not kept: the record holds only
     what the next merged write must add.  (A non-merging dump after this
     would write less than the module's total; mixing both modes in one
     process is not supported.)  */
  const unsigned char *b = baseline_of (m);
  if (b)
    {
      sub_record (retained + retained_len, b);
      for (size_t i = 0; i < base_n; i++)
        if (base_entries[i].m == m)
          base_entries[i].m = NULL;
    }
  if (!retained_ids)
    {
      void *p = mmap (NULL, RETAINED_IDS_MAX * sizeof *retained_ids,
                      PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      retained_ids = p == MAP_FAILED ? NULL : (uint32_t *) p;
    }
  if (retained_ids && retained_count < RETAINED_IDS_MAX)
    retained_ids[retained_count] = m->nfns ? m->fns[0]->id : UINT32_MAX;
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
  /* Threads' copies (update=tls) join the counters while they exist.  */
  if (m->flags & TALLY_MOD_UPDATE_TLS)
    tally_rt_tls_module_gone (m);
  /* After the exit dump this is the last moment M's counters can be read:
     write the file again if they moved since (M is still in the list).  */
  if (!keep && exit_written && moved_locked (m))
    exit_dump_locked ();
  /* Counts in a region of the continuous file stay there: keeping the
     record too would count them twice.  */
  if (tally_rt_cont_gone (m))
    keep = 0;
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

/* Zero every counter of every live module.  */
static void
zero_live (void)
{
  for (struct tally_module *m = __atomic_load_n (&tally_modules, __ATOMIC_ACQUIRE);
       m; m = m->next)
    for (uint32_t i = 0; i < m->nfns; i++)
      {
        const struct tally_fn *f = m->fns[i];
        uint64_t *c = tally_rt_live_counters (m, f->counters);
        for (uint32_t k = 0; k < f->ncounters; k++)
          __atomic_store_n (&c[k], 0, __ATOMIC_RELAXED);
        unsigned char *v = f->visited ? tally_rt_live_visited (m, f->visited)
                                      : NULL;
        for (uint32_t k = 0; v && k < f->nvisited; k++)
          __atomic_store_n (&v[k], 0, __ATOMIC_RELAXED);
      }
  tally_rt_tls_zero ();
}

void
tally_rt_reset_local (void)
{
  if (lock_dump (1) != 0)
    return;
  zero_live ();
  tally_rt_meas_zero ();
  tally_rt_paths_zero ();
  if (tally_rt_papi_zero)
    tally_rt_papi_zero ();
  /* The counts merged so far stay in the file; from zero, everything is
     new.  */
  drop_baseline ();
  tally_rt_extras_drop ();
  unlock_dump ();
}

/* Skip one str field at P (a u32 length and the bytes).  */
static unsigned char *
skip_str (unsigned char *p)
{
  return p + 4 + tally_rt_get_u32 (p);
}

/* Zero the counters inside the retained records.  The area holds only
   records put_module wrote, so it is walked without bounds checks beyond
   its length.  */
static void
zero_retained (void)
{
  const unsigned char *end = retained + retained_len;
  unsigned char *p = retained;
  while (p && p < end)
    {
      uint32_t nfns = tally_rt_get_u32 (p + 20);
      p = skip_str (skip_str (p + 24)); /* source, directory */
      for (uint32_t i = 0; i < nfns; i++)
        {
          for (int s = 0; s < 4; s++) /* name, symbol, origin, file */
            p = skip_str (p);
          uint32_t ncounters = tally_rt_get_u32 (p + 8);
          p += 16;
          memset (p, 0, (size_t) ncounters * 8);
          p += (size_t) ncounters * 8;
          p += 4 + (size_t) tally_rt_get_u32 (p); /* block map */
        }
    }
}

/* pthread_atfork child handler (registered by the first registration).
   gcov's semantics: the child starts from zero, so that the parent's file
   and the child's file add up to what ran, with nothing counted twice.
   Only the forking thread exists in the child, so a dump lock that another
   thread of the parent held at the fork would never be released: it is
   taken over.  The retained records of modules unloaded before the fork
   stay listed, with zero counts.  */
void
tally_rt_fork_child (void)
{
  __atomic_store_n (&dumping, 0, __ATOMIC_RELAXED);
  tally_rt_tls_fork_child ();
  /* Before zeroing: the child's regions must be its own file's, not the
     parent's shared mapping.  */
  tally_rt_cont_fork_child ();
  zero_live ();
  zero_retained ();
  tally_rt_meas_zero ();
  tally_rt_paths_zero ();
  if (tally_rt_papi_zero)
    tally_rt_papi_zero ();
  drop_baseline ();
  tally_rt_extras_drop ();
}

int
tally_dump (void)
{
  return tally_rt_primary ()->dump (0);
}

/* tally/image.h, for libtally-mpi: the file in memory, a file from memory,
   and no exit dump.  */
TALLY_PUBLIC void *
tally_image (size_t *len)
{
  char program[4096];
  int saved = errno;
  if (lock_dump (1) != 0)
    return NULL;
  ssize_t plen = readlink ("/proc/self/exe", program, sizeof program - 1);
  program[plen > 0 ? plen : 0] = 0;
  struct tally_module *head = __atomic_load_n (&tally_modules, __ATOMIC_ACQUIRE);
  uint32_t nlive = 0;
  for (struct tally_module *m = head; m; m = m->next)
    nlive += module_written (m);
  uint32_t nmodules = nlive + retained_count;
  int meas = any_measured (head);
  unsigned nev = papi_events ();
  struct writer w = { NULL, -1, 0, 0, 0, 0 };
  put_header (&w, 0, nmodules, TALLY_FILE_AT_EXIT, program);
  put_records (&w, head, nlive);
  put_extras (&w, head, nlive, meas, nev, 0, 0);
  uint64_t size = w.total + TALLY_TRAILER_SIZE;
  void *mem = mmap (NULL, size, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED)
    {
      unlock_dump ();
      errno = ENOMEM;
      return NULL;
    }
  w = (struct writer){ (unsigned char *) mem, -1, 0, 0, 0, 0 };
  put_header (&w, size, nmodules, TALLY_FILE_AT_EXIT, program);
  put_records (&w, head, nlive);
  put_extras (&w, head, nlive, meas, nev, 0, 0);
  uint32_t crc = tally_crc32 (0, mem, w.total);
  put_u32 (&w, TALLY_TAG_END);
  put_u32 (&w, crc);
  put_u64 (&w, size);
  unlock_dump ();
  *len = size;
  errno = saved;
  return mem;
}

TALLY_PUBLIC int
tally_write_image (const void *image, size_t len, const char *pattern)
{
  char path[4096], tmp[4096 + 32], program[4096];
  if (len < TALLY_HEADER_FIXED + TALLY_TRAILER_SIZE)
    {
      errno = EINVAL;
      return -1;
    }
  if (!pattern)
    pattern = tally_rt_env ("TALLY_OUTPUT");
  if (!pattern || !*pattern)
    pattern = TALLY_DEFAULT_OUTPUT;
  ssize_t plen = readlink ("/proc/self/exe", program, sizeof program - 1);
  program[plen > 0 ? plen : 0] = 0;
  int merge = 0, cont = 0;
  if (tally_rt_expand_path (path, sizeof path, pattern, program, &merge,
                            &cont) != 0)
    {
      tally_rt_error ("%s: expanded path is too long; no data written",
                      pattern);
      errno = ENAMETOOLONG;
      return -1;
    }
  if (lock_dump (1) != 0) /* the output buffer is the dumps' */
    return -1;
  struct writer w = { NULL, -1, 0, 0, 0, 0 };
  w.fd = open_tmp (path, tmp, sizeof tmp);
  int rc = -1;
  if (w.fd >= 0)
    {
      put (&w, image, len - TALLY_TRAILER_SIZE);
      rc = finish_file (&w, len, tmp, path,
                        tally_rt_pattern_unique (pattern, merge));
    }
  int e = errno;
  unlock_dump ();
  errno = e;
  if (rc != 0)
    return -1;
  if (tally_rt_env ("TALLY_VERBOSE"))
    tally_rt_error ("wrote %s", path);
  return 0;
}

TALLY_PUBLIC void
tally_exit_dump_off (void)
{
  __atomic_store_n (&exit_dump_off, 1, __ATOMIC_RELEASE);
}
