/* The dump's records (layout: include/tally/format.h): the writer, each
 * record a dump writes, the area of unregistered modules' records, and
 * the dump lock.  Layer "records" of rt.h: it reads the counters and the
 * measurements (the layer below) and knows nothing of files, names or
 * merging (the output file, above).
 *
 * The writer streams through a static buffer, CRC-ing as it goes, to a
 * file descriptor, or into memory, or nowhere (a sizing pass: every dump
 * sizes its file first, so the header can say how long it is).  Only the
 * holder of the dump lock uses it.
 *
 * A module that unregisters before the final dump (its library is
 * dlclose'd, or the process is exiting and ELF destructors run before the
 * runtime's exit handler) is serialised, exactly as in the file, into a
 * retained area that every later dump writes after the live modules, so its
 * counts are never lost.  The area is mmap'ed memory, grown with mremap.  */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "rt.h"
#include "tally/format.h"

/* The head of the module list (rt.h).  */
struct tally_module *tally_modules;

/* Output staging buffer; only the holder of `dumping` touches it.  */
static unsigned char outbuf[1 << 16];

/* The thread id of the thread holding the dump lock (a dump, a retain, a
   reset), 0 when free.  Keeping the holder's id rather than 1 lets a
   signal handler see that it interrupted its own thread's dump, which it
   must not wait for (see tally_rt_lock).  */
static pid_t dumping;

/* How many threads wait for the dump lock (tally_rt_lock (1)).  While one
   does, a caller that only tries (tally_dump) gets EBUSY without trying:
   a thread dumping in a loop would otherwise take the lock again each time
   it lets go, and on a busy machine the exit or exec dump, yielding
   between its attempts, would never get it.  */
static unsigned lock_waiters;

/* How long a waiting locker waits for another dump to finish before it
   gives up, in seconds: far longer than any dump takes (a merge into a
   large file included), but not forever behind a thread stopped in the
   middle of one.  */
#define LOCK_PATIENCE 30

/* Module records of unregistered modules, in file format (see above);
   guarded by `dumping`.  */
static unsigned char *retained;
static size_t retained_len, retained_cap;
static uint32_t retained_count;

/* The function id of the first function of each retained record, for its
   measured values (shadow.c); RETAINED_IDS_MAX entries reserved.  */
#define RETAINED_IDS_MAX ((size_t) 1 << 16)
static uint32_t *retained_ids;

void
tally_rt_flush (struct tally_rt_writer *w)
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

uint32_t
tally_rt_writer_crc (const struct tally_rt_writer *w)
{
  return tally_crc32 (w->crc, outbuf, w->used);
}

void
tally_rt_put (struct tally_rt_writer *w, const void *p, size_t n)
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
        tally_rt_flush (w);
    }
}

void
tally_rt_put_u32 (struct tally_rt_writer *w, uint32_t v)
{
  unsigned char b[4];
  tally_le_put32 (b, v);
  tally_rt_put (w, b, 4);
}

void
tally_rt_put_u64 (struct tally_rt_writer *w, uint64_t v)
{
  unsigned char b[8];
  tally_le_put64 (b, v);
  tally_rt_put (w, b, 8);
}

static void
put_str (struct tally_rt_writer *w, const char *s)
{
  size_t n = s ? strlen (s) : 0;
  if (n > TALLY_MAX_STRING)
    n = TALLY_MAX_STRING;
  tally_rt_put_u32 (w, (uint32_t) n);
  tally_rt_put (w, s, n);
}

int
tally_rt_module_live (struct tally_module *m)
{
  return (__atomic_load_n (&m->rt_state, __ATOMIC_ACQUIRE) & TALLY_STATE_MASK)
         == TALLY_STATE_REGISTERED;
}

int (*tally_rt_cont_mapped_cb) (const struct tally_module *m);

/* Whether a dump writes M's record: a live module whose counts are not in
   a region of the continuous file (those are on disk already).  */
int
tally_rt_module_written (struct tally_module *m)
{
  int (*mapped) (const struct tally_module *)
      = __atomic_load_n (&tally_rt_cont_mapped_cb, __ATOMIC_ACQUIRE);
  return tally_rt_module_live (m) && !(mapped && mapped (m));
}

