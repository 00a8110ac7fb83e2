/* plugin/tally-plugin.h - what the plugin's files share.  */
#ifndef TALLY_PLUGIN_H
#define TALLY_PLUGIN_H

#include "compat.h"

#include "tally/abi.h"
/* The layout of the data file and its codec: the record blob and the
   block maps are written with its encoders.  It comes after compat.h,
   whose system.h has included the system headers it needs.  */
#include "tally/format.h"

enum tally_hooks_mode
{
  TALLY_HOOKS_INLINE,
  TALLY_HOOKS_CALL,
  TALLY_HOOKS_USER,
  TALLY_HOOKS_NONE
};
enum tally_at { TALLY_AT_LATE, TALLY_AT_EARLY };
enum tally_update { TALLY_UPDATE_SINGLE, TALLY_UPDATE_ATOMIC, TALLY_UPDATE_TLS };
enum tally_blocks { TALLY_BLOCKS_NONE, TALLY_BLOCKS_COUNT, TALLY_BLOCKS_VISITED };
enum tally_placement { TALLY_PLACE_TREE, TALLY_PLACE_BLOCK };
enum tally_measure
{
  TALLY_MEASURE_COUNT,
  TALLY_MEASURE_CYCLES,
  TALLY_MEASURE_PAPI /* cycles too, through the runtime's PAPI hooks */
};

/* The options of this compilation, parsed once in plugin_init.  */
struct tally_options
{
  enum tally_hooks_mode hooks;
  enum tally_at at;
  enum tally_update update;
  const char *user_prefix; /* hooks=user:PREFIX */
  enum tally_blocks blocks;
  enum tally_placement placement;
  enum tally_measure measure;
  bool paths; /* paths=on */
  bool exit_frames; /* exit=frames */
  bool mapped; /* counters=mapped: updates go through the unit's bias */
  bool tls_dynamic; /* tls-model=dynamic: GCC's default model for
                       update=tls's variables (__tls_get_addr in -fPIC) */
  bool entries_derived; /* entries=callers (callers.cc) */
};
extern struct tally_options tally_opts;

/* Every statement GSI of every block BB of FUN (debug statements left out
   by the second); the body is the inner loop's, so a break leaves BB.  */
#define TALLY_FOR_EACH_STMT(fun, bb, gsi) \
  FOR_EACH_BB_FN (bb, fun) \
    for (gimple_stmt_iterator gsi = gsi_start_bb (bb); !gsi_end_p (gsi); \
         gsi_next (&gsi))
#define TALLY_FOR_EACH_NONDEBUG_STMT(fun, bb, gsi) \
  FOR_EACH_BB_FN (bb, fun) \
    for (gimple_stmt_iterator gsi = gsi_start_nondebug_bb (bb); \
         !gsi_end_p (gsi); gsi_next_nondebug (&gsi))

/* Rows of a file's table of GC roots (struct ggc_root_tab): a tree
   variable, and a GC vector of trees.  Every tree the plugin keeps across
   passes is in one of these tables (tally.cc registers them).  */
#define TALLY_GC_TREE(var) \
  { &(var), 1, sizeof (tree), &gt_ggc_mx_tree_node, &gt_pch_nx_tree_node }
#define TALLY_GC_VEC(var) \
  { &(var), 1, sizeof (var), &gt_ggc_mx_vec_tree_va_gc_, \
    &gt_pch_nx_vec_tree_va_gc_ }
/* A file's table of GC roots, the rows given, and its accessor
   tally_PART_gc_roots (declared below, called by tally.cc).  */
#define TALLY_GC_ROOTS(part, ...)                                             \
  static const struct ggc_root_tab tally_##part##_roots[]                     \
      = { __VA_ARGS__, LAST_GGC_ROOT_TAB };                                   \
  const struct ggc_root_tab *tally_##part##_gc_roots (void)                   \
  {                                                                           \
    return tally_##part##_roots;                                              \
  }

/* cfg-prep.cc: the CFG made into the graph gcov counts (blocks.cc).
   Whether control may fail to come back from STMT to the next statement;
   blocks split after such calls (bit N of CALL_ENDED set for the block
   each split ended); whether BB has one successor in -fprofile-arcs'
   graph; edges with a goto locus of their own split off; loops with one
   latch each.  */
