/* lcov's exclusion markers in a source file (markers.h).
 *
 * The file is scanned a byte at a time through a window of the last bytes
 * of the current line, as long as the longest marker, so a line of any
 * length costs no memory; each line then sets its flags by geninfo's rules
 * (a STOP is seen before a START on the same line, and the STOP line itself
 * is not in the section).  */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "markers.h"
#include "srcfile.h"

enum
{
  M_LINE,
  M_START,
  M_STOP,
  M_BR_LINE,
  M_BR_START,
  M_BR_STOP,
  NMARKERS
};

static const char *const marker_text[NMARKERS] = {
  "LCOV_EXCL_LINE",    "LCOV_EXCL_START",    "LCOV_EXCL_STOP",
  "LCOV_EXCL_BR_LINE", "LCOV_EXCL_BR_START", "LCOV_EXCL_BR_STOP",
};

#define WINDOW 32 /* longer than every marker */

struct scan
{
  struct tally_markers *m;
  size_t cap;
  unsigned seen;     /* markers on the current line, by bit */
  int excl, br;      /* inside a section */
  int pending;       /* bytes read on the current line */
  char win[WINDOW];  /* the last bytes of the line, the newest last */
  size_t nwin;
};

static int
end_line (struct scan *s)
{
  struct tally_markers *m = s->m;
  if (m->nlines >= UINT32_MAX - 1)
    return 0; /* further lines keep no flags */
  if (s->seen & (1u << M_STOP))
    s->excl = 0;
  else if (s->seen & (1u << M_START))
    s->excl = 1;
  if (s->seen & (1u << M_BR_STOP))
    s->br = 0;
  else if (s->seen & (1u << M_BR_START))
    s->br = 1;
  unsigned char f = 0;
  if ((s->seen & (1u << M_LINE)) || s->excl)
    f |= TALLY_EXCL_LINE;
  if ((s->seen & (1u << M_BR_LINE)) || s->br)
    f |= TALLY_EXCL_BRANCH;
  uint32_t line = m->nlines + 1;
  if (line >= s->cap)
    {
      size_t cap = s->cap ? 2 * s->cap : 1024;
      unsigned char *p = realloc (m->flags, cap);
      if (!p)
        return -1;
      memset (p + s->cap, 0, cap - s->cap);
      m->flags = p;
      s->cap = cap;
    }
  m->flags[line] = f;
  m->nlines = line;
  s->seen = 0;
  s->nwin = 0;
  s->pending = 0;
  return 0;
}

static void
add_byte (struct scan *s, char c)
{
  if (s->nwin == WINDOW)
    {
      memmove (s->win, s->win + 1, WINDOW - 1);
      s->nwin--;
    }
  s->win[s->nwin++] = c;
  s->pending = 1;
  /* Every marker ends in 'E', 'T' or 'P'.  */
  if (c != 'E' && c != 'T' && c != 'P')
    return;
  for (int k = 0; k < NMARKERS; k++)
    {
      size_t n = strlen (marker_text[k]);
      if (n <= s->nwin && memcmp (s->win + s->nwin - n, marker_text[k], n) == 0)
        s->seen |= 1u << k;
    }
}

int
tally_markers_read (const char *path, struct tally_markers *out, char *why,
                    size_t whylen)
{
  memset (out, 0, sizeof *out);
  FILE *f = tally_source_open (path, why, whylen);
  if (!f)
    return -1;
  struct scan s;
  memset (&s, 0, sizeof s);
  s.m = out;
  char buf[8192];
  size_t n;
  uint64_t total = 0;
  int failed = 0;
  while (!failed && (n = fread (buf, 1, sizeof buf, f)) > 0)
    {
      total += n;
      if (total > TALLY_SOURCE_MAX)
        {
          snprintf (why, whylen, "%s", TALLY_SOURCE_TOO_LONG);
          failed = 1;
        }
      for (size_t i = 0; i < n && !failed; i++)
        {
          if (buf[i] == '\n')
            {
              if (end_line (&s) != 0)
                {
                  snprintf (why, whylen, "%s", strerror (ENOMEM));
                  failed = 1;
                }
            }
          else
            add_byte (&s, buf[i]);
        }
    }
  if (!failed && ferror (f))
    {
      snprintf (why, whylen, "read error: %s", strerror (errno ? errno : EIO));
      failed = 1;
    }
  else if (!failed && s.pending && end_line (&s) != 0) /* a last line
                                                          without a newline */
    {
      snprintf (why, whylen, "%s", strerror (ENOMEM));
      failed = 1;
    }
  fclose (f);
  if (failed)
    {
      tally_markers_free (out);
      return -1;
    }
  out->unterminated = s.excl || s.br;
  return 0;
}

unsigned
tally_markers_of (const struct tally_markers *m, uint32_t line)
{
  return m->flags && line >= 1 && line <= m->nlines ? m->flags[line] : 0;
}

void
tally_markers_free (struct tally_markers *m)
{
  free (m->flags);
  memset (m, 0, sizeof *m);
}