/* Emit the record of module M.  */
static void
put_module (struct tally_rt_writer *w, const struct tally_module *m)
{
  /* From the unit's compile-time blob if it has one (mapblob.c), after
     what is buffered.  */
  if (w->fd >= 0 && !w->mem && tally_rt_blob_usable (m))
    tally_rt_flush (w);
  struct tally_rt_sink s = { w->mem, w->fd, w->total, w->crc, w->failed };
  if (tally_rt_blob_put (m, &s))
    {
      w->total = s.total;
      w->crc = s.crc;
      w->failed = s.failed;
      return;
    }
  unsigned char b[TALLY_MODREC_FIXED];
  struct tally_modrec mr = { m->abi_version, m->checksum,
                             m->flags & ~TALLY_MOD_BLOB, m->nfns };
  tally_modrec_put (b, &mr);
  tally_rt_put (w, b, TALLY_MODREC_FIXED);
  put_str (w, m->source);
  put_str (w, m->directory);
  for (uint32_t i = 0; i < m->nfns; i++)
    {
      const struct tally_fn *f = m->fns[i];
      /* ABI 4: the strings, line and flags as the blob has them.  */
      const unsigned char *r = m->blob + f->record, *e = r;
      for (int k = 0; k < 4; k++)
        e += TALLY_STR_FIXED + tally_le_get32 (e);
      tally_rt_put (w, r, (size_t) (e - r));
      uint32_t nv = tally_rt_fn_nvalues (f);
      struct tally_fnrec fr;
      tally_fnrec_get (e, &fr);
      fr.nvalues = nv;
      fr.reserved = 0;
      tally_fnrec_put (b, &fr);
      tally_rt_put (w, b, TALLY_FNREC_FIXED);
      for (uint32_t k = 0; k < nv; k++)
        tally_rt_put_u64 (w, tally_rt_fn_value (m, i, k));
      tally_rt_put_u32 (w, f->map ? f->map_size : 0);
      if (f->map)
        tally_rt_put (w, m->blob + f->map, f->map_size);
    }
}

size_t
tally_rt_module_record (const struct tally_module *m, unsigned char *mem)
{
  struct tally_rt_writer w = { mem, -1, 0, 0, 0, 0 };
  put_module (&w, m);
  return (size_t) w.total;
}

void
tally_rt_put_header (struct tally_rt_writer *w, uint64_t file_size,
                     uint32_t nmodules, uint32_t flags, const char *program)
{
  unsigned char b[TALLY_HEADER_FIXED];
  struct tally_hdr h = { TALLY_FILE_VERSION, TALLY_BYTE_ORDER_MARK, file_size,
                         (uint64_t) getpid (), (uint64_t) time (NULL),
                         nmodules, flags };
  tally_hdr_put (b, &h);
  tally_rt_put (w, b, TALLY_HEADER_FIXED);
  put_str (w, program);
}

/* Emit the live modules and the retained ones.  HEAD is the list head
   loaded once, so every pass sees the same modules (registration only
   pushes in front of it).  NLIVE is the number of live modules counted in
   the first pass.  */
void
tally_rt_put_records (struct tally_rt_writer *w, struct tally_module *head,
                      uint32_t nlive)
{
  uint32_t written = 0;
  for (struct tally_module *m = head; m && written < nlive; m = m->next)
    if (tally_rt_module_written (m))
      {
        written++;
        put_module (w, m);
      }
  tally_rt_put (w, retained, retained_len);
}

/* An (inclusive, exclusive) pair of sums, the exclusive one written no
   larger than the inclusive: threads of an update=single program may lose
   adds to either (guarantees.md), and readers refuse a record whose
   exclusive sum is above its inclusive one as corrupt.  */
static void
put_incl_excl (struct tally_rt_writer *w, uint64_t incl, uint64_t excl)
{
  unsigned char b[TALLY_MEAS_PAIR];
  struct tally_measpair v = { incl, excl < incl ? excl : incl };
  tally_measpair_put (b, &v);
  tally_rt_put (w, b, TALLY_MEAS_PAIR);
}

/* The NEV PAPI event totals (inclusive, exclusive) of function ID.  */
static void
put_events (struct tally_rt_writer *w, uint32_t id, unsigned nev)
{
  for (unsigned e = 0; e < nev; e++)
    {
      uint64_t incl = 0, excl = 0;
      if (id != UINT32_MAX)
        tally_rt_papi_totals (id, e, &incl, &excl);
      put_incl_excl (w, incl, excl);
    }
}

/* The PAPI events a dump writes (measure=papi), fixed once per dump (a
   thread's first hook may set PAPI up between its two passes).  */
unsigned
tally_rt_dump_events (void)
{
  const char *ev_names[TALLY_PAPI_MAX];
  return tally_rt_papi_events ? tally_rt_papi_events (ev_names) : 0;
}

