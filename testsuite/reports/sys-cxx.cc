// C++ with library templates from system headers: some called (push_back,
// the sort), most never (the rest of <vector>, <algorithm>, <string>),
// a header included with -isystem (sysinc/) whose functions GCC treats as
// a system header's, and one of the user's.  A never-called function of
// each is emitted (its address is taken).  Prints how often it called
// push_back.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <sys-helpers.h> /* -isystem sysinc */
#include "user-helpers.h"

static int
square (int x)
{
  return x * x;
}

int
main (int argc, char **argv)
{
  int (*volatile unused_sys) (int) = sys_helper_unused;
  int (*volatile unused_user) (int) = user_helper_unused;
  (void) unused_sys;
  (void) unused_user;
  std::vector<int> v;
  int pushes = 0;
  for (int i = 0; i < 100 + argc; i++, pushes++)
    v.push_back (square (i % 17));
  std::sort (v.begin (), v.end ());
  std::string s (argv[0]);
  printf ("push_back %d sys_helper_used %d %zu %d\n", pushes,
          sys_helper_used (pushes), s.size () > 0, v[0]);
  return 0;
}
