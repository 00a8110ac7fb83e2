/* libFuzzer target for the data file reader (tools/datafile.c).
 *
 * Built and run by `./dev fuzz [SECONDS]` with clang; the seed corpus is
 * tools/fuzz-corpus/.  Every block map of a file that parses is decoded
 * (blockmap.c), and those that decode are solved and turned into line
 * counts (coverage.c), so the fuzzer reaches the map reader too.
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
#include "tally/abi.h"
#include "tally/format.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

/* Decode, solve and count the lines of F's block map, if it has one.  */
static void
check_map (const struct tally_data_fn *f)
{
  struct tally_blockmap m;
  struct tally_flow flow;
  struct cov_result cov;
  char err[256];
  if (!f->map_size)
    return;
  if (tally_map_decode (f->map, f->map_size, f->ncounters, &m, err,
                        sizeof err) != 0)
    {
      if (!memchr (err, 0, sizeof err) || !err[0])
        abort ();
      return;
    }
  tally_flow_solve (&m, f->counters, f->ncounters, &flow);
  struct cov_body body = { &m, &flow, "/d", f->file, f->line };
  cov_compute (&body, 1, &cov);
  cov_free (&cov);
  tally_flow_free (&flow);
  tally_map_free (&m);
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
          check_map (f);
        }
    }
  /* Every string byte came from the input.  */
  if (total > len)
    abort ();
  (void) sum;
  tally_data_free (&d);
}

/* A copy of the continuous file BUF (LEN bytes) with the CRC of each module
   chunk recomputed over what it covers, as far as the chunks can be
   walked; parsed too.  */
static void
parse_repaired_continuous (const unsigned char *buf, size_t len)
{
  if (len < TALLY_HEADER_FIXED + 4
      || tally_le32 (buf + 8) != TALLY_FILE_VERSION_CONT)
    return;
  unsigned char *copy = malloc (len);
  if (!copy)
    return;
  memcpy (copy, buf, len);
  size_t pos = TALLY_HEADER_FIXED + 4 + (size_t) tally_le32 (buf + TALLY_HEADER_FIXED) + 8;
  while (pos < len && len - pos >= TALLY_CMOD_FIXED
         && tally_le32 (copy + pos) == TALLY_TAG_CMOD)
    {
      uint64_t clen = tally_le32 (copy + pos + 8)
                      | (uint64_t) tally_le32 (copy + pos + 12) << 32;
      uint64_t head = TALLY_CMOD_FIXED
                      + (uint64_t) tally_le32 (copy + pos + 32) * TALLY_CMOD_FN
                      + tally_le32 (copy + pos + 36);
      if (head > len - pos)
        break;
      tally_le_put32 (copy + pos + 4,
                      tally_crc32 (0, copy + pos + 8, (size_t) head - 8));
      if (clen < TALLY_CMOD_FIXED || clen > len - pos)
        break;
      pos += (size_t) clen;
    }
  parse_once (copy, len);
  free (copy);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  parse_once (data, size);
  parse_repaired_continuous (data, size);

  /* Random bytes almost never carry the right magic, sizes and CRC, so
     also parse a copy with the envelope repaired: that way the mutations
     reach the module and function records.  */
  if (size >= TALLY_HEADER_FIXED + 4 + TALLY_TRAILER_SIZE)
    {
      unsigned char *copy = malloc (size);
      if (!copy)
        return 0;
      memcpy (copy, data, size);
      size_t tpos = size - TALLY_TRAILER_SIZE;
      memcpy (copy, TALLY_FILE_MAGIC, TALLY_FILE_MAGIC_LEN);
      tally_le_put32 (copy + 8, TALLY_FILE_VERSION);
      tally_le_put32 (copy + 12, TALLY_BYTE_ORDER_MARK);
      tally_le_put64 (copy + 16, size);
      tally_le_put32 (copy + tpos, TALLY_TAG_END);
      tally_le_put32 (copy + tpos + 4, tally_crc32 (0, copy, tpos));
      tally_le_put64 (copy + tpos + 8, size);
      parse_once (copy, size);
      free (copy);
    }
  return 0;
}
