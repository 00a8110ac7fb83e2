// Counts made after the runtime's exit dump must still reach the file.
// Each late_* function is called once, at one moment of the exit sequence:
//   late_main_atexit   an atexit handler registered in main (runs before
//                      the runtime's handler: it was registered later)
//   late_static_dtor   the destructor of a static object of this unit
//                      (likewise registered after the runtime's handler)
//   late_early_atexit  an atexit handler registered by late-early.cc
//                      before the first module registration: runs after
//                      the exit dump
//   late_early_dtor    the destructor of a static object of late-early.cc,
//                      built before the first registration: runs after it
//   late_elf_dtor      an ELF destructor: runs after the exit dump
// Each module checks for such counts when it unregisters, in its own ELF
// destructor (priority 101: after elf_dtor).  With LATE_EXIT set, elf_dtor
// ends the process by _exit before that: the file is the exit dump's.
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

static volatile int sink;

#define LATE(name) \
  extern "C" __attribute__ ((noipa)) void name (void) { sink = sink + 1; }
LATE (late_main_atexit)
LATE (late_static_dtor)
LATE (late_early_atexit)
LATE (late_early_dtor)
LATE (late_elf_dtor)

struct Local
{
  ~Local () { late_static_dtor (); }
};
static Local local;

__attribute__ ((destructor)) static void
elf_dtor (void)
{
  late_elf_dtor ();
  if (std::getenv ("LATE_EXIT"))
    {
      std::fflush (stdout); // exit flushes it only after the destructors
      _exit (0);
    }
}

int
main ()
{
  atexit (late_main_atexit);
  std::printf ("ok\n");
  return 0;
}
