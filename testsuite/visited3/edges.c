/* testsuite/visited3/edges.c - blocks whose visited value comes through
   an edge's own byte (map kind 5): an interpreter loop's latch reached
   from most cases and from one test's branch (sqlite3VdbeExec's pOp++),
   and a hash chain's hit path whose key test also leads to the next probe
   (lua's luaH_getshortstr).  Run as: edges MODE N (see main).  */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <tally/tally.h>

static jmp_buf env;
static volatile int sink;

__attribute__ ((noinline)) static void
maybe_leave (int mode, int i)
{
  if (mode == 3 && i == 11)
    longjmp (env, 1);
  if (mode == 4 && i == 18)
    exit (0);
  if (mode == 5 && i == 5)
    {
      tally_dump ();
      _exit (0);
    }
}

/* An interpreter: most cases fall to the latch (pc++), one jumps, one
   tests and either goes to the latch or stops.  */
__attribute__ ((noinline)) static int
interp (const unsigned char *code, int n, int mode)
{
  int acc = 0, pc = 0;
  for (;;)
    {
      if (pc >= n)
        break;
      switch (code[pc])
        {
        case 0:
          acc += 1;
          break;
        case 1:
          acc *= 3;
          break;
        case 2:
          acc -= 2;
          break;
        case 3:
          if (acc > 1000)
            goto done;
          break;
        case 4:
          maybe_leave (mode, pc);
          acc ^= pc;
          break;
        case 5:
          pc += 2;
          continue;
        default:
          acc = -acc;
          break;
        }
      pc++;
    }
done:
  return acc;
}

struct node
{
  int type, key, val, next;
};

/* A hash chain: the hit path (type and key match) returns the value,
   a miss goes to the next node.  */
__attribute__ ((noinline)) static int
lookup (const struct node *t, int h, int key)
{
  const struct node *n = &t[h];
  for (;;)
    {
      if (n->type == 1 && n->key == key)
        return n->val;
      int nx = n->next;
      if (nx == 0)
        return -1;
      n += nx;
    }
}

int
main (int argc, char **argv)
{
  int mode = argc > 1 ? atoi (argv[1]) : 0;
  int n = argc > 2 ? atoi (argv[2]) : 10;
  static unsigned char code[256];
  for (int i = 0; i < n && i < 256; i++)
    code[i] = (unsigned char) ((mode == 1 ? i * 7 : mode == 2 ? 0 : i) % 7);
  if (n > 256)
    n = 256;
  if (mode == 6)
    code[n / 2] = 3, code[0] = 1;
  static struct node t[16];
  for (int i = 0; i < 16; i++)
    {
      t[i].type = i % 3 == 0 ? 2 : 1;
      t[i].key = i * 5;
      t[i].val = i;
      t[i].next = i + 1 < 16 && i % 4 != 3 ? 1 : 0;
    }
  if (setjmp (env))
    {
      sink = 1;
      return 0;
    }
  int s = interp (code, n, mode);
  for (int k = 0; k < n % 40; k++)
    s += lookup (t, (k * 3) % 16, k * 5 % 80);
  sink = s;
  printf ("%d\n", s);
  return 0;
}
