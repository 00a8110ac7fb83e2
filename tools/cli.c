/* cli.c - what the subcommands share: the error reporter, allocation,
 * the argument loop (cli.h).  */
/* getline, getcwd.  */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "blockmap.h"
#include "builds.h"
#include "cli.h"
#include "coverage.h"
#include "datafile.h"
#include "hide.h"
#include "output.h"
#include "paths.h"
#include "prefetch.h"
#include "print.h"
#include "ranks.h"
#include "select.h"
#include "summed.h"
#include "tally/abi.h"
#include "tally/format.h"

/* The one error reporter: "tally: MESSAGE" on stderr.  */
void
error_msg (const char *fmt, ...)
{
  va_list ap;
  fflush (stdout);
  fputs ("tally: ", stderr);
  va_start (ap, fmt);
  vfprintf (stderr, fmt, ap);
  va_end (ap);
  fputc ('\n', stderr);
}

/* A continuous file (TALLY_OUTPUT with %c) of a process that never reached
   its exit dump is read as it is, and said so on stderr.  */
void
note_unfinished (const char *path, const struct tally_data *d)
{
  if (d->flags & TALLY_DATA_UNFINISHED)
    fprintf (stderr, "tally: %s: process did not finish: counts up to the "
             "kill (continuous file without an exit dump: counters=mapped "
             "units are counted to the end, others as of the last dump "
             "if any)\n", path);
  if (d->flags & TALLY_DATA_CUT)
    fprintf (stderr, "tally: %s: the last chunk was cut short by the "
             "process's end and is left out\n", path);
}

void *
xmalloc (size_t n)
{
  void *p = malloc (n ? n : 1);
  if (!p)
    {
      error_msg ("out of memory");
      exit (EXIT_BAD_DATA);
    }
  return p;
}

void *
xcalloc (size_t n, size_t size)
{
  void *p = calloc (n ? n : 1, size);
  if (!p)
    {
      error_msg ("out of memory");
      exit (EXIT_BAD_DATA);
    }
  return p;
}

/* Return P, an array of *CAP elements of SIZE bytes, grown to hold at
   least NEED elements.  */
void *
xgrow (void *p, size_t *cap, size_t need, size_t size)
{
  if (need <= *cap)
    return p;
  size_t ncap = *cap ? *cap : 16;
  while (ncap < need)
    {
      if (ncap > SIZE_MAX / 2 / size)
        {
          error_msg ("out of memory");
          exit (EXIT_BAD_DATA);
        }
      ncap *= 2;
    }
  p = realloc (p, ncap * size);
  if (!p)
    {
      error_msg ("out of memory");
      exit (EXIT_BAD_DATA);
    }
  *cap = ncap;
  return p;
}

char *
xstrdup (const char *s)
{
  size_t n = strlen (s) + 1;
  return memcpy (xmalloc (n), s, n);
}

int
compare_strings (const void *a, const void *b)
{
  return strcmp (*(const char *const *) a, *(const char *const *) b);
}

uint64_t
add_sat (uint64_t a, uint64_t b)
{
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Parse the argument of --top.  */
int
parse_count (const char *s, size_t *out)
{
  size_t v = 0;
  if (!*s)
    return -1;
  for (; *s; s++)
    {
      if (*s < '0' || *s > '9')
        return -1;
      unsigned d = (unsigned) (*s - '0');
      /* Saturate: a huge --top simply means every row.  */
      v = v > (SIZE_MAX - d) / 10 ? SIZE_MAX : v * 10 + d;
    }
  if (v == 0)
    return -1;
  *out = v;
  return 0;
}

/* If ARGV[*I] is the option NAME taking a value, as "NAME=V" or "NAME V",
   set *VALUE and return 1.  Returns -1 if the value is missing, 0 if it is
   another option.  */
int
option_value (int argc, char **argv, int *i, const char *name,
              const char **value)
{
  size_t n = strlen (name);
  if (strncmp (argv[*i], name, n) != 0)
    return 0;
  if (argv[*i][n] == '=')
    {
      *value = argv[*i] + n + 1;
      return 1;
    }
  if (argv[*i][n])
    return 0;
  if (*i + 1 >= argc)
    {
      error_msg ("report: option '%s' needs a value; try 'tally --help'", name);
      return -1;
    }
  *value = argv[++*i];
  return 1;
}


/* Classify A; *ONLY_FILES becomes set after "--".  */
enum arg_kind
classify_arg (const char *a, int *only_files)
{
  if (*only_files || a[0] != '-' || !a[1])
    return ARG_FILE;
  if (strcmp (a, "--") == 0)
    {
      *only_files = 1;
      return ARG_DONE;
    }
  if (strcmp (a, "--help") == 0 || strcmp (a, "-h") == 0)
    return ARG_HELP;
  return ARG_OPTION;
}

/* classify_arg, and a file argument appended to LIST (when not NULL) and
   counted in *N: the part of every command's argument loop that is the
   same.  */
enum arg_kind
take_arg (const char *a, int *only_files, const char **list, size_t *n)
{
  enum arg_kind kind = classify_arg (a, only_files);
  if (kind == ARG_FILE)
    {
      if (list)
        list[*n] = a;
      ++*n;
    }
  return kind;
}