/* The measured values (measure=cycles) of NMODULES module records: the
   live modules in HEAD's list order, then the retained ones, as
   tally_rt_put_records writes them, with NEV PAPI events.  Written only
   when some module measures.  */
static void
put_meas (struct tally_rt_writer *w, struct tally_module *head, uint32_t nlive,
          unsigned nev)
{
  uint32_t cap;
  const struct tally_meas *meas = tally_rt_meas (&cap);
  const char *ev_names[TALLY_PAPI_MAX];
  if (nev)
    nev = tally_rt_papi_events (ev_names); /* set once: the same now */
  unsigned char b[TALLY_MEAS_HEAD];
  struct tally_meashdr h = { 1 + nev };
  tally_meashdr_put (b, &h);
  tally_rt_put (w, b, TALLY_MEAS_HEAD);
  put_str (w, "cycles");
  for (unsigned e = 0; e < nev; e++)
    put_str (w, ev_names[e]);
  tally_rt_put_u32 (w, nlive + retained_count);
  uint32_t written = 0;
  for (struct tally_module *m = head; m && written < nlive; m = m->next)
    if (tally_rt_module_written (m))
      {
        written++;
        tally_rt_put_u32 (w, m->nfns);
        for (uint32_t i = 0; i < m->nfns; i++)
          {
            uint32_t id = m->fns[i]->id;
            if (id < cap)
              put_incl_excl (w, meas[id].incl, meas[id].excl);
            else
              put_incl_excl (w, 0, 0);
            put_events (w, id, nev);
          }
      }
  /* The retained records, walked like tally_rt_zero_retained does.  */
  const unsigned char *p = retained, *end = retained + retained_len;
  for (uint32_t r = 0; p && p < end; r++)
    {
      uint32_t nfns = tally_le_get32 (p + TALLY_MODREC_NFNS);
      uint32_t base = tally_rt_retained_id (r);
      tally_rt_put_u32 (w, nfns);
      p = tally_rt_skip_str (tally_rt_skip_str (p + TALLY_MODREC_FIXED));
      for (uint32_t i = 0; i < nfns; i++)
        {
          for (int s = 0; s < 4; s++)
            p = tally_rt_skip_str ((unsigned char *) p);
          p += TALLY_FNREC_FIXED
               + (size_t) tally_le_get32 (p + TALLY_FNREC_NVALUES) * 8;
          p += TALLY_STR_FIXED + (size_t) tally_le_get32 (p); /* block map */
          uint64_t id = (uint64_t) base + i;
          if (base != UINT32_MAX && id < cap)
            put_incl_excl (w, meas[id].incl, meas[id].excl);
          else
            put_incl_excl (w, 0, 0);
          put_events (w, base != UINT32_MAX && id < UINT32_MAX ? (uint32_t) id
                                                               : UINT32_MAX,
                      nev);
        }
    }
}

/* The calling-context tree (paths=on): the function-id base of each module
   record, in tally_rt_put_records' order, then the first N nodes after the
   root.  Other threads may add nodes meanwhile, so the dump fixes N once for both
   of its passes (the sizing pass and the write must see the same count);
   a node in that range still being made is written empty, as are values
   read while an activation was adding to them out of order.  */
static void
put_paths (struct tally_rt_writer *w, struct tally_module *head, uint32_t nlive,
           uint32_t n)
{
  uint32_t now, depth;
  uint64_t lost;
  const struct tally_path_node *nodes = tally_rt_paths (&now, &depth, &lost);
  if (!nodes)
    n = 0;
  unsigned char b[TALLY_PATH_NODE];
  struct tally_pathhdr h = { depth, lost, nlive + retained_count };
  tally_pathhdr_put (b, &h);
  tally_rt_put (w, b, TALLY_PATH_HEAD);
  uint32_t written = 0;
  for (struct tally_module *m = head; m && written < nlive; m = m->next)
    if (tally_rt_module_written (m))
      {
        written++;
        tally_rt_put_u32 (w, m->nfns ? m->fns[0]->id : UINT32_MAX);
      }
  for (uint32_t r = 0; r < retained_count; r++)
    tally_rt_put_u32 (w, tally_rt_retained_id (r));
  tally_rt_put_u32 (w, n ? n - 1 : 0);
  for (uint32_t i = 1; i < n; i++)
    {
      /* A node being made right now is written as an empty child of the
         root with no function; readers skip those.  */
      uint32_t fn1 = __atomic_load_n (&nodes[i].fn_plus1, __ATOMIC_ACQUIRE);
      /* So is the node of an outside frame this dump's FRMS lacks.  */
      if (fn1 > TALLY_FRAME_ID_BASE && !tally_rt_frame_dumped (fn1 - 1))
        fn1 = 0;
      uint32_t parent = fn1 ? nodes[i].parent : 0;
      uint64_t incl = fn1 ? __atomic_load_n (&nodes[i].incl, __ATOMIC_RELAXED) : 0;
      uint64_t excl = fn1 ? __atomic_load_n (&nodes[i].excl, __ATOMIC_RELAXED) : 0;
      struct tally_pnode node = {
        parent < i ? parent : 0, fn1 ? fn1 - 1 : UINT32_MAX,
        fn1 ? __atomic_load_n (&nodes[i].calls, __ATOMIC_RELAXED) : 0,
        incl, excl < incl ? excl : incl };
      tally_pnode_put (b, &node);
      tally_rt_put (w, b, TALLY_PATH_NODE);
    }
}

