// C++ exceptions through blocks blocks=visited derives (run-visited.py):
// a throw from a callee out of a loop, caught in a caller, a cleanup on
// the way; throws.cc N.
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

static volatile int sink;

struct guard
{
  ~guard () { sink++; }
};

__attribute__ ((noinline)) static void
check (int i, int limit)
{
  if (i >= limit)
    throw std::runtime_error ("limit");
}

__attribute__ ((noinline)) static int
walk (int n, int limit)
{
  guard g;
  int s = 0;
  for (int i = 0; i < n; i++)
    {
      if (i & 1)
        s += i;
      else
        s -= 1;
      check (i, limit);
    }
  return s;
}

int
main (int argc, char **argv)
{
  int n = argc > 1 ? std::atoi (argv[1]) : 5;
  int limit = argc > 2 ? std::atoi (argv[2]) : 100;
  int t = 0;
  try
    {
      t = walk (n, limit);
    }
  catch (const std::exception &e)
    {
      t = -1;
    }
  std::printf ("%d\n", t);
  return 0;
}
