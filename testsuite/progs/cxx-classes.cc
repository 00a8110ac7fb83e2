// C++: methods, a virtual call, templates, a lambda, a constructor and an
// exception that leaves a function without returning.
#include <cstdio>
#include <stdexcept>

namespace shapes
{
struct Shape
{
  virtual ~Shape () {}
  virtual int area () const = 0;
};

struct Square : Shape
{
  int side;
  explicit Square (int s) : side (s) {}
  int area () const override { return side * side; }
};
} // namespace shapes

template <typename T>
T
biggest (T a, T b)
{
  return a < b ? b : a;
}

int
fails (int x)
{
  if (x > 2)
    throw std::runtime_error ("too big");
  return x;
}

int
main (int argc, char **)
{
  int total = 0;
  for (int i = 0; i < 4 + argc - 1; i++)
    {
      shapes::Square sq (i);
      const shapes::Shape &s = sq;
      total += s.area ();
      total += biggest (i, 2);
      total += (int) biggest (1.5, (double) i);
      auto add = [&total] (int v) { total += v; };
      add (i);
      try
        {
          total += fails (i);
        }
      catch (const std::exception &)
        {
          total += 100;
        }
    }
  std::printf ("%d\n", total);
  return 0;
}
