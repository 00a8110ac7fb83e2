/* output.h - the file named by `-o OUT` of tally lcov, merge and flame.
 *
 * One way to write it, shared by every subcommand (doc/cli.md, "Output
 * files"), by the runtime's rules (rt/outfile.c):
 *   - "-": standard output.
 *   - OUT missing or a regular file: the output goes to a new temporary in
 *     OUT's directory, created exclusively (O_CREAT|O_EXCL|O_NOFOLLOW) under
 *     an unpredictable name OUT.tmp.XXXXXXXXXXXX, and is renamed over OUT
 *     when complete (OUT looked at again first): readers see the old file
 *     or the whole new one, and a name planted in advance (a symbolic link
 *     at the temporary's name) is never followed.  Not over another user's
 *     file in a sticky or world-writable directory.
 *   - OUT a character device or FIFO named directly (not through a link),
 *     the user's or root's, with one link: written in place, never
 *     replaced and never truncated.
 *   - OUT a symbolic link, a directory, a block device, a socket:
 *     refused.  */
#ifndef TALLY_TOOLS_OUTPUT_H
#define TALLY_TOOLS_OUTPUT_H

#include <stddef.h>
#include <stdio.h>

struct tally_out
{
  FILE *f;     /* write the output here */
  char *path;  /* OUT as given, or NULL for standard output ("-") */
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