bool tally_may_not_return (function *fun, gimple *stmt);
void tally_split_after_calls (function *fun, bitmap call_ended);
bool tally_profile_single_succ_p (function *fun, basic_block bb,
                                  bitmap call_ended, bool with_abnormal);
void tally_split_goto_edges (function *fun, bitmap call_ended);
void tally_normalize_loops (function *fun);

/* Append N bytes to *OUT and return where they start, for a tally/format.h
   encoder (tally_modrec_put, tally_maphdr_put ...) to fill.  */
static inline unsigned char *
tally_put_part (vec<unsigned char> *out, unsigned n)
{
  unsigned at = out->length ();
  out->safe_grow (at + n);
  return out->address () + at;
}

/* Append V to *OUT as a little-endian u32 or u64: what the file has between
   its fixed parts (lengths, counts, arrays) and the blob's own header.  */
static inline void
tally_put_u32 (vec<unsigned char> *out, unsigned v)
{
  tally_le_put32 (tally_put_part (out, 4), v);
}
static inline void
tally_put_u64 (vec<unsigned char> *out, uint64_t v)
{
  tally_le_put64 (tally_put_part (out, 8), v);
}

/* The pieces of an asm statement as gimple_build_asm_vec takes them: a
   clobber ("memory", "cc", a register) or a constraint, and an operand of
   constraint C and value V.  */
static inline tree
tally_asm_str (const char *s)
{
  return build_tree_list (NULL_TREE, build_string (strlen (s) + 1, s));
}
static inline tree
tally_asm_op (const char *c, tree v)
{
  return build_tree_list (tally_asm_str (c), v);
}

/* updates.cc: a volatile asm statement calling SYM, a register-preserving
   entry point of the runtime, below the red zone and through the GOT.  */
gasm *tally_asm_call (const char *sym, vec<tree, va_gc> *inputs,
                      vec<tree, va_gc> *outputs, vec<tree, va_gc> *clobbers);

/* True while the plugin emits its own descriptor and constructor; the
   instrumentation pass leaves functions created then alone.  */
extern bool tally_emitting;

/* descriptor.cc: the module's function table.  */
struct tally_fn_info
{
  unsigned id;   /* index in the module's function table */
  tree counters; /* the counter array the code updates: a static variable,
                    or a thread-local one with update=tls */
  tree shared;   /* the static counter array (= counters but for
                    update=tls) */
  tree visited;  /* blocks=visited: the byte array, else NULL_TREE */
  tree desc;     /* its struct tally_fn (a static variable) */
};
/* What the pass decided for one function: how many counters (at least
   TALLY_C_CORE), visited bytes, the block map, TALLY_FN_* flags.  */
struct tally_fn_layout
{
  unsigned ncounters;
  unsigned nvisited;
  vec<unsigned char> map; /* empty without blocks */
  unsigned flags;
};
tally_fn_info tally_add_function (tree fndecl, const tally_fn_layout &layout);
/* The same again for function ID of the unit (the late expansion of
   at=early hooks, frames.cc).  */
tally_fn_info tally_function_info (unsigned id);
/* A file-scope static variable of the plugin's, zero unless the caller
   gives it DECL_INITIAL first, kept by every IPA clean-up.  */
tree tally_static_var (const char *name, tree type);
/* The layout of a function with entry/exit counters only.  */
static inline tally_fn_layout
tally_core_layout (void)
{
  tally_fn_layout l;
  l.ncounters = TALLY_C_CORE;
  l.nvisited = 0;
  l.map = vNULL;
  l.flags = 0;
  return l;
}
tree tally_module_address (void);
/* The records of include/tally/abi.h as GCC types: NAME's fields in
   order, laid out and checked to have the size the C compiler gives the
   struct (TALLY_RECORD: the struct C's size, FIELDS an array).  */
struct tally_field
{
  const char *name;
  tree type;
};
tree tally_record_type (const char *name, const tally_field *fields, size_t n,
                        unsigned expected_size);
#define TALLY_RECORD(NAME, FIELDS, C)                                          \
  tally_record_type (NAME, FIELDS, ARRAY_SIZE (FIELDS), sizeof (C))
/* counters=mapped: the unit's bias variable (struct tally_module.bias),
   of a type whose alias set no counter shares, so a bias load can be
   hoisted past counter stores but not past a call.  */
