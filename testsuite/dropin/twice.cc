// C++ part of the program: a template instantiated here, called through an
// extern "C" wrapper, counting its own calls.
#include "shapes.h"

static long twice_count;

template <typename T>
__attribute__ ((noinline)) T
twice (T v)
{
  twice_count++;
  return v + v;
}

extern "C" int
cxx_twice (int v)
{
  return twice (v);
}

extern "C" long
twice_calls (void)
{
  return twice_count;
}
