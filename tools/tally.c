/* tally - read the data files that programs built with -fplugin=tally write.
 *
 *   tally report [OPTION]... FILE...   merged calls per function
 *   tally dump FILE...                 every record as stored
 *   tally merge [--force] -o OUT FILE...  sum files into one data file
 *   tally select [--percent=P] FILE...  the functions making up P% of the
 *                                      measured time (select.c)
 *   tally run [OPTION]... -- COMMAND...   a build with the plugin (run.c)
 *
 * doc/cli.md describes the command line and the output.  Exit status: 0 on
 * success, 1 if a data file cannot be used or output fails, 2 for a usage
 * error.  */
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
#include "coverage.h"
#include "markers.h"
#include "datafile.h"
#include "diff.h"
#include "dump.h"
#include "hide.h"
#include "output.h"
#include "paths.h"
#include "prefetch.h"
#include "ranks.h"
#include "run.h"
#include "select.h"
#include "tally/abi.h"
#include "tally/format.h"

#ifndef TALLY_VERSION
#error "TALLY_VERSION must be defined (meson passes -DTALLY_VERSION=\"...\")"
#endif

#define EXIT_BAD_DATA 1
#define EXIT_USAGE 2

/* Text shown by --help; keep it in step with doc/cli.md.  */
static const char usage_text[] =
  "usage: tally COMMAND [OPTION]... FILE...\n"
  "\n"
  "Read the data files written by programs built with -fplugin=tally.\n"
  "\n"
  "Commands:\n"
  "  report [OPTION]... FILE...  merge the files and print calls per "
  "function\n"
  "  dump FILE...                print every record of the files as stored\n"
  "  merge [--force] [-j N] -o OUT FILE...\n"
  "                              sum the files into one data file OUT\n"
  "  flame [--folded] [-o OUT] FILE...\n"
  "                              a flame graph (SVG) of the call paths of\n"
  "                              paths=on programs, or collapsed stacks\n"
  "  lcov [--no-markers] [-o OUT] FILE...\n"
  "                              write an lcov tracefile (line, function and\n"
  "                              branch coverage) for genhtml; lines marked\n"
  "                              LCOV_EXCL_* in the source are left out\n"
  "                              unless --no-markers\n"
  "  select [--percent=P] [--filter] FILE...\n"
  "                              the fewest functions making up P% (default\n"
  "                              80) of the measured time (measure=cycles)\n"
  "  diff [OPTION]... A B         per-function (--lines: per-line) changes\n"
  "                              from data file A to B, largest first\n"
  "  run [OPTION]... [--] COMMAND [ARG]...\n"
  "                              run a build with -fplugin=tally and the\n"
  "                              runtime in CC and CXX (tally run --help)\n"
  "  help                        print this help\n"
  "\n"
  "Report options:\n"
  "  --sort=KEY    order rows by KEY: calls (default, most first),\n"
  "                exits (most first), name, or with measure=cycles incl\n"
  "                or excl (inclusive or exclusive cycles, most first)\n"
  "  --top=N       print only the first N rows\n"
  "  --clones      one row per compiled body (\"f.constprop.0\") instead of\n"
  "                folding clones into their source function\n"
  "  --json        print one JSON object instead of a table\n"
  "  --csv         print CSV (calls,exits,function,symbol,origin,file,line)\n"
  "  --tree        print the calling-context tree of paths=on programs\n"
  "  --event=NAME  with --tree: the PAPI event NAME (measure=papi) per call\n"
  "                path instead of cycles\n"
  "  --blocks      print every block with its lines and count\n"
  "                (modules built with -fplugin-arg-tally-blocks=...)\n"
  "  --lines=FILE  print source FILE annotated with line counts, as gcov\n"
  "                does; may be repeated\n"
  "  --all         (report, lcov, flame) also show the functions of system\n"
  "                headers never called (lcov: all of them) and the frames\n"
  "                below the first instrumented call\n"
  "  --force       (report, lcov, flame) sum modules of one source built\n"
  "                with other at=, hooks= or blocks= settings instead of\n"
  "                refusing\n"
  "  --ranks       the ranks of an MPI job (a file libtally-mpi reduced, or\n"
  "                one file per rank): per function min, mean, max, rank of\n"
  "                the max and imbalance; --sort=imbalance|max|mean|name\n"
  "  --metric=M    with --ranks: calls, cycles or self (exclusive cycles)\n"
  "  --rank=N      report only rank N of the per-rank files given\n"
  "  --            end of options\n"
  "\n"
  "Flame options:\n"
  "  -o OUT, --output=OUT  write to OUT instead of standard output\n"
  "  --folded      collapsed stacks (\"main;f;g 1234\", exclusive cycles)\n"
  "                instead of SVG, for other flame graph viewers\n"
  "  --event=NAME  widths from the PAPI event NAME (measure=papi) instead\n"
  "                of cycles\n"
  "\n"
  "Select options:\n"
  "  --percent=P   the share of the exclusive cycles to cover, 0 < P <= 100\n"
  "                (\"80\" or \"80%\"; default 80)\n"
  "  --filter      print a filter file (-fplugin-arg-tally-filter) including\n"
  "                them instead of the table\n"
  "\n"
  "Diff options:\n"
  "  --sort=KEY    order by the largest change in calls (default) or\n"
  "                cycles (exclusive, measure=cycles), or by name\n"
  "  --top=N       print only the first N rows\n"
  "  --lines       line counts that differ (blocks=count) instead of\n"
  "                functions\n"
  "  --all         also list what did not change (and system headers)\n"
  "  --json, --csv  one JSON object or CSV instead of the table\n"
  "\n"
  "Merge options:\n"
  "  -o OUT, --output=OUT  the file to write (replaced atomically; may be\n"
  "                one of the inputs)\n"
  "  --force       also merge other builds of the same source (functions\n"
  "                pair by symbol); by default they stay separate modules,\n"
  "                and builds with other at=, hooks= or blocks= settings\n"
  "                are refused\n"
  "\n"
  "Lcov options:\n"
  "  -o OUT, --output=OUT  the tracefile to write (default: standard output)\n"
  "\n"
  "Options:\n"
  "  -h, --help    print this help and exit\n"
  "  --version     print the version and exit\n"
  "\n"
  "Exit status: 0 success, 1 a data file is missing, unreadable or invalid,\n"
  "2 usage error.\n";

/* The one error reporter: "tally: MESSAGE" on stderr.  */
static void
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
static void
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

static void *
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

/* Return P, an array of *CAP elements of SIZE bytes, grown to hold at
   least NEED elements.  */
static void *
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

static char *
xstrdup (const char *s)
{
  size_t n = strlen (s) + 1;
  return memcpy (xmalloc (n), s, n);
}

static int
compare_strings (const void *a, const void *b)
{
  return strcmp (*(const char *const *) a, *(const char *const *) b);
}

static uint64_t
add_sat (uint64_t a, uint64_t b)
{
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Byte length of the valid UTF-8 sequence at S, or 0 if S does not start
   one (overlong forms, surrogates and values past U+10FFFF are invalid).
   S is NUL-terminated, and NUL is never a continuation byte, so this never
   looks past the end.  */
static size_t
utf8_len (const unsigned char *s)
{
  unsigned c = s[0];
  if (c < 0x80)
    return 1;
  if (c >= 0xc2 && c <= 0xdf)
    return (s[1] & 0xc0) == 0x80 ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef)
    {
      unsigned lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
      return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 ? 3 : 0;
    }
  if (c >= 0xf0 && c <= 0xf4)
    {
      unsigned lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
      return (s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80
              && (s[3] & 0xc0) == 0x80) ? 4 : 0;
    }
  return 0;
}

/* Write S (if PRINT) with control characters and invalid UTF-8 as \xNN,
   so that a hostile file cannot send escape sequences to the terminal.
   Returns the number of columns it takes, counting a character as one
   column (wide characters are rare in function and file names).  */
static size_t
text_out (const char *str, int print)
{
  const unsigned char *s = (const unsigned char *) str;
  size_t cols = 0;
  while (*s)
    {
      size_t n = utf8_len (s);
      if (n == 0 || *s < 0x20 || *s == 0x7f)
        {
          if (print)
            printf ("\\x%02x", *s);
          cols += 4;
          s++;
        }
      else
        {
          if (print)
            fwrite (s, 1, n, stdout);
          cols++;
          s += n;
        }
    }
  return cols;
}

static size_t
put_text (const char *str)
{
  return text_out (str, 1);
}

/* Columns put_text would take for S.  */
static size_t
text_width (const char *str)
{
  return text_out (str, 0);
}

/* Write S in double quotes with quotes, backslashes, control characters and
   invalid UTF-8 escaped: as a JSON string (\u00XX escapes) when JSON is
   set, else as a C string literal (\xXX), for dump.  Valid UTF-8 passes
   through.  */
static void
put_escaped (const char *str, int json)
{
  const unsigned char *s = (const unsigned char *) str;
  putchar ('"');
  while (*s)
    {
      size_t n = utf8_len (s);
      if (*s == '"' || *s == '\\')
        printf ("\\%c", *s);
      else if (*s == '\n')
        fputs ("\\n", stdout);
      else if (*s == '\t')
        fputs ("\\t", stdout);
      else if (*s == '\r')
        fputs ("\\r", stdout);
      else if (n == 0 || *s < 0x20 || *s == 0x7f)
        printf (json ? "\\u%04x" : "\\x%02x", *s);
      else
        {
          fwrite (s, 1, n, stdout);
          s += n;
          continue;
        }
      s++;
    }
  putchar ('"');
}

/* Write S as a JSON string, quotes included.  */
static void
put_json (const char *str)
{
  put_escaped (str, 1);
}

/* Write S as a CSV field (RFC 4180): quoted, with quotes doubled, when it
   holds a comma, a quote or a line break.  */
static void
put_csv (const char *s)
{
  if (!strpbrk (s, ",\"\r\n"))
    {
      fputs (s, stdout);
      return;
    }
  putchar ('"');
  for (; *s; s++)
    {
      if (*s == '"')
        putchar ('"');
      putchar (*s);
    }
  putchar ('"');
}

/* Write S as a C string literal, for dump.  */
static void
put_quoted (const char *str)
{
  put_escaped (str, 0);
}

/* Hash table from a key of up to three strings to a number, with open
   addressing; the key strings belong to the caller and must outlive the
   table.  */
struct slot
{
  uint64_t hash;
  const char *key[3];
  size_t value;
  int used;
};

struct table
{
  struct slot *slots;
  size_t size; /* a power of two */
  size_t count;
};

static uint64_t
hash_key (const char *const key[3])
{
  uint64_t h = 0xcbf29ce484222325u; /* FNV-1a */
  for (int i = 0; i < 3; i++)
    {
      /* Include the terminator, so ("ab", "c") and ("a", "bc") differ.  */
      const unsigned char *s = (const unsigned char *) (key[i] ? key[i] : "");
      do
        h = (h ^ *s) * 0x100000001b3u;
      while (*s++);
    }
  return h;
}

static int
key_eq (const char *const a[3], const char *const b[3])
{
  for (int i = 0; i < 3; i++)
    if (strcmp (a[i] ? a[i] : "", b[i] ? b[i] : "") != 0)
      return 0;
  return 1;
}

/* The slot holding KEY, or the empty slot where it would go.  */
static struct slot *
table_probe (const struct table *t, const char *const key[3], uint64_t h)
{
  size_t i = (size_t) h & (t->size - 1);
  while (t->slots[i].used
         && !(t->slots[i].hash == h && key_eq (t->slots[i].key, key)))
    i = (i + 1) & (t->size - 1);
  return &t->slots[i];
}

/* Find KEY.  On a miss the result is the empty slot where KEY belongs; the
   caller fills it in with table_fill, as the table has room for it.  */
static struct slot *
table_find (struct table *t, const char *const key[3], uint64_t *hash)
{
  /* Keep the load under a half, so probe sequences stay short.  */
  if (t->count + 1 > t->size / 2)
    {
      struct table nt;
      nt.size = t->size ? t->size * 2 : 64;
      if (nt.size > SIZE_MAX / sizeof *nt.slots)
        {
          error_msg ("out of memory");
          exit (EXIT_BAD_DATA);
        }
      nt.count = t->count;
      nt.slots = xmalloc (nt.size * sizeof *nt.slots);
      memset (nt.slots, 0, nt.size * sizeof *nt.slots);
      for (size_t i = 0; i < t->size; i++)
        if (t->slots[i].used)
          *table_probe (&nt, t->slots[i].key, t->slots[i].hash)
            = t->slots[i];
      free (t->slots);
      *t = nt;
    }
  *hash = hash_key (key);
  return table_probe (t, key, *hash);
}

/* Store KEY, whose strings must outlive the table, in the empty slot S that
   table_find returned.  */
static void
table_fill (struct table *t, struct slot *s, uint64_t hash,
            const char *const key[3], size_t value)
{
  s->used = 1;
  s->hash = hash;
  memcpy (s->key, key, sizeof s->key);
  s->value = value;
  t->count++;
}

static const char *
plural (uint64_t n, const char *one, const char *many)
{
  return n == 1 ? one : many;
}

/* One compiled function body, summed over every record of the same build
   in the files read (same module checksum and source, same symbol, same
   block map), with its block map decoded and solved.  */
struct body
{
  char *name, *symbol, *origin, *file;
  char *source, *directory; /* of its module */
  char *ckey;               /* the module checksum in hex, for the table
                               (its own allocation: the table keeps a
                               pointer, and the bodies array moves) */
  uint32_t line, flags, mod_flags, ncounters;
  uint64_t *counters;
  uint32_t map_size;
  unsigned char *map;       /* as stored, or NULL */
  struct tally_blockmap bm; /* decoded map (when map) */
  struct tally_flow flow;   /* solved counts (when map) */
  int solved;
  uint64_t calls, exits;    /* counted, or derived from the blocks */
  int calls_unknown;        /* derived but undetermined */
  int measured;             /* meas holds values (MEAS record) */
  uint64_t meas[2 * TALLY_MAX_MEAS + 2]; /* cycles (inclusive, exclusive),
                                            then struct merge.ev_names' */
};

/* One row of the report: a source function (origin, file), or with
   --clones one compiled body (symbol, file).  */
struct row
{
  char *name;
  char *symbol; /* the origin when clones are folded */
  char *origin;
  char *file;
  char *directory; /* of the first module seen with it */
  uint32_t line;
  int has_origin_body; /* name and line come from the origin's own body */
  int clone_body;      /* with --clones: a clone, shown with its symbol */
  uint64_t calls;
  uint64_t exits;
  uint64_t incl; /* measure=cycles: inclusive cycles */
  uint64_t excl; /* exclusive (self) cycles */
  uint64_t ev[TALLY_MAX_MEAS][2]; /* measure=papi: inclusive and exclusive
                                     values of struct merge.ev_names */
  char **clones; /* clone symbols folded into this row */
  size_t nclones, clones_cap;
  size_t *bodies; /* indexes of the bodies folded into this row */
  size_t nbodies, bodies_cap;
};

