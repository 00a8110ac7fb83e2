// Inline functions defined in a header and used from two translation units
// (cxx-header.cc and cxx-header-2.cc): a plain inline function, a method
// defined in its class, a function template, a lambda inside an inline
// function and an inline function that throws.  Each unit emits its own copy
// (a COMDAT body); the linker keeps one.
#ifndef CXX_HEADER_H
#define CXX_HEADER_H
#include <stdexcept>

inline int
hdr_add (int a, int b)
{
  return a + b;
}

struct Acc
{
  int total;
  void add (int v) { total = hdr_add (total, v); }
};

template <typename T>
inline T
hdr_max (T a, T b)
{
  return a < b ? b : a;
}

inline int
hdr_apply (int v)
{
  auto square = [] (int x) { return x * x; };
  return square (v);
}

inline void
hdr_check (int v)
{
  if (v > 2)
    throw std::out_of_range ("too big");
}

int other_tu (int n);
#endif
