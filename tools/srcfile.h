/* srcfile.h - a source file that a data file names, opened for reading
 * (lcov's exclusion markers, report --lines' annotated source).
 *
 * The name comes from the data file, or from a source replaced since the
 * build: it may be a FIFO (whose open waits for a writer for ever), a
 * device that never ends (/dev/zero, /dev/urandom) or one whose open does
 * something (a tape rewinds).  So only a regular file is read, found with
 * stat before it is opened and checked again on the descriptor, opened
 * with O_NONBLOCK|O_NOCTTY, and at most TALLY_SOURCE_MAX bytes of it
 * (doc/cli.md).  */
#ifndef TALLY_TOOLS_SRCFILE_H
#define TALLY_TOOLS_SRCFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The most bytes of one source tally reads: 256 MiB, far more than any
   source a compiler is given (sqlite3.c is 9 MB).  */
#define TALLY_SOURCE_MAX ((uint64_t) 256 << 20)
#define TALLY_SOURCE_MAX_TEXT "256 MiB"

/* Open PATH for reading as described above.  Returns the stream, or NULL
   with the reason in WHY ("No such file or directory", "it is a FIFO, not
   a regular file", "it is larger than 256 MiB, ...").  */
FILE *tally_source_open (const char *path, char *why, size_t whylen);

/* The reason to give up reading a source once more than TALLY_SOURCE_MAX
   bytes came out of it (a file that grows, or a special file posing as a
   regular one).  */
#define TALLY_SOURCE_TOO_LONG \
  "more than " TALLY_SOURCE_MAX_TEXT " read from it, more than a source " \
  "file tally reads"

#endif /* TALLY_TOOLS_SRCFILE_H */
