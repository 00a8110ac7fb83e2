/* The strict reader's side of continuous files (version 3, TALLY_OUTPUT
   with %c): the chunks, the module chunks' regions and the dump images.
   format/datafile.c checked the envelope and parses the images' records.  */
#include <stdlib.h>
#include <string.h>

#include "reader.h"
#include "tally/abi.h"

/* Continuous files (version 3, TALLY_OUTPUT with %c): the header, then
   chunks up to the end of the file.  Every CMOD chunk is a module whose
   values are read from its region; per session, the last DUMP chunk is a
   whole version 2 file holding the other modules.  A last chunk that runs
   past the end of the file was being written when the writer died: it is
   left out.  Anything else out of place is an error, as in other files.  */

struct chunk
{
  size_t at, len;   /* offset and bytes in the file */
  uint32_t tag;
  uint32_t session; /* DUMP */
  int use;          /* DUMP: the last complete one of its session */
};

/* Check the CMOD chunk at C (whose LEN bytes are in the file) and parse its
   record into M with the region's values.  */
static int
parse_cmod (struct parser *p, const struct chunk *c, uint32_t mi,
            struct tally_data_module *m)
{
  const unsigned char *b = p->buf + c->at;
  if (c->len < TALLY_CMOD_FIXED)
    return fail (p->err, p->errlen, "chunk at byte %zu: %zu bytes, too short "
                 "for a module chunk: file is corrupt", c->at, c->len);
  struct tally_cmod h;
  tally_cmod_get (b, &h);
  uint64_t roff = h.region, rsize = h.region_size;
  uint32_t nfns = h.nfns, rec = h.rec_size;
  if (nfns > (c->len - TALLY_CMOD_FIXED) / TALLY_CMOD_FN)
    return fail (p->err, p->errlen, "module chunk at byte %zu: %lu functions "
                 "do not fit in it: file is corrupt", c->at,
                 (unsigned long) nfns);
  size_t head = TALLY_CMOD_FIXED + (size_t) nfns * TALLY_CMOD_FN;
  if (rec > c->len - head)
    return fail (p->err, p->errlen, "module chunk at byte %zu: its record "
                 "runs past the chunk: file is corrupt", c->at);
  head += rec;
  if (roff < head || roff > c->len || rsize != c->len - roff)
    return fail (p->err, p->errlen, "module chunk at byte %zu: region at "
                 "%llu, %llu bytes, is not the rest of the chunk (a chunk of "
                 "%zu bytes whose record ends at %zu): file is corrupt", c->at,
                 (unsigned long long) roff, (unsigned long long) rsize,
                 c->len, head);
  uint32_t crc = tally_crc32 (0, b + 8, head - 8);
  if (crc != h.crc)
    return fail (p->err, p->errlen, "module chunk at byte %zu: checksum "
                 "mismatch (stored 0x%08lx, computed 0x%08lx): file is "
                 "corrupt", c->at, (unsigned long) h.crc,
                 (unsigned long) crc);
  struct parser q = *p;
  q.pos = c->at + head - rec;
  q.end = c->at + head;
  q.version = TALLY_FILE_VERSION;
  if (parse_module (&q, mi, m) != 0)
    {
      p->pool_low = q.pool_low;
      p->pool_high = q.pool_high;
      return -1;
    }
  p->pool_low = q.pool_low;
  p->pool_high = q.pool_high;
  if (q.pos != q.end)
    return fail (p->err, p->errlen, "module chunk at byte %zu: %zu bytes "
                 "after its record: file is corrupt", c->at, q.end - q.pos);
  if (m->nfns != nfns)
    return fail (p->err, p->errlen, "module chunk at byte %zu: table of %lu "
                 "functions, record of %lu: file is corrupt", c->at,
                 (unsigned long) nfns, (unsigned long) m->nfns);
  const unsigned char *region = b + roff;
  for (uint32_t fi = 0; fi < nfns; fi++)
    {
      struct tally_cmodfn t;
      tally_cmodfn_get (b + TALLY_CMOD_FIXED + (size_t) fi * TALLY_CMOD_FN, &t);
      uint64_t coff = t.counters, voff = t.visited;
      uint32_t nc = t.ncounters, nv = t.nvisited;
      struct tally_data_fn *fn = &m->fns[fi];
      if ((uint64_t) nc + nv != fn->ncounters || nc < TALLY_C_CORE)
        return fail (p->err, p->errlen, "module chunk at byte %zu function "
                     "%lu: %lu counters and %lu visited bytes, the record "
                     "has %lu values: file is corrupt", c->at,
                     (unsigned long) fi, (unsigned long) nc,
                     (unsigned long) nv, (unsigned long) fn->ncounters);
      if (coff > rsize || nc > (rsize - coff) / 8 || coff % 8)
        return fail (p->err, p->errlen, "module chunk at byte %zu function "
                     "%lu: counters at %llu run past its region of %llu "
                     "bytes (or are not aligned): file is corrupt", c->at,
                     (unsigned long) fi, (unsigned long long) coff,
                     (unsigned long long) rsize);
      if (nv && (voff > rsize || nv > rsize - voff))
        return fail (p->err, p->errlen, "module chunk at byte %zu function "
                     "%lu: visited bytes at %llu run past its region of %llu "
                     "bytes: file is corrupt", c->at, (unsigned long) fi,
                     (unsigned long long) voff, (unsigned long long) rsize);
      if (!nv && voff != UINT64_MAX)
        return fail (p->err, p->errlen, "module chunk at byte %zu function "
                     "%lu: visited offset without visited bytes: file is "
                     "corrupt", c->at, (unsigned long) fi);
      /* The region is the writer's memory: host byte order, which the
         byte-order mark already showed to be little-endian.  */
      for (uint32_t k = 0; k < nc; k++)
        fn->counters[k] = tally_le_get64 (region + coff + (size_t) k * 8);
      for (uint32_t k = 0; k < nv; k++)
        fn->counters[nc + k] = region[voff + k] != 0;
    }
  return 0;
}

