/* plugin/tally-plugin.h - what the plugin's files share.  */
#ifndef TALLY_PLUGIN_H
#define TALLY_PLUGIN_H

#include "compat.h"

enum tally_hooks_mode { TALLY_HOOKS_INLINE, TALLY_HOOKS_CALL, TALLY_HOOKS_USER };
enum tally_at { TALLY_AT_LATE, TALLY_AT_EARLY };
enum tally_update { TALLY_UPDATE_SINGLE, TALLY_UPDATE_ATOMIC };
enum tally_measure { TALLY_MEASURE_COUNT, TALLY_MEASURE_CYCLES };

/* The options of this compilation, parsed once in plugin_init.  */
struct tally_options
{
  enum tally_hooks_mode hooks;
  enum tally_at at;
  enum tally_update update;
  const char *user_prefix; /* hooks=user:PREFIX */
  enum tally_measure measure;
};
extern struct tally_options tally_opts;

/* True while the plugin emits its own descriptor and constructor; the
   instrumentation pass leaves functions created then alone.  */
extern bool tally_emitting;

/* descriptor.cc: the module's function table.  */
struct tally_fn_info
{
  unsigned id;   /* index in the module's function table */
  tree counters; /* the function's counter array (a static variable) */
  tree desc;     /* its struct tally_fn (a static variable) */
};
tally_fn_info tally_add_function (tree fndecl);
tree tally_module_address (void);
void tally_emit_module (void *gcc_data, void *user_data);
const struct ggc_root_tab *tally_descriptor_gc_roots (void);

/* user-hooks.cc: hooks=user:PREFIX.  */
void tally_user_register (const char *plugin_name);
bool tally_user_hooks (tree fndecl, tree *enter, tree *exit);
bool tally_user_reserved (tree fndecl);
void tally_user_check_inlined (function *fun);

/* filter.cc: -fplugin-arg-tally-filter=FILE and -fplugin-arg-tally-verbose.  */
extern bool tally_verbose;
bool tally_filter_load (const char *option, const char *path);
const char *tally_filter_reason (tree fndecl, function *fun);
void tally_verbose_note (tree fndecl, const char *why);

/* measure.cc: measure=cycles, the shadow stack push and pop.  ENTRY goes
   at the end of BB (which falls through to the function's first block);
   EXIT right before the return statement RET.  */
void tally_measure_entry (function *fun, const tally_fn_info &fn,
                          basic_block bb);
void tally_measure_exit (function *fun, const tally_fn_info &fn, gimple *ret);
const struct ggc_root_tab *tally_measure_gc_roots (void);

/* hooks.cc: the entry/exit instrumentation pass.  */
opt_pass *tally_make_hooks_pass (gcc::context *ctx);
const struct ggc_root_tab *tally_hooks_gc_roots (void);

#endif /* TALLY_PLUGIN_H */
