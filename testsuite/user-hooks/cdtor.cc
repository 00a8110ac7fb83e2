// Constructors, destructors (C++ compiles each into several variants),
// virtual bases, templates and lambdas: each call runs each hook once.
// (No `delete` of a polymorphic object: its deleting-destructor variant is
// a body of its own in count mode, while the user hooks wrap the source
// destructor once; doc/user-hooks.md says so.)
struct A
{
  int v;
  A () : v (1) {}
  virtual int f () { return v; }
  virtual ~A () {}
};

struct B : virtual A
{
  int f () override { return 2; }
};

template <typename T>
T
twice (T x)
{
  return x + x;
}

int
main ()
{
  int s = 0;
  for (int i = 0; i < 3; i++)
    {
      B b;
      A &a = b;
      s += a.f ();
      A local;
      s += local.f ();
      auto l = [&] (int k) { return k + s; };
      s = l (twice (i)) + (int) twice (1.5);
    }
  return s == 0;
}