/* What was read from one data file, kept for the JSON output.  */
struct file_info
{
  const char *path;
  char *program;
  uint64_t pid;
  uint64_t time;
  uint32_t nmodules;
};

enum sort_key { SORT_CALLS, SORT_EXITS, SORT_NAME, SORT_INCL, SORT_EXCL };
enum format { FORMAT_TEXT, FORMAT_JSON, FORMAT_CSV };

/* Options of `tally report`.  */
struct report_opts
{
  enum sort_key sort;
  enum format format;
  size_t top; /* 0: all rows */
  int clones; /* one row per body */
  int blocks; /* --blocks: block counts per body */
  const char **lines; /* --lines FILE: annotated sources */
  size_t nlines;
};

/* The merged data of every file given to `tally report` or `tally lcov`.  */
struct merge
{
  struct body *bodies;
  size_t nbodies, bodies_cap;
  struct table body_key;  /* (symbol, source, checksum) -> body index */
  struct row *rows;
  size_t nrows, rows_cap;
  struct table by_key;    /* (origin or symbol, file) -> row index */
  struct table clone_set; /* (symbol, origin, file) of clones listed */
  struct file_info *files;
  size_t nfiles, files_cap;
  uint64_t nmodules;
  uint64_t user_modules; /* built with hooks=user: tally counted nothing */
  uint64_t calls;
  uint64_t exits;
  int measured;  /* some file has cycles (a MEAS record) */
  const char *ev_names[TALLY_MAX_MEAS]; /* PAPI events seen (owned) */
  unsigned nev;
  unsigned ev_map[TALLY_MAX_MEAS]; /* the file being merged: its value
                                      K + 1 is event ev_map[K] */
  uint64_t excl; /* sum of the exclusive cycles: the measured total */
  uint64_t negative;     /* block or edge counts that came out negative,
                            in update=single bodies */
  uint64_t inconsistent; /* the same in update=atomic and tls bodies */
  size_t underived;      /* bodies whose entries could not be derived */
  size_t hidden;         /* rows left out as system-header functions */
  const char *what;      /* the command, for messages */
  int force;             /* --force: sum builds with other settings */
};

/* A function body's symbol differs from its origin exactly when it is a
   clone or split part; the plugin also sets TALLY_FN_CLONE on those, but
   the names are what the folding relies on.  */
static int
is_clone (const struct body *f)
{
  return strcmp (f->symbol, f->origin) != 0;
}

static void
merge_fn (struct merge *m, size_t bi, int by_body)
{
  const struct body *f = &m->bodies[bi];
  const char *key[3] = { by_body ? f->symbol : f->origin, f->file, NULL };
  int clone = is_clone (f);
  uint64_t h;
  struct slot *s = table_find (&m->by_key, key, &h);
  struct row *r;
  if (s->used)
    r = &m->rows[s->value];
  else
    {
      m->rows = xgrow (m->rows, &m->rows_cap, m->nrows + 1, sizeof *m->rows);
      r = &m->rows[m->nrows];
      memset (r, 0, sizeof *r);
      r->name = xstrdup (f->name);
      r->symbol = xstrdup (key[0]);
      r->origin = xstrdup (f->origin);
      r->file = xstrdup (f->file);
      r->directory = xstrdup (f->directory);
      r->line = f->line;
      r->has_origin_body = !clone;
      r->clone_body = by_body && clone;
      /* Key the table by the row's copies.  */
      const char *own[3] = { r->symbol, r->file, NULL };
      table_fill (&m->by_key, s, h, own, m->nrows++);
    }
  if (!clone && !r->has_origin_body)
    {
      /* A clone was seen first; the origin's own body names the row
         better.  */
      free (r->name);
      r->name = xstrdup (f->name);
      r->line = f->line;
      r->has_origin_body = 1;
    }
  r->calls = add_sat (r->calls, f->calls);
  r->exits = add_sat (r->exits, f->exits);
  m->calls = add_sat (m->calls, f->calls);
  m->exits = add_sat (m->exits, f->exits);
  r->bodies = xgrow (r->bodies, &r->bodies_cap, r->nbodies + 1,
                     sizeof *r->bodies);
  r->bodies[r->nbodies++] = bi;
  if (f->measured)
    {
      r->incl = add_sat (r->incl, f->meas[0]);
      r->excl = add_sat (r->excl, f->meas[1]);
      m->excl = add_sat (m->excl, f->meas[1]);
      for (unsigned e = 0; e < m->nev; e++)
        {
          r->ev[e][0] = add_sat (r->ev[e][0], f->meas[2 + 2 * e]);
          r->ev[e][1] = add_sat (r->ev[e][1], f->meas[3 + 2 * e]);
        }
    }

  if (clone && !by_body)
    {
      const char *ckey[3] = { f->symbol, r->origin, r->file };
      s = table_find (&m->clone_set, ckey, &h);
      if (!s->used)
        {
          r->clones = xgrow (r->clones, &r->clones_cap, r->nclones + 1,
                             sizeof *r->clones);
          char *sym = xstrdup (f->symbol);
          r->clones[r->nclones++] = sym;
          const char *own[3] = { sym, r->origin, r->file };
          table_fill (&m->clone_set, s, h, own, 0);
        }
    }
}

static void *
xdup_bytes (const void *p, size_t n)
{
  return memcpy (xmalloc (n), p, n);
}

/* Add the record F of module MOD to the body of the same build, or start
   a new body.  */
static void add_body_meas (struct merge *m, struct body *b,
                           const struct tally_data_fn *f, unsigned nvalues);

static void
add_body (struct merge *m, const struct tally_data_module *mod,
          const struct tally_data_fn *f, unsigned nvalues)
{
  char ckey[17];
  snprintf (ckey, sizeof ckey, "%016" PRIx64, mod->checksum);
  const char *key[3] = { f->symbol, mod->source, ckey };
  uint64_t h;
  struct slot *s = table_find (&m->body_key, key, &h);
  if (s->used)
    {
      struct body *b = &m->bodies[s->value];
      if (b->ncounters == f->ncounters && b->map_size == f->map_size
          && b->mod_flags == mod->flags
          && (!b->map_size || memcmp (b->map, f->map, b->map_size) == 0))
        {
          for (uint32_t k = 0; k < f->ncounters; k++)
            b->counters[k] = add_sat (b->counters[k], f->counters[k]);
          add_body_meas (m, b, f, nvalues);
          return;
        }
      /* Same key, other contents (should not happen for one build): keep
         it apart, unkeyed.  */
      s = NULL;
    }
  m->bodies = xgrow (m->bodies, &m->bodies_cap, m->nbodies + 1,
                     sizeof *m->bodies);
  struct body *b = &m->bodies[m->nbodies];
  memset (b, 0, sizeof *b);
  b->name = xstrdup (f->name);
  b->symbol = xstrdup (f->symbol);
  b->origin = xstrdup (f->origin);
  b->file = xstrdup (f->file);
  b->source = xstrdup (mod->source);
  b->directory = xstrdup (mod->directory);
  b->ckey = xstrdup (ckey);
  b->line = f->line;
  b->flags = f->flags;
  b->mod_flags = mod->flags;
  b->ncounters = f->ncounters;
  b->counters = xdup_bytes (f->counters, f->ncounters * sizeof *f->counters);
  b->map_size = f->map_size;
  b->map = f->map_size ? (unsigned char *) xdup_bytes (f->map, f->map_size)
                       : NULL;
  add_body_meas (m, b, f, nvalues);
  if (s)
    {
      const char *own[3] = { b->symbol, b->source, b->ckey };
      table_fill (&m->body_key, s, h, own, m->nbodies);
    }
  m->nbodies++;
}

/* Add F's measured values (NVALUES of them: cycles, then the file's
   events, mapped to struct merge.ev_names by merge_file) to body B.  */
static void
add_body_meas (struct merge *m, struct body *b, const struct tally_data_fn *f,
               unsigned nvalues)
{
  if (!f->meas)
    return;
  b->measured = 1;
  b->meas[0] = add_sat (b->meas[0], f->meas[0]);
  b->meas[1] = add_sat (b->meas[1], f->meas[1]);
  for (unsigned k = 0; k + 1 < nvalues; k++)
    {
      unsigned e = m->ev_map[k];
      if (e < TALLY_MAX_MEAS)
        {
          b->meas[2 + 2 * e] = add_sat (b->meas[2 + 2 * e], f->meas[2 * (k + 1)]);
          b->meas[3 + 2 * e] = add_sat (b->meas[3 + 2 * e],
                                        f->meas[2 * (k + 1) + 1]);
        }
    }
}

/* Check the block maps of D (naming PATH in messages) and add its records
   to the bodies.  Returns 0, or -1 after reporting a bad map.  */
static int
merge_file (struct merge *m, const char *path, const struct tally_data *d)
{
  char err[512];
  if (tally_data_check_maps (d, err, sizeof err) != 0)
    {
      error_msg ("%s: %s", path, err);
      return -1;
    }
  m->files = xgrow (m->files, &m->files_cap, m->nfiles + 1,
                    sizeof *m->files);
  struct file_info *fi = &m->files[m->nfiles++];
  fi->path = path;
  fi->program = xstrdup (d->program);
  fi->pid = d->pid;
  fi->time = d->time;
  fi->nmodules = d->nmodules;
  m->nmodules += d->nmodules;
  if (d->nmeas)
    m->measured = 1;
  /* The file's events (values after the cycles), by name.  */
  for (uint32_t k = 1; k < d->nmeas; k++)
    {
      unsigned e = 0;
      while (e < m->nev && strcmp (m->ev_names[e], d->meas_names[k]) != 0)
        e++;
      if (e == m->nev && m->nev < TALLY_MAX_MEAS)
        m->ev_names[m->nev++] = xstrdup (d->meas_names[k]);
      m->ev_map[k - 1] = e < m->nev ? e : TALLY_MAX_MEAS;
    }
  for (uint32_t i = 0; i < d->nmodules; i++)
    {
      m->user_modules += (d->modules[i].flags & TALLY_MOD_HOOKS_USER) != 0;
      for (uint32_t j = 0; j < d->modules[i].nfns; j++)
        add_body (m, &d->modules[i], &d->modules[i].fns[j], d->nmeas);
    }
  return 0;
}

/* Decode and solve every body's map, set its calls and exits (derived
   from the blocks where the plugin did not count them), and fold the
   bodies into rows.  */
static void
merge_finish (struct merge *m, int by_body)
{
  for (size_t i = 0; i < m->nbodies; i++)
    {
      struct body *b = &m->bodies[i];
      b->calls = b->counters[TALLY_C_ENTRIES];
      b->exits = b->counters[TALLY_C_EXITS];
      if (b->map)
        {
          char err[256];
          /* Checked when read: this cannot fail.  */
          if (tally_map_decode (b->map, b->map_size, b->ncounters, &b->bm,
                                err, sizeof err) != 0)
            {
              error_msg ("internal error: %s: %s", b->symbol, err);
              exit (EXIT_BAD_DATA);
            }
          tally_flow_solve (&b->bm, b->counters, b->ncounters, &b->flow);
          b->solved = 1;
          if (b->mod_flags & (TALLY_MOD_UPDATE_ATOMIC | TALLY_MOD_UPDATE_TLS))
            m->inconsistent += b->flow.negative;
          else
            m->negative += b->flow.negative;
          if ((b->flags & TALLY_FN_CALLS_DERIVED)
              && b->bm.kind != TALLY_MAP_VISITED)
            {
              b->calls = b->flow.entries;
              b->exits = b->flow.exits;
              if (!b->flow.entries_known || !b->flow.exits_known)
                {
                  b->calls_unknown = 1;
                  m->underived++;
                }
            }
        }
      merge_fn (m, i, by_body);
    }
}

static void
merge_free (struct merge *m)
{
  for (size_t i = 0; i < m->nrows; i++)
    {
      struct row *r = &m->rows[i];
      free (r->name);
      free (r->symbol);
      free (r->origin);
      free (r->file);
      free (r->directory);
      for (size_t k = 0; k < r->nclones; k++)
        free (r->clones[k]);
      free (r->clones);
      free (r->bodies);
    }
  for (size_t i = 0; i < m->nbodies; i++)
    {
      struct body *b = &m->bodies[i];
      free (b->name);
      free (b->symbol);
      free (b->origin);
      free (b->file);
      free (b->source);
      free (b->ckey);
      free (b->directory);
      free (b->counters);
      free (b->map);
      if (b->solved)
        {
          tally_map_free (&b->bm);
          tally_flow_free (&b->flow);
        }
    }
  free (m->bodies);
  free (m->body_key.slots);
  free (m->rows);
  free (m->by_key.slots);
  free (m->clone_set.slots);
  for (size_t i = 0; i < m->nfiles; i++)
    free (m->files[i].program);
  for (unsigned e = 0; e < m->nev; e++)
    free ((char *) m->ev_names[e]);
  free (m->files);
}

/* Read every file in PATHS into M, reporting each bad one.  Returns 0, or
   EXIT_BAD_DATA if any was bad (M then holds nothing useful).  */
static int
merge_paths (struct merge *m, const char **paths, size_t npaths, int by_body)
{
  /* Read every file before printing anything: a report missing one of
     them would look complete.  Each file is merged and dropped at once, so
     memory follows the number of distinct functions, not of files.  */
  int bad = 0;
  struct tally_builds *builds = tally_builds_new ();
  for (size_t i = 0; i < npaths; i++)
    {
      struct tally_data d;
      char err[256];
      if (tally_read_file (paths[i], &d, err, sizeof err) != 0)
        {
          error_msg ("%s: %s", paths[i], err);
          bad = 1;
          continue;
        }
      note_unfinished (paths[i], &d);
      tally_builds_add (builds, paths[i], &d);
      if (!bad && merge_file (m, paths[i], &d) != 0)
        bad = 1;
      tally_data_free (&d);
    }
  if (!bad && tally_builds_check (builds, m->what, m->force) != 0)
    bad = 1;
  tally_builds_free (builds);
  if (bad)
    return EXIT_BAD_DATA;
  merge_finish (m, by_body);
  return 0;
}

/* Whether body B is a function defined in a system header.  */
static int
body_system (const struct body *b)
{
  return tally_system_fn (b->mod_flags, b->flags, b->directory, b->file);
}

/* Leave out the rows of functions defined in system headers (every body
   of the row): all of them with CALLED_TOO, else those never called.  */
static void
merge_hide_system (struct merge *m, int called_too)
{
  size_t kept = 0;
  for (size_t i = 0; i < m->nrows; i++)
    {
      struct row *r = &m->rows[i];
      int sys = r->nbodies > 0;
      for (size_t k = 0; k < r->nbodies && sys; k++)
        sys = body_system (&m->bodies[r->bodies[k]]);
      if (sys && !called_too)
        for (size_t k = 0; k < r->nbodies && sys; k++)
          sys = !m->bodies[r->bodies[k]].calls_unknown;
      if (!sys || (!called_too && (r->calls || r->exits || r->incl)))
        {
          m->rows[kept++] = *r;
          continue;
        }
      free (r->name);
      free (r->symbol);
      free (r->origin);
      free (r->file);
      free (r->directory);
      for (size_t k = 0; k < r->nclones; k++)
        free (r->clones[k]);
      free (r->clones);
      free (r->bodies);
    }
  /* The row tables are not looked in after merge_finish.  */
  m->hidden = m->nrows - kept;
  m->nrows = kept;
}

