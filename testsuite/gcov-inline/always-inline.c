/* Where tally's line counts (at=early, -O0) and gcov's differ: functions
   marked always_inline, which GCC's early inliner inlines even at -O0,
   after tally's at=early pass (right after the CFG is built) and before
   gcov's instrumentation (doc/plugin-options.md, "Block counters";
   run-gcov.py's always-inline case checks each tag).  tally counts such a
   function as written, once for all its calls; gcov counts each inlined
   copy in its caller, after the inliner has put constant arguments in
   and folded what became constant.  The program counts its calls itself.

   DEF           the line a function begins on: tally its calls, gcov none
   CALL-ONLY     a line holding only a call: tally its runs, gcov none
   CONST-SOME    a test of a parameter one caller passes as a constant:
                 gcov counts only the other copy's tests
   CONST-ALL     the same, every caller passing a constant, the dead
                 branch's code on the line: gcov 0 (#####), though it ran
   ARG-AND-RESULT  code before the call (an argument) and after it (the
                 result used): gcov counts the line twice a run
   SHARED-BLOCK  a callee line whose code in one copy shares a block with
                 the caller's next line: gcov leaves that copy out  */
#include <stdio.h>
#include <stdlib.h>

static unsigned n_bump, n_pick, n_scale; /* calls, as the program counts them */

static inline __attribute__ ((always_inline)) int
bump (int *p) /* DEF */
{
  n_bump++;
  return ++*p; /* SHARED-BLOCK */
}

static inline __attribute__ ((always_inline)) int
pick (int x, int mode) /* DEF */
{
  n_pick++;
  if (mode == 1) /* CONST-SOME */
    return x + 1;
  return x - 1;
}

static inline __attribute__ ((always_inline)) int
scale (int x, int fast) /* DEF */
{
  n_scale++;
  if (fast && x > 1000000) x = 0; /* CONST-ALL */
  return x * 2;
}

int
main (int argc, char **argv)
{
  int n = argc > 1 ? atoi (argv[1]) : 7;
  int v = 0, s = 0;
  for (int i = 0; i < n; i++)
    {
      bump (&v); /* CALL-ONLY */
      s += pick (i, 1);
      s += pick (i, v & 1); /* ARG-AND-RESULT */
      s += scale (i, 0);
      if (bump (&v) > 0)
        s++;
    }
  printf ("n %d bump %u pick %u scale %u\n", n, n_bump, n_pick, n_scale);
  return s == 123456789;
}