tree tally_bias_decl (void);
/* counters=mapped: append to *SEQ the load of the bias and return a
   pointer temporary holding the address of REF (an element of a counter
   or visited array) plus the bias.  */
tree tally_mapped_address (function *fun, tree ref, location_t loc,
                           gimple_seq *seq);
/* update=tls: the thread-local "attached" word of this unit.  */
tree tally_tls_live_decl (void);
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
/* Whether a filter's min-statements rule can leave a function out (that
   needs its body: tally_filter_reason without FUN cannot tell).  */
bool tally_filter_by_size (void);
void tally_verbose_note (tree fndecl, const char *why);

/* select.cc: -fplugin-arg-tally-select=PROFILE[:P%].  The reason FNDECL is
   not selected (NULL: selected, or no select= given), and for a selected
   one its share of the profile's time, for the verbose note.  */
bool tally_select_load (const char *option, const char *value);
const char *tally_select_reason (tree fndecl);
const char *tally_select_note (tree fndecl);

/* profile.cc: -fplugin-arg-tally-profile=FILE.  Read FILE (an error naming
   OPTION and FILE if it is not a readable data file with block counts);
   whether one was given; and the measured counts of FUN, whose block map
   as planned (version 1, no value given yet) is MAP: its blocks' by map
   number and its normal edges' in map order (false: not in the profile,
   or changed since; the dump says which).  */
bool tally_profile_load (const char *option, const char *value);
bool tally_profile_given (void);
bool tally_profile_counts (function *fun, const vec<unsigned char> &map,
                           const uint64_t **blocks, const uint64_t **edges);

/* measure.cc: measure=cycles, the shadow stack push and pop.  ENTRY goes
   at the end of BB (which falls through to the function's first block);
   EXIT right before the return statement RET.  */
void tally_measure_entry (function *fun, const tally_fn_info &fn,
                          basic_block bb, bool frames,
                          location_t loc = UNKNOWN_LOCATION);
/* Append SEQ to the end of BB (which may be empty: a new block) and give
   its calls their edges.  */
void tally_append_to_block (function *fun, basic_block bb, gimple_seq seq);
/* The name of the temporaries that hold the CFAs the measure hooks read
   (measure.cc), so that the late fix-up (tally_fix_inlined_cfa) finds
   them after inlining.  */
#define TALLY_CFA_TEMP "tally_cfa"
/* frames.cc, exit=frames: before the return RET of a function with a
   return frame, what the trampoline clobbers (frames.cc explains).  */
void tally_frames_return_clobber (gimple *ret);
/* at=early exit=frames: the mark that stands for the entry (ENTRY) or an
   exit hook of FN, counted if COUNT, until after inlining, when each mark
   of the early pass is made the hook it stands for (tally_cfa's pass).  */
gasm *tally_early_marker (function *fun, const tally_fn_info &fn, bool entry,
                          bool count, location_t loc);
void tally_expand_early_frames (function *fun);
/* at=early: lower the CFAs our hooks read in inlined functions (see
   frames.cc); the pass that does it runs after "optimized".  */
unsigned tally_fix_inlined_cfa (function *fun);
opt_pass *tally_make_cfa_pass (gcc::context *ctx);
/* Whether FUN can return through the exit=frames trampoline (else it gets
   return-site exits); WHY says why not.  */
bool tally_frames_ok (function *fun, const char **why);
/* PLUGIN_ALL_IPA_PASSES_END with exit=frames: whether the unit reads a
   caller's return address (then no function of it gets return frames;
   a warning says so).  */
void tally_frames_scan_unit (void *, void *);
void tally_measure_exit (function *fun, const tally_fn_info &fn, gimple *ret);
const struct ggc_root_tab *tally_measure_gc_roots (void);

/* blocks.cc: blocks=count|visited.  With ENTRY_FROM_CALLERS the normal
   edge out of ENTRY gets no counter and the map is kind 6 (callers.cc), if
   the plan stays a spanning tree; tally_blocks_entry_from_callers says
   whether it did.  The map block number of BB, or -1.  */
struct tally_block_plan;
tally_block_plan *tally_blocks_plan (function *fun, tally_fn_layout *layout,
                                     bool entry_from_callers);
bool tally_blocks_entry_from_callers (const tally_block_plan *plan);
int tally_blocks_map_block (const tally_block_plan *plan, basic_block bb);

