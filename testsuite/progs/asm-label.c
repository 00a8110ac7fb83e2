/* Functions renamed with an asm label (as glibc's headers do) are reported
   under the name the symbol table shows.  */
#include <stdio.h>

__attribute__ ((noinline)) int twice (int x) __asm__ ("real_twice");
__attribute__ ((noinline)) int
twice (int x)
{
  return x * 2;
}

int
main (int argc, char **argv)
{
  (void) argv;
  int s = 0;
  for (int i = 0; i < 4 + argc - 1; i++)
    s += twice (i);
  printf ("%d\n", s);
  return 0;
}
