/* print.c - strings from data files as text, JSON, CSV, escaped
 * (print.h).  */
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

/* Byte length of the valid UTF-8 sequence at S, or 0 if S does not start
   one (overlong forms, surrogates and values past U+10FFFF are invalid).
   S is NUL-terminated, and NUL is never a continuation byte, so this never
   looks past the end.  */
size_t
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

size_t
put_text (const char *str)
{
  return text_out (str, 1);
}

/* Columns put_text would take for S.  */
size_t
text_width (const char *str)
{
  return text_out (str, 0);
}

/* Write S in double quotes with quotes, backslashes, control characters and
   invalid UTF-8 escaped (valid UTF-8 passes through): as a C string
   literal (\n, \t, \r, else \xXX) for dump, as a JSON string (\n, \t,
   \r, else \u00XX) for report, or for diff's JSON every one as \u00XX.  */
void
put_escaped (const char *str, enum escape how)
{
  const unsigned char *s = (const unsigned char *) str;
  putchar ('"');
  while (*s)
    {
      size_t n = utf8_len (s);
      const char *named = *s == '\n' ? "\\n" : *s == '\t' ? "\\t"
                          : *s == '\r' ? "\\r" : NULL;
      if (*s == '"' || *s == '\\')
        printf ("\\%c", *s);
      else if (named && how != ESCAPE_JSON_U)
        fputs (named, stdout);
      else if (n == 0 || *s < 0x20 || *s == 0x7f)
        printf (how == ESCAPE_C ? "\\x%02x" : "\\u%04x", *s);
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
void
put_json (const char *str)
{
  put_escaped (str, ESCAPE_JSON);
}

/* Write the names of a function (name, symbol, origin, file), each after
   its key printed with FIRST for the first, SEP for the others (formats
   taking the key), escaped as HOW.  */
void
put_fn_names (const char *first, const char *sep, enum escape how,
              const char *name, const char *symbol, const char *origin,
              const char *file)
{
  static const char *const keys[] = { "name", "symbol", "origin", "file" };
  const char *values[] = { name, symbol, origin, file };
  for (int k = 0; k < 4; k++)
    {
      printf (k ? sep : first, keys[k]);
      put_escaped (values[k], how);
    }
}

/* Write S as a CSV field: control characters (CR and LF too) and bytes
   that are not valid UTF-8 as \xNN, as the text output shows them, so
   that a hostile name can send no escape sequence to a terminal and
   every row is one line; then quoted, with quotes doubled (RFC 4180),
   when it holds a comma or a quote.  */
void
put_csv (const char *str)
{
  const unsigned char *s = (const unsigned char *) str;
  int quote = strpbrk (str, ",\"") != NULL;
  if (quote)
    putchar ('"');
  while (*s)
    {
      size_t n = utf8_len (s);
      if (n == 0 || *s < 0x20 || *s == 0x7f)
        {
          printf ("\\x%02x", *s);
          s++;
          continue;
        }
      if (*s == '"')
        putchar ('"');
      fwrite (s, 1, n, stdout);
      s += n;
    }
  if (quote)
    putchar ('"');
}

/* Write S as a C string literal, for dump.  */
void
put_quoted (const char *str)
{
  put_escaped (str, ESCAPE_C);
}

const char *
plural (uint64_t n, const char *one, const char *many)
{
  return n == 1 ? one : many;
}

int
count_digits (uint64_t v)
{
  int n = 1;
  while (v >= 10)
    v /= 10, n++;
  return n;
}

/* Name of a map kind, as the placement option spells it (kind 6: the
   tree with its entry counted by its callers).  */
const char *
kind_name (uint32_t kind)
{
  return kind == TALLY_MAP_TREE ? "tree"
         : kind == TALLY_MAP_TREE_CALLERS ? "tree-callers"
         : kind == TALLY_MAP_BLOCK ? "block" : "visited";
}
