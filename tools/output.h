/* output.h - the file named by `-o OUT` of tally lcov, merge and flame.
 *
 * One way to write it, shared by every subcommand (doc/cli.md, "Output
 * files"):
 *   - OUT missing or a regular file: the output goes to a new temporary in
 *     OUT's directory, created exclusively (O_CREAT|O_EXCL|O_NOFOLLOW) under
 *     an unpredictable name OUT.tmp.XXXXXXXXXXXX, and is renamed over OUT
 *     when complete: readers see the old file or the whole new one, and a
 *     name planted in advance (a symbolic link at the temporary's name) is
 *     never followed.  A symbolic link at OUT itself is replaced, not
 *     followed, unless it leads to a file that is not a regular one.
 *   - OUT exists and is not a regular file (a character device such as
 *     /dev/null or /dev/stdout, a FIFO): written in place, never replaced
 *     and never truncated.
 *   - OUT is a directory: refused.  */
#ifndef TALLY_TOOLS_OUTPUT_H
#define TALLY_TOOLS_OUTPUT_H

#include <stddef.h>
#include <stdio.h>

struct tally_out
{
  FILE *f;     /* write the output here */
  char *path;  /* OUT as given */
  char *tmp;   /* the temporary renamed over OUT, or NULL (in place) */
};

/* Open OUT for writing as described above.  Returns 0 and fills *O, or -1
   with a one-line message naming the file in ERR.  */
int tally_out_open (struct tally_out *o, const char *path, char *err,
                    size_t errlen);

/* Close the output and, when it went to a temporary, rename it over OUT.
   Returns 0, or -1 with a message in ERR (then the temporary is removed
   and OUT is as it was).  */
int tally_out_close (struct tally_out *o, char *err, size_t errlen);

/* Give up the output: close it and remove the temporary; OUT is left as
   it was (a file written in place keeps what was written).  */
void tally_out_discard (struct tally_out *o);

#endif /* TALLY_TOOLS_OUTPUT_H */
