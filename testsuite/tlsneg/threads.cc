// update=tls with std::thread (run-tlsneg.py, "std-thread").
#include <thread>
#include <vector>

volatile long sink;
__attribute__ ((noinline)) void f (int x) { sink += x; }

struct at_exit
{
  ~at_exit () { f (1); f (1); }
};

int
main ()
{
  std::vector<std::thread> ts;
  for (int n = 1; n <= 5; n++)
    ts.emplace_back ([n] {
      static thread_local at_exit e;
      (void) &e;
      for (int i = 0; i < n; i++)
        f (1);
    });
  for (auto &t : ts)
    t.join ();
  f (1);
  return 0;
}
