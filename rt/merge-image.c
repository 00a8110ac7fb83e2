/* Merge-on-write of a whole data file in memory: tally_write_image with a
 * pattern holding %m (include/tally/image.h), which libtally-mpi's reduced
 * file takes when TALLY_MPI_OUTPUT has %m (doc/mpi.md).
 *
 * The same rules as a process's own merged dump (dump.c,
 * merge_dump_locked), with the image in place of the live modules and no
 * baseline (an image is written once):
 * 1. the image is checked as a file read from disk would be
 *    (tally_rt_check_file): a per-rank statistics record (RNKS) or
 *    anything else the runtime does not merge is refused;
 * 2. an fcntl write lock on PATH.lock serialises the writers;
 * 3. the existing PATH is opened without following a link, only if it is a
 *    regular file of this user (another user's is moved aside), read whole
 *    with pread and checked whole; a damaged one is moved to PATH.bad, one
 *    measuring other values to PATH.other, never merged, never lost;
 * 4. each image record takes the first unclaimed existing record of the
 *    same build (tally_rt_rec_match) and their counters are summed
 *    (saturating); the unclaimed existing records follow as they are; the
 *    MEAS, FRMS and PATH records are merged by tally_rt_merge_extras
 *    (through merge-write.c's tally_rt_merge_old_extras);
 * 5. the new file is built in private memory, written to PATH.tmp.RANDOM
 *    (O_CREAT|O_EXCL|O_NOFOLLOW) and renamed over PATH; then the lock is
 *    released.
 * Steps 2 and 3, and the release, are merge-write.c's own
 * (tally_rt_merge_begin, tally_rt_merge_end).  No malloc (mmap), no
 * stdio.  */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt.h"
#include "tally/format.h"