/* Leave out of C the system headers' files (as merge_hide_system judges
   M's bodies, and code of headers in the system include directories
   inlined into other functions).  */
static void
cov_hide_system (const struct merge *m, struct cov_result *c)
{
  struct tally_fileset *sys = tally_fileset_new ();
  struct tally_fileset *user = tally_fileset_new ();
  for (size_t i = 0; i < m->nbodies; i++)
    {
      const struct body *b = &m->bodies[i];
      tally_fileset_add (body_system (b) ? sys : user, b->directory, b->file);
    }
  tally_cov_drop_system (c, sys, user);
  tally_fileset_free (sys);
  tally_fileset_free (user);
}

/* Notes on stderr about counts the report could not take as they are.  */
static void
merge_notes (const struct merge *m)
{
  if (m->negative)
    fprintf (stderr, "tally: warning: %" PRIu64 " block or edge %s came out "
             "negative and %s shown as 0 (update=single counts from several "
             "threads race, or a dump read them while other threads were "
             "counting; use update=atomic or tls)\n", m->negative,
             plural (m->negative, "count", "counts"),
             plural (m->negative, "is", "are"));
  if (m->inconsistent)
    fprintf (stderr, "tally: warning: %" PRIu64 " block or edge %s of "
             "update=atomic or tls code came out negative and %s shown as 0 "
             "(the counts are not those of one moment: a dump read them while "
             "other threads were counting, or the file was altered)\n",
             m->inconsistent, plural (m->inconsistent, "count", "counts"),
             plural (m->inconsistent, "is", "are"));
  if (m->underived)
    fprintf (stderr, "tally: warning: the entries of %zu %s cannot be derived "
             "from %s block counts (an older plugin's placement=block left "
             "some edges undetermined); %s 0\n", m->underived,
             m->underived == 1 ? "function" : "functions",
             m->underived == 1 ? "its" : "their",
             m->underived == 1 ? "it shows" : "they show");
}

/* Sort order for compare_rows: qsort takes no context argument.  */
static enum sort_key sort_key;

static int
compare_u64_desc (uint64_t a, uint64_t b)
{
  return a > b ? -1 : a < b;
}

static int
compare_rows (const void *pa, const void *pb)
{
  const struct row *a = *(const struct row *const *) pa;
  const struct row *b = *(const struct row *const *) pb;
  int c = 0;
  if (sort_key == SORT_CALLS)
    c = compare_u64_desc (a->calls, b->calls);
  else if (sort_key == SORT_EXITS)
    c = compare_u64_desc (a->exits, b->exits);
  else if (sort_key == SORT_INCL)
    c = compare_u64_desc (a->incl, b->incl);
  else if (sort_key == SORT_EXCL)
    c = compare_u64_desc (a->excl, b->excl);
  /* Then by name, file and line, and by symbol so that the order is total
     and the output the same on every run.  */
  if (!c)
    c = strcmp (a->name, b->name);
  if (!c)
    c = strcmp (a->file, b->file);
  if (!c)
    c = (a->line > b->line) - (a->line < b->line);
  if (!c)
    c = strcmp (a->symbol, b->symbol);
  return c;
}

static int
count_digits (uint64_t v)
{
  int n = 1;
  while (v >= 10)
    v /= 10, n++;
  return n;
}

static void
print_text (const struct merge *m, struct row **rows, size_t n)
{
  printf ("%zu %s, %" PRIu64 " %s, %zu %s, %" PRIu64 " %s", m->nfiles,
          plural (m->nfiles, "file", "files"), m->nmodules,
          plural (m->nmodules, "module", "modules"), m->nrows,
          plural (m->nrows, "function", "functions"), m->calls,
          plural (m->calls, "call", "calls"));
  if (m->hidden)
    printf (" (%zu never-called system-header %s hidden; --all shows %s)",
            m->hidden, plural (m->hidden, "function", "functions"),
            plural (m->hidden, "it", "them"));
  putchar ('\n');

  int wcalls = 5, wexits = 5;
  size_t wname = strlen ("function");
  for (size_t i = 0; i < n; i++)
    {
      if (count_digits (rows[i]->calls) > wcalls)
        wcalls = count_digits (rows[i]->calls);
      if (count_digits (rows[i]->exits) > wexits)
        wexits = count_digits (rows[i]->exits);
      size_t w = text_width (rows[i]->name);
      if (rows[i]->clone_body)
        w += 3 + text_width (rows[i]->symbol);
      if (w > wname)
        wname = w;
    }
  /* Past this, long C++ names only push their own location right.  */
  if (wname > 40)
    wname = 40;

  int wincl = 10, wexcl = 10;
  for (size_t i = 0; i < n && m->measured; i++)
    {
      if (count_digits (rows[i]->incl) > wincl)
        wincl = count_digits (rows[i]->incl);
      if (count_digits (rows[i]->excl) > wexcl)
        wexcl = count_digits (rows[i]->excl);
    }
  if (m->measured)
    printf ("%*s %*s %7s %*s %12s %12s ", wincl, "incl-cyc", wexcl,
            "excl-cyc", "excl%", wcalls, "calls", "incl/call", "excl/call");
  else
    printf ("%*s %8s ", wcalls, "calls", "%");
  int wev[TALLY_MAX_MEAS];
  for (unsigned e = 0; e < m->nev; e++)
    {
      wev[e] = (int) strlen (m->ev_names[e]) + 5;
      for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 2; k++)
          if (count_digits (rows[i]->ev[e][k]) > wev[e])
            wev[e] = count_digits (rows[i]->ev[e][k]);
      printf ("%*s-incl %*s-excl ", wev[e] - 5, m->ev_names[e], wev[e] - 5,
              m->ev_names[e]);
    }
  printf ("%*s  %-*s  %s\n", wexits, "exits", (int) wname, "function",
          "location");
  for (size_t i = 0; i < n; i++)
    {
      const struct row *r = rows[i];
      double pct = m->calls ? 100.0 * (double) r->calls / (double) m->calls
                            : 0.0;
      if (m->measured)
        {
          double epct = m->excl ? 100.0 * (double) r->excl / (double) m->excl
                                : 0.0;
          double ipc = r->calls ? (double) r->incl / (double) r->calls : 0.0;
          double epc = r->calls ? (double) r->excl / (double) r->calls : 0.0;
          printf ("%*" PRIu64 " %*" PRIu64 " %6.2f%% %*" PRIu64
                  " %12.1f %12.1f ", wincl, r->incl, wexcl, r->excl, epct,
                  wcalls, r->calls, ipc, epc);
        }
      else
        printf ("%*" PRIu64 " %7.2f%% ", wcalls, r->calls, pct);
      for (unsigned e = 0; e < m->nev; e++)
        printf ("%*" PRIu64 " %*" PRIu64 " ", wev[e], r->ev[e][0], wev[e],
                r->ev[e][1]);
      printf ("%*" PRIu64 "  ", wexits, r->exits);
      size_t w = put_text (r->name);
      if (r->clone_body)
        {
          fputs (" [", stdout);
          w += 3 + put_text (r->symbol);
          putchar (']');
        }
      printf ("%*s  ", (int) (w < wname ? wname - w : 0), "");
      put_text (r->file);
      if (r->line)
        printf (":%lu", (unsigned long) r->line);
      if (r->nclones)
        {
          fputs ("  (clones: ", stdout);
          for (size_t k = 0; k < r->nclones; k++)
            {
              if (k)
                fputs (", ", stdout);
              put_text (r->clones[k]);
            }
          putchar (')');
        }
      putchar ('\n');
    }
}

/* Name of a map kind, as the placement option spells it.  */
static const char *
kind_name (uint32_t kind)
{
  return kind == TALLY_MAP_TREE ? "tree"
         : kind == TALLY_MAP_BLOCK ? "block" : "visited";
}

/* Write block count C of body B: yes/no for visited blocks, ? if
   undetermined.  Returns the text width.  */
static void
put_block_count (const struct body *b, uint32_t blk, int width)
{
  if (!b->flow.block_known[blk])
    printf ("%*s", width, "?");
  else if (b->bm.kind == TALLY_MAP_VISITED)
    printf ("%*s", width, b->flow.block[blk] ? "yes" : "no");
  else
    printf ("%*" PRIu64, width, b->flow.block[blk]);
}

/* --blocks as text: per body, its blocks with their lines and counts.  */
static void
print_blocks_text (const struct merge *m, struct row **rows, size_t n)
{
  int first = 1;
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < rows[i]->nbodies; k++)
      {
        const struct body *b = &m->bodies[rows[i]->bodies[k]];
        if (!b->solved)
          continue;
        if (!first)
          putchar ('\n');
        first = 0;
        put_text (b->name);
        if (is_clone (b))
          {
            fputs (" [", stdout);
            put_text (b->symbol);
            putchar (']');
          }
        fputs ("  ", stdout);
        put_text (b->file);
        printf (":%lu  (%s, %lu blocks, %s", (unsigned long) b->line,
                kind_name (b->bm.kind), (unsigned long) b->bm.nblocks - 2,
                b->calls_unknown ? "entries undetermined" : "entries ");
        if (!b->calls_unknown)
          printf ("%" PRIu64, b->calls);
        puts (")");
        int w = 5;
        for (uint32_t blk = 2; blk < b->bm.nblocks; blk++)
          if (count_digits (b->flow.block[blk]) > w)
            w = count_digits (b->flow.block[blk]);
        printf ("  block %*s  lines\n", w, "count");
        for (uint32_t blk = 2; blk < b->bm.nblocks; blk++)
          {
            const struct tally_map_block *mb = &b->bm.blocks[blk];
            printf ("  %5lu ", (unsigned long) blk);
            put_block_count (b, blk, w);
            fputs ("  ", stdout);
            for (uint32_t l = 0; l < mb->nlocs; l++)
              {
                int new_file = l == 0 || mb->locs[l].file != mb->locs[l - 1].file;
                if (new_file)
                  {
                    if (l)
                      putchar (' ');
                    put_text (b->bm.files[mb->locs[l].file]);
                    putchar (':');
                  }
                else
                  putchar (',');
                printf ("%lu", (unsigned long) mb->locs[l].line);
              }
            putchar ('\n');
          }
      }
}

/* The sources of C that ARG names: the same absolute path, or a path
   ending in "/ARG".  Sets MATCH[i] for each; returns how many.  */
static size_t
match_sources (const struct cov_result *c, const char *arg,
               unsigned char *match)
{
  char cwd[4096];
  char *abs = cov_resolve_path (getcwd (cwd, sizeof cwd) ? cwd : "", arg);
  size_t n = 0, na = strlen (arg);
  for (size_t i = 0; i < c->nfiles; i++)
    {
      const char *p = c->files[i].path;
      size_t np = strlen (p);
      int hit = strcmp (p, abs) == 0
                || (np > na && p[np - na - 1] == '/'
                    && strcmp (p + np - na, arg) == 0);
      if (hit && !match[i])
        {
          match[i] = 1;
          n++;
        }
    }
  free (abs);
  return n;
}

/* Select the sources named by --lines; reports a name that matches none.
   Returns 0 or EXIT_BAD_DATA.  */
static int
select_sources (const struct cov_result *c, const struct report_opts *o,
                unsigned char *match)
{
  for (size_t i = 0; i < o->nlines; i++)
    if (!match_sources (c, o->lines[i], match))
      {
        size_t any = 0;
        for (size_t k = 0; k < c->nfiles; k++)
          any += !match[k];
        error_msg ("report: no line counts for '%s' in the data (%s%s)",
                   o->lines[i],
                   c->nfiles ? "sources with block counts: " : "no module was "
                   "built with -fplugin-arg-tally-blocks=count or visited",
                   c->nfiles ? "" : "");
        if (c->nfiles)
          for (size_t k = 0; k < c->nfiles && k < 20; k++)
            fprintf (stderr, "  %s\n", c->files[k].path);
        (void) any;
        return EXIT_BAD_DATA;
      }
  return 0;
}

/* Annotated source of F, as gcov -t prints it: count, '#####' for lines
   that never ran, '-' for lines without code, '?' for undetermined.  */
static int
print_source (const struct cov_file *f)
{
  FILE *in = fopen (f->path, "r");
  if (!in)
    {
      error_msg ("report: cannot read the source %s: %s (line counts need "
                 "the source file at the path it was compiled from)",
                 f->path, strerror (errno));
      return EXIT_BAD_DATA;
    }
  printf ("%9s:%5u:Source:", "-", 0u);
  put_text (f->path);
  putchar ('\n');
  char *buf = NULL;
  size_t cap = 0, li = 0;
  uint32_t lineno = 0;
  ssize_t len;
  for (;;)
    {
      len = getline (&buf, &cap, in);
      if (len < 0 && li >= f->nlines)
        break;
      lineno++;
      while (li < f->nlines && f->lines[li].line < lineno)
        li++;
      char count[32] = "-";
      if (li < f->nlines && f->lines[li].line == lineno)
        {
          const struct cov_line *l = &f->lines[li];
          if (!l->known)
            strcpy (count, "?");
          else if (l->count == 0)
            strcpy (count, "#####");
          else
            snprintf (count, sizeof count, "%" PRIu64, l->count);
        }
      printf ("%9s:%5lu:", count, (unsigned long) lineno);
      if (len < 0)
        fputs ("/*EOF*/", stdout);
      else
        {
          if (len && buf[len - 1] == '\n')
            buf[--len] = 0;
          put_text (buf);
        }
      putchar ('\n');
    }
  free (buf);
  fclose (in);
  return 0;
}

static void
put_json_lines (const struct cov_file *f)
{
  fputs ("{\"path\": ", stdout);
  put_json (f->path);
  fputs (", \"lines\": [", stdout);
  for (size_t i = 0; i < f->nlines; i++)
    {
      const struct cov_line *l = &f->lines[i];
      printf ("%s{\"line\": %lu, \"count\": ", i ? ", " : "",
              (unsigned long) l->line);
      if (l->known)
        printf ("%" PRIu64, l->count);
      else
        fputs ("null", stdout);
      printf (", \"unexecuted_block\": %s}", l->zero_block ? "true" : "false");
    }
  fputs ("], \"branches\": [", stdout);
  for (size_t i = 0; i < f->nbranches; i++)
    {
      const struct cov_branch *b = &f->branches[i];
      printf ("%s{\"line\": %lu, \"block\": %lu, \"branch\": %lu, \"taken\": "
              "%" PRIu64 ", \"block_ran\": %s}", i ? ", " : "",
              (unsigned long) b->line, (unsigned long) b->block,
              (unsigned long) b->branch, b->taken, b->ran ? "true" : "false");
    }
  fputs ("]}", stdout);
}

