/* Shapes where GCC's guessed profile is wrong, for profile= (run-profile.py):
   the placement by a measured profile must differ from the guess, and
   stay exact on an input the profile does not predict.

   ./guess A N   the run the profile is taken from: every branch guessed
                 cold is taken, every lookup hits the chain's first node
   ./guess B N   the other way round: the guessed branches, lookups deep
                 in the chains or missing, a longjmp out of a callee
   With -DOLD, an older version of the source: arms () has one test more
   (another flow graph), the other functions are as they were.  */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

static long a, b, c, d;
static jmp_buf out;

/* Two tests guessed false (GCC's __builtin_expect), both true in A.  A
   static function called directly only: its entry count comes from its
   caller (entries=callers), so with A's profile no counter of it runs
   on A's path.  */
static __attribute__ ((noinline)) void
arms (int x, int y)
{
  if (__builtin_expect (x > 0, 0))
    a += x;
  else
    b -= x;
#ifdef OLD
  if (x == 12345)
    b++;
#endif
  if (__builtin_expect (y > 0, 0))
    c += y;
  else
    d -= y;
}

struct node
{
  int key, val;
  struct node *next;
};
static struct node nodes[64];
static struct node *chains[8];

/* A hash chain walked to its key (lua's luaH_getshortstr): GCC guesses the
   loop goes round and the key test fails; in A the first node has it.  */
__attribute__ ((noinline)) int
lookup (int key)
{
  for (struct node *n = chains[key & 7]; n; n = n->next)
    if (n->key == key)
      return n->val;
  return -1;
}

/* An interpreter's dispatch: A runs opcode 3 only.  */
__attribute__ ((noinline)) long
interp (const unsigned char *code, int n)
{
  long acc = 0;
  for (int i = 0; i < n; i++)
    switch (code[i])
      {
      case 0: acc += 1; break;
      case 1: acc -= 2; break;
      case 2: acc *= 3; break;
      case 3: acc ^= i; break;
      default: if (acc > 1000000) longjmp (out, 1); acc = 0; break;
      }
  return acc;
}

int
main (int argc, char **argv)
{
  int other = argc > 1 && argv[1][0] == 'B';
  int n = argc > 2 ? atoi (argv[2]) : 100;
  for (int i = 0; i < 64; i++)
    {
      nodes[i].key = i;
      nodes[i].val = i * 2;
      nodes[i].next = chains[i & 7];
      chains[i & 7] = &nodes[i];
    }
  unsigned char code[32];
  for (int i = 0; i < 32; i++)
    code[i] = other ? (unsigned char) (i % 5) : 3;
  long s = 0;
  for (int i = 0; i < n; i++)
    {
      arms (other ? -i : i + 1, other ? -1 : 1);
      /* A: the chains' first nodes (keys 56 to 63); B: deeper, or none.  */
      s += lookup (other ? (i % 3 ? i % 56 : 100 + i) : 56 + (i & 7));
      s += interp (code, 32);
    }
  /* B: 1, then times 3 thirteen times (1594323), then opcode 4 leaves by
     longjmp from the middle of the loop.  */
  static const unsigned char jump[15] = { 0, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
                                          2, 2, 2, 4 };
  if (other && !setjmp (out))
    s += interp (jump, 15);
  printf ("%ld %ld %ld %ld %ld\n", s, a, b, c, d);
  return 0;
}