/* measure=papi with paths=on: the NEV events of the first N nodes (as
   put_paths), zero for a node still being made (readers ignore the values
   of nodes without a function: one may have been filled meanwhile).  */
static void
put_path_events (struct tally_rt_writer *w, uint32_t n, unsigned nev)
{
  uint32_t now, depth;
  uint64_t lost;
  const struct tally_path_node *nodes = tally_rt_paths (&now, &depth, &lost);
  const uint64_t *ev = tally_rt_path_events ();
  if (!nodes)
    n = 0;
  unsigned char b[TALLY_PEVT_FIXED];
  struct tally_pevthdr h = { nev, n ? n - 1 : 0 };
  tally_pevthdr_put (b, &h);
  tally_rt_put (w, b, TALLY_PEVT_FIXED);
  for (uint32_t i = 1; i < n; i++)
    {
      int have = ev && __atomic_load_n (&nodes[i].fn_plus1, __ATOMIC_ACQUIRE);
      const uint64_t *at = ev + (size_t) i * TALLY_PAPI_MAX * 2;
      for (unsigned k = 0; k < nev; k++)
        {
          uint64_t incl = have ? __atomic_load_n (&at[2 * k], __ATOMIC_RELAXED) : 0;
          uint64_t excl = have ? __atomic_load_n (&at[2 * k + 1], __ATOMIC_RELAXED) : 0;
          put_incl_excl (w, incl, excl);
        }
    }
}

/* The functions of outside frames on the paths (unwind.c), NFRAMES of
   them, as tally_rt_frames_snapshot fixed them for this dump.  */
static void
put_frames (struct tally_rt_writer *w, uint32_t nframes)
{
  unsigned char b[TALLY_FRAME_FIXED];
  struct tally_frmshdr h = { nframes };
  tally_frmshdr_put (b, &h);
  tally_rt_put (w, b, TALLY_FRAMES_FIXED);
  uint64_t addr;
  const char *name;
  uint32_t len;
  for (uint32_t i = 0; nframes; i++)
    if (tally_rt_frame_get (i, &addr, &name, &len))
      {
        nframes--;
        struct tally_frmsent fr = { TALLY_FRAME_ID_BASE + i, addr };
        tally_frmsent_put (b, &fr);
        tally_rt_put (w, b, TALLY_FRAME_FIXED);
        tally_rt_put_u32 (w, len);
        tally_rt_put (w, name, len);
      }
}

/* The records after the modules: MEAS (with NEV events) if MEAS, FRMS of
   NFRAMES frames, PATH of PATHS nodes if any, and their events.  */
void
tally_rt_put_extras (struct tally_rt_writer *w, struct tally_module *head,
                     uint32_t nlive, int meas, unsigned nev, uint32_t nframes,
                     uint32_t paths)
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
uint32_t
tally_rt_any_paths (void)
{
  uint32_t n, depth;
  uint64_t lost;
  return tally_rt_paths (&n, &depth, &lost) ? n : 0;
}

/* Whether any module, live or retained, measures (TALLY_MOD_MEASURE_*).  */
int
tally_rt_any_measured (struct tally_module *head)
{
  uint32_t cap;
  if (!tally_rt_meas (&cap))
    return 0;
  for (struct tally_module *m = head; m; m = m->next)
    if (tally_rt_module_live (m) && (m->flags & TALLY_MOD_MEASURE_CYCLES))
      return 1;
  return retained_count != 0; /* their flags are in the records: keep it simple */
}