static void *
scratch (size_t len)
{
  void *m = mmap (NULL, len ? len : 1, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return m == MAP_FAILED ? NULL : m;
}

static void
unscratch (void *m, size_t len)
{
  if (m)
    munmap (m, len ? len : 1);
}

/* Copy record R to W with the counters of O (a matching record: the same
   functions and counter counts) added; the bytes written.  */
static size_t
sum_record (unsigned char *w, const unsigned char *r, size_t rsize,
            const unsigned char *o)
{
  memcpy (w, r, rsize);
  if (!o)
    return rsize;
  uint32_t nfns = tally_le_get32 (r + TALLY_MODREC_NFNS);
  size_t p = TALLY_MODREC_FIXED, q = TALLY_MODREC_FIXED;
  for (int s = 0; s < 2; s++)
    {
      p += TALLY_STR_FIXED + tally_le_get32 (r + p);
      q += TALLY_STR_FIXED + tally_le_get32 (o + q);
    }
  for (uint32_t i = 0; i < nfns; i++)
    {
      for (int s = 0; s < 4; s++)
        {
          p += TALLY_STR_FIXED + tally_le_get32 (r + p);
          q += TALLY_STR_FIXED + tally_le_get32 (o + q);
        }
      uint32_t nc = tally_le_get32 (r + p + TALLY_FNREC_NVALUES);
      p += TALLY_FNREC_FIXED;
      q += TALLY_FNREC_FIXED;
      for (uint32_t k = 0; k < nc; k++, p += 8, q += 8)
        {
          uint64_t v = tally_le_get64 (r + p), x = tally_le_get64 (o + q);
          tally_le_put64 (w + p, v + x < v ? UINT64_MAX : v + x);
        }
      uint32_t map = tally_le_get32 (r + p);
      p += TALLY_STR_FIXED + (size_t) map;
      q += TALLY_STR_FIXED + (size_t) tally_le_get32 (o + q);
    }
  return rsize;
}

int
tally_rt_merge_image (const unsigned char *image, size_t len, const char *path)
{
  int rc = -1, e = 0, lfd = -1;
  unsigned char *xbuf = NULL, *out = NULL, *img = NULL;
  uint32_t *arrays = NULL;
  size_t xlen = 0, arrays_len = 0, out_len = 0;
  struct tally_rt_oldfile of = { NULL, 0, 0, 0, { 0 } };
  struct tally_rt_extras ox;
  char tmp[4096 + 32];
  memset (&ox, 0, sizeof ox);

  /* 1. The image, with its trailer made (the caller may leave it to us),
     checked.  */
  if (len < TALLY_HEADER_FIXED + TALLY_TRAILER_SIZE || !(img = scratch (len)))
    {
      errno = len < TALLY_HEADER_FIXED + TALLY_TRAILER_SIZE ? EINVAL : ENOMEM;
      return -1;
    }
  memcpy (img, image, len - TALLY_TRAILER_SIZE);
  tally_file_seal (img, len);
  size_t ours_rec = 0;
  uint32_t ours_n = 0;
  const char *why = tally_rt_check_file (img, len, &ours_rec, &ours_n, &ox);
  if (why)
    {
      tally_rt_error ("%s: cannot merge this data into it: %s; no data "
                      "written", path, why);
      unscratch (img, len);
      errno = EINVAL;
      return -1;
    }
  size_t ours_end = ours_rec;
  for (uint32_t i = 0; i < ours_n; i++)
    ours_end += tally_rt_rec_size (img + ours_end, len - ours_end);

  /* 2. The lock, 3. the existing file.  */
  lfd = tally_rt_merge_begin (path, img, &ox, &of, tmp, sizeof tmp, &e);
  if (lfd < 0)
    goto out;

  /* 4. Pairs: the existing record each image record takes (its offset,
     0 for none), the output record of each existing record.  */
  arrays_len = ((size_t) 4 * ours_n + 4 * (size_t) of.n + 1) * 4;
  arrays = (uint32_t *) scratch (arrays_len);
  if (!arrays)
    {
      e = ENOMEM;
      tally_rt_error ("%s: no memory to merge; no data written", path);
      goto out;
    }
  uint32_t *ours_nfns = arrays, *ours_out = ours_nfns + ours_n;
  uint32_t *partner = ours_out + ours_n, *out_nfns = partner + ours_n;
  uint32_t *old_nfns = out_nfns + ours_n + of.n, *old_out = old_nfns + of.n;
  uint32_t *old_off = old_out + of.n;
  const size_t old_end = of.len ? of.len - TALLY_TRAILER_SIZE : 0;
  uint32_t extra_n = 0;
  size_t extra_len = 0;
  for (size_t q = of.rec, i = 0; i < of.n; i++)
    {
      old_off[i] = (uint32_t) q;
      old_nfns[i] = tally_le_get32 (of.buf + q + TALLY_MODREC_NFNS);
      old_out[i] = UINT32_MAX;
      q += tally_rt_rec_size (of.buf + q, old_end - q);
    }
  for (size_t p = ours_rec, i = 0; i < ours_n; i++)
    {
      size_t size = tally_rt_rec_size (img + p, len - p);
      ours_nfns[i] = out_nfns[i] = tally_le_get32 (img + p + TALLY_MODREC_NFNS);
      ours_out[i] = (uint32_t) i;
      partner[i] = 0;
      for (uint32_t k = 0; k < of.n; k++)
        if (old_out[k] == UINT32_MAX
            && tally_rt_rec_match (img + p, of.buf + old_off[k]))
          {
            old_out[k] = (uint32_t) i;
            partner[i] = old_off[k];
            break;
          }
      p += size;
    }
  for (uint32_t k = 0; k < of.n; k++)
    if (old_out[k] == UINT32_MAX)
      {
        old_out[k] = ours_n + extra_n;
        out_nfns[ours_n + extra_n++] = old_nfns[k];
        extra_len += tally_rt_rec_size (of.buf + old_off[k], old_end - old_off[k]);
      }
  struct tally_rt_xside xs_ours = { img, &ox, ours_n, ours_nfns, ours_out };
  if (tally_rt_merge_old_extras (&xs_ours, &of, old_nfns, old_out,
                                 ours_n + extra_n, out_nfns, path, &xbuf,
                                 &xlen, &e) != 0)
    goto out;

  /* 5. The new file, in memory, then written and renamed.  */
  out_len = ours_end + extra_len + xlen + TALLY_TRAILER_SIZE;
  out = (unsigned char *) scratch (out_len);
  if (!out)
    {
      e = ENOMEM;
      tally_rt_error ("%s: no memory to merge; no data written", path);
      goto out;
    }
  memcpy (out, img, ours_rec); /* header and program */
  tally_le_put32 (out + TALLY_HDR_NMODULES, ours_n + extra_n);
  size_t w = ours_rec;
  for (size_t p = ours_rec, i = 0; i < ours_n; i++)
    {
      size_t size = tally_rt_rec_size (img + p, len - p);
      w += sum_record (out + w, img + p, size, partner[i] ? of.buf + partner[i] : NULL);
      p += size;
    }
  for (uint32_t k = 0; k < of.n; k++)
    if (old_out[k] >= ours_n)
      {
        size_t size = tally_rt_rec_size (of.buf + old_off[k], old_end - old_off[k]);
        memcpy (out + w, of.buf + old_off[k], size);
        w += size;
      }
  if (xlen)
    memcpy (out + w, xbuf, xlen);
  tally_file_seal (out, out_len); /* w + xlen bytes, and the trailer */

  int inplace = 0, fd = -1;
  tmp[0] = 0;
  if (tally_rt_out_check (path, &inplace) != 0)
    {
      e = errno; /* reported */
      goto out;
    }
  fd = inplace ? tally_rt_out_inplace (path) : tally_rt_out_tmp (path, tmp, sizeof tmp, 0);
  if (fd < 0)
    {
      e = errno;
      tally_rt_error ("cannot create %s: %s (errno %d); no data written",
                      tmp[0] ? tmp : path, tally_rt_errno_text (e), e);
      goto out;
    }
  e = tally_rt_write_all (fd, out, out_len, -1);
  if (close (fd) != 0 && !e && errno != EINTR)
    e = errno;
  if (e)
    {
      tally_rt_error ("cannot write %s: %s (errno %d); no data written", path,
                      tally_rt_errno_text (e), e);
      if (tmp[0])
        unlink (tmp);
      goto out;
    }
  if (tmp[0] && tally_rt_place (tmp, path, 0) != 0)
    {
      e = errno; /* reported */
      unlink (tmp);
      goto out;
    }
  rc = 0;
  if (tally_rt_env ("TALLY_VERBOSE"))
    tally_rt_error ("wrote %s (%u modules, %u merged from the existing file)",
                    path, ours_n + extra_n, of.n - extra_n);

out:
  tally_rt_merge_end (lfd, &of, xbuf, xlen);
  unscratch (arrays, arrays_len);
  unscratch (out, out_len);
  unscratch (img, len);
  errno = e;
  return rc;
}
