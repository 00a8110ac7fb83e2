/* A callee reads its caller's return address (__builtin_return_address
   (1), and the word above __builtin_frame_address (1)): it must be what
   the caller would read of itself.  Each reader is called through one
   call site, so all of them must find the same address: own reads it at
   level 0 in the function called there, by_callee and by_frame leave the
   reading to a callee.  With exit=frames the callee would find the
   runtime's trampoline in its caller's return slot, so every function of
   a unit that reads a caller's return address gets return-site exits.
   Prints "ok N" after N checks; aborts on a mismatch.  Build with
   -fno-omit-frame-pointer (level 1 walks the frame chain).  */
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__ ((noinline, noipa))

NOINLINE static void *
own (void)
{
  return __builtin_return_address (0);
}

NOINLINE static void *
read_callers (void)
{
  return __builtin_return_address (1);
}

NOINLINE static void *
by_callee (void)
{
  void *r = read_callers ();
  __asm__ volatile ("" : "+r"(r)); /* no tail call */
  return r;
}

NOINLINE static void *
read_callers_frame (void)
{
  void **frame = __builtin_frame_address (1);
  return frame[1]; /* the return address sits above the saved frame */
}

NOINLINE static void *
by_frame (void)
{
  void *r = read_callers_frame ();
  __asm__ volatile ("" : "+r"(r));
  return r;
}

/* The one call site.  */
NOINLINE static void *
dispatch (void *(*fn) (void))
{
  void *r = fn ();
  __asm__ volatile ("" : "+r"(r));
  return r;
}

int
main (void)
{
  int n = 0;
  for (int i = 0; i < 3; i++)
    {
      void *want = dispatch (own);
      if (dispatch (by_callee) != want)
        abort ();
      if (dispatch (by_frame) != want)
        abort ();
      n += 2;
    }
  printf ("ok %d\n", n);
  return 0;
}
