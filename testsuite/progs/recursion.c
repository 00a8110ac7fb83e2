/* Direct and mutual recursion: every level is a call.  */
#include <stdio.h>

int fib (int n) { return n < 2 ? n : fib (n - 1) + fib (n - 2); }
int is_odd (unsigned n);
int is_even (unsigned n) { return n == 0 ? 1 : is_odd (n - 1); }
int is_odd (unsigned n) { return n == 0 ? 0 : is_even (n - 1); }

int
main (int argc, char **argv)
{
  (void) argv;
  /* argc keeps the compiler from folding everything at -O3.  */
  printf ("%d %d\n", fib (15 + argc - 1), is_even (20 + argc - 1));
  return 0;
}