/* Move the modules (and measurements, paths, frames) of image I into D
   from module index *MI on.  */
static int
take_image (struct tally_data *d, struct tally_data *img, uint32_t *mi,
            char *err, size_t errlen)
{
  for (uint32_t i = 0; i < img->nmodules; i++)
    d->modules[(*mi)++] = img->modules[i];
  free (img->modules);
  img->modules = NULL;
  if (img->nmeas || img->npaths || img->nframes)
    {
      if (d->nmeas || d->npaths || d->nframes)
        return fail (err, errlen, "two process images (before and after "
                     "exec) both with measurements: not supported");
      d->nmeas = img->nmeas;
      memcpy (d->meas_names, img->meas_names, sizeof d->meas_names);
      /* Path nodes name modules by index: shift them to where the image's
         modules now are.  */
      uint32_t base = *mi - img->nmodules;
      for (uint32_t n = 0; n < img->npaths; n++)
        if (img->paths[n].module < TALLY_DATA_FRAME)
          img->paths[n].module += base;
      d->paths = img->paths;
      d->npaths = img->npaths;
      d->path_depth = img->path_depth;
      d->path_lost = img->path_lost;
      d->frames = img->frames;
      d->nframes = img->nframes;
      img->paths = NULL;
      img->frames = NULL;
    }
  if (img->time > d->time)
    d->time = img->time;
  return 0;
}

