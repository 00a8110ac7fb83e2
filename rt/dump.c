/* The dump: when the data file is written and what goes into it.  Layer
 * "dump" of rt.h: it takes the dump lock and has the records (records.c)
 * written into the output file (outname.c, merge-write.c, continuous.c);
 * it is called by the process layer (registration, signals, exec) and
 * through the public API (tally_dump, tally/image.h).
 *
 * The dump path is async-signal-safe: no malloc, no stdio, no locks that a
 * signal handler could deadlock on.  It streams the records through a static
 * buffer into "<path>.tmp.<pid>", CRC-ing as it goes, then renames the file
 * into place, so a reader never sees a half-written file.  One dump runs at
 * a time: a concurrent tally_dump() gets EBUSY, the exit dump waits for the
 * running one to finish.
 *
 * Also here: the rewrite for counts made after the exit dump, a module's
 * leaving (its record kept in records.c's retained area), tally_reset and
 * the fork child's reset.  Merge-on-write (a TALLY_OUTPUT with %m,
 * merge-write.c) adds to the async-signal-safe path only mmap, munmap and
 * an fcntl lock (the merge may wait for another process's write).  */
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rt.h"
#include "tally/format.h"
#include "tally/image.h"
#include "tally/tally.h"

/* Each live module's counter sum at the last at-exit dump, in list order
   (see "Counts made after the exit dump" below; struct tally_rt_sum: rt.h);
   guarded by the dump lock.  */
static struct tally_rt_sum *exit_sums; /* guarded by the dump lock */
static size_t exit_sums_len, exit_sums_cap, exit_sums_cursor;
static int exit_written; /* the last at-exit dump succeeded */
static int exit_dump_off; /* tally_exit_dump_off: no file at exit */

/* The data file of this process as a dump and tally_image write it: what
   is read once, to size it, and used again to write it.  */
struct image
{
  struct tally_module *head;
  uint32_t nlive, nmodules, flags, paths, nframes;
  int meas;
  unsigned nev;
  const char *program;
};

/* The list's head and the number of its modules that are written.  */
static void
image_modules (struct image *im)
{
  im->head = __atomic_load_n (&tally_modules, __ATOMIC_ACQUIRE);
  im->nlive = 0;
  for (struct tally_module *m = im->head; m; m = m->next)
    im->nlive += tally_rt_module_written (m);
}

/* Header (SIZE bytes in all), records, measured values and call paths.  */
static void
put_image (struct tally_rt_writer *w, const struct image *im, uint64_t size)
{
  tally_rt_put_header (w, size, im->nmodules, im->flags, im->program);
  tally_rt_put_records (w, im->head, im->nlive);
  tally_rt_put_extras (w, im->head, im->nlive, im->meas, im->nev,
                       im->nframes, im->paths);
}

/* Take what the file of IM (its modules and flags set) holds besides its
   records; its size.  */
static uint64_t
image_size (struct image *im)
{
  im->nmodules = im->nlive + tally_rt_retained_count ();
  im->meas = tally_rt_any_measured (im->head);
  im->nev = tally_rt_dump_events ();
  im->paths = tally_rt_any_paths ();
  im->nframes = im->paths ? tally_rt_frames_snapshot () : 0;
  struct tally_rt_writer w = { NULL, -1, 0, 0, 0, 0 };
  put_image (&w, im, 0);
  return w.total + TALLY_TRAILER_SIZE;
}

