// A C++ object with init_priority(101), linked first: its constructor runs
// before any module registers (its own and ctor-main.c's among them), so it
// is built before the runtime installs its exit handler and its destructor
// runs after the exit dump.  Constructor and destructor call obj_fn and hit
// once each (and are counted themselves).
extern "C" void note (const char *event);
extern "C" void note_late (const char *event);
extern "C" int hit (int x);

__attribute__ ((noipa)) int
obj_fn (int x)
{
  return x + 1;
}

struct Obj
{
  Obj ()
  {
    note ("obj");
    hit (obj_fn (0));
  }
  ~Obj ()
  {
    note_late ("~Obj");
    hit (obj_fn (0));
  }
};
static Obj obj __attribute__ ((init_priority (101)));