/* The "blocks" member of a JSON row: every body's blocks and edges.  */
static void
put_json_blocks (const struct merge *m, const struct row *r)
{
  fputs (", \"blocks\": [", stdout);
  int first = 1;
  for (size_t k = 0; k < r->nbodies; k++)
    {
      const struct body *b = &m->bodies[r->bodies[k]];
      if (!b->solved)
        continue;
      fputs (first ? "{\"symbol\": " : ", {\"symbol\": ", stdout);
      first = 0;
      put_json (b->symbol);
      printf (", \"placement\": \"%s\", \"entries_derived\": %s, \"blocks\": [",
              kind_name (b->bm.kind),
              (b->flags & TALLY_FN_CALLS_DERIVED) ? "true" : "false");
      for (uint32_t blk = 2; blk < b->bm.nblocks; blk++)
        {
          const struct tally_map_block *mb = &b->bm.blocks[blk];
          printf ("%s{\"block\": %lu, \"count\": ", blk > 2 ? ", " : "",
                  (unsigned long) blk);
          if (b->flow.block_known[blk])
            printf ("%" PRIu64, b->flow.block[blk]);
          else
            fputs ("null", stdout);
          fputs (", \"locations\": [", stdout);
          for (uint32_t l = 0; l < mb->nlocs; l++)
            {
              fputs (l ? ", {\"file\": " : "{\"file\": ", stdout);
              put_json (b->bm.files[mb->locs[l].file]);
              printf (", \"line\": %lu}", (unsigned long) mb->locs[l].line);
            }
          fputs ("]}", stdout);
        }
      fputs ("], \"edges\": [", stdout);
      for (uint32_t e = 0; e < b->bm.nedges; e++)
        {
          const struct tally_map_edge *me = &b->bm.edges[e];
          printf ("%s{\"from\": %lu, \"to\": %lu, \"flags\": %lu, \"count\": ",
                  e ? ", " : "", (unsigned long) me->src,
                  (unsigned long) me->dst, (unsigned long) me->flags);
          if (b->flow.edge_known[e])
            printf ("%" PRIu64 "}", b->flow.edge[e]);
          else
            fputs ("null}", stdout);
        }
      fputs ("]}", stdout);
    }
  putchar (']');
}

static void
print_json (const struct merge *m, struct row **rows, size_t n,
            const struct report_opts *o, const struct cov_result *c,
            const unsigned char *match)
{
  fputs ("{\n  \"files\": [", stdout);
  for (size_t i = 0; i < m->nfiles; i++)
    {
      const struct file_info *f = &m->files[i];
      fputs (i ? ",\n    {\"path\": " : "\n    {\"path\": ", stdout);
      put_json (f->path);
      fputs (", \"program\": ", stdout);
      put_json (f->program);
      printf (", \"pid\": %" PRIu64 ", \"time\": %" PRIu64
              ", \"modules\": %lu}", f->pid, f->time,
              (unsigned long) f->nmodules);
    }
  printf ("\n  ],\n  \"totals\": {\"files\": %zu, \"modules\": %" PRIu64
          ", \"functions\": %zu, \"calls\": %" PRIu64 ", \"exits\": %"
          PRIu64 ", \"hidden\": %zu},\n  \"functions\": [", m->nfiles,
          m->nmodules, m->nrows, m->calls, m->exits, m->hidden);
  for (size_t i = 0; i < n; i++)
    {
      const struct row *r = rows[i];
      fputs (i ? ",\n    {\"name\": " : "\n    {\"name\": ", stdout);
      put_json (r->name);
      fputs (", \"symbol\": ", stdout);
      put_json (r->symbol);
      fputs (", \"origin\": ", stdout);
      put_json (r->origin);
      fputs (", \"file\": ", stdout);
      put_json (r->file);
      printf (", \"line\": %lu, \"calls\": %" PRIu64 ", \"exits\": %" PRIu64,
              (unsigned long) r->line, r->calls, r->exits);
      if (m->measured)
        printf (", \"incl_cycles\": %" PRIu64 ", \"excl_cycles\": %" PRIu64,
                r->incl, r->excl);
      if (m->nev)
        {
          fputs (", \"events\": {", stdout);
          for (unsigned e = 0; e < m->nev; e++)
            {
              if (e)
                fputs (", ", stdout);
              put_json (m->ev_names[e]);
              printf (": [%" PRIu64 ", %" PRIu64 "]", r->ev[e][0], r->ev[e][1]);
            }
          putchar ('}');
        }
      fputs (", \"clones\": [", stdout);
      for (size_t k = 0; k < r->nclones; k++)
        {
          if (k)
            fputs (", ", stdout);
          put_json (r->clones[k]);
        }
      putchar (']');
      if (o->blocks)
        put_json_blocks (m, r);
      putchar ('}');
    }
  fputs (n ? "\n  ]" : "]", stdout);
  if (o->nlines)
    {
      fputs (",\n  \"sources\": [", stdout);
      int first = 1;
      for (size_t i = 0; i < c->nfiles; i++)
        if (match[i])
          {
            fputs (first ? "\n    " : ",\n    ", stdout);
            first = 0;
            put_json_lines (&c->files[i]);
          }
      fputs (first ? "]" : "\n  ]", stdout);
    }
  fputs ("\n}\n", stdout);
}

/* The bodies of M that have solved maps, for cov_compute; as in gcov, not
   those the compiler made (TALLY_FN_ARTIFICIAL).  */
static struct cov_body *
cov_bodies (const struct merge *m, size_t *n)
{
  struct cov_body *cb = xmalloc ((m->nbodies ? m->nbodies : 1) * sizeof *cb);
  *n = 0;
  for (size_t i = 0; i < m->nbodies; i++)
    if (m->bodies[i].solved && !(m->bodies[i].flags & TALLY_FN_ARTIFICIAL))
      {
        cb[*n].map = &m->bodies[i].bm;
        cb[*n].flow = &m->bodies[i].flow;
        cb[*n].directory = m->bodies[i].directory;
        cb[*n].fn_file = m->bodies[i].file;
        cb[*n].fn_line = m->bodies[i].line;
        (*n)++;
      }
  return cb;
}

static void
print_csv (struct row **rows, size_t n)
{
  fputs ("calls,exits,function,symbol,origin,file,line\n", stdout);
  for (size_t i = 0; i < n; i++)
    {
      const struct row *r = rows[i];
      printf ("%" PRIu64 ",%" PRIu64 ",", r->calls, r->exits);
      put_csv (r->name);
      putchar (',');
      put_csv (r->symbol);
      putchar (',');
      put_csv (r->origin);
      putchar (',');
      put_csv (r->file);
      printf (",%lu\n", (unsigned long) r->line);
    }
}

/* Parse the argument of --top.  */
static int
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
static int
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

/* What a command-line word of a subcommand is.  */
enum arg_kind
{
  ARG_FILE,   /* a file name (also anything after "--", and a lone "-") */
  ARG_HELP,   /* -h or --help */
  ARG_OPTION, /* anything else starting with '-': the caller's to parse */
  ARG_DONE    /* "--", consumed */
};

/* Classify A; *ONLY_FILES becomes set after "--".  */
static enum arg_kind
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
static enum arg_kind
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

/* Read FILES into one calling-context tree and print it (OUT NULL), or
   write its flame graph or collapsed stacks to OUT ("-": standard
   output).  */
static int
tree_command (const char *what, const char **files, size_t nfiles,
              const char *out, int folded, const char *event, int force,
              int all)
{
  struct tally_tree *t = tally_tree_new (event);
  tally_tree_show_frames (t, all);
  struct tally_builds *builds = tally_builds_new ();
  int bad = 0;
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
      if (!d.npaths)
        {
          error_msg ("%s: %s: no call paths in this file (build the program "
                     "with -fplugin-arg-tally-paths=on)", what, files[i]);
          bad = 1;
        }
      else if (d.path_lost)
        fprintf (stderr, "tally: note: %s: %" PRIu64 " calls on paths that "
                 "did not fit in the program's tree (TALLY_PATH_NODES) are "
                 "not in it\n", files[i], d.path_lost);
      if (!bad && tally_tree_add (t, &d) != 0)
        {
          error_msg ("%s: %s: no call-path values of event %s in this file "
                     "(build with -fplugin-arg-tally-measure=papi and "
                     "-fplugin-arg-tally-paths=on, and name the event in "
                     "TALLY_PAPI_EVENTS)", what, files[i], event);
          bad = 1;
        }
      tally_data_free (&d);
    }
  if (!bad && tally_builds_check (builds, what, force) != 0)
    bad = 1;
  tally_builds_free (builds);
  if (bad)
    {
      tally_tree_free (t);
      return EXIT_BAD_DATA;
    }
  int rc = 0;
  if (!out)
    tally_tree_print (t, stdout);
  else
    {
      struct tally_out o = { stdout, NULL, NULL };
      char err[512];
      if (strcmp (out, "-") != 0
          && tally_out_open (&o, out, err, sizeof err) != 0)
        {
          error_msg ("%s: %s", what, err);
          tally_tree_free (t);
          return EXIT_BAD_DATA;
        }
      if (folded)
        tally_tree_folded (t, o.f);
      else
        tally_tree_svg (t, o.f, nfiles == 1 ? files[0] : "tally flame");
      if (o.f != stdout && tally_out_close (&o, err, sizeof err) != 0)
        {
          error_msg ("%s: %s", what, err);
          rc = EXIT_BAD_DATA;
        }
    }
  tally_tree_free (t);
  return rc;
}

/* tally flame [--folded] [-o OUT] FILE...  */
static int
cmd_flame (int argc, char **argv)
{
  const char **files = xmalloc ((size_t) argc * sizeof *files);
  size_t nfiles = 0;
  const char *out = "-", *event = NULL;
  int folded = 0, only_files = 0, force = 0, all = 0, r;
  for (int i = 1; i < argc; i++)
    {
      const char *a = argv[i], *v;
      enum arg_kind kind = take_arg (a, &only_files, files, &nfiles);
      if (kind == ARG_HELP)
        {
          fputs (usage_text, stdout);
          free (files);
          return 0;
        }
      else if (kind != ARG_OPTION)
        ;
      else if (strcmp (a, "--folded") == 0)
        folded = 1;
      else if (strcmp (a, "--force") == 0)
        force = 1;
      else if (strcmp (a, "--all") == 0)
        all = 1;
      else if (strcmp (a, "-o") == 0 && i + 1 < argc)
        out = argv[++i];
      else if ((r = option_value (argc, argv, &i, "--output", &v)) != 0)
        {
          if (r < 0)
            goto usage;
          out = v;
        }
      else if ((r = option_value (argc, argv, &i, "--event", &v)) != 0)
        {
          if (r < 0)
            goto usage;
          event = v;
        }
      else
        {
          error_msg ("flame: unknown option '%s'; try 'tally --help'", a);
          goto usage;
        }
    }
  if (nfiles == 0)
    {
      error_msg ("flame: no data files given; try 'tally --help'");
      goto usage;
    }
  r = tree_command ("flame", files, nfiles, out, folded, event, force, all);
  free (files);
  return r;
usage:
  free (files);
  return EXIT_USAGE;
}

/* A filter-file word (plugin/filter.cc splits on blanks and fnmatch()es):
   S with the glob characters escaped.  Assembler names have no blanks.  */
static void
put_glob_literal (const char *s)
{
  for (; *s; s++)
    {
      if (strchr ("*?[]\\", *s))
        putchar ('\\');
      putchar (*s);
    }
}

/* tally select [--percent=P] [--filter] FILE...  */
static int
cmd_select (int argc, char **argv)
{
  const char **files = xmalloc ((size_t) argc * sizeof *files);
  size_t nfiles = 0;
  double percent = 80;
  const char *percent_arg = "80%";
  int filter = 0, only_files = 0, r;
  for (int i = 1; i < argc; i++)
    {
      const char *a = argv[i], *v;
      enum arg_kind kind = take_arg (a, &only_files, files, &nfiles);
      if (kind == ARG_HELP)
        {
          fputs (usage_text, stdout);
          free (files);
          return 0;
        }
      else if (kind != ARG_OPTION)
        ;
      else if (strcmp (a, "--filter") == 0)
        filter = 1;
      else if ((r = option_value (argc, argv, &i, "--percent", &v)) != 0)
        {
          if (r < 0)
            goto usage;
          if (tally_parse_percent (v, &percent) != 0)
            {
              error_msg ("select: bad value '%s' for --percent: give a "
                         "number above 0 and at most 100, like 80 or 99.5%%",
                         v);
              goto usage;
            }
          percent_arg = v;
        }
      else
        {
          error_msg ("select: unknown option '%s'; try 'tally --help'", a);
          goto usage;
        }
    }
  if (nfiles == 0)
    {
      error_msg ("select: no data files given; try 'tally --help'");
      goto usage;
    }
  struct tally_selection sel;
  char err[512];
  if (tally_select (files, nfiles, percent, &sel, err, sizeof err) != 0)
    {
      error_msg ("select: %s", err);
      free (files);
      return EXIT_BAD_DATA;
    }
  double got = 100.0 * (double) sel.selected / (double) sel.total;
  if (filter)
    {
      printf ("# tally select --percent=%s: %zu of %zu functions, %.2f%% of "
              "the measured time\n# (-fplugin-arg-tally-filter=THIS_FILE; a "
              "static function of the same name\n# in another file is "
              "included too: select=PROFILE tells them apart)\n",
              percent_arg, sel.nselected, sel.nfns, got);
      for (size_t i = 0; i < sel.nselected; i++)
        {
          fputs ("include function ", stdout);
          put_glob_literal (sel.fns[i].origin);
          putchar ('\n');
        }
    }
  else
    {
      printf ("%zu of %zu %s make up %.2f%% of %" PRIu64 " cycles "
              "(asked: %g%%)\n", sel.nselected, sel.nfns,
              plural (sel.nfns, "function", "functions"), got, sel.total,
              percent);
      int wexcl = 8;
      size_t wname = strlen ("function");
      for (size_t i = 0; i < sel.nselected; i++)
        {
          if (count_digits (sel.fns[i].excl) > wexcl)
            wexcl = count_digits (sel.fns[i].excl);
          if (text_width (sel.fns[i].name) > wname)
            wname = text_width (sel.fns[i].name);
        }
      if (wname > 40)
        wname = 40;
      printf ("%*s %7s %7s  %-*s  %s\n", wexcl, "excl-cyc", "share", "cumul",
              (int) wname, "function", "location");
      uint64_t cum = 0;
      for (size_t i = 0; i < sel.nselected; i++)
        {
          const struct tally_selected *f = &sel.fns[i];
          cum += f->excl;
          printf ("%*" PRIu64 " %6.2f%% %6.2f%%  ", wexcl, f->excl,
                  100.0 * (double) f->excl / (double) sel.total,
                  100.0 * (double) cum / (double) sel.total);
          size_t w = put_text (f->name);
          printf ("%*s  ", (int) (w < wname ? wname - w : 0), "");
          put_text (f->file);
          if (f->line)
            printf (":%lu", (unsigned long) f->line);
          putchar ('\n');
        }
    }
  tally_selection_free (&sel);
  free (files);
  return 0;
usage:
  free (files);
  return EXIT_USAGE;
}

