// Built without the plugin and linked before late.cc, so that its
// priority-101 initialisation runs before late.cc's module registration:
// what it registers for exit runs after the runtime's exit dump.
#include <cstdlib>

extern "C" void late_early_atexit (void);
extern "C" void late_early_dtor (void);

struct Early
{
  Early () { std::atexit (late_early_atexit); }
  ~Early () { late_early_dtor (); }
};
static Early early __attribute__ ((init_priority (101)));
