// C++ inline functions from a header, used here and in cxx-header-2.cc
// (cxx-header.sources adds it to the build).
#include <cstdio>

#include "cxx-header.h"

int
main (int argc, char **)
{
  Acc acc = { 0 };
  int n = 4 + argc - 1;
  long big = 0;
  for (int i = 0; i < n; i++)
    {
      acc.add (i);
      big += hdr_max (i, 2);
      try
        {
          hdr_check (i);
        }
      catch (const std::exception &)
        {
          big += 100;
        }
    }
  big += other_tu (3);
  std::printf ("%d %ld\n", acc.total, big);
  return 0;
}
