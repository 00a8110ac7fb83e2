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

void
tally_rt_error (const char *fmt, ...)
{
  int saved = errno;
  char buf[512];
  size_t pos = append (buf, 0, sizeof buf, "tally: ", 7);
  va_list ap;
  va_start (ap, fmt);
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
          pos = append (buf, pos, sizeof buf, s, strlen (s));
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