static int
dump_locked (int at_exit)
{
  char path[4096], tmp[4096 + 32], program[4096];
  const char *pattern = tally_rt_output_pattern ();
  tally_rt_program (program, sizeof program);
  int merge = 0, cont = 0;
  if (tally_rt_cont_on ())
    {
      /* Continuous output goes on in the file it started (continuous.c).  */
      size_t n = tally_rt_append (path, 0, sizeof path, tally_rt_cont_path ());
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

  struct image im;
  image_modules (&im);
  if (merge)
    return tally_rt_merge_dump (at_exit, path, program, im.head, im.nlive);

  im.flags = at_exit ? TALLY_FILE_AT_EXIT : 0;
  im.program = program;
  uint64_t file_size = image_size (&im);

  struct tally_rt_writer w = { NULL, -1, 0, 0, 0, 0 };
  /* Continuous output: the image goes into a DUMP chunk at the end of the
     continuous file, which is never replaced (its regions are mapped).  */
  int in_cont = tally_rt_cont_on ();
  if (in_cont)
    {
      tmp[0] = 0;
      w.fd = tally_rt_cont_dump_begin (file_size);
    }
  else
    w.fd = tally_rt_open_tmp (path, tmp, sizeof tmp);
  if (w.fd < 0)
    return -1;
  put_image (&w, &im, file_size);
  int rc = tally_rt_finish_file (&w, file_size, tmp, path,
                        tally_rt_pattern_unique (pattern, merge));
  if (in_cont)
    tally_rt_cont_dump_end (file_size, rc == 0);
  if (rc != 0)
    return -1;
  if (tally_rt_env ("TALLY_VERBOSE"))
    tally_rt_error ("wrote %s (%u modules)", tmp[0] ? tally_rt_placed () : path,
                    im.nmodules);
  return 0;
}

/* Counts made after the exit dump (by instrumented code in atexit
 * handlers registered before the runtime's, C++ destructors of objects
 * built before the first registration, ELF destructors) must not vanish.
 * The exit dump notes the sum of every live module's counters in an
 * mmap'ed table; at the last moment each module's counters can be read
 * (its unregistering after the exit dump, or the second of the atexit
 * handler and the runtime's destructor for a module that has no such
 * moment left: register.c) its sum is compared again, and if one moved
 * the file is written again (atomically replaced) with everything.
 * Sums only grow, except across tally_reset, which is just as much a
 * change.  A module written from its blob gets as its sum that of the
 * values the dump read and wrote (mapblob.c puts it in the table that
 * tally_rt_blob_sums gives it: no pass over the counters of its own); any other
 * module is summed before the dump reads it.  Either way a count racing
 * with the dump is caught by the next check, never missed.  Modules are
 * written and unregister in list order, so a rolling cursor finds each one
 * in O(1) and the whole exit costs O(counters) once.  */

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
    n += tally_rt_module_live (m);
  size_t need = n * sizeof *exit_sums;
  if (need > exit_sums_cap)
    {
      if (exit_sums)
        munmap (exit_sums, exit_sums_cap);
      void *p = mmap (NULL, need, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      exit_sums = p == MAP_FAILED ? NULL : (struct tally_rt_sum *) p;
      exit_sums_cap = exit_sums ? need : 0;
      if (!exit_sums)
        tally_rt_error ("no memory to watch for counts made after the exit "
                        "dump; such counts will not be written");
    }
  exit_sums_len = 0;
  exit_sums_cursor = 0;
  /* A module written from its blob has its sum taken as the dump reads
     its values (tally_rt_blob_sums): one pass over them, not two.  */
  for (struct tally_module *m = head; m && exit_sums && exit_sums_len < n;
       m = m->next)
    if (tally_rt_module_live (m))
      {
        int pending = tally_rt_module_written (m) && tally_rt_blob_usable (m);
        exit_sums[exit_sums_len++]
            = (struct tally_rt_sum){ m, pending ? 0 : module_sum (m), pending };
      }
}

/* After the exit dump: a module it did not write from its blob (which a
   successful dump does) is read now.  */
static void
exit_sums_done_locked (void)
{
  for (size_t i = 0; exit_sums && i < exit_sums_len; i++)
    {
      if (exit_sums[i].pending == 1)
        exit_sums[i].sum = module_sum (exit_sums[i].m);
      exit_sums[i].pending = 0;
    }
  exit_sums_cursor = 0;
}

/* Whether the counters of M moved since the exit dump.  */
static int
moved_locked (struct tally_module *m)
{
  /* Counts in a region of the continuous file are on disk already.  */
  if (!exit_sums || tally_rt_cont_mapped (m))
    return 0;
  uint64_t sum = module_sum (m);
  struct tally_rt_sum *e
      = tally_rt_sum_of (exit_sums, exit_sums_len, &exit_sums_cursor, m);
  return e ? sum != e->sum : sum != 0; /* 0: registered after the exit dump */
}

/* The at-exit dump, and its repetitions for late counts.  */
static int
exit_dump_locked (void)
{
  if (__atomic_load_n (&exit_dump_off, __ATOMIC_ACQUIRE))
    return 0; /* exit_written stays 0: no late repeats either */
  tally_rt_tls_exit_dump ();
  note_exit_sums_locked ();
  tally_rt_blob_sums (exit_sums, exit_sums_len);
  int rc = dump_locked (1);
  tally_rt_blob_sums (NULL, 0);
  exit_sums_done_locked ();
  exit_written = rc == 0;
  return rc;
}

int
tally_rt_dump (int at_exit)
{
  int saved = errno;
  if (tally_rt_lock (at_exit) != 0)
    return -1;
  int rc = at_exit ? exit_dump_locked () : dump_locked (0);
  int e = errno;
  tally_rt_unlock ();
  errno = rc == 0 ? saved : e;
  return rc;
}

void
tally_rt_late_check (void)
{
  int saved = errno;
  if (tally_rt_lock (1) != 0)
    return;
  if (exit_written)
    for (struct tally_module *m = __atomic_load_n (&tally_modules, __ATOMIC_ACQUIRE);
         m; m = m->next)
      if (tally_rt_module_live (m) && moved_locked (m))
        {
          exit_dump_locked ();
          break;
        }
  tally_rt_unlock ();
  errno = saved;
}

int
tally_rt_dump_fatal (void)
{
  int saved = errno;
  if (tally_rt_lock (1) != 0)
    return -1;
  int rc = dump_locked (0);
  tally_rt_unlock ();
  errno = saved;
  return rc;
}

int
tally_rt_exec_dump (int done)
{
  if (done)
    {
      tally_rt_unlock ();
      return 0;
    }
  int saved = errno;
  /* In a signal handler that interrupted this thread's own dump, the lock
     cannot be had: that dump stays unfinished, as it would without us.  */
  if (tally_rt_lock (1) != 0)
    {
      errno = saved;
      return 0;
    }
  dump_locked (0);
  errno = saved;
  return 1;
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
  if (tally_rt_lock (1) != 0)
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
  unsigned char *rec = keep ? tally_rt_retain (m) : NULL;
  if (rec)
    tally_rt_merge_retained (m, rec);
  else if (keep)
    {
      dump_locked (0);
      tally_rt_error ("%s: no memory to keep the counts of this unloaded "
                      "module; they are in the data file written now, not "
                      "in the one written at exit", m->source);
    }
  __atomic_store_n (&m->rt_state, TALLY_STATE_GONE, __ATOMIC_RELEASE);
  unlink_locked (m);
  tally_rt_unlock ();
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
  if (tally_rt_lock (1) != 0)
    return;
  zero_live ();
  tally_rt_meas_zero ();
  tally_rt_paths_zero ();
  if (tally_rt_papi_zero)
    tally_rt_papi_zero ();
  /* The counts merged so far stay in the file; from zero, everything is
     new.  */
  tally_rt_merge_drop ();
  tally_rt_extras_drop ();
  tally_rt_unlock ();
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
  tally_rt_lock_fork_child ();
  tally_rt_tls_fork_child ();
  /* Before zeroing: the child's regions must be its own file's, not the
     parent's shared mapping.  */
  tally_rt_cont_fork_child ();
  zero_live ();
  tally_rt_zero_retained ();
  tally_rt_meas_zero ();
  tally_rt_paths_zero ();
  if (tally_rt_papi_zero)
    tally_rt_papi_zero ();
  tally_rt_merge_drop ();
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
  if (tally_rt_lock (1) != 0)
    return NULL;
  tally_rt_program (program, sizeof program);
  struct image im;
  image_modules (&im);
  im.flags = TALLY_FILE_AT_EXIT;
  im.program = program;
  uint64_t size = image_size (&im);
  void *mem = mmap (NULL, size, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED)
    {
      tally_rt_unlock ();
      errno = ENOMEM;
      return NULL;
    }
  struct tally_rt_writer w = { (unsigned char *) mem, -1, 0, 0, 0, 0 };
  put_image (&w, &im, size);
  struct tally_trailer t = { tally_crc32 (0, mem, w.total), size };
  tally_trailer_put (w.mem + w.total, &t);
  tally_rt_unlock ();
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
  tally_rt_program (program, sizeof program);
  int merge = 0, cont = 0;
  if (tally_rt_expand_path (path, sizeof path, pattern, program, &merge,
                            &cont) != 0)
    {
      tally_rt_error ("%s: expanded path is too long; no data written",
                      pattern);
      errno = ENAMETOOLONG;
      return -1;
    }
  if (tally_rt_lock (1) != 0) /* the output buffer is the dumps' */
    return -1;
  if (merge) /* merge-image.c */
    {
      int rc = tally_rt_merge_image ((const unsigned char *) image, len, path);
      int e = errno;
      tally_rt_unlock ();
      errno = e;
      return rc;
    }
  struct tally_rt_writer w = { NULL, -1, 0, 0, 0, 0 };
  w.fd = tally_rt_open_tmp (path, tmp, sizeof tmp);
  int rc = -1;
  if (w.fd >= 0)
    {
      tally_rt_put (&w, image, len - TALLY_TRAILER_SIZE);
      rc = tally_rt_finish_file (&w, len, tmp, path,
                        tally_rt_pattern_unique (pattern, merge));
    }
  int e = errno;
  tally_rt_unlock ();
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
