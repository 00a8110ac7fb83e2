/* Loops as interpreters and pattern matchers write them: a `while` whose
   condition assigns, a label at the top of a function jumped back to
   (lua's luaV_execute and lstrlib.c's match), several back edges into one
   loop header.  With -Wall, GCC puts these loops in normal form before
   --coverage reads them. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

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

/* Two back edges into one loop header: with no variable in SSA form
   changed in the loop, GCC makes an inner loop of the one from the `if`
   (lua's removevars, luaF_closeupval); with one, it merges them (lua's
   str_rep, auxsort). */
struct V { int endpc; };
struct F { int nactvar; int pc; struct V vars[8]; };

static struct V *info(struct F *fs, int i)
{
  return i % 2 ? &fs->vars[i] : NULL;
}

static void removevars(struct F *fs, int tolevel)
{
  fs->pc += tolevel;
  while (fs->nactvar > tolevel) {
    struct V *var = info(fs, --fs->nactvar);
    if (var)  /* does it have debug information? */
      var->endpc = fs->pc;
  }
}

static int rep(char *p, const char *s, int l, int n, int lsep, const char *sep)
{
  char *start = p;
  if (n <= 0)
    return 0;
  else {
    while (n-- > 1) {
      memcpy(p, s, l); p += l;
      if (lsep > 0) {
        memcpy(p, sep, lsep);
        p += lsep;
      }
    }
    memcpy(p, s, l); p += l;
  }
  return (int) (p - start);
}

static void sortit(int *a, int lo, int up)
{
  while (lo < up) {
    int p = a[lo];
    int i = lo, j = up;
    while (i < j) {
      while (i < j && a[j] >= p) j--;
      a[i] = a[j];
      while (i < j && a[i] <= p) i++;
      a[j] = a[i];
    }
    a[i] = p;
    if (i - lo < up - i) {
      sortit(a, lo, i - 1);
      lo = i + 1;
    } else {
      sortit(a, i + 1, up);
      up = i - 1;
    }
  }
}

int main(void)
{
  char buf[64];
  int a[] = { 5, 3, 9, 1, 7, 2, 8, 6, 4, 0 };
  struct U u3 = { NULL, 1 }, u2 = { &u3, 5 }, u1 = { &u2, 7 };
  struct L L = { &u1, 0 };
  static const int code[] = { 1, 2, 9, 8, 3, 0 };
  closeup(&L, 4);
  int r = match("x", "aabxaa") + match("y", "ab");
  for (int d = 0; d < 4; d++)
    r += exec(code, d);
  r += rep(buf, "ab", 2, 5, 1, ",") + rep(buf, "x", 1, 3, 0, "")
       + rep(buf, "y", 1, 0, 0, "");
  sortit(a, 0, 9);
  struct F f = { 7, 3, { { 0 } } };
  removevars(&f, 2);
  f.nactvar = 5;
  removevars(&f, 0);
  r += f.vars[3].endpc;
  printf("%d %d\n", r, a[3]);
  return r + L.n == 0;
}
