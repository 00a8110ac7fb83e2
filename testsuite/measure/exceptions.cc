// An exception thrown through three instrumented frames and caught two
// levels up, 1000 times; then a heavy function that must not be charged to
// the frames the exception unwound.
#include <cstdio>
#include <stdexcept>

static volatile unsigned long sink;

__attribute__ ((noinline)) void t3 (int i) { sink = sink + 1; if (i >= 0) throw std::runtime_error ("t3"); }
__attribute__ ((noinline)) void t2 (int i) { t3 (i); sink = sink + 1; }
__attribute__ ((noinline)) void t1 (int i) { t2 (i); sink = sink + 1; }

__attribute__ ((noinline)) void
after ()
{
  for (int i = 0; i < 200000; i++)
    sink += i;
}

__attribute__ ((noinline)) void
catcher (int i)
{
  try
    {
      t1 (i);
    }
  catch (const std::exception &)
    {
      sink = sink + 1;
    }
  after ();
}

int
main ()
{
  for (int i = 0; i < 1000; i++)
    catcher (i);
  std::printf ("%d\n", sink > 0);
  return 0;
}
