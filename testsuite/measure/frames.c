/* Return values through the exit=frames trampoline: every register a
   function returns in (rax, rdx, xmm0, xmm1), and what the plugin leaves to
   return-site exits (long double in x87, a function reading its return
   address).  The output must be the same instrumented or not.  */
#include <complex.h>
#include <stdio.h>

struct pair { long a, b; };
struct dpair { double x, y; };

static volatile int seed = 3;

__attribute__ ((noinline)) long ret_long (int i) { return seed * 1000003L + i; }
__attribute__ ((noinline)) struct pair ret_pair (int i) { struct pair p = { seed + i, -seed * i }; return p; }
__attribute__ ((noinline)) double ret_double (int i) { return seed * 1.25 + i; }
__attribute__ ((noinline)) struct dpair ret_dpair (int i) { struct dpair d = { seed / 7.0, i * 0.5 }; return d; }
__attribute__ ((noinline)) double complex ret_complex (int i) { return seed + i * I; }
__attribute__ ((noinline)) __int128 ret_int128 (int i) { return (__int128) seed << 70 | i; }
__attribute__ ((noinline)) long double ret_ldouble (int i) { return seed / 3.0L + i; }
__attribute__ ((noinline)) float ret_float (int i) { return seed * 0.5f + (float) i; }

__attribute__ ((noinline)) int
own_return_address (void)
{
  return __builtin_return_address (0) != 0;
}

int
main (void)
{
  for (int i = 0; i < 3; i++)
    {
      struct pair p = ret_pair (i);
      struct dpair d = ret_dpair (i);
      double complex z = ret_complex (i);
      __int128 w = ret_int128 (i);
      printf ("%ld %ld %ld %.17g %.17g %.17g %.17g %.17g %lx %lx %.21Lg %.9g %d\n",
              ret_long (i), p.a, p.b, ret_double (i), d.x, d.y, creal (z),
              cimag (z), (unsigned long) (w >> 64), (unsigned long) w,
              ret_ldouble (i), ret_float (i), own_return_address ());
    }
  return 0;
}