/* Take the dump lock.  WAIT: wait until it is free (exit dump, retain),
   for up to LOCK_PATIENCE seconds, and before any caller that only tries;
   otherwise fail with EBUSY at once (tally_dump, maybe in a signal handler
   that interrupted a dump), and also while a waiting caller waits.  Even
   when told to wait, fail at once if this very thread holds the lock: then
   we are a signal handler (or an exit handler reached from one) running on
   top of that dump, and waiting would never end.  */
int
tally_rt_lock (int wait)
{
  pid_t self = gettid ();
  pid_t expected = 0;
  if (!wait && __atomic_load_n (&lock_waiters, __ATOMIC_ACQUIRE))
    {
      errno = EBUSY;
      return -1;
    }
  if (__atomic_compare_exchange_n (&dumping, &expected, self, 0,
                                   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
    return 0;
  if (!wait || expected == self)
    {
      errno = EBUSY;
      return -1;
    }
  __atomic_add_fetch (&lock_waiters, 1, __ATOMIC_ACQ_REL);
  struct timespec start = { 0, 0 }, now;
  int timed = clock_gettime (CLOCK_MONOTONIC, &start) == 0;
  unsigned spins = 0;
  int rc = 0;
  for (;;)
    {
      expected = 0;
      if (__atomic_compare_exchange_n (&dumping, &expected, self, 0,
                                       __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        break;
      /* The clock every 1024 attempts; without one, about as many
         attempts as a second of yields on an idle machine.  */
      if (++spins % 1024u == 0
          && (timed ? clock_gettime (CLOCK_MONOTONIC, &now) == 0
                          && now.tv_sec - start.tv_sec > LOCK_PATIENCE
                    : spins > 2000000u))
        {
          tally_rt_error ("another dump never finished; giving up");
          errno = EBUSY;
          rc = -1;
          break;
        }
      sched_yield ();
    }
  __atomic_sub_fetch (&lock_waiters, 1, __ATOMIC_ACQ_REL);
  return rc;
}

void
tally_rt_unlock (void)
{
  __atomic_store_n (&dumping, 0, __ATOMIC_RELEASE);
}

void
tally_rt_lock_fork_child (void)
{
  __atomic_store_n (&dumping, 0, __ATOMIC_RELAXED);
  /* Only the forking thread goes on: nobody waits in the child.  */
  __atomic_store_n (&lock_waiters, 0, __ATOMIC_RELAXED);
}

unsigned char *
tally_rt_retain (struct tally_module *m)
{
  struct tally_rt_writer w = { NULL, -1, 0, 0, 0, 0 };
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
        return NULL;
      retained = (unsigned char *) p;
      retained_cap = cap;
    }
  w = (struct tally_rt_writer){ retained + retained_len, -1, 0, 0, 0, 0 };
  put_module (&w, m);
  if (!retained_ids)
    {
      void *p = mmap (NULL, RETAINED_IDS_MAX * sizeof *retained_ids,
                      PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      retained_ids = p == MAP_FAILED ? NULL : (uint32_t *) p;
    }
  if (retained_ids && retained_count < RETAINED_IDS_MAX)
    retained_ids[retained_count] = m->nfns ? m->fns[0]->id : UINT32_MAX;
  unsigned char *rec = retained + retained_len;
  retained_len += (size_t) w.total;
  retained_count++;
  return rec;
}

uint32_t
tally_rt_retained_count (void)
{
  return retained_count;
}

uint32_t
tally_rt_retained_id (uint32_t r)
{
  return retained_ids && r < RETAINED_IDS_MAX ? retained_ids[r] : UINT32_MAX;
}

/* Zero the counters inside the retained records.  The area holds only
   records put_module wrote, so it is walked without bounds checks beyond
   its length.  */
void
tally_rt_zero_retained (void)
{
  const unsigned char *end = retained + retained_len;
  unsigned char *p = retained;
  while (p && p < end)
    {
      uint32_t nfns = tally_le_get32 (p + TALLY_MODREC_NFNS);
      /* source, directory */
      p = tally_rt_skip_str (tally_rt_skip_str (p + TALLY_MODREC_FIXED));
      for (uint32_t i = 0; i < nfns; i++)
        {
          for (int s = 0; s < 4; s++) /* name, symbol, origin, file */
            p = tally_rt_skip_str (p);
          uint32_t ncounters = tally_le_get32 (p + TALLY_FNREC_NVALUES);
          p += TALLY_FNREC_FIXED;
          memset (p, 0, (size_t) ncounters * 8);
          p += (size_t) ncounters * 8;
          p += TALLY_STR_FIXED + (size_t) tally_le_get32 (p); /* block map */
        }
    }
}

