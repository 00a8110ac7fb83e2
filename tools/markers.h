/* markers.h - lcov's exclusion markers in a source file.
 *
 * As lcov's geninfo reads them (get_source_data), a line of the source is
 *   excluded            when it contains LCOV_EXCL_LINE, or lies in a section
 *                       from a line with LCOV_EXCL_START to the line before
 *                       one with LCOV_EXCL_STOP;
 *   without branches    when it contains LCOV_EXCL_BR_LINE, or lies in a
 *                       section LCOV_EXCL_BR_START .. LCOV_EXCL_BR_STOP.
 * An excluded line has no line count, no branches, and no function starting
 * on it.  (LCOV_EXCL_EXCEPTION_BR_* exclude exception branches, which tally
 * does not list.)  The file is read as untrusted text: any bytes, any line
 * length, in bounded memory besides one byte per line.  */
#ifndef TALLY_TOOLS_MARKERS_H
#define TALLY_TOOLS_MARKERS_H

#include <stddef.h>
#include <stdint.h>

#define TALLY_EXCL_LINE 0x1u   /* no data at all */
#define TALLY_EXCL_BRANCH 0x2u /* no branch data */

struct tally_markers
{
  unsigned char *flags; /* by line number (1-based); index 0 unused */
  uint32_t nlines;      /* lines read; lines past them have no flags */
  int unterminated;     /* a section was still open at the end */
};

/* Read PATH's markers into *OUT (PATH opened as srcfile.h says: only a
   regular file, of at most TALLY_SOURCE_MAX bytes).  Returns 0, or -1
   with the reason in WHY (the file cannot be opened or read, or is not
   one to read) and *OUT empty.  */
int tally_markers_read (const char *path, struct tally_markers *out,
                        char *why, size_t whylen);

/* The TALLY_EXCL_* flags of LINE.  */
unsigned tally_markers_of (const struct tally_markers *m, uint32_t line);

void tally_markers_free (struct tally_markers *m);

#endif /* TALLY_TOOLS_MARKERS_H */
