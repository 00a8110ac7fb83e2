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
             "kill (continuous file without an exit dump: the process was "
             "killed, or its exit dump could not be written, which it said; "
             "counters=mapped units are counted to the end, others as of "
             "the last dump if any)\n", path);
  if (d->flags & TALLY_DATA_CUT)
    fprintf (stderr, "tally: %s: the last chunk was cut short by the "
             "process's end and is left out\n", path);
}

/* Read FILES one at a time, each handed to ADD (CTX, PATH, D, BAD: whether
   an earlier one failed; nonzero if this one does) and freed, so memory
   is that of one file; a file that cannot be read is reported and the
   others are still read, so every problem is said at once.  Then builds
   of one source with other settings are refused unless FORCE (builds.c;
   WHAT names the command).  Returns 0, or EXIT_BAD_DATA if any failed.  */
int
read_files (const char **files, size_t nfiles, const char *what, int force,
            int (*add) (void *ctx, const char *path, struct tally_data *d,
                        int bad),
            void *ctx)
{
  int bad = 0;
  struct tally_builds *builds = tally_builds_new ();
  for (size_t i = 0; i < nfiles; i++)
    {
      struct tally_data d;
      char err[256];
      if (tally_read_file (files[i], &d, err, sizeof err) != 0)
        {
          error_msg ("%s: %s", files[i], err);
          bad = 1;
          continue;
        }
      note_unfinished (files[i], &d);
      tally_builds_add (builds, files[i], &d);
      bad |= add (ctx, files[i], &d, bad) != 0;
      tally_data_free (&d);
    }
  if (!bad && tally_builds_check (builds, what, force) != 0)
    bad = 1;
  tally_builds_free (builds);
  return bad ? EXIT_BAD_DATA : 0;
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
xrealloc (void *p, size_t n)
{
  p = realloc (p, n ? n : 1);
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

/* The index of V in the NULL-terminated CHOICES, or -1.  */
int
cli_choice (const char *v, const char *const *choices)
{
  for (int k = 0; choices[k]; k++)
    if (strcmp (v, choices[k]) == 0)
      return k;
  return -1;
}

/* The subcommand NAME of cli_commands (it is there).  */
const struct cli_cmd *
cli_command (const char *name)
{
  const struct cli_cmd *c = cli_commands;
  while (c->name && strcmp (c->name, name) != 0)
    c++;
  return c;
}

/* Start reading ARGV, the words of subcommand ARGV[0].  */
void
cli_start (struct cli_args *p, int argc, char **argv)
{
  p->cmd = cli_command (argv[0]);
  p->argc = argc;
  p->argv = argv;
  p->i = 0;
  p->only_files = 0;
  p->arg = p->value = p->note = NULL;
}

/* "tally: NAME: MESSAGE; try 'tally --help'" (or 'tally NAME --help' for
   a command with its own help); returns EXIT_USAGE.  */
int
cli_usage (const char *name, const char *fmt, ...)
{
  const struct cli_cmd *cmd = cli_command (name);
  va_list ap;
  fflush (stdout);
  fprintf (stderr, "tally: %s: ", name);
  va_start (ap, fmt);
  vfprintf (stderr, fmt, ap);
  va_end (ap);
  if (cmd->flags & CLI_OWN_HELP)
    fprintf (stderr, "; try 'tally %s --help'\n", cmd->name);
  else
    fputs ("; try 'tally --help'\n", stderr);
  return EXIT_USAGE;
}

/* The option of P's table that A names, and in *VALUE what follows its
   name ("=V" for --NAME=V, "V" for -xV), or NULL.  */
static const struct cli_opt *
find_opt (const struct cli_cmd *cmd, const char *a, const char **value)
{
  for (const struct cli_opt *o = cli_opts; o->name || o->letter; o++)
    {
      if (!o->id || !(o->commands & cmd->bit))
        continue;
      if (a[1] == '-' && o->name)
        {
          size_t n = strlen (o->name);
          if (strncmp (a, o->name, n) == 0 && (!a[n] || a[n] == '='))
            {
              *value = a[n] ? a + n : NULL;
              return o;
            }
        }
      else if (a[1] == o->letter)
        {
          *value = a[2] ? a + 2 : NULL;
          return o;
        }
    }
  return NULL;
}

/* The next word of P's ARGV: an option's id (its value in P->value), a
   file (CLI_FILE), or CLI_END, CLI_HELP, CLI_ERROR, CLI_OTHER.  Long
   options take their value as --NAME=V or --NAME V, letters as -xV or
   -x V; "--" ends the options, a lone "-" is a file.  */
int
cli_next (struct cli_args *p)
{
  const struct cli_cmd *cmd = p->cmd;
  for (;;)
    {
      if (++p->i >= p->argc)
        return CLI_END;
      const char *a = p->argv[p->i], *rest;
      p->arg = a;
      p->value = NULL;
      if (p->only_files || a[0] != '-' || !a[1])
        {
          if ((cmd->flags & CLI_LEADING) && !p->only_files && a[0] == '-')
            return CLI_OTHER; /* run: a lone "-" is no command */
          if (cmd->flags & CLI_LEADING)
            return CLI_END;
          p->value = a;
          return CLI_FILE;
        }
      if (strcmp (a, "--") == 0)
        {
          p->only_files = 1;
          if (cmd->flags & CLI_LEADING)
            {
              p->i++;
              return CLI_END;
            }
          continue;
        }
      if (strcmp (a, "--help") == 0 || strcmp (a, "-h") == 0)
        {
          cli_help (cmd, 0);
          return CLI_HELP;
        }
      const struct cli_opt *o = find_opt (cmd, a, &rest);
      if (o && !o->arg && rest)
        o = NULL; /* --json=1, -fx */
      if (!o)
        {
          if (cmd->flags & CLI_OTHERS)
            return CLI_OTHER;
          return cli_usage (cmd->name, "unknown option '%s'%s", a,
                            p->note ? p->note : ""), CLI_ERROR;
        }
      if (!o->arg)
        return o->id;
      if (rest)
        p->value = rest + (a[1] == '-');
      else if (cmd->flags & CLI_EQUALS)
        {
          error_msg ("%s: %s needs a value: %s=VALUE", cmd->name, a, a);
          return CLI_ERROR;
        }
      else if (p->i + 1 < p->argc)
        p->value = p->argv[++p->i];
      else
        return cli_usage (cmd->name, "option '%s' needs a value", a),
               CLI_ERROR;
      return o->id;
    }
}

/* Parse ARGV at once into *P: the files, and per option its value and
   the word that gave it; an unknown option is an error, said with
   UNKNOWN_NOTE after it, and so is the lack of the command's required
   option or of files when it needs them.  Returns CLI_GO, or the exit status to end with:
   0 after the help, EXIT_USAGE after a usage error (reported).  Free P
   with cli_parsed_free.  */
int
cli_parse (int argc, char **argv, struct cli_parsed *p,
           const char *unknown_note)
{
  struct cli_args a;
  int r;
  memset (p, 0, sizeof *p);
  p->files = xmalloc ((size_t) argc * sizeof *p->files);
  p->lines = xmalloc ((size_t) argc * sizeof *p->lines);
  p->maps = xmalloc ((size_t) argc * sizeof *p->maps);
  cli_start (&a, argc, argv);
  a.note = unknown_note;
  while ((r = cli_next (&a)) > 0 || r == CLI_FILE)
    if (r == CLI_FILE)
      p->files[p->nfiles++] = a.value;
    else
      {
        p->v[r] = a.value ? a.value : "";
        p->word[r] = a.arg;
        if (r == OPT_LINES)
          p->lines[p->nlines++] = a.value;
        if (r == OPT_MAP)
          p->maps[p->nmaps++] = a.value;
      }
  if (r != CLI_END)
    return r == CLI_HELP ? 0 : EXIT_USAGE;
  const struct cli_cmd *cmd = a.cmd;
  if (cmd->required && (!p->v[cmd->required] || !*p->v[cmd->required]))
    return cli_usage (cmd->name, "%s", cmd->no_value);
  if (cmd->no_files && !p->nfiles)
    return cli_usage (cmd->name, "%s", cmd->no_files);
  return CLI_GO;
}

void
cli_parsed_free (struct cli_parsed *p)
{
  free (p->files);
  free (p->lines);
  free (p->maps);
}

/* Print TEXT's lines, the first after COL columns of which USED are
   taken, the others indented by COL.  */
void
cli_put_lines (const char *text, int used, int col)
{
  size_t first = strcspn (text, "\n");
  if (used >= col && used + 2 + (int) first <= 79)
    {
      fputs ("  ", stdout);
      used = col;
    }
  else if (used >= col)
    {
      putchar ('\n');
      used = 0;
    }
  for (const char *s = text; *s;)
    {
      const char *nl = strchr (s, '\n');
      size_t n = nl ? (size_t) (nl - s) : strlen (s);
      printf ("%*s%.*s\n", col - used, "", (int) n, s);
      used = 0;
      s += n + (nl != NULL);
    }
}

/* The rows of CMD's options.  */
static void
put_opts (const struct cli_cmd *cmd)
{
  int col = cmd->column ? cmd->column : 16;
  for (const struct cli_opt *o = cli_opts; o->name || o->letter; o++)
    {
      int used = 2;
      if (!(o->commands & cmd->bit))
        continue;
      fputs ("  ", stdout);
      if (o->letter)
        used += printf ("-%c%s%s%s", o->letter, o->arg ? " " : "",
                        o->arg ? o->arg : "", o->name ? ", " : "");
      if (o->name)
        used += printf ("%s%s%s", o->name, o->arg ? "=" : "",
                        o->arg ? o->arg : "");
      cli_put_lines (o->help, used, col);
    }
}

/* CMD's help: all of it (its --help), or for `tally --help` (WHOLE) its
   section of options.  */
void
cli_help (const struct cli_cmd *cmd, int whole)
{
  if (whole)
    {
      const struct cli_opt *o = cli_opts;
      while ((o->name || o->letter) && !(o->commands & cmd->bit))
        o++;
      if ((cmd->flags & CLI_OWN_HELP) || !(o->name || o->letter))
        return;
      printf ("\n%c%s options:\n", cmd->name[0] - 'a' + 'A', cmd->name + 1);
      put_opts (cmd);
      return;
    }
  printf ("usage: tally %s %s\n\n", cmd->name, cmd->synopsis);
  const char *about = cmd->about ? cmd->about : cmd->summary;
  printf ("%c%s.\n\nOptions:\n", about[0] - (cmd->about ? 0 : 'a' - 'A'),
          about + 1);
  put_opts (cmd);
  cli_put_lines ("print this help and exit", printf ("  -h, --help"),
             cmd->column ? cmd->column : 16);
  if (cmd->after)
    printf ("\n%s", cmd->after);
}