static int
cmd_report (int argc, char **argv)
{
  /* --ranks and --rank N: tools/ranks.c.  */
  if (tally_ranks_wanted (argc, argv))
    return tally_ranks_report (argc, argv);
  int rank_status;
  char **ranked = tally_ranks_select (argc, argv, &argc, &rank_status);
  if (rank_status)
    return rank_status;
  if (ranked)
    argv = ranked; /* ranks.c frees it at exit */
  struct report_opts opts = { SORT_CALLS, FORMAT_TEXT, 0, 0, 0, NULL, 0 };
  const char **paths = xmalloc ((size_t) argc * sizeof *paths);
  opts.lines = xmalloc ((size_t) argc * sizeof *opts.lines);
  size_t npaths = 0;
  int json = 0, csv = 0, tree = 0, only_files = 0, force = 0, all = 0;
  const char *event = NULL;
  for (int i = 1; i < argc; i++)
    {
      const char *a = argv[i], *v;
      int r;
      enum arg_kind kind = take_arg (a, &only_files, paths, &npaths);
      if (kind == ARG_HELP)
        {
          fputs (usage_text, stdout);
          free (paths);
          free (opts.lines);
          return 0;
        }
      else if (kind != ARG_OPTION)
        ;
      else if (strcmp (a, "--json") == 0)
        json = 1;
      else if (strcmp (a, "--csv") == 0)
        csv = 1;
      else if (strcmp (a, "--clones") == 0)
        opts.clones = 1;
      else if (strcmp (a, "--tree") == 0)
        tree = 1;
      else if (strcmp (a, "--force") == 0)
        force = 1;
      else if (strcmp (a, "--all") == 0)
        all = 1;
      else if (strcmp (a, "--blocks") == 0)
        opts.blocks = 1;
      else if ((r = option_value (argc, argv, &i, "--lines", &v)) != 0)
        {
          if (r < 0)
            goto usage;
          if (!*v)
            {
              error_msg ("report: --lines needs a source file name; try "
                         "'tally --help'");
              goto usage;
            }
          opts.lines[opts.nlines++] = v;
        }
      else if ((r = option_value (argc, argv, &i, "--sort", &v)) != 0)
        {
          if (r < 0)
            goto usage;
          if (strcmp (v, "calls") == 0)
            opts.sort = SORT_CALLS;
          else if (strcmp (v, "exits") == 0)
            opts.sort = SORT_EXITS;
          else if (strcmp (v, "name") == 0)
            opts.sort = SORT_NAME;
          else if (strcmp (v, "incl") == 0)
            opts.sort = SORT_INCL;
          else if (strcmp (v, "excl") == 0)
            opts.sort = SORT_EXCL;
          else
            {
              error_msg ("report: unknown sort key '%s' (use calls, exits, "
                     "name, incl or excl); try 'tally --help'", v);
              goto usage;
            }
        }
      else if ((r = option_value (argc, argv, &i, "--event", &v)) != 0)
        {
          if (r < 0)
            goto usage;
          event = v;
        }
      else if ((r = option_value (argc, argv, &i, "--top", &v)) != 0)
        {
          if (r < 0)
            goto usage;
          if (parse_count (v, &opts.top) != 0)
            {
              error_msg ("report: --top needs a positive whole number, not '%s'; "
                     "try 'tally --help'", v);
              goto usage;
            }
        }
      else
        {
          error_msg ("report: unknown option '%s'; try 'tally --help'", a);
          goto usage;
        }
    }
  if (json && csv)
    {
      error_msg ("report: --json and --csv cannot be used together; try 'tally "
             "--help'");
      goto usage;
    }
  if (event && !tree)
    {
      error_msg ("report: --event shows a PAPI event in the call tree; it "
                 "needs --tree; try 'tally --help'");
      goto usage;
    }
  if (tree && (json || csv))
    {
      error_msg ("report: --tree prints text only; it cannot be used with "
                 "--json or --csv; try 'tally --help'");
      goto usage;
    }
  if (csv && (opts.blocks || opts.nlines))
    {
      error_msg ("report: --csv cannot be used with --blocks or --lines; try "
                 "'tally --help'");
      goto usage;
    }
  opts.format = json ? FORMAT_JSON : csv ? FORMAT_CSV : FORMAT_TEXT;
  if (npaths == 0)
    {
      error_msg ("report: no data files given; try 'tally --help'");
      goto usage;
    }
  if (tree)
    {
      int rc = tree_command ("report --tree", paths, npaths, NULL, 0, event,
                             force, all);
      free (paths);
      free (opts.lines);
      return rc;
    }

  struct merge m;
  memset (&m, 0, sizeof m);
  m.what = "report";
  m.force = force;
  if (merge_paths (&m, paths, npaths, opts.clones) != 0)
    {
      merge_free (&m);
      free (paths);
      free (opts.lines);
      return EXIT_BAD_DATA;
    }
  if (!all)
    merge_hide_system (&m, 0);

  struct row **order = xmalloc ((m.nrows ? m.nrows : 1) * sizeof *order);
  for (size_t i = 0; i < m.nrows; i++)
    order[i] = &m.rows[i];
  sort_key = opts.sort;
  qsort (order, m.nrows, sizeof *order, compare_rows);
  for (size_t i = 0; i < m.nrows; i++)
    if (order[i]->nclones > 1)
      qsort (order[i]->clones, order[i]->nclones, sizeof (char *),
             compare_strings);
  size_t shown = opts.top && opts.top < m.nrows ? opts.top : m.nrows;

  struct cov_result cov;
  unsigned char *match = NULL;
  int status = 0;
  memset (&cov, 0, sizeof cov);
  if (opts.nlines)
    {
      size_t nb;
      struct cov_body *cb = cov_bodies (&m, &nb);
      cov_compute (cb, nb, &cov);
      free (cb);
      match = xmalloc (cov.nfiles + 1);
      memset (match, 0, cov.nfiles + 1);
      status = select_sources (&cov, &opts, match);
    }
  if (status)
    ;
  else if (opts.format == FORMAT_JSON)
    print_json (&m, order, shown, &opts, &cov, match);
  else if (opts.format == FORMAT_CSV)
    print_csv (order, shown);
  else if (opts.blocks || opts.nlines)
    {
      if (opts.blocks)
        print_blocks_text (&m, order, shown);
      for (size_t i = 0; i < cov.nfiles && !status; i++)
        if (match[i])
          {
            if (opts.blocks || i)
              putchar ('\n');
            status = print_source (&cov.files[i]);
          }
    }
  else
    print_text (&m, order, shown);
  if (m.user_modules)
    fprintf (stderr,
             "tally: note: %" PRIu64 " %s built with hooks=user: the user's "
             "hooks measured those functions, tally counted nothing there "
             "(their rows show 0)\n",
             m.user_modules, plural (m.user_modules, "module was", "modules were"));
  merge_notes (&m);
  free (match);
  cov_free (&cov);
  free (order);
  merge_free (&m);
  free (paths);
  free (opts.lines);
  return status;

usage:
  free (paths);
  free (opts.lines);
  return EXIT_USAGE;
}

/* tally lcov: an lcov tracefile (geninfo's format, read by lcov and
   genhtml): one record per source file with its functions (FN, FNDA),
   branches (BRDA) and lines (DA).  */

struct sf_fn
{
  const struct row *row;
  char *path; /* the row's file, resolved */
};

static int
compare_sf_fn (const void *pa, const void *pb)
{
  const struct sf_fn *a = pa, *b = pb;
  int c = strcmp (a->path, b->path);
  if (!c)
    c = (a->row->line > b->row->line) - (a->row->line < b->row->line);
  if (!c)
    c = strcmp (a->row->origin, b->row->origin);
  return c;
}

/* Whether a tracefile can hold S: lcov reads it line by line and has no
   escapes, so a line break in a name would start records of its own (a
   file named "x.c\nDA:1,99" adds a line count).  Every control character
   is refused.  */
static int
lcov_name_ok (const char *s)
{
  for (; *s; s++)
    if ((unsigned char) *s < 0x20 || *s == 0x7f)
      return 0;
  return 1;
}

/* Say on stderr that the WHAT named S is left out, S escaped as dump
   prints it.  */
static void
lcov_left_out (const char *what, const char *s)
{
  fflush (stdout);
  fprintf (stderr, "tally: lcov: %s \"", what);
  for (; *s; s++)
    {
      unsigned char ch = (unsigned char) *s;
      if (ch == '\n')
        fputs ("\\n", stderr);
      else if (ch == '"' || ch == '\\')
        fprintf (stderr, "\\%c", ch);
      else if (ch < 0x20 || ch == 0x7f)
        fprintf (stderr, "\\x%02x", ch);
      else
        fputc (ch, stderr);
    }
  fputs ("\" left out of the tracefile: lcov cannot hold a control "
         "character in a name\n", stderr);
}

/* Write the tracefile of M and C to OUT; with MARKERS, leave out what the
   source's LCOV_EXCL markers exclude, as lcov does (markers.h).  Returns
   the number of source files and functions left out because their names
   have control characters (lcov_name_ok).  */
static size_t
write_lcov (FILE *out, const struct merge *m, const struct cov_result *c,
            int markers)
{
  size_t left = 0;
  struct sf_fn *fns = xmalloc ((m->nrows ? m->nrows : 1) * sizeof *fns);
  size_t nfns = 0;
  for (size_t i = 0; i < m->nrows; i++)
    {
      /* Functions the compiler made are not listed, as in gcov.  */
      int artificial = m->rows[i].nbodies > 0;
      for (size_t k = 0; k < m->rows[i].nbodies; k++)
        artificial &= (m->bodies[m->rows[i].bodies[k]].flags
                       & TALLY_FN_ARTIFICIAL) != 0;
      if (artificial)
        continue;
      fns[nfns].row = &m->rows[i];
      fns[nfns].path = cov_resolve_path (m->rows[i].directory,
                                         m->rows[i].file);
      nfns++;
    }
  qsort (fns, nfns, sizeof *fns, compare_sf_fn);
  /* Walk the two sorted lists of files together.  */
  size_t fi = 0, ci = 0;
  while (fi < nfns || ci < c->nfiles)
    {
      const char *path;
      if (ci < c->nfiles
          && (fi >= nfns || strcmp (c->files[ci].path, fns[fi].path) <= 0))
        path = c->files[ci].path;
      else
        path = fns[fi].path;
      const struct cov_file *cf = ci < c->nfiles
                                  && strcmp (c->files[ci].path, path) == 0
                                  ? &c->files[ci++] : NULL;
      size_t f0 = fi;
      while (fi < nfns && strcmp (fns[fi].path, path) == 0)
        fi++;
      if (cf && !cf->nlines && f0 == fi)
        continue;
      if (!lcov_name_ok (path))
        {
          lcov_left_out ("source file", path);
          left++;
          continue;
        }
      struct tally_markers mk;
      memset (&mk, 0, sizeof mk);
      if (markers && tally_markers_read (path, &mk) != 0)
        error_msg ("lcov: warning: cannot read %s for LCOV_EXCL markers: %s",
                   path, strerror (errno));
      else if (mk.unterminated)
        error_msg ("lcov: warning: unterminated exclusion section in %s",
                   path);
      fprintf (out, "TN:\nSF:%s\n", path);
      size_t fnf = 0, fnh = 0;
      for (size_t k = f0; k < fi; k++)
        if (tally_markers_of (&mk, fns[k].row->line) & TALLY_EXCL_LINE)
          ;
        else if (lcov_name_ok (fns[k].row->origin))
          fprintf (out, "FN:%lu,%s\n", (unsigned long) fns[k].row->line,
                   fns[k].row->origin);
        else
          {
            lcov_left_out ("function", fns[k].row->origin);
            left++;
          }
      for (size_t k = f0; k < fi; k++)
        if (!(tally_markers_of (&mk, fns[k].row->line) & TALLY_EXCL_LINE)
            && lcov_name_ok (fns[k].row->origin))
          {
            fprintf (out, "FNDA:%" PRIu64 ",%s\n", fns[k].row->calls,
                     fns[k].row->origin);
            fnf++;
            fnh += fns[k].row->calls != 0;
          }
      fprintf (out, "FNF:%zu\nFNH:%zu\n", fnf, fnh);
      size_t brf = 0;
      if (cf)
        for (size_t k = 0; k < cf->nbranches; k++)
          brf += !tally_markers_of (&mk, cf->branches[k].line);
      if (brf)
        {
          size_t brh = 0;
          for (size_t k = 0; k < cf->nbranches; k++)
            {
              const struct cov_branch *b = &cf->branches[k];
              if (tally_markers_of (&mk, b->line))
                continue;
              fprintf (out, "BRDA:%lu,%lu,%lu,", (unsigned long) b->line,
                       (unsigned long) b->block, (unsigned long) b->branch);
              if (b->ran)
                fprintf (out, "%" PRIu64 "\n", b->taken);
              else
                fputs ("-\n", out);
              brh += b->taken != 0;
            }
          fprintf (out, "BRF:%zu\nBRH:%zu\n", brf, brh);
        }
      size_t lf = 0, lh = 0;
      if (cf)
        for (size_t k = 0; k < cf->nlines; k++)
          {
            const struct cov_line *l = &cf->lines[k];
            if (!l->known
                || (tally_markers_of (&mk, l->line) & TALLY_EXCL_LINE))
              continue;
            fprintf (out, "DA:%lu,%" PRIu64 "\n", (unsigned long) l->line,
                     l->count);
            lf++;
            lh += l->count != 0;
          }
      fprintf (out, "LF:%zu\nLH:%zu\nend_of_record\n", lf, lh);
      tally_markers_free (&mk);
    }
  for (size_t i = 0; i < nfns; i++)
    free (fns[i].path);
  free (fns);
  return left;
}