int
parse_continuous (const unsigned char *buf, size_t len,
                  struct tally_data *out, char *err, size_t errlen)
{
  struct tally_hdr h;
  tally_hdr_get (buf, &h);
  out->version = TALLY_FILE_VERSION_CONT;
  out->byte_order = h.byte_order;
  out->file_size = len;
  out->pid = h.pid;
  out->time = h.time;
  out->flags = h.flags;
  if (h.file_size != 0 || h.nmodules != 0
      || !(out->flags & TALLY_FILE_CONTINUOUS))
    return fail (err, errlen, "version 3 header without the continuous "
                 "flag, or with a size or module count: file is corrupt");
  size_t words = len / 8 + 1;
  out->pool_ = malloc (words * 8);
  struct chunk *chunks = NULL;
  size_t nchunks = 0, cap = 0;
  int rc = -1;
  if (!out->pool_)
    {
      fail (err, errlen, "out of memory");
      goto out;
    }
  struct parser p = { buf, TALLY_HEADER_FIXED, len, out->pool_, words * 8,
                      0, 0, TALLY_FILE_VERSION, err, errlen };
  uint64_t start;
  if (take_str (&p, &out->program, "program name") != 0
      || take_u64 (&p, &start, "process start") != 0)
    goto out;

  /* 1. The chunks.  */
  int cut = 0;
  uint32_t session = 0;
  while (p.pos < len)
    {
      struct chunk c = { p.pos, 0, 0, 0, 0 };
      if (len - p.pos < TALLY_DUMP_FIXED)
        {
          cut = 1;
          break;
        }
      c.tag = tally_le_get32 (buf + p.pos);
      /* The length is at the same offset in both kinds of chunk
         (TALLY_CMOD_LEN, TALLY_DUMP_SIZE).  */
      uint64_t n = tally_le_get64 (buf + p.pos + TALLY_CMOD_LEN);
      if (c.tag == TALLY_TAG_DUMP)
        {
          c.session = tally_le_get32 (buf + p.pos + TALLY_DUMP_SESSION);
          n = n > UINT64_MAX - TALLY_DUMP_FIXED ? UINT64_MAX
                                                : n + TALLY_DUMP_FIXED;
        }
      else if (c.tag != TALLY_TAG_CMOD)
        {
          fail (err, errlen, "chunk at byte %zu: bad tag 0x%08lx (expected "
                "\"CMOD\" or \"DUMP\"): file is corrupt", p.pos,
                (unsigned long) c.tag);
          goto out;
        }
      if (n > len - p.pos)
        {
          cut = 1;
          break;
        }
      if (n < TALLY_DUMP_FIXED)
        {
          fail (err, errlen, "chunk at byte %zu: length %llu is too short: "
                "file is corrupt", p.pos, (unsigned long long) n);
          goto out;
        }
      c.len = (size_t) n;
      if (nchunks == cap)
        {
          cap = cap ? cap * 2 : 16;
          struct chunk *nc = realloc (chunks, cap * sizeof *chunks);
          if (!nc)
            {
              fail (err, errlen, "out of memory");
              goto out;
            }
          chunks = nc;
        }
      /* Each exec'd image appends after the one before: sessions never go
         down, which lets step 2 pick images in one pass.  */
      if (c.tag == TALLY_TAG_DUMP && c.session < session)
        {
          fail (err, errlen, "dump chunk at byte %zu: session %lu after "
                "session %lu: file is corrupt", c.at,
                (unsigned long) c.session, (unsigned long) session);
          goto out;
        }
      if (c.tag == TALLY_TAG_DUMP)
        session = c.session;
      chunks[nchunks++] = c;
      p.pos += c.len;
    }
  if (cut)
    out->flags |= TALLY_DATA_CUT;