/* callers.cc: entries=callers.  Whether FUN's entry count can come from
   its callers' blocks (INSTRUMENTED: whether a function will get block
   counters); the direct calls of FUN, a function given block counters by
   PLAN as function ID (PLAN NULL: a function left uninstrumented); that
   FNDECL, function ID, has its entry from its callers; and, at the end of
   the unit, the callers trailer of function ID's version 1 map appended to
   *MAP (false if it has none).  */
bool tally_callers_entry_derived (function *fun, bool (*instrumented) (tree));
void tally_callers_note_calls (function *fun, const tally_block_plan *plan,
                               unsigned id);
void tally_callers_set_derived (tree fndecl, unsigned id);
bool tally_callers_trailer (unsigned id, vec<unsigned char> *map);
void tally_blocks_insert (function *fun, tally_block_plan *plan,
                          const tally_fn_info &fn);
/* blocks=count at=late, update=single: the counters of loops without calls
   or asm held in registers across the loop (promote.cc).  Last, when every
   update of FN's counters is in place.  */
void tally_blocks_promote (function *fun, const tally_fn_info &fn);

/* hooks.cc: the entry/exit instrumentation pass.  */
/* Append to *SEQ the update of counter K of FN by the hooks (no user
   hooks).  */
void tally_count_hook (function *fun, const tally_fn_info &fn, unsigned k,
                       location_t loc, gimple_seq *seq);
/* An external runtime function NAME of TYPE: nothrow and leaf (the runtime
   never calls back into the instrumented unit), so GCC keeps its
   assumptions about the caller's memory around the call.  */
tree tally_runtime_decl (const char *name, tree type);
/* Give CALL (in FUN, run COUNT times) a call-graph edge, or each call in
   SEQ (to be placed in BB) one.  Before the "cgraph" pass of the lowering
   stage the edges are built from the body; after it, a call without an
   edge is a broken call graph.  */
void tally_add_call_edge (function *fun, gcall *call, profile_count count);
void tally_add_call_edges (function *fun, gimple_seq seq, basic_block bb);
/* updates.cc: a temporary of TYPE: an SSA name once FUN is in SSA form,
   else a register variable.  */
tree tally_make_temp (function *fun, tree type);
/* Append to *SEQ "OLD = REF; NEW = OLD + N; REF = NEW" at LOC, the
   three statements of every update=single|tls counter update (the form
   tally_counter_update_p recognises); returns NEW.  */
tree tally_build_add (function *fun, tree ref, tree n, location_t loc,
                      gimple_seq *seq);
/* Append to *SEQ "ARRAY[K] += 1" (update=single|tls) or its relaxed atomic
   form (update=atomic).  */
void tally_build_increment (function *fun, tree array, unsigned k,
                            location_t loc, gimple_seq *seq);
/* STORE ends a counter update "OLD = ARRAY[K]; NEW = OLD + N; ARRAY[K] =
   NEW" of one block: its load in *LOAD, its add in *ADD.  */
bool tally_counter_update_p (gimple *store, tree array, gimple **load,
                             gimple **add);
/* An RTL pass NAME (-fdump-rtl-NAME) that runs WORK (updates.cc).  */
opt_pass *tally_make_rtl_pass (gcc::context *ctx, const char *name,
                               unsigned int (*work) (void));
/* x86-64 at=late, update=single|tls: the counter updates of ARRAY left
   in FUN's memory after the pass become one "addq" asm statement each.  */
void tally_updates_to_asm (function *fun, tree array);
/* ... and after reload the RTL pass that makes each such asm the add
   instruction itself.  */
opt_pass *tally_make_counter_insn_pass (gcc::context *ctx);
/* The template of those asm statements.  */
extern const char *const tally_counter_asm_template;
/* update=tls, x86-64: right after expand, the RTL pass that puts each
   counter asm's thread-pointer offset in its address as a constant
   (promote.cc).  */
opt_pass *tally_make_tls_offsets_pass (gcc::context *ctx);
opt_pass *tally_make_hooks_pass (gcc::context *ctx);
/* hooks=call on x86-64: the RTL pass that calls __tally_count without the
   red-zone step where nothing is kept below the stack pointer.  */
opt_pass *tally_make_red_zone_pass (gcc::context *ctx);
const struct ggc_root_tab *tally_hooks_gc_roots (void);

#endif /* TALLY_PLUGIN_H */
