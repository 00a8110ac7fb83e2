/* libFuzzer target for the runtime's merge-on-write reader (rt/merge.c,
 * rt/merge-extras.c): the code that reads, inside the instrumented
 * program, a data file another process left at a %m path.
 *
 * Built and run by `./dev fuzz [SECONDS]` beside fuzz_datafile.c, on the
 * same corpus.  Each input, as it is and with its envelope (magic, size,
 * trailer, CRC) repaired so that the mutations reach the records, goes
 * through tally_rt_check_file, and what it accepts must
 *
 * 1. be read by the tools' strict reader too (format/datafile.c and every
 *    block map through format/blockmap.c): a file the runtime merges must
 *    never be one `tally report` refuses, or the merged file would be
 *    unreadable for good;
 * 2. merge: the file with itself (each record paired with its copy), with
 *    an empty side (a process without records), and with itself unpaired
 *    (every record twice), through tally_rt_merge_extras and
 *    tally_rt_extras_delta as merge-write.c calls them; each merged file is
 *    then checked by both readers again.
 *
 * A broken promise is an abort (), which libFuzzer reports with the input.
 * tally-fuzz-merge-replay (fuzz_replay.c) runs the same function over files
 * given on its command line, without libFuzzer.  */
#include "rt.h"

#include <stdlib.h>
#include <sys/mman.h>

#include "blockmap.h"
#include "datafile.h"
#include "fuzz_common.h"
#include "tally/format.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

/* Whether the tools' strict reader takes BUF whole, block maps included.  */
static int
tools_read (const unsigned char *buf, size_t len, char *err, size_t errlen)
{
  struct tally_data d;
  if (tally_parse_buffer (buf, len, &d, err, errlen) != 0)
    return 0;
  int ok = tally_data_check_maps (&d, err, errlen) == 0;
  tally_data_free (&d);
  return ok;
}

/* Both readers must accept the merged file OUT (LEN bytes).  */
static void
check_merged (const unsigned char *out, size_t len)
{
  size_t rec;
  uint32_t n;
  struct tally_rt_extras x;
  char err[256];
  if (tally_rt_check_file (out, len, &rec, &n, &x) != NULL
      || !tools_read (out, len, err, sizeof err))
    abort ();
}

/* Write the merged file: BUF's header (HEAD bytes, the program name
   included), the module records at RECS (RLEN bytes, NMOD of them), the
   merged extras X (XLEN bytes), the trailer.  */
static void
write_merged (const unsigned char *buf, size_t head, const unsigned char *recs,
              size_t rlen, uint32_t nmod, const unsigned char *x, size_t xlen)
{
  size_t len = head + rlen + xlen + TALLY_TRAILER_SIZE;
  unsigned char *out = malloc (len);
  if (!out)
    return;
  memcpy (out, buf, head);
  tally_le_put32 (out + TALLY_HDR_NMODULES, nmod);
  memcpy (out + head, recs, rlen);
  if (xlen)
    memcpy (out + head + rlen, x, xlen);
  tally_file_seal (out, len);
  check_merged (out, len);
  free (out);
}

/* The merges of the checked file BUF (N records from REC, extras *X).  */
static void
merge_self (const unsigned char *buf, size_t len, size_t rec, uint32_t n,
            const struct tally_rt_extras *x)
{
  size_t rend = x->meas ? x->meas : x->frames ? x->frames
                : x->paths ? x->paths : x->end;
  uint32_t *nfns = calloc ((size_t) n * 5 + 1, 4);
  if (!nfns)
    return;
  uint32_t *same = nfns + n, *apart = same + n, *out_nfns = apart + n;
  size_t p = rec;
  for (uint32_t r = 0; r < n; r++)
    {
      size_t k = tally_rt_rec_size (buf + p, rend - p);
      if (!k || !tally_rt_rec_match (buf + p, buf + p))
        abort (); /* checked: every record has its size, matches itself */
      nfns[r] = tally_le_get32 (buf + p + TALLY_MODREC_NFNS);
      same[r] = r;
      apart[r] = n + r;
      p += k;
    }
  if (p != rend)
    abort ();
  for (uint32_t r = 0; r < 2 * n; r++)
    out_nfns[r] = nfns[r % (n ? n : 1)];
  /* Ours: the runtime locates the extras of its own records unchecked;
     here they were checked, and must be found at the same places.  */
  struct tally_rt_extras ox;
  tally_rt_extras_locate (buf, rend, x->end, &ox);
  if (ox.meas != x->meas || ox.frames != x->frames || ox.paths != x->paths
      || ox.pevt != x->pevt || ox.npaths != x->npaths
      || ox.nframes != x->nframes || ox.nmeas != x->nmeas)
    abort ();
  struct tally_rt_extras none;
  memset (&none, 0, sizeof none);
  struct tally_rt_xside file_same = { buf, x, n, nfns, same };
  struct tally_rt_xside file_apart = { buf, x, n, nfns, apart };
  struct tally_rt_xside empty = { buf, &none, 0, nfns, same };
  const unsigned char *recs = buf + rec;
  size_t rlen = rend - rec;
  unsigned char *twice = malloc (2 * rlen + 1);
  if (twice)
    {
      memcpy (twice, recs, rlen);
      memcpy (twice + rlen, recs, rlen);
    }
  for (int kind = 0; kind < 3; kind++)
    {
      const struct tally_rt_xside *ours = kind == 1 ? &empty : &file_same;
      const struct tally_rt_xside *old = kind == 2 ? &file_apart : &file_same;
      uint32_t nout = kind == 2 ? 2 * n : n;
      unsigned char *xbuf = NULL;
      size_t xlen = tally_rt_merge_extras (ours, old, nout, out_nfns, &xbuf);
      if (xlen == (size_t) -1)
        continue; /* no memory: the runtime writes nothing */
      if (kind == 2 && !twice)
        ;
      else
        write_merged (buf, rec, kind == 2 ? twice : recs,
                      kind == 2 ? 2 * rlen : rlen, nout, xbuf, xlen);
      if (xbuf)
        munmap (xbuf, xlen ? xlen : 1);
    }
  free (twice);
  /* This process's side of a second merged write: the deltas against a
     baseline (the same values: all zero after it).  */
  unsigned char *copy = malloc (len);
  if (copy)
    {
      uint32_t *ids = calloc (n + 1, 4);
      uint32_t id = 0;
      for (uint32_t r = 0; ids && r < n; r++)
        {
          ids[r] = id;
          id += nfns[r] < 1u << 20 ? nfns[r] : 0;
        }
      if (ids)
        for (int round = 0; round < 2; round++)
          {
            memcpy (copy, buf, len);
            tally_rt_extras_delta (copy, x, n, nfns, ids);
            tally_rt_extras_commit ();
          }
      tally_rt_extras_drop ();
      free (ids);
      free (copy);
    }
  free (nfns);
}

static void
check_once (const unsigned char *buf, size_t len)
{
  size_t rec;
  uint32_t n;
  struct tally_rt_extras x;
  const char *why = tally_rt_check_file (buf, len, &rec, &n, &x);
  if (why)
    {
      if (!*why)
        abort ();
      return;
    }
  char err[256];
  if (!tools_read (buf, len, err, sizeof err))
    abort (); /* the runtime would merge what tally report refuses */
  merge_self (buf, len, rec, n, &x);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  check_once (data, size);
  fuzz_repaired (data, size, check_once);
  return 0;
}
