/* libFuzzer target for the data file reader (format/datafile.c).
 *
 * Built and run by `./dev fuzz [SECONDS]` with clang; the seed corpus is
 * tools/fuzz-corpus/.  Every block map of a file that parses is decoded
 * (blockmap.c), those that decode are solved a module at a time
 * (tally_module_solve) and turned into line counts (coverage.c), and the
 * file's maps are checked as the tools check them (tally_data_check_maps),
 * so the fuzzer reaches the map reader and kind 6's call sites too; every
 * file that parses is also made into the counts of the plugin's profile=
 * (format/profile.c) and each decoded map looked up in them.
 *
 * Continuous files (version 3) are parsed as they are and with every module
 * chunk's checksum repaired, so the mutations reach the region checks.
 *
 * tally-fuzz-replay (fuzz_replay.c) runs the same function over files given
 * on its command line, so a corpus or a crash input can be replayed with any
 * compiler, e.g. under gcc's -fsanitize=address.  */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "blockmap.h"
#include "coverage.h"
#include "datafile.h"
#include "fuzz_common.h"
#include "profile.h"
#include "tally/abi.h"
#include "tally/format.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

/* Decode, solve and count the lines of the block maps of module M, the
   module solved together (kind 6 reads other functions' blocks) whether or
   not D's check of its call sites passed: the solver must take a hostile
   module too.  */
static void
check_module (const struct tally_data_module *m, const struct tally_profile *prof)
{
  size_t n = m->nfns ? m->nfns : 1;
  struct tally_blockmap *bm = calloc (n, sizeof *bm);
  struct tally_flow *flows = calloc (n, sizeof *flows);
  char err[256];
  if (!bm || !flows)
    abort ();
  err[0] = 0;
  if (tally_data_module_solve (m, bm, flows, err, sizeof err) != 0
      && (!memchr (err, 0, sizeof err) || !err[0]))
    abort ();
  for (uint32_t j = 0; j < m->nfns; j++)
    {
      if (bm[j].nblocks)
        {
          struct cov_result cov;
          struct cov_body body = { &bm[j], &flows[j], "/d", m->fns[j].file,
                                   m->fns[j].line };
          cov_compute (&body, 1, &cov);
          cov_free (&cov);
          /* profile=: each decoded map looked up as a new build's would
             be; a body found has the map's block count.  */
          const struct tally_profile_fn *pf = NULL;
          if (prof
              && tally_profile_find (prof, m->fns[j].symbol, m->fns[j].file,
                                     m->fns[j].line, &bm[j], &pf)
                     == TALLY_PROFILE_FOUND
              && pf->nblocks != bm[j].nblocks)
            abort ();
        }
      tally_flow_free (&flows[j]);
      tally_map_free (&bm[j]);
    }
  free (bm);
  free (flows);
}

/* Parse BUF and check what the reader promises: on success every string
   and counter is readable (the sanitizers see any bad pointer) and the
   counts are sane; on failure there is a message.  */
static void
parse_once (const unsigned char *buf, size_t len)
{
  struct tally_data d;
  char err[256];
  if (tally_parse_buffer (buf, len, &d, err, sizeof err) != 0)
    {
      if (!memchr (err, 0, sizeof err) || !err[0])
        abort ();
      return;
    }
  size_t total = strlen (d.program);
  uint64_t sum = 0;
  /* profile=: the counts the plugin would place counters by, or a
     message.  */
  struct tally_profile prof;
  int have_prof = tally_profile_of (&d, "fuzz", &prof, err, sizeof err) == 0;
  if (!have_prof && (!memchr (err, 0, sizeof err) || !err[0]))
    abort ();
  for (uint32_t i = 0; i < d.nmodules; i++)
    {
      const struct tally_data_module *m = &d.modules[i];
      total += strlen (m->source) + strlen (m->directory);
      for (uint32_t j = 0; j < m->nfns; j++)
        {
          const struct tally_data_fn *f = &m->fns[j];
          total += strlen (f->name) + strlen (f->symbol) + strlen (f->origin)
                   + strlen (f->file);
          if (f->ncounters < TALLY_C_CORE)
            abort ();
          for (uint32_t k = 0; k < f->ncounters; k++)
            sum += f->counters[k];
        }
      check_module (m, have_prof ? &prof : NULL);
    }
  /* The module-level checks (kind 6's call sites) say why, or pass.  */
  if (tally_data_check_maps (&d, err, sizeof err) != 0
      && (!memchr (err, 0, sizeof err) || !err[0]))
    abort ();
  /* Every string byte came from the input.  */
  if (total > len)
    abort ();
  (void) sum;
  if (have_prof)
    tally_profile_free (&prof);
  tally_data_free (&d);
}

/* A copy of the continuous file BUF (LEN bytes) with the CRC of each module
   chunk recomputed over what it covers, as far as the chunks can be
   walked; parsed too.  */
static void
parse_repaired_continuous (const unsigned char *buf, size_t len)
{
  if (len < TALLY_HEADER_FIXED + 4
      || tally_le_get32 (buf + TALLY_HDR_VERSION) != TALLY_FILE_VERSION_CONT)
    return;
  unsigned char *copy = malloc (len);
  if (!copy)
    return;
  memcpy (copy, buf, len);
  size_t pos = TALLY_HEADER_FIXED + TALLY_STR_FIXED
               + (size_t) tally_le_get32 (buf + TALLY_HEADER_FIXED) + 8;
  while (pos < len && len - pos >= TALLY_CMOD_FIXED
         && tally_le_get32 (copy + pos) == TALLY_TAG_CMOD)
    {
      struct tally_cmod c;
      tally_cmod_get (copy + pos, &c);
      uint64_t head = TALLY_CMOD_FIXED + (uint64_t) c.nfns * TALLY_CMOD_FN
                      + c.rec_size;
      if (head > len - pos)
        break;
      tally_le_put32 (copy + pos + TALLY_CMOD_CRC,
                      tally_crc32 (0, copy + pos + TALLY_CMOD_LEN,
                                   (size_t) head - TALLY_CMOD_LEN));
      if (c.len < TALLY_CMOD_FIXED || c.len > len - pos)
        break;
      pos += (size_t) c.len;
    }
  parse_once (copy, len);
  free (copy);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  parse_once (data, size);
  parse_repaired_continuous (data, size);
  fuzz_repaired (data, size, parse_once);
  return 0;
}
