// The second translation unit of cxx-header.cc.
#include "cxx-header.h"

int
other_tu (int n)
{
  int s = 0;
  for (int i = 0; i < n; i++)
    s = hdr_add (s, hdr_apply (i));
  return hdr_max (s, 1);
}