static int
cmd_lcov (int argc, char **argv)
{
  const char *out = NULL;
  int markers = 1;
  const char **paths = xmalloc ((size_t) argc * sizeof *paths);
  size_t npaths = 0;
  int only_files = 0, force = 0, all = 0;
  for (int i = 1; i < argc; i++)
    {
      const char *a = argv[i];
      enum arg_kind kind = take_arg (a, &only_files, paths, &npaths);
      if (kind == ARG_HELP)
        {
          fputs (usage_text, stdout);
          free (paths);
          return 0;
        }
      else if (kind != ARG_OPTION)
        ;
      else if (strcmp (a, "-o") == 0 || strcmp (a, "--output") == 0)
        {
          if (i + 1 >= argc)
            {
              error_msg ("lcov: option '%s' needs a value; try 'tally --help'",
                         a);
              goto usage;
            }
          out = argv[++i];
        }
      else if (strncmp (a, "--output=", 9) == 0)
        out = a + 9;
      else if (strcmp (a, "--no-markers") == 0)
        markers = 0;
      else if (strcmp (a, "--force") == 0)
        force = 1;
      else if (strcmp (a, "--all") == 0)
        all = 1;
      else
        {
          error_msg ("lcov: unknown option '%s'; try 'tally --help'", a);
          goto usage;
        }
    }
  if (out && !*out)
    {
      error_msg ("lcov: -o needs a file name; try 'tally --help'");
      goto usage;
    }
  if (npaths == 0)
    {
      error_msg ("lcov: no data files given; try 'tally --help'");
      goto usage;
    }
  struct merge m;
  memset (&m, 0, sizeof m);
  m.what = "lcov";
  m.force = force;
  int status = merge_paths (&m, paths, npaths, 0);
  if (!status)
    {
      size_t nb;
      struct cov_body *cb = cov_bodies (&m, &nb);
      struct cov_result cov;
      cov_compute (cb, nb, &cov);
      free (cb);
      if (!all)
        {
          cov_hide_system (&m, &cov);
          merge_hide_system (&m, 1);
        }
      size_t unknown = 0;
      for (size_t i = 0; i < cov.nfiles; i++)
        for (size_t k = 0; k < cov.files[i].nlines; k++)
          unknown += !cov.files[i].lines[k].known;
      size_t left = 0;
      if (!out)
        left = write_lcov (stdout, &m, &cov, markers);
      else
        {
          struct tally_out o;
          char err[512];
          if (tally_out_open (&o, out, err, sizeof err) != 0)
            {
              error_msg ("lcov: %s", err);
              status = EXIT_BAD_DATA;
            }
          else
            {
              left = write_lcov (o.f, &m, &cov, markers);
              if (tally_out_close (&o, err, sizeof err) != 0)
                {
                  error_msg ("lcov: %s", err);
                  status = EXIT_BAD_DATA;
                }
            }
        }
      if (unknown)
        fprintf (stderr, "tally: warning: %zu %s left out: %s count could "
                 "not be determined\n", unknown,
                 unknown == 1 ? "line" : "lines",
                 unknown == 1 ? "its" : "their");
      if (left && !status)
        status = EXIT_BAD_DATA; /* the tracefile lacks them: say so */
      merge_notes (&m);
      cov_free (&cov);
    }
  merge_free (&m);
  free (paths);
  return status;

usage:
  free (paths);
  return EXIT_USAGE;
}

/* The name dump gives one flag bit.  */
struct flag_name
{
  uint32_t bit;
  const char *name;
};

/* Write FLAGS in hex, then the names of its bits listed in NAMES and any
   unknown bits, e.g. "0x0000000a (hooks-call,at-late)".  */
static void
put_flags (uint32_t flags, const struct flag_name *names, size_t n)
{
  printf ("0x%08lx", (unsigned long) flags);
  if (!flags)
    return;
  const char *sep = " (";
  for (size_t i = 0; i < n; i++)
    if (flags & names[i].bit)
      {
        printf ("%s%s", sep, names[i].name);
        sep = ",";
        flags &= ~names[i].bit;
      }
  if (flags)
    printf ("%s0x%lx", sep, (unsigned long) flags);
  putchar (')');
}

/* Names of the header flags, for dump.  */
static const struct flag_name file_flags[] = {
  { TALLY_FILE_AT_EXIT, "at-exit" },
  { TALLY_FILE_CONTINUOUS, "continuous" },
  { TALLY_DATA_UNFINISHED, "unfinished" },
  { TALLY_DATA_CUT, "cut" },
};

/* Names of the module flags, for dump.  */
static const struct flag_name module_flags[] = {
  { TALLY_MOD_HOOKS_INLINE, "hooks-inline" },
  { TALLY_MOD_HOOKS_CALL, "hooks-call" },
  { TALLY_MOD_AT_EARLY, "at-early" },
  { TALLY_MOD_AT_LATE, "at-late" },
  { TALLY_MOD_UPDATE_ATOMIC, "update-atomic" },
  { TALLY_MOD_HOOKS_USER, "hooks-user" },
  { TALLY_MOD_MEASURE_CYCLES, "measure-cycles" },
  { TALLY_MOD_BLOCKS_COUNT, "blocks-count" },
  { TALLY_MOD_BLOCKS_VISITED, "blocks-visited" },
  { TALLY_MOD_UPDATE_TLS, "update-tls" },
  { TALLY_MOD_HOOKS_NONE, "hooks-none" },
  { TALLY_MOD_BLOCKS_TREE, "placement-tree" },
  { TALLY_MOD_COUNTERS_MAPPED, "counters-mapped" },
  { TALLY_MOD_PATHS, "paths-on" },
  { TALLY_MOD_MEASURE_PAPI, "measure-papi" },
  { TALLY_MOD_EXIT_FRAMES, "exit-frames" },
  { TALLY_MOD_SYSTEM_MARKED, "system-marked" },
};

/* Names of the function flags, for dump.  */
static const struct flag_name fn_flags[] = {
  { TALLY_FN_CLONE, "clone" },
  { TALLY_FN_CALLS_DERIVED, "calls-derived" },
  { TALLY_FN_SYSTEM, "system" },
  { TALLY_FN_ARTIFICIAL, "artificial" },
};

#define COUNT(a) (sizeof (a) / sizeof (a)[0])

/* The block map of F as stored: one line per block and per edge.  */
static void
dump_map (const struct tally_data_fn *f)
{
  struct tally_blockmap m;
  char err[256];
  if (tally_map_decode (f->map, f->map_size, f->ncounters, &m, err,
                        sizeof err) != 0)
    {
      printf ("    map %lu bytes: bad: ", (unsigned long) f->map_size);
      put_text (err);
      putchar ('\n');
      return;
    }
  printf ("    map %lu bytes kind=%s blocks=%lu edges=%lu files:",
          (unsigned long) f->map_size, kind_name (m.kind),
          (unsigned long) m.nblocks, (unsigned long) m.nedges);
  for (uint32_t i = 0; i < m.nfiles; i++)
    {
      putchar (' ');
      put_quoted (m.files[i]);
    }
  putchar ('\n');
  for (uint32_t b = 0; b < m.nblocks; b++)
    {
      const struct tally_map_block *mb = &m.blocks[b];
      printf ("    block %lu value=", (unsigned long) b);
      if (mb->value == TALLY_MAP_NONE)
        putchar ('-');
      else
        printf ("%lu", (unsigned long) mb->value);
      printf (" flags=0x%lx locations:", (unsigned long) mb->flags);
      for (uint32_t l = 0; l < mb->nlocs; l++)
        printf (" %lu:%lu", (unsigned long) mb->locs[l].file,
                (unsigned long) mb->locs[l].line);
      putchar ('\n');
    }
  for (uint32_t e = 0; e < m.nedges; e++)
    {
      const struct tally_map_edge *me = &m.edges[e];
      printf ("    edge %lu %lu->%lu flags=0x%lx value=", (unsigned long) e,
              (unsigned long) me->src, (unsigned long) me->dst,
              (unsigned long) me->flags);
      if (me->value == TALLY_MAP_NONE)
        puts ("-");
      else
        printf ("%lu\n", (unsigned long) me->value);
    }
  tally_map_free (&m);
}

