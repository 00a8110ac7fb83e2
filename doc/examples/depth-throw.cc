/* depth-throw.cc - a C++ program for depth-hooks.h: an exception thrown
 * three instrumented functions below main and caught in main.
 *
 *   g++ -O2 -Iinclude -Idoc/examples -include depth-hooks.h \
 *       -fplugin=build/plugin/tally.so \
 *       -fplugin-arg-tally-hooks=user:depth -fplugin-arg-tally-at=early \
 *       doc/examples/depth-throw.cc build/rt/libtally-rt.a -o depth-throw
 *   ./depth-throw
 *
 * With at=early the exit hook runs when the exception unwinds level3,
 * level2 and level1, so after each catch depth_now is back to 1 (main's
 * own activation, as before the try) and 0 after main returns.  With
 * at=late the exceptions skip those exit hooks: each of the 10 throws
 * leaves depth_now 3 too high (the levels are noinline so that they stay
 * functions of their own at -O2, where at=late instruments).  */
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

__attribute__ ((noinline)) static int
level3 (int x)
{
  if (x >= 0)
    throw std::runtime_error ("level3");
  return x;
}

__attribute__ ((noinline)) static int
level2 (int x)
{
  return level3 (x) + 1;
}

__attribute__ ((noinline)) static int
level1 (int x)
{
  return level2 (x) * 2;
}

int
main ()
{
  std::atexit (depth_report);
  unsigned before = depth_now;
  int caught = 0;
  for (int i = 0; i < 10; i++)
    try
      {
        level1 (i);
      }
    catch (const std::runtime_error &)
      {
        caught++;
      }
  std::printf ("depth-throw: caught %d; depth before the try %u, after the catch %u\n",
               caught, before, (unsigned) depth_now);
  return 0;
}
