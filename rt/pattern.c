/* The name of the data file: TALLY_OUTPUT, or tally.%p.data, and its
   %-sequences (doc/runtime.md).  Layer "output file" of rt.h.  */
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "rt.h"

const char *
tally_rt_output_pattern (void)
{
  const char *pattern = tally_rt_env ("TALLY_OUTPUT");
  if (!pattern || !*pattern)
    pattern = TALLY_DEFAULT_OUTPUT;
  return pattern;
}

void
tally_rt_program (char *program, size_t cap)
{
  ssize_t plen = readlink ("/proc/self/exe", program, cap - 1);
  program[plen > 0 ? plen : 0] = 0;
}

size_t
tally_rt_append (char *dst, size_t pos, size_t cap, const char *s)
{
  while (*s && pos + 1 < cap)
    dst[pos++] = *s++;
  return pos;
}

/* Expand the TALLY_OUTPUT pattern into PATH.  Returns 0, or -1 if the result
   does not fit.  An unknown %-sequence is kept literally and reported.  */
/* The %m token: the executable's base name (bytes other than [A-Za-z0-9._-]
   as '_', at most 64) and 8 hex digits of a hash of its full path, so all
   processes of one program, and only those, share the file.  */
static size_t
append_program_token (char *dst, size_t pos, size_t cap, const char *program)
{
  const char *base = program;
  for (const char *p = program; *p; p++)
    if (*p == '/')
      base = p + 1;
  if (!*base)
    base = "unknown";
  for (size_t i = 0; base[i] && i < 64 && pos + 1 < cap; i++)
    {
      char c = base[i];
      int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
               || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
      dst[pos++] = ok ? c : '_';
    }
  uint32_t h = 2166136261u; /* FNV-1a */
  for (const char *p = program; *p; p++)
    h = (h ^ (unsigned char) *p) * 16777619u;
  char hex[10];
  hex[0] = '-';
  for (int i = 0; i < 8; i++)
    hex[1 + i] = "0123456789abcdef"[(h >> (28 - 4 * i)) & 0xf];
  hex[9] = 0;
  return tally_rt_append (dst, pos, cap, hex);
}

int
tally_rt_expand_path (char *path, size_t cap, const char *pattern,
                      const char *program, int *merge, int *cont)
{
  size_t pos = 0;
  for (const char *p = pattern; *p; p++)
    {
      char tmp[sizeof ((struct utsname *) 0)->nodename + 1];
      if (*p != '%')
        {
          if (pos + 1 >= cap)
            return -1;
          path[pos++] = *p;
          continue;
        }
      switch (p[1])
        {
        case 'p':
          tally_rt_utoa (tmp, (unsigned long) getpid ());
          pos = tally_rt_append (path, pos, cap, tmp);
          p++;
          break;
        case 'h':
          {
            struct utsname u;
            if (uname (&u) != 0)
              memcpy (u.nodename, "unknown-host", sizeof "unknown-host");
            pos = tally_rt_append (path, pos, cap, u.nodename);
            p++;
            break;
          }
        case 'm':
          pos = append_program_token (path, pos, cap, program);
          *merge = 1;
          p++;
          break;
        case 'r': /* job rank (rank.c); outside a job "pid" and the pid */
          if (!tally_rt_job_rank (tmp))
            {
              pos = tally_rt_append (path, pos, cap, "pid");
              tally_rt_utoa (tmp, (unsigned long) getpid ());
            }
          pos = tally_rt_append (path, pos, cap, tmp);
          p++;
          break;
        case 'R': /* job size; "0" outside a job */
          if (!tally_rt_job_size (tmp))
            tmp[0] = '0', tmp[1] = 0;
          pos = tally_rt_append (path, pos, cap, tmp);
          p++;
          break;
        case 'c': /* continuous output: expands to nothing (continuous.c) */
          *cont = 1;
          p++;
          break;
        case '%':
          pos = tally_rt_append (path, pos, cap, "%");
          p++;
          break;
        default:
          tally_rt_error ("TALLY_OUTPUT=%s: unknown pattern '%%%s' kept as "
                          "written (accepted: %%p pid, %%h host, %%r job rank, "
                          "%%R job size, %%m program "
                          "(and merge into the file), %%c continuous "
                          "output, %%%% a percent sign)",
                          pattern, p[1] ? (char[2]){ p[1], 0 } : "");
          pos = tally_rt_append (path, pos, cap, "%");
          break;
        }
      if (pos + 1 >= cap)
        return -1;
    }
  path[pos] = 0;
  return 0;
}
