/* Merge-on-write, the writing side (the reader is merge.c, the MEAS, FRMS
 * and PATH records merge-extras.c).  Layer "output file" of rt.h.
 *
 * A TALLY_OUTPUT with %m: several processes, one file.
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
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt.h"
#include "tally/format.h"

#define TAG_CLAIMED 0u

/* Emit record R, its counters less those of B (R's baseline) if B is set,
   plus those of O (a matching record: the same functions and counter
   counts) if O is set.  */
static void
put_merged (struct tally_rt_writer *w, const unsigned char *r,
            const unsigned char *b, const unsigned char *o)
{
  /* The fixed part as read, under the tag (R's may be TAG_CLAIMED).  */
  unsigned char f[TALLY_MODREC_FIXED];
  struct tally_modrec mr;
  tally_modrec_get (r, &mr);
  tally_modrec_put (f, &mr);
  tally_rt_put (w, f, TALLY_MODREC_FIXED);
  uint32_t nfns = tally_le_get32 (r + TALLY_MODREC_NFNS);
  const unsigned char *p = r + TALLY_MODREC_FIXED;
  const unsigned char *q = o ? o + TALLY_MODREC_FIXED : NULL;
  for (int s = 0; s < 2; s++)
    {
      tally_rt_put (w, p, TALLY_STR_FIXED + tally_le_get32 (p));
      p += TALLY_STR_FIXED + tally_le_get32 (p);
      if (q)
        q += TALLY_STR_FIXED + tally_le_get32 (q);
    }
  for (uint32_t i = 0; i < nfns; i++)
    {
      for (int s = 0; s < 4; s++)
        {
          tally_rt_put (w, p, TALLY_STR_FIXED + tally_le_get32 (p));
          p += TALLY_STR_FIXED + tally_le_get32 (p);
          if (q)
            q += TALLY_STR_FIXED + tally_le_get32 (q);
        }
      uint32_t nc = tally_le_get32 (p + TALLY_FNREC_NVALUES);
      tally_rt_put (w, p, TALLY_FNREC_FIXED);
      p += TALLY_FNREC_FIXED;
      if (q)
        q += TALLY_FNREC_FIXED;
      for (uint32_t k = 0; k < nc; k++, p += 8)
        {
          uint64_t v = tally_le_get64 (p);
          if (b)
            v -= tally_le_get64 (b + (p - r));
          if (q)
            {
              uint64_t x = tally_le_get64 (q);
              v = v + x < v ? UINT64_MAX : v + x; /* saturate */
              q += 8;
            }
          tally_rt_put_u64 (w, v);
        }
      uint32_t map = tally_le_get32 (p);
      tally_rt_put (w, p, 4 + (size_t) map);
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

void
tally_rt_merge_drop (void)
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
  uint32_t nfns = tally_le_get32 (r + TALLY_MODREC_NFNS);
  size_t off = (size_t) (tally_rt_skip_str (tally_rt_skip_str (
                             r + TALLY_MODREC_FIXED)) - r);
  for (uint32_t i = 0; i < nfns; i++)
    {
      for (int s = 0; s < 4; s++)
        off = (size_t) (tally_rt_skip_str (r + off) - r);
      uint32_t nc = tally_le_get32 (r + off + TALLY_FNREC_NVALUES);
      off += TALLY_FNREC_FIXED;
      for (uint32_t k = 0; k < nc; k++, off += 8)
        tally_le_put64 (r + off,
                        tally_le_get64 (r + off) - tally_le_get64 (b + off));
      off += TALLY_STR_FIXED + (size_t) tally_le_get32 (r + off); /* block map */
    }
}

void
tally_rt_merge_retained (const struct tally_module *m, unsigned char *rec)
{
  /* What a merged write already took is not kept: the record holds only
     what the next merged write must add.  (A non-merging dump after this
     would write less than the module's total; mixing both modes in one
     process is not supported.)  */
  const unsigned char *b = baseline_of (m);
  if (b)
    {
      sub_record (rec, b);
      for (size_t i = 0; i < base_n; i++)
        if (base_entries[i].m == m)
          base_entries[i].m = NULL;
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

/* Step 2: lock PATH.lock (its name in TMP, CAP bytes): the descriptor to
   close to release it, or -1 with the errno value in *E (reported, but
   ENAMETOOLONG).  */
static int
merge_lock (const char *path, char *tmp, size_t cap, int *e)
{
  size_t pl = strlen (path);
  if (pl + sizeof ".lock" > cap)
    {
      *e = ENAMETOOLONG;
      return -1;
    }
  memcpy (tmp, path, pl);
  memcpy (tmp + pl, ".lock", sizeof ".lock");
  int lfd = tally_rt_out_lock (tmp);
  if (lfd < 0)
    {
      *e = errno; /* reported */
      return -1;
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
      *e = errno;
      tally_rt_error ("cannot lock %s: %s (errno %d); no data written", tmp,
                      tally_rt_errno_text (*e), *e);
      close (lfd);
      return -1;
    }
  return lfd;
}

/* Step 3: the existing file is never followed through a link, never read
   if it is not a regular file, and never merged if another user owns it
   (it could plant counts): moved aside, and a fresh file written.  */
static int
merge_existing (const char *path, const unsigned char *ours,
                const struct tally_rt_extras *ox, struct tally_rt_oldfile *old,
                char *tmp, size_t cap, int *e)
{
  int ofd = tally_rt_out_open_own (path, O_RDONLY, "merge into");
  if (ofd == -2 && tally_rt_out_foreign_aside (path, tmp, cap) == 0)
    ofd = -1, errno = ENOENT;
  if (ofd < 0 && errno != ENOENT)
    {
      *e = errno; /* reported */
      return -1;
    }
  if (ofd < 0)
    return 0;
  struct stat st;
  const char *why = NULL;
  if (fstat (ofd, &st) != 0)
    why = "cannot be examined";
  else if ((uint64_t) st.st_size > UINT32_MAX)
    why = "over 4 GiB";
  else if (st.st_size > 0)
    {
      int r = tally_rt_read_whole (ofd, (size_t) st.st_size, &old->buf, e);
      if (r < 0)
        {
          close (ofd);
          tally_rt_error ("cannot read %s to merge into it: %s (errno "
                          "%d); no data written", path,
                          tally_rt_errno_text (*e), *e);
          return -1;
        }
      if (r > 0)
        why = "changed size while it was read (a writer that does not "
              "take the lock?)";
      else
        {
          old->len = (size_t) st.st_size;
          why = tally_rt_check_file (old->buf, old->len, &old->rec, &old->n,
                                     &old->x);
        }
    }
  else
    why = "empty";
  close (ofd);
  const char *suffix = ".bad";
  if (!why && (why = tally_rt_meas_conflict (ours, ox, old->buf, &old->x)))
    suffix = ".other"; /* a valid file: kept apart, never replaced */
  if (why)
    {
      int aside = tally_rt_out_aside (path, suffix, tmp, cap);
      if (aside == 0)
        tally_rt_error ("%s: %s; not merged, moved aside to %s", path, why,
                        tmp);
      else
        {
          /* Never replaced: the file stays, and this process's counts are
             not written (the message says so).  */
          *e = errno;
          tally_rt_error ("%s: %s; not merged, and it could not be moved "
                          "aside (%s, errno %d); left as it is, no data "
                          "written", path, why, tally_rt_errno_text (*e), *e);
        }
      if (old->buf)
        munmap (old->buf, old->len);
      memset (old, 0, sizeof *old);
      if (aside != 0)
        return -1;
    }
  return 0;
}

int
tally_rt_merge_begin (const char *path, const unsigned char *ours,
                      const struct tally_rt_extras *ox,
                      struct tally_rt_oldfile *old, char *tmp, size_t cap,
                      int *e)
{
  memset (old, 0, sizeof *old);
  int lfd = merge_lock (path, tmp, cap, e);
  if (lfd >= 0 && merge_existing (path, ours, ox, old, tmp, cap, e) != 0)
    {
      close (lfd);
      lfd = -1;
    }
  return lfd;
}

int
tally_rt_merge_old_extras (const struct tally_rt_xside *ours,
                           const struct tally_rt_oldfile *old,
                           const uint32_t *old_nfns, const uint32_t *old_out,
                           uint32_t nout, const uint32_t *out_nfns,
                           const char *path, unsigned char **xbuf,
                           size_t *xlen, int *e)
{
  struct tally_rt_xside xs_old = { old->buf, &old->x, old->n, old_nfns,
                                   old_out };
  *xlen = tally_rt_merge_extras (ours, &xs_old, nout, out_nfns, xbuf);
  if (*xlen != (size_t) -1)
    return 0;
  *xlen = 0;
  *e = ENOMEM;
  tally_rt_error ("%s: no memory to merge the measurements; no data "
                  "written", path);
  return -1;
}

void
tally_rt_merge_end (int lfd, struct tally_rt_oldfile *old,
                    unsigned char *xbuf, size_t xlen)
{
  if (lfd >= 0)
    close (lfd); /* releases the lock, after the rename */
  if (old->buf)
    munmap (old->buf, old->len);
  if (xbuf)
    munmap (xbuf, xlen ? xlen : 1);
}

int
tally_rt_merge_dump (int at_exit, const char *path, const char *program,
                     struct tally_module *head, uint32_t nlive)
{
  int rc = -1, e = 0, lfd = -1;
  unsigned char *ours = NULL, *xbuf = NULL;
  struct base_entry *entries = NULL;
  uint32_t *arrays = NULL;
  size_t ours_len = 0, ours_size = 0, xlen = 0;
  size_t arrays_len = 0;
  struct tally_rt_oldfile of = { NULL, 0, 0, 0, { 0 } };
  struct tally_rt_extras ox;
  char tmp[4096 + 32];
  memset (&ox, 0, sizeof ox);

  /* 1. Our records, then our measured values and call paths.  */
  int meas = tally_rt_any_measured (head);
  unsigned nev = tally_rt_dump_events ();
  uint32_t paths = tally_rt_any_paths ();
  uint32_t nframes = paths ? tally_rt_frames_snapshot () : 0;
  struct tally_rt_writer w = { NULL, -1, 0, 0, 0, 0 };
  tally_rt_put_records (&w, head, nlive);
  ours_len = (size_t) w.total;
  if (ours_len)
    tally_rt_put_extras (&w, head, nlive, meas, nev, nframes, paths);
  ours_size = (size_t) w.total;
  uint32_t ours_n = nlive + tally_rt_retained_count ();
  if (ours_len)
    {
      void *m = merge_memory (ours_size, path, &e);
      if (!m)
        goto out;
      ours = (unsigned char *) m;
      w = (struct tally_rt_writer){ ours, -1, 0, 0, 0, 0 };
      tally_rt_put_records (&w, head, nlive);
      tally_rt_put_extras (&w, head, nlive, meas, nev, nframes, paths);
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
        if (tally_rt_module_written (mod))
          {
            entries[i++] = (struct base_entry){ mod, off };
            off += tally_rt_rec_size (ours + off, ours_len - off);
          }
    }

  /* 2. The lock, 3. the existing file.  */
  lfd = tally_rt_merge_begin (path, ours, &ox, &of, tmp, sizeof tmp, &e);
  if (lfd < 0)
    goto out;

  /* 4. Pair our records with the existing ones.  */
  uint32_t extra_n = 0;
  size_t extra_len = 0;
  const size_t old_end = of.len ? of.len - TALLY_TRAILER_SIZE : 0;
  for (size_t p = 0; p < ours_len;)
    {
      size_t size = tally_rt_rec_size (ours + p, ours_len - p);
      uint32_t partner = 0;
      size_t q = of.rec;
      for (uint32_t i = 0; i < of.n && !partner; i++)
        {
          size_t osize = tally_rt_rec_size (of.buf + q, old_end - q);
          if (tally_le_get32 (of.buf + q) == TALLY_TAG_MODULE
              && tally_rt_rec_match (ours + p, of.buf + q))
            {
              memset (of.buf + q, 0, 4); /* TAG_CLAIMED */
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
  arrays_len = ((size_t) 4 * ours_n + 4 * (size_t) of.n + 1) * 4;
  arrays = (uint32_t *) merge_memory (arrays_len, path, &e);
  if (!arrays)
    goto out;
  uint32_t *ours_nfns = arrays, *ours_ids = arrays + ours_n;
  uint32_t *ours_out = ours_ids + ours_n, *old_nfns = ours_out + ours_n;
  uint32_t *old_out = old_nfns + of.n, *old_off = old_out + of.n;
  uint32_t *out_nfns = old_off + of.n;
  for (size_t q = of.rec, i = 0; i < of.n; i++)
    {
      size_t osize = tally_rt_rec_size (of.buf + q, old_end - q);
      old_off[i] = (uint32_t) q;
      old_nfns[i] = tally_le_get32 (of.buf + q + TALLY_MODREC_NFNS);
      old_out[i] = UINT32_MAX;
      if (tally_le_get32 (of.buf + q) == TALLY_TAG_MODULE)
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
      if (tally_rt_module_live (m))
        ours_ids[i++] = m->nfns ? m->fns[0]->id : UINT32_MAX;
    for (uint32_t r = 0; r < tally_rt_retained_count (); r++)
      ours_ids[nlive + r] = tally_rt_retained_id (r);
    size_t p = 0;
    for (i = 0; i < ours_n; i++)
      {
        uint32_t partner;
        memcpy (&partner, ours + p, 4);
        ours_nfns[i] = out_nfns[i]
            = tally_le_get32 (ours + p + TALLY_MODREC_NFNS);
        ours_out[i] = i;
        /* The old record it took: offsets increase with the index.  */
        uint32_t lo = 0, hi = of.n;
        while (partner && lo < hi)
          {
            uint32_t mid = lo + (hi - lo) / 2;
            if (old_off[mid] < partner)
              lo = mid + 1;
            else
              hi = mid;
          }
        if (partner && lo < of.n && old_off[lo] == partner)
          old_out[lo] = i;
        p += tally_rt_rec_size (ours + p, ours_len - p);
      }
  }
  /* The measured values and call paths: ours since the last write, plus
     the file's.  */
  tally_rt_extras_delta (ours, &ox, ours_n, ours_nfns, ours_ids);
  struct tally_rt_xside xs_ours = { ours, &ox, ours_n, ours_nfns, ours_out };
  if (tally_rt_merge_old_extras (&xs_ours, &of, old_nfns, old_out,
                                 ours_n + extra_n, out_nfns, path, &xbuf,
                                 &xlen, &e) != 0)
    goto out;

  /* 5. Write.  */
  uint32_t flags = at_exit ? TALLY_FILE_AT_EXIT : 0;
  uint32_t nmodules = ours_n + extra_n;
  w = (struct tally_rt_writer){ NULL, -1, 0, 0, 0, 0 };
  tally_rt_put_header (&w, 0, nmodules, flags, program);
  uint64_t file_size = w.total + ours_len + extra_len + xlen
                       + TALLY_TRAILER_SIZE;
  w = (struct tally_rt_writer){ NULL, -1, 0, 0, 0, 0 };
  w.fd = tally_rt_open_tmp (path, tmp, sizeof tmp);
  if (w.fd < 0)
    {
      e = errno;
      goto out;
    }
  tally_rt_put_header (&w, file_size, nmodules, flags, program);
  for (size_t p = 0, i = 0; p < ours_len; i++)
    {
      size_t size = tally_rt_rec_size (ours + p, ours_len - p);
      uint32_t partner;
      memcpy (&partner, ours + p, 4);
      /* Retained records (after the live ones) were made relative to the
         baseline when they were retained.  */
      put_merged (&w, ours + p, i < nlive ? baseline_of (entries[i].m) : NULL,
                  partner ? of.buf + partner : NULL);
      p += size;
    }
  for (size_t q = of.rec, i = 0; i < of.n; i++)
    {
      size_t osize = tally_rt_rec_size (of.buf + q, old_end - q);
      if (tally_le_get32 (of.buf + q) == TALLY_TAG_MODULE)
        tally_rt_put (&w, of.buf + q, osize);
      q += osize;
    }
  tally_rt_put (&w, xbuf, xlen);
  if (tally_rt_finish_file (&w, file_size, tmp, path, 0) != 0)
    {
      e = errno;
      goto out;
    }
  rc = 0;

  /* 6. Written: what was read is the new baseline, and the retained
     records are in the file.  */
  tally_rt_merge_drop ();
  tally_rt_extras_commit ();
  base_recs = ours;
  base_len = ours_size;
  base_entries = entries;
  base_n = nlive;
  ours = NULL;
  entries = NULL;
  tally_rt_zero_retained ();
  if (tally_rt_env ("TALLY_VERBOSE"))
    tally_rt_error ("wrote %s (%u modules, %u merged from the existing file)",
                    path, nmodules, of.n - extra_n);

out:
  tally_rt_merge_end (lfd, &of, xbuf, xlen);
  if (ours)
    munmap (ours, ours_size);
  if (arrays)
    munmap (arrays, arrays_len);
  if (entries)
    munmap (entries, nlive * sizeof *entries);
  errno = e;
  return rc;
}
