/* reader.h - internal to the strict reader (format/datafile.c,
 * format/records.c, format/continuous.c); callers include datafile.h.
 *
 * The parse state and the helpers the three files share.  Their external
 * names carry the prefix tally_rd_ (the short names below are macros), so
 * nothing clashes with the program that links the library; the plugin
 * links it with hidden visibility.  */
#ifndef TALLY_FORMAT_READER_H
#define TALLY_FORMAT_READER_H

#include <stddef.h>
#include <stdint.h>

#include "datafile.h"
#include "tally/format.h"

/* Smallest encodings, used to bound counts before anything is allocated:
   a string is at least its u32 length.  The function bound leaves out the
   counters, so that a record with too few of them is reported as that.  */
#define MIN_MODULE_BYTES (TALLY_MODREC_FIXED + 2u * TALLY_STR_FIXED)
#define MIN_FN_BYTES (4u * TALLY_STR_FIXED + TALLY_FNREC_FIXED)
#define MIN_FILE_BYTES \
  (TALLY_HEADER_FIXED + TALLY_STR_FIXED + TALLY_TRAILER_SIZE)

/* State of one parse: a cursor over the records between the header's fixed
   part and the trailer, and the pool the strings and counters are copied
   into.  */
struct parser
{
  const unsigned char *buf;
  size_t pos;          /* next byte to read */
  size_t end;          /* offset of the trailer: records stop here */
  unsigned char *pool; /* counters grow up from the start, strings down
                          from the end */
  size_t pool_size;
  size_t pool_low;     /* bytes used by counters */
  size_t pool_high;    /* bytes used by strings */
  uint32_t version;    /* of the file: 1 has no block maps */
  char *err;
  size_t errlen;
};

#define fail tally_errf

static inline size_t
left (const struct parser *p)
{
  return p->end - p->pos;
}

/* The next field of P, as a u32, u64 or string (a NUL-terminated copy in
   the pool); -1 with a message naming WHAT if it runs past the end.  */
#define take_u32 tally_rd_take_u32
#define take_u64 tally_rd_take_u64
#define take_str tally_rd_take_str
int take_u32 (struct parser *p, uint32_t *v, const char *what);
int take_u64 (struct parser *p, uint64_t *v, const char *what);
int take_str (struct parser *p, const char **out, const char *what);

/* S made safe to print in a message, in BUF (SIZE bytes).  */
#define printable tally_rd_printable
const char *printable (const char *s, char *buf, size_t size);

/* format/datafile.c: module record MI at P into M; the envelope of the
   version 1 or 2 file (0), or 1 for a version 3 one; the records after
   the header.  */
#define parse_module tally_rd_parse_module
#define check_envelope tally_rd_check_envelope
#define parse_records tally_rd_parse_records
int parse_module (struct parser *p, uint32_t mi, struct tally_data_module *m);
int check_envelope (const unsigned char *buf, size_t len, char *err,
                    size_t errlen);
int parse_records (struct parser *p, struct tally_data *d);

/* format/records.c: the optional records after the modules, each at P.  */
#define parse_meas tally_rd_parse_meas
#define parse_frames tally_rd_parse_frames
#define parse_paths tally_rd_parse_paths
#define parse_path_events tally_rd_parse_path_events
#define parse_ranks tally_rd_parse_ranks
int parse_meas (struct parser *p, struct tally_data *d);
int parse_frames (struct parser *p, struct tally_data *d);
int parse_paths (struct parser *p, struct tally_data *d);
int parse_path_events (struct parser *p, struct tally_data *d);
int parse_ranks (struct parser *p, struct tally_data *d);

/* format/continuous.c: a version 3 file whose envelope is checked.  */
#define parse_continuous tally_rd_parse_continuous
int parse_continuous (const unsigned char *buf, size_t len,
                      struct tally_data *out, char *err, size_t errlen);

#endif /* TALLY_FORMAT_READER_H */
