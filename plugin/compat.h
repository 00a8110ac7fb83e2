/* plugin/compat.h - every GCC header the plugin uses, and every
 * GCC-version difference, in one place (the kernel's gcc-common.h idea).
 *
 * GCC 11 to 16 are supported, each built and tested with its own suite
 * (testsuite/compilers/run, doc/compilers.md).  Anything that differs
 * between versions gets a wrapper here, so the pass files contain no
 * version #if at all:
 *   - loops_list (GCC 12's range over a function's loops), for GCC 11;
 *   - tally_wformat_normalizes_loops: whether -Wformat's pass puts the
 *     loops in normal form at -O0 before gcov's (GCC 12 and later).
 * Where a later GCC only asks more of its callers (scev_initialize wanting
 * loops in normal form from 13, the verifier wanting a setjmp first in its
 * block from 14, decl_default_tls_model reading the variable's symbol-table
 * node and PLUGIN_PRE_GENERICIZE coming before genericization in 16), the
 * pass files do what every version accepts, with no wrapper.  */
#ifndef TALLY_COMPAT_H
#define TALLY_COMPAT_H

#include "gcc-plugin.h"
#include "plugin-version.h"

#if GCCPLUGIN_VERSION < 11000 || GCCPLUGIN_VERSION >= 17000
#error "tally supports the plugin headers of GCC 11 to 16 (testsuite/compilers/run tests each)"
#endif

#include "config.h"
#include "system.h"
#include "coretypes.h"
#include "backend.h"
#include "tree.h"
#include "gimple.h"
#include "tree-pass.h"
#include "context.h"
#include "ssa.h"
#include "cgraph.h"
#include "gimple-iterator.h"
#include "gimple-ssa.h"
#include "cfgloop.h"
#include "tree-cfg.h"
#include "tree-eh.h"
#include "cfgloopmanip.h"
#include "tree-iterator.h"
#include "memmodel.h"
#include "gimplify.h"
#include "intl.h"
#include "target.h"
#include "tree-nested.h"
#include "tree-into-ssa.h"
#include "stringpool.h"
#include "stor-layout.h"
#include "varasm.h"
#include "attribs.h"
#include "diagnostic-core.h"
#include "langhooks.h"
#include "toplev.h"
#include "flags.h"
#include "options.h"
#include "builtins.h"
#include "ggc.h"
#include "sreal.h"
#include "gtype-desc.h"
#include "rtl.h"
#include "emit-rtl.h"
#include "insn-config.h"
#include "recog.h"

/* The version the headers describe.  plugin-version.h defines it as a static
   in every file that includes it; this keeps it from being "unused".  */
static inline struct plugin_gcc_version *
tally_gcc_headers_version (void)
{
  return &gcc_version;
}

/* GCC 12: a function's loops as a range, `for (auto loop : loops_list (fun,
   0))' (cfgloop.h); GCC 11 has the FOR_EACH_LOOP_FN macro over a
   loop_iterator instead.  As GCC 12's, the loops are listed when the range
   is made and a loop removed meanwhile is skipped.  */
#if GCCPLUGIN_VERSION < 12000
class loops_list
{
public:
  loops_list (function *fn, unsigned flags) : fn (fn)
  {
    class loop *l;
    for (loop_iterator li (fn, &l, flags); l; l = li.next ())
      nums.safe_push (l->num);
  }
  class iterator
  {
  public:
    iterator (const loops_list *list, unsigned i) : list (list), i (i) { skip (); }
    class loop *operator* () const { return get_loop (list->fn, list->nums[i]); }
    iterator &operator++ ()
    {
      i++;
      skip ();
      return *this;
    }
    bool operator!= (const iterator &o) const { return i != o.i; }

  private:
    void skip ()
    {
      while (i < list->nums.length () && !get_loop (list->fn, list->nums[i]))
        i++;
    }
    const loops_list *list;
    unsigned i;
  };
  iterator begin () const { return iterator (this, 0); }
  iterator end () const { return iterator (this, nums.length ()); }

private:
  function *fn;
  auto_vec<int, 16> nums;
};
#endif

/* At -O0, whether GCC's printf-warning pass (-Wformat-overflow and
   -Wformat-truncation, which -Wall and -Wformat turn on) puts the loops in
   normal form before -fprofile-arcs reads the blocks, which changes gcov's
   blocks (cfg-prep.cc's tally_normalize_loops does the same).  GCC 12 runs
   that pass after into-SSA and initialises the loops for it at every
   level; GCC 11 runs it before SSA and initialises them only when
   optimising (gimple-ssa-sprintf.c).  */
static inline bool
tally_wformat_normalizes_loops (void)
{
  return GCCPLUGIN_VERSION >= 12000;
}

/* Whether the code being compiled is x86-64 with 64-bit pointers (not -m32
   or -mx32): the runtime's register-preserving entry points (rt/hooks.c)
   exist there only.  The plugin runs in a native x86-64 cc1 or not at
   all.  */
static inline bool
tally_target_x86_64 (void)
{
#if defined(__x86_64__)
  return BITS_PER_WORD == 64 && POINTER_SIZE == 64;
#else
  return false;
#endif
}

/* After the prologue pass: whether the current function keeps anything
   below the stack pointer (x86-64's 128-byte red zone, leaves only).  When
   it does not, the runtime's register-preserving entry points can be
   called without stepping over the red zone first.  The frame layout
   (config/i386/i386.h) is the same in GCC 11 to 16.  */
static inline bool
tally_red_zone_used (void)
{
#if defined(__x86_64__)
  return cfun->machine->frame.red_zone_size != 0;
#else
  return true;
#endif
}

/* Version string of the headers this plugin was built against.  */
#define TALLY_GCC_BUILT_FOR                                                   \
  TALLY_STR (GCCPLUGIN_VERSION_MAJOR) "." TALLY_STR (GCCPLUGIN_VERSION_MINOR) \
      "." TALLY_STR (GCCPLUGIN_VERSION_PATCHLEVEL)
#define TALLY_STR(x) TALLY_STR2 (x)
#define TALLY_STR2(x) #x

#endif /* TALLY_COMPAT_H */
