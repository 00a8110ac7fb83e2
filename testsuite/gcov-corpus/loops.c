/* Loops as interpreters and pattern matchers write them: a `while` whose
   condition assigns, a label at the top of a function jumped back to
   (lua's luaV_execute and lstrlib.c's match), several back edges into one
   loop header.  With -Wall, GCC puts these loops in normal form before
   --coverage reads them. */
#include <stddef.h>

struct U { struct U *next; int v; };
struct L { struct U *open; int n; };

static void closeup(struct L *L, int level)
{
  struct U *uv;
  int upl;
  while ((uv = L->open) != NULL && (upl = uv->v) >= level) {
    L->open = uv->next;
    L->n += upl;
  }
}

static int match(const char *s, const char *p)
{
  int n = 0;
  init:
  if (*p != 0) {
    switch (*p) {
      case 'a': p++; n++; goto init;
      case 'b': p += 2; goto init;
      default: break;
    }
  }
  return n + (s != NULL);
}

static int exec(const int *code, int depth)
{
  int acc = 0;
  int pc = 0;
 startfunc:
  acc += 1;
 returning:
  for (;;) {
    int op = code[pc++];
    if (op == 0)
      return acc;
    if (op == 9 && depth-- > 0) {
      pc = 0;
      goto startfunc;
    }
    if (op == 8 && acc < 20) {
      acc += 5;
      goto returning;
    }
    acc += op;
  }
}

int main(void)
{
  struct U u3 = { NULL, 1 }, u2 = { &u3, 5 }, u1 = { &u2, 7 };
  struct L L = { &u1, 0 };
  static const int code[] = { 1, 2, 9, 8, 3, 0 };
  closeup(&L, 4);
  int r = match("x", "aabxaa") + match("y", "ab");
  for (int d = 0; d < 4; d++)
    r += exec(code, d);
  return r + L.n == 0;
}
