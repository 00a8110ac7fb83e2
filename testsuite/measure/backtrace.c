/* tally_backtrace against glibc's own backtrace (__backtrace: libunwind
   also exports a `backtrace`, which a -lunwind link would pick): main ->
   b1 -> b2 -> b3, where both are called; prints both address lists, then
   tally_backtrace_print's lines.  */
#include <stdio.h>
#include <tally/tally.h>

int __backtrace (void **, int);

static volatile int sink;

__attribute__ ((noinline)) void
b3 (void)
{
  void *ours[64], *glibc[64];
  int n = tally_backtrace (ours, 64);
  int m = __backtrace (glibc, 64);
  for (int i = 0; i < n; i++)
    printf ("%s%p", i ? " " : "tally ", ours[i]);
  printf ("\n");
  for (int i = 0; i < m; i++)
    printf ("%s%p", i ? " " : "glibc ", glibc[i]);
  printf ("\n");
  fflush (stdout);
  tally_backtrace_print (1);
  sink++;
}

__attribute__ ((noinline)) void b2 (void) { b3 (); sink++; }
__attribute__ ((noinline)) void b1 (void) { b2 (); sink++; }

int
main (void)
{
  b1 ();
  sink++;
  return 0;
}
