/* Functions GCC inlines (at=early instruments them first): their frames
   share the CFA of the function they are inlined into.  main -> outer
   (x 300) -> in1 (inlined) -> in2 (inlined) -> leaf; in1 also longjmps out
   of in2 every third call, then calls leaf from outer.  */
#include <setjmp.h>
#include <stdio.h>

static volatile unsigned long sink;
static jmp_buf env;

__attribute__ ((noinline)) void leaf (void) { for (int i = 0; i < 100; i++) sink += i; }

static inline __attribute__ ((always_inline)) void
in2 (int i)
{
  leaf ();
  if (i % 3 == 0)
    longjmp (env, 1);
}

static inline __attribute__ ((always_inline)) void
in1 (int i)
{
  in2 (i);
  sink++;
}

__attribute__ ((noinline)) void
outer (int i)
{
  if (setjmp (env) == 0)
    in1 (i);
  else
    leaf ();
}

int
main (void)
{
  for (int i = 0; i < 300; i++)
    outer (i);
  printf ("%d\n", sink > 0);
  return 0;
}