  /* 2. Which images count: per session the last one, and the file is
     complete when the last session's was written at exit.  */
  uint32_t nmods = 0, last_session = 0;
  int any_dump = 0;
  for (size_t i = nchunks; i-- > 0;)
    {
      if (chunks[i].tag == TALLY_TAG_CMOD)
        {
          if (nmods == UINT32_MAX)
            goto toomany;
          nmods++;
          continue;
        }
      if (any_dump && chunks[i].session == last_session)
        continue; /* a later image of its session is used */
      chunks[i].use = 1;
      const unsigned char *img = buf + chunks[i].at + TALLY_DUMP_FIXED;
      size_t ilen = chunks[i].len - TALLY_DUMP_FIXED;
      if (ilen < TALLY_HEADER_FIXED
          || memcmp (img, TALLY_FILE_MAGIC, TALLY_FILE_MAGIC_LEN) != 0
          || tally_le_get32 (img + TALLY_HDR_VERSION) != TALLY_FILE_VERSION)
        {
          fail (err, errlen, "dump chunk at byte %zu does not hold a "
                "version %u data file: file is corrupt", chunks[i].at,
                (unsigned) TALLY_FILE_VERSION);
          goto out;
        }
      uint32_t n = tally_le_get32 (img + TALLY_HDR_NMODULES);
      if (n > UINT32_MAX - nmods)
        goto toomany;
      nmods += n;
      /* The first image met (the file's last) tells whether the last
         process image finished.  */
      if (!any_dump
          && (tally_le_get32 (img + TALLY_HDR_FLAGS) & TALLY_FILE_AT_EXIT))
        out->flags |= TALLY_FILE_AT_EXIT;
      last_session = chunks[i].session;
      any_dump = 1;
    }
  if (!(out->flags & TALLY_FILE_AT_EXIT))
    out->flags |= TALLY_DATA_UNFINISHED;
  if (nmods > len / MIN_MODULE_BYTES)
    {
    toomany:
      fail (err, errlen, "more modules than the file can hold: file is "
            "corrupt");
      goto out;
    }

  /* 3. The modules: the images' first (their measurements and paths
     index them), then the regions'.  */
  if (nmods)
    {
      out->modules = calloc (nmods, sizeof *out->modules);
      if (!out->modules)
        {
          fail (err, errlen, "out of memory");
          goto out;
        }
    }
  uint32_t mi = 0;
  for (size_t i = 0; i < nchunks; i++)
    if (chunks[i].use)
      {
        const unsigned char *img = buf + chunks[i].at + TALLY_DUMP_FIXED;
        size_t ilen = chunks[i].len - TALLY_DUMP_FIXED;
        char why[256];
        struct tally_data d;
        memset (&d, 0, sizeof d);
        if (check_envelope (img, ilen, why, sizeof why) != 0)
          {
            fail (err, errlen, "dump chunk at byte %zu: %s", chunks[i].at,
                  why);
            goto out;
          }
        d.nmodules = tally_le_get32 (img + TALLY_HDR_NMODULES);
        d.time = tally_le_get64 (img + TALLY_HDR_TIME);
        struct parser q = { img, TALLY_HEADER_FIXED,
                            ilen - TALLY_TRAILER_SIZE, p.pool, p.pool_size,
                            p.pool_low, p.pool_high, TALLY_FILE_VERSION, why,
                            sizeof why };
        int r = parse_records (&q, &d);
        p.pool_low = q.pool_low;
        p.pool_high = q.pool_high;
        if (r == 0)
          r = take_image (out, &d, &mi, why, sizeof why);
        out->nmodules = mi;
        if (d.modules)
          for (uint32_t k = 0; k < d.nmodules; k++)
            free (d.modules[k].fns);
        free (d.modules);
        free (d.paths);
        free (d.frames);
        if (r != 0)
          {
            fail (err, errlen, "dump chunk at byte %zu: %s", chunks[i].at,
                  why);
            goto out;
          }
      }
  for (size_t i = 0; i < nchunks; i++)
    if (chunks[i].tag == TALLY_TAG_CMOD)
      {
        int r = parse_cmod (&p, &chunks[i], mi, &out->modules[mi]);
        out->nmodules = ++mi;
        if (r != 0)
          goto out;
      }
  out->nmodules = mi;
  rc = 0;
out:
  free (chunks);
  if (rc != 0)
    tally_data_free (out);
  return rc;
}
