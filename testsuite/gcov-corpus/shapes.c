/* Real-world C shapes: a growing buffer, varargs, switch with fallthrough
   and case lists, goto cleanup chains, nested loops with break and
   continue, ternary chains, && || chains over lines, function pointers,
   recursion, a function never called. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(x) do { int rc_ = (x); if (rc_) return rc_; } while (0)
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define FOR_EACH(i, n) for (int i = 0; i < (n); i++)

struct buf { char *data; size_t len, cap; };

static int buf_grow(struct buf *b, size_t need)
{
  if (b->len + need <= b->cap)
    return 0;
  size_t cap = b->cap ? b->cap : 8;
  while (cap < b->len + need)
    cap *= 2;
  char *p = realloc(b->data, cap);
  if (!p)
    return -1;
  b->data = p;
  b->cap = cap;
  return 0;
}

static int buf_printf(struct buf *b, const char *fmt, ...)
{
  va_list ap;
  char tmp[64];
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  CHECK(n < 0);
  CHECK(buf_grow(b, (size_t) n + 1));
  memcpy(b->data + b->len, tmp, (size_t) n + 1);
  b->len += (size_t) n;
  return 0;
}

enum tok { T_NUM, T_PLUS, T_MINUS, T_STAR, T_LP, T_RP, T_END, T_BAD };

static enum tok classify(int c)
{
  switch (c) {
  case '0': case '1': case '2': case '3': case '4':
  case '5': case '6': case '7': case '8': case '9':
    return T_NUM;
  case '+':
    return T_PLUS;
  case '-':
    return T_MINUS;
  case '*':
    return T_STAR;
  case '(':
    return T_LP;
  case ')':
    return T_RP;
  case '\0':
    return T_END;
  default:
    break;
  }
  return T_BAD;
}

static int count_kinds(const char *s, int *counts)
{
  int bad = 0;
  for (;;) {
    enum tok t = classify(*s);
    switch (t) {
    case T_END:
      goto done;
    case T_BAD:
      bad++;
      /* fall through */
    case T_LP:
    case T_RP:
      counts[t]++;
      break;
    default:
      counts[t] += 1;
    }
    s++;
  }
done:
  return bad;
}

static int parse_list(const char *s, int *out, int max)
{
  int n = 0;
  char *copy = strdup(s);
  if (!copy)
    goto fail;
  for (char *tok = strtok(copy, ","); tok; tok = strtok(NULL, ",")) {
    if (n == max)
      goto fail_copy;
    char *end;
    long v = strtol(tok, &end, 10);
    if (*end != '\0' ||
        v < 0 ||
        v > 1000)
      continue;
    out[n++] = (int) v;
  }
  free(copy);
  return n;
fail_copy:
  free(copy);
fail:
  return -1;
}

static int sum_odd_nested(int n)
{
  int s = 0, i = 0;
  while (i < n) {
    int j = 0;
    do {
      if ((i + j) % 2 == 0)
        continue;
      if (j > 5)
        break;
      s += MAX(i, j);
    } while (++j < i);
    i++;
  }
  return s;
}

static const char *describe(int v)
{
  return v < 0 ? "negative"
       : v == 0 ? "zero"
       : v < 10 ? "small"
       : "large";
}

static int match(const char *a, const char *b, int flags)
{
  return (flags & 1) && a && b &&
         (strcmp(a, b) == 0 ||
          ((flags & 2) && strncmp(a, b, 2) == 0)) ? 1
         : 0;
}

static int apply(int (*fn)(int), int v) { return fn(v); }
static int twice(int v) { return 2 * v; }
static int fact(int n) { if (n <= 1) return 1; return n * fact(n - 1); }

static int never_called(int x)
{
  if (x)
    return x * 3;
  return 0;
}

int main(int argc, char **argv)
{
  struct buf b = { 0 };
  int counts[T_BAD + 1] = { 0 };
  int list[4];
  int total = 0;
  (void) argv;
  FOR_EACH(i, 20)
    if (buf_printf(&b, "%d,", i * 37 % 11) != 0)
      return 1;
  total += count_kinds("1+2*(3-x)?", counts);
  total += parse_list("1,22,333,4444,-5,6", list, 4);
  total += parse_list("1,2,3,4,5,6", list, 4);
  total += sum_odd_nested(12);
  for (int v = -2; v < 14; v += 3)
    total += (int) strlen(describe(v));
  total += match("abc", "abd", 3) + match("abc", "abc", 1) + match(NULL, "x", 1)
           + match("xy", "xz", 2);
  total += apply(twice, 21) + fact(6);
  if (argc > 5)
    total += never_called(argc);
  printf("%d %zu\n", total, b.len);
  free(b.data);
  return 0;
}