static void
dump_data (const char *path, const struct tally_data *d)
{
  fputs ("file ", stdout);
  put_quoted (path);
  printf ("\nheader magic=%s version=%lu byte_order=0x%08lx size=%" PRIu64
          " pid=%" PRIu64 " time=%" PRIu64, TALLY_FILE_MAGIC,
          (unsigned long) d->version, (unsigned long) d->byte_order,
          d->file_size, d->pid, d->time);
  /* Up to the year 9999; anything later is not a real time stamp.  */
  if (d->time <= UINT64_C (253402300799))
    {
      time_t t = (time_t) d->time;
      struct tm *tm = gmtime (&t);
      char buf[32];
      if (tm && strftime (buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", tm))
        printf (" (%s)", buf);
    }
  printf (" modules=%lu flags=", (unsigned long) d->nmodules);
  put_flags (d->flags, file_flags, COUNT (file_flags));
  fputs ("\nprogram ", stdout);
  put_quoted (d->program);
  putchar ('\n');
  for (uint32_t i = 0; i < d->nmodules; i++)
    {
      const struct tally_data_module *mod = &d->modules[i];
      printf ("module %lu abi=%lu checksum=0x%016" PRIx64 " flags=",
              (unsigned long) i, (unsigned long) mod->abi_version,
              mod->checksum);
      put_flags (mod->flags, module_flags, COUNT (module_flags));
      printf (" functions=%lu source=", (unsigned long) mod->nfns);
      put_quoted (mod->source);
      fputs (" directory=", stdout);
      put_quoted (mod->directory);
      putchar ('\n');
      for (uint32_t j = 0; j < mod->nfns; j++)
        {
          const struct tally_data_fn *f = &mod->fns[j];
          printf ("  fn %lu name=", (unsigned long) j);
          put_quoted (f->name);
          fputs (" symbol=", stdout);
          put_quoted (f->symbol);
          fputs (" origin=", stdout);
          put_quoted (f->origin);
          fputs (" file=", stdout);
          put_quoted (f->file);
          printf (" line=%lu flags=", (unsigned long) f->line);
          put_flags (f->flags, fn_flags, COUNT (fn_flags));
          printf (" reserved=%lu counters=%lu:", (unsigned long) f->reserved,
                  (unsigned long) f->ncounters);
          for (uint32_t k = 0; k < f->ncounters; k++)
            printf (" %" PRIu64, f->counters[k]);
          putchar ('\n');
          if (f->map_size)
            dump_map (f);
        }
    }
  tally_dump_records (d, put_quoted);
  tally_ranks_dump (d); /* RNKS, ranks.c */
  /* A continuous file has no trailer: its chunks were checked one by one.  */
  if (d->flags & TALLY_FILE_CONTINUOUS)
    printf ("end (continuous file, no trailer) size=%" PRIu64 "\n", d->file_size);
  else
    printf ("trailer tag=0x%08lx crc=0x%08lx size=%" PRIu64 "\n",
            (unsigned long) TALLY_TAG_END, (unsigned long) d->crc,
            d->file_size);
}

static int
cmd_dump (int argc, char **argv)
{
  size_t npaths = 0;
  int only_files = 0, status = 0;
  for (int i = 1; i < argc; i++)
    {
      const char *a = argv[i];
      enum arg_kind kind = take_arg (a, &only_files, NULL, &npaths);
      if (kind == ARG_HELP)
        {
          fputs (usage_text, stdout);
          return 0;
        }
      else if (kind != ARG_OPTION)
        ;
      else
        {
          error_msg ("dump: unknown option '%s'; try 'tally --help'", a);
          return EXIT_USAGE;
        }
    }
  if (npaths == 0)
    {
      error_msg ("dump: no data file given; try 'tally --help'");
      return EXIT_USAGE;
    }
  only_files = 0;
  for (int i = 1; i < argc; i++)
    {
      const char *a = argv[i];
      /* The first pass refused every option, so only "--" is left.  */
      if (classify_arg (a, &only_files) != ARG_FILE)
        continue;
      struct tally_data d;
      char err[256];
      if (tally_read_file (a, &d, err, sizeof err) != 0)
        {
          error_msg ("%s: %s", a, err);
          status = EXIT_BAD_DATA;
          continue;
        }
      note_unfinished (a, &d);
      dump_data (a, &d);
      tally_data_free (&d);
    }
  return status;
}

/* tally merge: sum data files into one.
 *
 * The inputs are read one at a time and folded into an accumulator of
 * distinct module records, so memory is bounded by the output (the
 * distinct modules) plus the largest input, whatever the number of files.
 * Records pair as in the runtime's merge-on-write: a module sums with an
 * accumulated record of the same build (same ABI, compile checksum, flags,
 * source, and the same function symbols and counter counts in the same
 * order), each accumulated record taking at most one module per input
 * file; another build of the same source stays a record of its own.  With
 * --force, modules with the same source are merged whatever their
 * checksum (and within one input file too): functions pair by symbol and
 * a function only one build has is added.  The output is written to a new
 * temporary and renamed over OUT (output.c), so it may be one of the
 * inputs.
 *
 * The measured values (MEAS) of a function add up as its counts do; a file
 * without them adds zeros; files that measure other values (other PAPI
 * events) are refused, naming the first one that differs.  The outside
 * frames (FRMS) are the union of the inputs' (a frame is its name, or its
 * address if it has none), and the calling-context trees (PATH) are merged
 * by path: a node is the chain of (output record, function) or frame keys
 * from the root, found through a hash table, and its calls and cycles add
 * up.  Like the records, the tree and the frames are the output's size,
 * whatever the number of inputs.  */

struct acc_fn
{
  char *name, *symbol, *origin, *file;
  uint32_t line, flags, ncounters;
  uint64_t *counters;
  uint32_t map_size;
  unsigned char *map; /* block map, or NULL */
  uint64_t *meas;     /* accumulator.nmeas (inclusive, exclusive) pairs;
                         NULL while all are zero */
};

struct acc_module
{
  uint32_t abi_version, flags;
  uint64_t checksum;
  char *source, *directory;
  struct acc_fn *fns;
  size_t nfns, cap;
  size_t last_file; /* 1 + index of the input that last paired with it */
  int forced;       /* --force merged another build into it */
};

/* A function of a frame outside instrumented code (FRMS).  */
struct acc_frame
{
  uint64_t addr;
  char *name;
};

/* A node of the merged tree: parent node, and record and function (record
   UINT32_MAX: a frame, fn indexing the frames).  */
struct acc_node
{
  uint32_t parent, rec, fn;
  uint64_t calls, incl, excl;
};

struct accumulator
{
  struct acc_module *mods;
  size_t n, cap;
  uint32_t nmeas; /* values per function, 0 until an input has MEAS */
  char *meas_names[TALLY_MAX_MEAS];
  struct acc_frame *frames;
  size_t nframes, frames_cap;
  struct acc_node *nodes; /* [0] is the root */
  size_t nnodes, nodes_cap;
  uint32_t *slots; /* node indexes by hash of (parent, rec, fn); 0 empty */
  size_t nslots;
  uint64_t *node_ev; /* nodes x (nmeas - 1) event pairs (PEVT), when
                        nmeas > 1 */
  size_t node_ev_cap;
  int paths;       /* an input had a PATH record */
  uint32_t depth;  /* the largest depth limit */
  uint64_t lost;
};

static void
acc_fn_copy (struct acc_fn *to, const struct tally_data_fn *f)
{
  to->name = xstrdup (f->name);
  to->symbol = xstrdup (f->symbol);
  to->origin = xstrdup (f->origin);
  to->file = xstrdup (f->file);
  to->line = f->line;
  to->flags = f->flags;
  to->ncounters = f->ncounters;
  to->counters = xmalloc (f->ncounters * sizeof *to->counters);
  memcpy (to->counters, f->counters, f->ncounters * sizeof *to->counters);
  to->map_size = f->map_size;
  to->map = NULL;
  to->meas = NULL;
  if (f->map_size)
    {
      to->map = xmalloc (f->map_size);
      memcpy (to->map, f->map, f->map_size);
    }
}

/* Add the counters of F to T; a counter only one of them has is kept.  */
static void
acc_fn_add (struct acc_fn *t, const struct tally_data_fn *f)
{
  if (t->map_size != f->map_size
      || (t->map_size && memcmp (t->map, f->map, t->map_size) != 0))
    {
      /* Two builds (--force) with other blocks: their block values do
         not line up.  The entry and exit counts still add up.  */
      static int said;
      if (!said++)
        error_msg ("merge: %s: the builds merged have different basic "
                   "blocks; block counts dropped, call counts kept",
                   t->symbol);
      free (t->map);
      t->map = NULL;
      t->map_size = 0;
      t->flags &= ~TALLY_FN_CALLS_DERIVED;
      if (t->ncounters > TALLY_C_CORE)
        t->ncounters = TALLY_C_CORE;
      for (uint32_t k = 0; k < TALLY_C_CORE; k++)
        t->counters[k] = add_sat (t->counters[k], f->counters[k]);
      return;
    }
  if (f->ncounters > t->ncounters)
    {
      t->counters = realloc (t->counters, f->ncounters * sizeof *t->counters);
      if (!t->counters)
        {
          error_msg ("out of memory");
          exit (EXIT_BAD_DATA);
        }
      memset (t->counters + t->ncounters, 0,
              (f->ncounters - t->ncounters) * sizeof *t->counters);
      t->ncounters = f->ncounters;
    }
  for (uint32_t k = 0; k < f->ncounters; k++)
    t->counters[k] = add_sat (t->counters[k], f->counters[k]);
}

/* Whether M is the same build as A (see above).  */
static int
same_build (const struct acc_module *a, const struct tally_data_module *m)
{
  if (a->abi_version != m->abi_version || a->checksum != m->checksum
      || a->flags != m->flags || a->nfns != m->nfns
      || strcmp (a->source, m->source) != 0)
    return 0;
  for (uint32_t i = 0; i < m->nfns; i++)
    if (strcmp (a->fns[i].symbol, m->fns[i].symbol) != 0
        || a->fns[i].ncounters != m->fns[i].ncounters)
      return 0;
  return 1;
}

/* Add module M of input FILE to ACC; the record it went to is returned,
   and the index there of each of its functions put in FNMAP.  */
static size_t
acc_add_module (struct accumulator *acc, const struct tally_data_module *m,
                size_t file, int force, uint32_t *fnmap)
{
  struct acc_module *a = NULL;
  for (size_t i = 0; i < acc->n && !a; i++)
    if (acc->mods[i].last_file != file + 1 && same_build (&acc->mods[i], m))
      a = &acc->mods[i];
  for (uint32_t i = 0; i < m->nfns; i++)
    fnmap[i] = i;
  if (a)
    {
      for (uint32_t i = 0; i < m->nfns; i++)
        acc_fn_add (&a->fns[i], &m->fns[i]);
      a->last_file = file + 1;
      return (size_t) (a - acc->mods);
    }
  /* --force asks for one record per source, so records of one input file
     merge too.  */
  if (force)
    for (size_t i = 0; i < acc->n && !a; i++)
      if (acc->mods[i].abi_version == m->abi_version
          && strcmp (acc->mods[i].source, m->source) == 0)
        a = &acc->mods[i];
  if (a)
    {
      /* Functions pair by symbol; a quadratic search, but only over the
         functions of one unit.  */
      for (uint32_t i = 0; i < m->nfns; i++)
        {
          size_t j = 0;
          while (j < a->nfns && strcmp (a->fns[j].symbol, m->fns[i].symbol) != 0)
            j++;
          if (j < a->nfns)
            acc_fn_add (&a->fns[j], &m->fns[i]);
          else
            {
              a->fns = xgrow (a->fns, &a->cap, a->nfns + 1, sizeof *a->fns);
              acc_fn_copy (&a->fns[a->nfns++], &m->fns[i]);
            }
          fnmap[i] = (uint32_t) j;
        }
      a->last_file = file + 1;
      a->forced = 1;
      return (size_t) (a - acc->mods);
    }
  acc->mods = xgrow (acc->mods, &acc->cap, acc->n + 1, sizeof *acc->mods);
  a = &acc->mods[acc->n++];
  memset (a, 0, sizeof *a);
  a->abi_version = m->abi_version;
  a->flags = m->flags;
  a->checksum = m->checksum;
  a->source = xstrdup (m->source);
  a->directory = xstrdup (m->directory);
  a->fns = xgrow (NULL, &a->cap, m->nfns ? m->nfns : 1, sizeof *a->fns);
  for (uint32_t i = 0; i < m->nfns; i++)
    acc_fn_copy (&a->fns[a->nfns++], &m->fns[i]);
  a->last_file = file + 1;
  return acc->n - 1;
}

static void acc_node_events (struct accumulator *acc);

/* Whether the value names of D are those ACC has (in any order); VMAP[k]
   gets the accumulator's index of D's value k.  Sets ACC's names from the
   first input that has some.  */
static int
acc_meas_names (struct accumulator *acc, const struct tally_data *d,
                uint32_t *vmap, const char *path)
{
  if (!d->nmeas)
    return 0;
  if (!acc->nmeas)
    {
      acc->nmeas = d->nmeas;
      for (uint32_t k = 0; k < d->nmeas; k++)
        acc->meas_names[k] = xstrdup (d->meas_names[k]);
      acc_node_events (acc);
    }
  for (uint32_t k = 0; k < d->nmeas; k++)
    {
      vmap[k] = UINT32_MAX;
      for (uint32_t o = 0; o < acc->nmeas; o++)
        if (strcmp (acc->meas_names[o], d->meas_names[k]) == 0)
          vmap[k] = o;
      if (vmap[k] == UINT32_MAX)
        {
          error_msg ("merge: %s measures %s, the files before it do not; "
                     "merge files of each set of measurements apart",
                     path, d->meas_names[k]);
          return -1;
        }
    }
  if (d->nmeas != acc->nmeas)
    {
      for (uint32_t o = 0; o < acc->nmeas; o++)
        {
          uint32_t k = 0;
          while (k < d->nmeas && strcmp (acc->meas_names[o], d->meas_names[k]))
            k++;
          if (k == d->nmeas)
            {
              error_msg ("merge: %s does not measure %s, the files before "
                         "it do; merge files of each set of measurements "
                         "apart", path, acc->meas_names[o]);
              return -1;
            }
        }
    }
  return 0;
}

/* Add the measured values of function F (D's values, mapped by VMAP) to T.  */
static void
acc_meas_add (const struct accumulator *acc, struct acc_fn *t,
              const struct tally_data_fn *f, uint32_t nmeas,
              const uint32_t *vmap)
{
  if (!f->meas)
    return;
  if (!t->meas)
    {
      t->meas = xmalloc (2 * acc->nmeas * sizeof *t->meas);
      memset (t->meas, 0, 2 * acc->nmeas * sizeof *t->meas);
    }
  for (uint32_t k = 0; k < nmeas; k++)
    {
      t->meas[2 * vmap[k]] = add_sat (t->meas[2 * vmap[k]], f->meas[2 * k]);
      t->meas[2 * vmap[k] + 1] = add_sat (t->meas[2 * vmap[k] + 1],
                                          f->meas[2 * k + 1]);
    }
}

/* The frame of ACC that F is (same name, or same address if unnamed),
   added if new.  */
static uint32_t
acc_frame (struct accumulator *acc, const struct tally_data_frame *f)
{
  for (size_t i = 0; i < acc->nframes; i++)
    if (strcmp (acc->frames[i].name, f->name) == 0
        && (*f->name || acc->frames[i].addr == f->addr))
      return (uint32_t) i;
  acc->frames = xgrow (acc->frames, &acc->frames_cap, acc->nframes + 1,
                       sizeof *acc->frames);
  acc->frames[acc->nframes].addr = f->addr;
  acc->frames[acc->nframes].name = xstrdup (f->name);
  return (uint32_t) acc->nframes++;
}

static size_t
node_hash (uint32_t parent, uint32_t rec, uint32_t fn)
{
  uint64_t h = parent * 0x9e3779b97f4a7c15ull ^ rec * 0xc2b2ae3d27d4eb4full
               ^ fn * 0x165667b19e3779f9ull;
  return (size_t) (h ^ h >> 29);
}

/* Room for the events of the nodes so far (nmeas - 1 pairs each).  */
static void
acc_node_events (struct accumulator *acc)
{
  if (acc->nmeas < 2)
    return;
  size_t per = 2 * (size_t) (acc->nmeas - 1), old = acc->node_ev_cap;
  acc->node_ev = xgrow (acc->node_ev, &acc->node_ev_cap,
                        (acc->nnodes + 1) * per, sizeof *acc->node_ev);
  if (acc->node_ev_cap > old)
    memset (acc->node_ev + old, 0,
            (acc->node_ev_cap - old) * sizeof *acc->node_ev);
}

/* The child of node PARENT for (REC, FN), made if new.  */
static uint32_t
acc_node (struct accumulator *acc, uint32_t parent, uint32_t rec, uint32_t fn)
{
  if (2 * (acc->nnodes + 1) > acc->nslots)
    {
      size_t n = acc->nslots ? 2 * acc->nslots : 1024;
      free (acc->slots);
      acc->slots = xmalloc (n * sizeof *acc->slots);
      memset (acc->slots, 0, n * sizeof *acc->slots);
      acc->nslots = n;
      for (size_t i = 1; i < acc->nnodes; i++)
        {
          const struct acc_node *q = &acc->nodes[i];
          size_t h = node_hash (q->parent, q->rec, q->fn);
          while (acc->slots[h & (n - 1)])
            h++;
          acc->slots[h & (n - 1)] = (uint32_t) i;
        }
    }
  size_t h = node_hash (parent, rec, fn);
  for (;; h++)
    {
      uint32_t *s = &acc->slots[h & (acc->nslots - 1)];
      if (!*s)
        {
          if (acc->nnodes >= TALLY_FRAME_ID_BASE)
            {
              error_msg ("merge: too many call paths for one file");
              exit (EXIT_BAD_DATA);
            }
          acc->nodes = xgrow (acc->nodes, &acc->nodes_cap, acc->nnodes + 1,
                              sizeof *acc->nodes);
          acc->nodes[acc->nnodes] = (struct acc_node){ parent, rec, fn, 0, 0, 0 };
          *s = (uint32_t) acc->nnodes;
          acc_node_events (acc);
          return (uint32_t) acc->nnodes++;
        }
      const struct acc_node *q = &acc->nodes[*s];
      if (q->parent == parent && q->rec == rec && q->fn == fn)
        return *s;
    }
}

/* Add input file D (number FILE, at PATH) to ACC: its modules, measured
   values, frames and calls paths.  Returns 0, or EXIT_BAD_DATA (said) when
   its measurements cannot be merged with the earlier files'.  */
static int
acc_add_file (struct accumulator *acc, const struct tally_data *d,
              size_t file, int force, const char *path)
{
  uint32_t vmap[TALLY_MAX_MEAS];
  if (acc_meas_names (acc, d, vmap, path) != 0)
    return EXIT_BAD_DATA;
  size_t *recmap = xmalloc ((d->nmodules + 1) * sizeof *recmap);
  uint32_t **fnmap = xmalloc ((d->nmodules + 1) * sizeof *fnmap);
  for (uint32_t m = 0; m < d->nmodules; m++)
    {
      const struct tally_data_module *mod = &d->modules[m];
      fnmap[m] = xmalloc ((mod->nfns + 1) * sizeof **fnmap);
      recmap[m] = acc_add_module (acc, mod, file, force, fnmap[m]);
      for (uint32_t i = 0; i < mod->nfns; i++)
        acc_meas_add (acc, &acc->mods[recmap[m]].fns[fnmap[m][i]],
                      &mod->fns[i], d->nmeas, vmap);
    }
  if (d->npaths)
    {
      uint32_t *fmap = xmalloc ((d->nframes + 1) * sizeof *fmap);
      for (uint32_t f = 0; f < d->nframes; f++)
        fmap[f] = acc_frame (acc, &d->frames[f]);
      if (!acc->nnodes)
        {
          acc->nodes = xgrow (acc->nodes, &acc->nodes_cap, 1, sizeof *acc->nodes);
          acc->nodes[0] = (struct acc_node){ UINT32_MAX, UINT32_MAX, UINT32_MAX,
                                             0, 0, 0 };
          acc->nnodes = 1;
        }
      acc->paths = 1;
      if (d->path_depth > acc->depth)
        acc->depth = d->path_depth;
      acc->lost = add_sat (acc->lost, d->path_lost);
      uint32_t *map = xmalloc (d->npaths * sizeof *map);
      map[0] = 0;
      for (uint32_t i = 1; i < d->npaths; i++)
        {
          const struct tally_data_path *p = &d->paths[i];
          map[i] = map[p->parent]; /* the reader checked parent < i */
          if (p->module == UINT32_MAX)
            continue; /* a node the writer had not finished */
          uint32_t k;
          if (p->module == TALLY_DATA_FRAME)
            k = acc_node (acc, map[i], UINT32_MAX, fmap[p->fn]);
          else
            k = acc_node (acc, map[i], (uint32_t) recmap[p->module],
                          fnmap[p->module][p->fn]);
          struct acc_node *n = &acc->nodes[k];
          n->calls = add_sat (n->calls, p->calls);
          n->incl = add_sat (n->incl, p->incl);
          n->excl = add_sat (n->excl, p->excl);
          map[i] = k;
          /* Event e is value e + 1 of the MEAS names.  */
          for (uint32_t e = 0; e < d->path_nevents; e++)
            if (vmap[e + 1] > 0)
              {
                uint64_t *t = acc->node_ev
                              + ((size_t) k * (acc->nmeas - 1) + vmap[e + 1] - 1) * 2;
                const uint64_t *v = d->path_events
                                    + ((size_t) i * d->path_nevents + e) * 2;
                t[0] = add_sat (t[0], v[0]);
                t[1] = add_sat (t[1], v[1]);
              }
        }
      free (map);
      free (fmap);
    }
  for (uint32_t m = 0; m < d->nmodules; m++)
    free (fnmap[m]);
  free (fnmap);
  free (recmap);
  return 0;
}

/* A stream writer that keeps the CRC and the byte count.  */
struct out_writer
{
  FILE *f;
  uint32_t crc;
  uint64_t total;
};

static void
out_bytes (struct out_writer *w, const void *p, size_t n)
{
  w->crc = tally_crc32 (w->crc, p, n);
  w->total += n;
  fwrite (p, 1, n, w->f);
}

static void
out_u32 (struct out_writer *w, uint32_t v)
{
  unsigned char b[4] = { (unsigned char) v, (unsigned char) (v >> 8),
                         (unsigned char) (v >> 16), (unsigned char) (v >> 24) };
  out_bytes (w, b, 4);
}

static void
out_u64 (struct out_writer *w, uint64_t v)
{
  out_u32 (w, (uint32_t) v);
  out_u32 (w, (uint32_t) (v >> 32));
}

static void
out_str (struct out_writer *w, const char *s)
{
  size_t n = strlen (s);
  out_u32 (w, (uint32_t) n);
  out_bytes (w, s, n);
}

static uint64_t
str_bytes (const char *s)
{
  return 4 + strlen (s);
}

/* Write ACC to PATH (tools/output.c).  Returns 0 or EXIT_BAD_DATA. */
static int
write_merged (const char *path, const struct accumulator *acc,
              const char *program, uint32_t flags)
{
  uint64_t size = TALLY_HEADER_FIXED + str_bytes (program) + TALLY_TRAILER_SIZE;
  for (size_t i = 0; i < acc->n; i++)
    {
      const struct acc_module *a = &acc->mods[i];
      size += 24 + str_bytes (a->source) + str_bytes (a->directory);
      for (size_t j = 0; j < a->nfns; j++)
        size += str_bytes (a->fns[j].name) + str_bytes (a->fns[j].symbol)
                + str_bytes (a->fns[j].origin) + str_bytes (a->fns[j].file)
                + 16 + 8 * (uint64_t) a->fns[j].ncounters + 4
                + a->fns[j].map_size;
    }
  if (acc->n > UINT32_MAX)
    {
      error_msg ("merge: too many modules for one file");
      return EXIT_BAD_DATA;
    }
  uint64_t nfns_total = 0;
  for (size_t i = 0; i < acc->n; i++)
    nfns_total += acc->mods[i].nfns;
  if (acc->paths && nfns_total >= TALLY_FRAME_ID_BASE)
    {
      error_msg ("merge: too many functions for the call paths of one file");
      return EXIT_BAD_DATA;
    }
  if (acc->nmeas)
    {
      size += 12 + 4 * (uint64_t) acc->n
              + 16 * (uint64_t) acc->nmeas * nfns_total;
      for (uint32_t k = 0; k < acc->nmeas; k++)
        size += str_bytes (acc->meas_names[k]);
    }
  if (acc->paths && acc->nframes)
    {
      size += 8;
      for (size_t f = 0; f < acc->nframes; f++)
        size += 12 + str_bytes (acc->frames[f].name);
    }
  if (acc->paths)
    size += 24 + 4 * (uint64_t) acc->n + 32 * (uint64_t) (acc->nnodes - 1);
  if (acc->paths && acc->nmeas > 1)
    size += 12 + 16 * (uint64_t) (acc->nmeas - 1) * (acc->nnodes - 1);
  struct tally_out o;
  char err[512];
  if (tally_out_open (&o, path, err, sizeof err) != 0)
    {
      error_msg ("merge: %s", err);
      return EXIT_BAD_DATA;
    }
  struct out_writer w = { o.f, 0, 0 };
  out_bytes (&w, TALLY_FILE_MAGIC, TALLY_FILE_MAGIC_LEN);
  out_u32 (&w, TALLY_FILE_VERSION);
  out_u32 (&w, TALLY_BYTE_ORDER_MARK);
  out_u64 (&w, size);
  out_u64 (&w, 0); /* pid: no single process wrote it */
  out_u64 (&w, (uint64_t) time (NULL));
  out_u32 (&w, (uint32_t) acc->n);
  out_u32 (&w, flags);
  out_str (&w, program);
  for (size_t i = 0; i < acc->n; i++)
    {
      const struct acc_module *a = &acc->mods[i];
      out_u32 (&w, TALLY_TAG_MODULE);
      out_u32 (&w, a->abi_version);
      out_u64 (&w, a->checksum);
      out_u32 (&w, a->flags);
      out_u32 (&w, (uint32_t) a->nfns);
      out_str (&w, a->source);
      out_str (&w, a->directory);
      for (size_t j = 0; j < a->nfns; j++)
        {
          const struct acc_fn *f = &a->fns[j];
          out_str (&w, f->name);
          out_str (&w, f->symbol);
          out_str (&w, f->origin);
          out_str (&w, f->file);
          out_u32 (&w, f->line);
          out_u32 (&w, f->flags);
          out_u32 (&w, f->ncounters);
          out_u32 (&w, 0);
          for (uint32_t k = 0; k < f->ncounters; k++)
            out_u64 (&w, f->counters[k]);
          out_u32 (&w, f->map_size);
          if (f->map_size)
            out_bytes (&w, f->map, f->map_size);
        }
    }
  if (acc->nmeas)
    {
      out_u32 (&w, TALLY_TAG_MEAS);
      out_u32 (&w, acc->nmeas);
      for (uint32_t k = 0; k < acc->nmeas; k++)
        out_str (&w, acc->meas_names[k]);
      out_u32 (&w, (uint32_t) acc->n);
      for (size_t i = 0; i < acc->n; i++)
        {
          out_u32 (&w, (uint32_t) acc->mods[i].nfns);
          for (size_t j = 0; j < acc->mods[i].nfns; j++)
            for (uint32_t k = 0; k < 2 * acc->nmeas; k++)
              out_u64 (&w, acc->mods[i].fns[j].meas
                               ? acc->mods[i].fns[j].meas[k] : 0);
        }
    }
  if (acc->paths && acc->nframes)
    {
      out_u32 (&w, TALLY_TAG_FRAMES);
      out_u32 (&w, (uint32_t) acc->nframes);
      for (size_t f = 0; f < acc->nframes; f++)
        {
          out_u32 (&w, TALLY_FRAME_ID_BASE + (uint32_t) f);
          out_u64 (&w, acc->frames[f].addr);
          out_str (&w, acc->frames[f].name);
        }
    }
  if (acc->paths)
    {
      out_u32 (&w, TALLY_TAG_PATH);
      out_u32 (&w, acc->depth);
      out_u64 (&w, acc->lost);
      out_u32 (&w, (uint32_t) acc->n);
      uint32_t base = 0;
      for (size_t i = 0; i < acc->n; i++)
        {
          out_u32 (&w, base);
          base += (uint32_t) acc->mods[i].nfns;
        }
      out_u32 (&w, (uint32_t) (acc->nnodes - 1));
      /* Function ids: record r's functions from its base.  */
      uint32_t *bases = xmalloc ((acc->n + 1) * sizeof *bases);
      base = 0;
      for (size_t i = 0; i < acc->n; i++)
        {
          bases[i] = base;
          base += (uint32_t) acc->mods[i].nfns;
        }
      for (size_t i = 1; i < acc->nnodes; i++)
        {
          const struct acc_node *q = &acc->nodes[i];
          out_u32 (&w, q->parent);
          out_u32 (&w, q->rec == UINT32_MAX ? TALLY_FRAME_ID_BASE + q->fn
                                            : bases[q->rec] + q->fn);
          out_u64 (&w, q->calls);
          out_u64 (&w, q->incl);
          out_u64 (&w, q->excl < q->incl ? q->excl : q->incl);
        }
      free (bases);
      if (acc->nmeas > 1)
        {
          uint32_t ne = acc->nmeas - 1;
          out_u32 (&w, TALLY_TAG_PATH_EVENTS);
          out_u32 (&w, ne);
          out_u32 (&w, (uint32_t) (acc->nnodes - 1));
          for (size_t i = 1; i < acc->nnodes; i++)
            for (uint32_t e = 0; e < ne; e++)
              {
                const uint64_t *t = acc->node_ev + (i * ne + e) * 2;
                out_u64 (&w, t[0]);
                out_u64 (&w, t[1] < t[0] ? t[1] : t[0]);
              }
        }
    }
  uint32_t crc = w.crc;
  out_u32 (&w, TALLY_TAG_END);
  out_u32 (&w, crc);
  out_u64 (&w, size);
  if (w.total != size)
    {
      error_msg ("merge: cannot write %s: size mismatch (internal error)",
                 path);
      tally_out_discard (&o);
      return EXIT_BAD_DATA;
    }
  if (tally_out_close (&o, err, sizeof err) != 0)
    {
      error_msg ("merge: %s", err);
      return EXIT_BAD_DATA;
    }
  return 0;
}

static int
cmd_merge (int argc, char **argv)
{
  const char *out = NULL;
  int force = 0, only_files = 0, jobs = 1;
  size_t npaths = 0;
  const char **paths = xmalloc ((size_t) argc * sizeof *paths);
  for (int i = 1; i < argc; i++)
    {
      const char *a = argv[i], *v;
      int r;
      enum arg_kind kind = take_arg (a, &only_files, paths, &npaths);
      if (kind == ARG_HELP)
        {
          fputs (usage_text, stdout);
          free (paths);
          return 0;
        }
      else if (kind != ARG_OPTION)
        ;
      else if (strcmp (a, "--force") == 0)
        force = 1;
      else if ((strncmp (a, "-j", 2) == 0 && a[2] >= '0' && a[2] <= '9'
                && (r = 1) && (v = a + 2))
               || (r = option_value (argc, argv, &i, "-j", &v)) != 0
               || (r = option_value (argc, argv, &i, "--jobs", &v)) != 0)
        {
          char *end;
          long n = r > 0 ? strtol (v, &end, 10) : 0;
          if (r < 0 || !*v || *end || n < 1 || n > 256)
            {
              error_msg ("merge: -j needs a number of threads from 1 to 256; "
                         "try 'tally --help'");
              free (paths);
              return EXIT_USAGE;
            }
          jobs = (int) n;
        }
      else if (strcmp (a, "-o") == 0 || strncmp (a, "--output", 8) == 0)
        {
          const char *v = NULL;
          if (strcmp (a, "-o") == 0 || strcmp (a, "--output") == 0)
            {
              if (i + 1 >= argc)
                {
                  error_msg ("merge: option '%s' needs a value; try 'tally "
                             "--help'", a);
                  return EXIT_USAGE;
                }
              v = argv[++i];
            }
          else if (a[8] == '=')
            v = a + 9;
          else
            {
              error_msg ("merge: unknown option '%s'; try 'tally --help'", a);
              return EXIT_USAGE;
            }
          out = v;
        }
      else
        {
          error_msg ("merge: unknown option '%s'; try 'tally --help'", a);
          return EXIT_USAGE;
        }
    }
  if (!out || !*out)
    {
      error_msg ("merge: no output file given (-o OUT); try 'tally --help'");
      return EXIT_USAGE;
    }
  if (npaths == 0)
    {
      error_msg ("merge: no data file given; try 'tally --help'");
      return EXIT_USAGE;
    }

  struct accumulator acc;
  memset (&acc, 0, sizeof acc);
  char *program = NULL;
  uint32_t flags = TALLY_FILE_AT_EXIT;
  size_t file = 0;
  int status = 0;
  struct tally_builds *builds = tally_builds_new ();
  /* One file at a time (memory: the files being read and the result);
     -j N reads ahead on N - 1 threads (tools/prefetch.c).  */
  struct tally_prefetch *pf = tally_prefetch_start (paths, npaths, jobs);
  if (!pf)
    {
      error_msg ("merge: out of memory");
      status = EXIT_BAD_DATA;
    }
  for (size_t pi = 0; pi < npaths && !status; pi++)
    {
      const char *a = paths[pi];
      struct tally_data d;
      char err[256];
      char merr[512];
      if (tally_prefetch_next (pf, &d, err, sizeof err) != 0)
        {
          error_msg ("%s: %s", a, err);
          status = EXIT_BAD_DATA;
          break;
        }
      /* Its maps are copied into the output: one tally report could not
         decode would make the output unreadable.  */
      if (tally_data_check_maps (&d, merr, sizeof merr) != 0)
        {
          error_msg ("%s: %s; nothing written", a, merr);
          tally_data_free (&d);
          status = EXIT_BAD_DATA;
          break;
        }
      note_unfinished (a, &d);
      if (d.ranks)
        fprintf (stderr, "tally: note: %s: the per-rank statistics of its "
                 "%lu ranks (RNKS) are not merged, only the sums\n", a,
                 (unsigned long) d.ranks);
      if (!program)
        program = xstrdup (d.program);
      else if (strcmp (program, d.program) != 0)
        program[0] = 0; /* several programs: name none */
      flags &= d.flags;
      tally_builds_add (builds, a, &d);
      status = acc_add_file (&acc, &d, file, force, a);
      tally_data_free (&d);
      file++;
    }
  tally_prefetch_end (pf);
  free (paths);
  size_t forced = 0;
  for (size_t i = 0; i < acc.n; i++)
    forced += acc.mods[i].forced;
  if (!status && tally_builds_check (builds, "merge", force) != 0)
    status = EXIT_BAD_DATA;
  tally_builds_free (builds);
  if (!status)
    status = write_merged (out, &acc, program ? program : "", flags);
  if (!status && forced)
    fprintf (stderr, "tally: note: --force merged other builds into %zu "
             "module%s\n", forced, forced == 1 ? "" : "s");
  for (size_t i = 0; i < acc.n; i++)
    {
      struct acc_module *a = &acc.mods[i];
      for (size_t j = 0; j < a->nfns; j++)
        {
          free (a->fns[j].name);
          free (a->fns[j].symbol);
          free (a->fns[j].origin);
          free (a->fns[j].file);
          free (a->fns[j].counters);
          free (a->fns[j].map);
          free (a->fns[j].meas);
        }
      free (a->fns);
      free (a->source);
      free (a->directory);
    }
  free (acc.mods);
  for (uint32_t k = 0; k < acc.nmeas; k++)
    free (acc.meas_names[k]);
  for (size_t f = 0; f < acc.nframes; f++)
    free (acc.frames[f].name);
  free (acc.frames);
  free (acc.nodes);
  free (acc.node_ev);
  free (acc.slots);
  free (program);
  return status;
}

int
main (int argc, char **argv)
{
  int status;
  if (argc < 2)
    {
      error_msg ("no command given (commands: report, dump, merge, lcov, flame, select, diff, run, help); try 'tally "
             "--help'");
      return EXIT_USAGE;
    }
  const char *cmd = argv[1];
  if (strcmp (cmd, "--help") == 0 || strcmp (cmd, "-h") == 0
      || strcmp (cmd, "help") == 0)
    {
      fputs (usage_text, stdout);
      status = 0;
    }
  else if (strcmp (cmd, "--version") == 0)
    {
      printf ("tally %s\n", TALLY_VERSION);
      status = 0;
    }
  else if (strcmp (cmd, "report") == 0)
    status = cmd_report (argc - 1, argv + 1);
  else if (strcmp (cmd, "dump") == 0)
    status = cmd_dump (argc - 1, argv + 1);
  else if (strcmp (cmd, "merge") == 0)
    status = cmd_merge (argc - 1, argv + 1);
  else if (strcmp (cmd, "flame") == 0)
    status = cmd_flame (argc - 1, argv + 1);
  else if (strcmp (cmd, "lcov") == 0)
    status = cmd_lcov (argc - 1, argv + 1);
  else if (strcmp (cmd, "select") == 0)
    status = cmd_select (argc - 1, argv + 1);
  else if (strcmp (cmd, "diff") == 0)
    status = tally_diff_main (argc - 1, argv + 1, usage_text);
  else if (strcmp (cmd, "run") == 0)
    status = cmd_run (argc - 1, argv + 1);
  else
    {
      if (cmd[0] == '-')
        error_msg ("unknown option '%s'; try 'tally --help'", cmd);
      else
        error_msg ("unknown command '%s'; try 'tally --help'", cmd);
      return EXIT_USAGE;
    }
  /* Output that did not reach its destination is a failure, not a
     success with a short report.  */
  if (fflush (stdout) != 0 || ferror (stdout))
    {
      error_msg ("write error: %s", strerror (errno));
      return EXIT_BAD_DATA;
    }
  return status;
}
