/* The runtime's one error reporter.  It formats into a stack buffer and
   writes with write(2), so it is safe in signal handlers and at exit, and
   never calls back into instrumented code.  */
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include "rt.h"

static size_t
append (char *buf, size_t pos, size_t cap, const char *s, size_t n)
{
  while (n-- && pos + 1 < cap)
    buf[pos++] = *s++;
  return pos;
}

size_t
tally_rt_utoa (char buf[24], unsigned long v)
{
  char tmp[24];
  size_t n = 0;
  do
    tmp[sizeof tmp - ++n] = (char) ('0' + v % 10);
  while ((v /= 10) != 0);
  memcpy (buf, tmp + sizeof tmp - n, n);
  buf[n] = 0;
  return n;
}

static size_t
append_unsigned (char *buf, size_t pos, size_t cap, unsigned long v)
{
  char tmp[24];
  size_t n = tally_rt_utoa (tmp, v);
  return append (buf, pos, cap, tmp, n);
}

/* The length of one conversion of FMT at P (after the '%'), consuming its
   argument; *STR is set for a %s.  */
static size_t
conv_len (const char **pp, va_list *ap, const char **str)
{
  const char *p = *pp;
  char tmp[24];
  size_t n = 0;
  *str = NULL;
  if (*p == 'l' && p[1] == 'u')
    {
      p++;
      n = tally_rt_utoa (tmp, va_arg (*ap, unsigned long));
    }
  else if (*p == 'u')
    n = tally_rt_utoa (tmp, va_arg (*ap, unsigned));
  else if (*p == 'd')
    {
      int v = va_arg (*ap, int);
      n = (v < 0) + tally_rt_utoa (tmp, v < 0 ? -(unsigned long) v
                                              : (unsigned long) v);
    }
  else if (*p == 's')
    {
      *str = va_arg (*ap, const char *);
      if (!*str)
        *str = "(null)";
      n = strlen (*str);
    }
  else if (*p == '%')
    n = 1;
  *pp = p;
  return n;
}

/* A message longer than the buffer keeps every part but the middle of its
   longest strings (paths: "/very/long/.../name"), so that the reason after
   a long path is never cut off.  The length each string may keep: all of
   it when everything fits, else the most that fits, shared out evenly
   among the strings too long for their share.  */
#define MAX_STRINGS 8

static size_t
string_limit (const size_t *len, int n, size_t avail)
{
  size_t total = 0;
  for (int i = 0; i < n; i++)
    total += len[i];
  if (total <= avail || n == 0)
    return (size_t) -1;
  size_t c = avail / (size_t) n;
  for (int round = 0; round < n; round++)
    {
      size_t small = 0, big = 0;
      for (int i = 0; i < n; i++)
        if (len[i] <= c)
          small += len[i];
        else
          big++;
      size_t next = big ? (avail - small) / big : c;
      if (next <= c)
        break;
      c = next;
    }
  return c;
}

static size_t
append_string (char *buf, size_t pos, size_t cap, const char *s, size_t n,
               size_t limit)
{
  if (n <= limit)
    return append (buf, pos, cap, s, n);
  if (limit < 8)
    return append (buf, pos, cap, s, limit);
  size_t head = (limit - 3) / 3, tail = limit - 3 - head;
  pos = append (buf, pos, cap, s, head);
  pos = append (buf, pos, cap, "...", 3);
  return append (buf, pos, cap, s + n - tail, tail);
}

void
tally_rt_error (const char *fmt, ...)
{
  int saved = errno;
  char buf[512];
  size_t pos = append (buf, 0, sizeof buf, "tally: ", 7);
  va_list ap, ap2;
  va_start (ap, fmt);

  /* Pass 1: the lengths.  */
  size_t fixed = 7 + 1, len[MAX_STRINGS];
  int nstr = 0;
  va_copy (ap2, ap);
  for (const char *p = fmt; *p; p++)
    {
      if (*p != '%')
        {
          fixed++;
          continue;
        }
      p++;
      const char *str;
      size_t n = conv_len (&p, &ap2, &str);
      if (str && nstr < MAX_STRINGS)
        len[nstr++] = n;
      else
        fixed += n;
      if (!*p)
        break;
    }
  va_end (ap2);
  size_t limit = string_limit (len, nstr, fixed < sizeof buf
                                          ? sizeof buf - fixed : 0);

  /* Pass 2: the message.  */
  for (const char *p = fmt; *p; p++)
    {
      if (*p != '%')
        {
          pos = append (buf, pos, sizeof buf, p, 1);
          continue;
        }
      p++;
      if (*p == 'l' && p[1] == 'u')
        {
          p++;
          pos = append_unsigned (buf, pos, sizeof buf, va_arg (ap, unsigned long));
        }
      else if (*p == 'u')
        pos = append_unsigned (buf, pos, sizeof buf, va_arg (ap, unsigned));
      else if (*p == 'd')
        {
          int v = va_arg (ap, int);
          if (v < 0)
            pos = append (buf, pos, sizeof buf, "-", 1);
          pos = append_unsigned (buf, pos, sizeof buf,
                                 v < 0 ? -(unsigned long) v : (unsigned long) v);
        }
      else if (*p == 's')
        {
          const char *s = va_arg (ap, const char *);
          if (!s)
            s = "(null)";
          pos = append_string (buf, pos, sizeof buf, s, strlen (s), limit);
        }
      else if (*p == '%')
        pos = append (buf, pos, sizeof buf, "%", 1);
      else
        break;
    }
  va_end (ap);
  buf[pos++] = '\n';
  ssize_t unused = write (STDERR_FILENO, buf, pos);
  (void) unused;
  errno = saved;
}

/* The words for errno value E, for "tally: cannot ...: WORDS (errno E)".  */
const char *
tally_rt_errno_text (int e)
{
  switch (e)
    {
    case ENOENT: return "no such file or directory";
    case EACCES: return "permission denied";
    case EROFS: return "read-only file system";
    case ENOSPC: return "no space left on device";
    case EDQUOT: return "disk quota exceeded";
    case ENOTDIR: return "a path component is not a directory";
    case EISDIR: return "is a directory";
    case ENAMETOOLONG: return "file name too long";
    case EIO: return "input/output error";
    case EEXIST: return "file exists";
    case EPERM: return "operation not permitted";
    case ELOOP: return "a symbolic link (not followed)";
    case EXDEV: return "another file system";
    default: return "system error";
    }
}
