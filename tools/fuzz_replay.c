/* tally-fuzz-replay: run the fuzz target (fuzz_datafile.c) over each file
   named on the command line, without libFuzzer.  Build it with sanitizers
   (meson -Db_sanitize=address,undefined) to replay a corpus or a crash
   input with gcc.  Exit status 0 when every file was replayed, whatever the
   reader thought of it; a bug shows up as a sanitizer report or abort.  */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

/* Inputs larger than this are not fuzz inputs; refuse rather than read
   a huge file into memory.  */
#define MAX_INPUT ((size_t) 64 << 20)

static int
replay (const char *path)
{
  FILE *f = fopen (path, "rb");
  if (!f)
    {
      fprintf (stderr, "tally-fuzz-replay: %s: %s\n", path, strerror (errno));
      return -1;
    }
  unsigned char *buf = NULL;
  size_t len = 0, cap = 0;
  int bad = 0;
  for (;;)
    {
      if (len == cap)
        {
          unsigned char *nbuf;
          if (cap > MAX_INPUT
              || !(nbuf = realloc (buf, cap = cap ? cap * 2 : 4096)))
            {
              bad = 1;
              break;
            }
          buf = nbuf;
        }
      size_t n = fread (buf + len, 1, cap - len, f);
      len += n;
      if (n == 0)
        {
          bad = ferror (f);
          break;
        }
    }
  fclose (f);
  if (bad)
    {
      fprintf (stderr, "tally-fuzz-replay: %s: cannot read it (read error, "
               "out of memory or larger than 64 MiB)\n", path);
      free (buf);
      return -1;
    }
  /* An exact-size copy, so that ASan catches a read one past the end.  */
  unsigned char *input = malloc (len ? len : 1);
  if (!input)
    {
      free (buf);
      fprintf (stderr, "tally-fuzz-replay: out of memory\n");
      return -1;
    }
  memcpy (input, buf, len);
  free (buf);
  LLVMFuzzerTestOneInput (input, len);
  free (input);
  return 0;
}

int
main (int argc, char **argv)
{
  int status = 0, n = 0;
  if (argc < 2)
    {
      fprintf (stderr, "usage: tally-fuzz-replay FILE...\n");
      return 2;
    }
  for (int i = 1; i < argc; i++)
    {
      if (replay (argv[i]) != 0)
        status = 1;
      else
        n++;
    }
  printf ("tally-fuzz-replay: %d input%s replayed\n", n, n == 1 ? "" : "s");
  return status;
}
