/* Conditions spread over several lines, as real code writes them (issue 14:
   jq's compile.c, expat's xmlparse.c), and a statement macro. */
#include <string.h>

#define RETURN_IF(x) do { int m_ = (x); if (m_) return m_; } while (0)

static int count(const char *sym, const char *s, int flags, int dist)
{
  int n = 0;
  if ((flags & 3) == 1 &&
      (!strcmp(sym, s) ||
       ((flags & 2) && sym[0] == '*' &&
        dist <= 3 && (sym[1] == '1' + dist) &&
        sym[2] == '\0'))) {
    n++;
  } else if ((flags & 3) == 1 &&
             !strncmp(s, "*anon", 5) &&
             !strncmp(sym, "*anon", 5)) {
    n += 2;
  }
  return n;
}

static int step(int i) { return i % 3 == 0 ? i : 0; }

static int first_multiple(int n)
{
  for (int i = 1; i < n; i++)
    RETURN_IF(step(i));
  return -1;
}

static int until_multiple(int n)
{
  int s = 0;
  for (int i = 0; i < n; i++) { RETURN_IF(step(i + 1)); s++; }
  return s;
}

static int classify(int a, int b, int c)
{
  if (a > 0
      && b > 0)
    return 1;
  else if (a < 0 ||
           b < 0 ||
           c < 0)
    return 2;
  while (a < b &&
         b < c)
    a++;
  return a == b ? 3
       : a > b ? 4
       : 5;
}

int main(void)
{
  int s = 0;
  for (int i = 0; i < 10; i++)
    s += count("foo", i & 1 ? "foo" : "bar", 1, i);
  s += count("*1", "*anon", 1, 0) + count("*anon", "*anon", 1, 0)
       + count("*2", "x", 3, 1) + count("*2", "x", 3, 7);
  for (int k = 0; k < 8; k++)
    s += first_multiple(k) + until_multiple(k);
  for (int a = -1; a < 3; a++)
    for (int b = -1; b < 3; b++)
      s += classify(a, b, 2);
  return s == 0;
}
