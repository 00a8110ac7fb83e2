/* plugin/frames.cc - exit=frames (return frames) and the pass that
 * finishes at=early's measure hooks after inlining (tally_cfa).
 *
 * Options: exit=returns|frames, with measure=cycles|papi, hooks=inline|call
 * and at=early|late.
 *
 * exit=frames: a function whose return the runtime's trampoline can take
 * (tally_frames_ok: no x87 or wide vector return value, no read of a
 * return address in the unit) gets its exit hook from the trampoline
 * instead of a hook before each return (measure.cc's entry swaps its
 * return slot); before each return only an empty asm that clobbers what
 * the trampoline does:
 *
 *   int f (int x)                    int f (int x)
 *   {                                {
 *     if (x) return g (x);             enter (swaps the return address);
 *     return 0;                        if (x) { t = g (x); clobber; return t; }
 *   }                                  clobber; return 0;
 *                                    }
 *
 * at=early: the hooks go in before inlining.  With exit=frames each is
 * only a mark (tally_early_marker) until after inlining, when the
 * tally_cfa pass makes the hooks (tally_expand_early_frames: return frames
 * for a function whose body is its own, out of line); and the CFAs the
 * hooks of inlined functions read are lowered by their inlining depth
 * (tally_fix_inlined_cfa).  */
#include "tally-plugin.h"

/* exit=frames: the first call in the unit that reads a caller's return
   address, __builtin_return_address (N) or __builtin_frame_address (N)
   with N >= 1 (UNKNOWN_LOCATION: none).  The callee reading it is another
   function than the caller whose return slot the entry hook swapped, and
   the caller may be any function of the unit (through pointers too), so
   then every function of the unit keeps its return address.  */
static location_t reads_callers_at = UNKNOWN_LOCATION;
static bool reads_callers;

/* Whether STMT reads a return address or frame; LEVEL gets the level
   (an unknown level counts as 1).  */
static bool
reads_frame (gimple *stmt, unsigned HOST_WIDE_INT *level)
{
  if (!gimple_call_builtin_p (stmt, BUILT_IN_RETURN_ADDRESS)
      && !gimple_call_builtin_p (stmt, BUILT_IN_FRAME_ADDRESS))
    return false;
  tree arg = gimple_call_num_args (stmt) ? gimple_call_arg (stmt, 0) : NULL_TREE;
  *level = arg && tree_fits_uhwi_p (arg) ? tree_to_uhwi (arg) : 1;
  return true;
}

/* Look for such calls in FUN; the warning names the first in the
   source.  */
static void
scan_callers (function *fun)
{
  basic_block bb;
  if (!fun || !fun->cfg)
    return;
  TALLY_FOR_EACH_STMT (fun, bb, gsi)
      {
        unsigned HOST_WIDE_INT level;
        location_t loc
            = get_pure_location (gimple_location (gsi_stmt (gsi)));
        if (reads_frame (gsi_stmt (gsi), &level) && level >= 1
            && (!reads_callers || loc < reads_callers_at))
          {
            reads_callers = true;
            reads_callers_at = loc;
          }
      }
}

void
tally_frames_scan_unit (void *, void *)
{
  cgraph_node *node;
  FOR_EACH_FUNCTION_WITH_GIMPLE_BODY (node)
    scan_callers (DECL_STRUCT_FUNCTION (node->decl));
  if (reads_callers)
    warning_at (reads_callers_at, 0,
                "%<-fplugin-arg-tally-exit=frames%>: this unit reads the "
                "return address of a caller (%<__builtin_return_address%> "
                "or %<__builtin_frame_address%> with a level of 1 or more), "
                "which the return frames would replace: every function of "
                "the unit gets return-site exits");
}

bool
tally_frames_ok (function *fun, const char **why)
{
  /* The trampoline saves rax, rdx, xmm0 and xmm1: not x87 st0 (long
     double) nor the upper halves of wider vectors.  */
  tree type = TREE_TYPE (TREE_TYPE (fun->decl));
  tree scalar = TREE_CODE (type) == COMPLEX_TYPE ? TREE_TYPE (type) : type;
  if ((SCALAR_FLOAT_TYPE_P (scalar) && TYPE_PRECISION (scalar) > 64)
      || (TREE_CODE (type) == VECTOR_TYPE && tree_fits_uhwi_p (TYPE_SIZE_UNIT (type))
          && tree_to_uhwi (TYPE_SIZE_UNIT (type)) > 16))
    {
      *why = "exit=frames: returns a value the trampoline does not keep "
             "(x87 or wider than 16 bytes)";
      return false;
    }
  /* A body the scan did not see counts from here on.  */
  if (!reads_callers)
    scan_callers (fun);
  if (reads_callers)
    {
      *why = "exit=frames: the unit reads a caller's return address";
      return false;
    }
  basic_block bb;
  TALLY_FOR_EACH_STMT (fun, bb, gsi)
      {
        unsigned HOST_WIDE_INT level;
        if (reads_frame (gsi_stmt (gsi), &level)
            || gimple_call_builtin_p (gsi_stmt (gsi), BUILT_IN_EH_RETURN)
            || gimple_call_builtin_p (gsi_stmt (gsi), BUILT_IN_UNWIND_INIT))
          {
            *why = "exit=frames: reads or changes its own return address";
            return false;
          }
      }
  return true;
}

/* exit=frames: before each return of a function with a return frame,
   an empty asm statement that clobbers every call-clobbered register but
   the return values': the trampoline runs C code after the function
   returns, and GCC's -fipa-ra would otherwise let the callers keep values
   in the registers the function itself leaves alone (hooks=inline, whose
   entry calls nothing).  At the return only the return value is live, so
   it costs nothing.  */
void
tally_frames_return_clobber (gimple *ret)
{
  static const char *const regs[]
      = { "rcx", "rsi", "rdi", "r8", "r9", "r10", "r11", "xmm2", "xmm3",
          "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
          "xmm12", "xmm13", "xmm14", "xmm15", "cc" };
  if (!tally_target_x86_64 ())
    return;
  vec<tree, va_gc> *clobbers = NULL;
  for (const char *r : regs)
    vec_safe_push (clobbers, tally_asm_str (r));
  gasm *g = gimple_build_asm_vec ("", NULL, NULL, clobbers, NULL);
  gimple_asm_set_volatile (g, true);
  gimple_set_location (g, gimple_location (ret));
  gimple_stmt_iterator gsi = gsi_for_stmt (ret);
  gsi_insert_before (&gsi, g, GSI_SAME_STMT);
}

/* at=early: the hooks go in before inlining, so a function inlined into
   another reads the CFA of the function it was inlined into, and its frame
   would look like that function's (the entry would close it as stale).
   After inlining, each of our CFAs is lowered by the number of inlined
   scopes around it: a callee inlined at depth K gets CFA - K, still above
   every real callee's CFA (at most CFA - 16) and below its caller's.  */
unsigned
tally_fix_inlined_cfa (function *fun)
{
  if (tally_opts.exit_frames)
    tally_expand_early_frames (fun);
  unsigned changed = 0;
  basic_block bb;
  TALLY_FOR_EACH_STMT (fun, bb, gsi)
      {
        gimple *stmt = gsi_stmt (gsi);
        if (!gimple_call_builtin_p (stmt, BUILT_IN_DWARF_CFA))
          continue;
        tree lhs = gimple_call_lhs (stmt);
        if (!lhs
            || TREE_CODE (lhs) != SSA_NAME || !SSA_NAME_IDENTIFIER (lhs)
            || strncmp (IDENTIFIER_POINTER (SSA_NAME_IDENTIFIER (lhs)),
                        TALLY_CFA_TEMP, strlen (TALLY_CFA_TEMP)) != 0)
          continue;
        HOST_WIDE_INT depth = 0;
        for (tree b = gimple_block (stmt); b && TREE_CODE (b) == BLOCK;
             b = BLOCK_SUPERCONTEXT (b))
          if (inlined_function_outer_scope_p (b))
            depth++;
        if (!depth)
          continue;
        tree raw = make_ssa_name (ptr_type_node);
        gimple_call_set_lhs (stmt, raw);
        gimple *adj = gimple_build_assign (lhs, POINTER_PLUS_EXPR, raw,
                                           size_int (-depth));
        gimple_set_location (adj, gimple_location (stmt));
        gsi_insert_after (&gsi, adj, GSI_SAME_STMT);
        update_stmt (stmt);
        changed++;
      }
  if (changed && dump_file)
    fprintf (dump_file, "tally: %u CFAs of inlined functions lowered\n",
             changed);
  return changed;
}

namespace {

const pass_data tally_cfa_pass_data = {
  GIMPLE_PASS,
  "tally_cfa",     /* -fdump-tree-tally_cfa */
  OPTGROUP_NONE,
  TV_NONE,
  PROP_ssa,
  0, 0, 0, 0
};

class tally_cfa_pass : public gimple_opt_pass
{
public:
  tally_cfa_pass (gcc::context *ctx) : gimple_opt_pass (tally_cfa_pass_data, ctx)
  {
  }
  unsigned int execute (function *fun) final override
  {
    bool marks = tally_opts.exit_frames;
    tally_fix_inlined_cfa (fun);
    if (marks && gimple_in_ssa_p (fun))
      {
        /* The hooks made of the marks store and call.  */
        mark_virtual_operands_for_renaming (fun);
        return TODO_update_ssa_only_virtuals;
      }
    return 0;
  }
};

} // namespace

opt_pass *
tally_make_cfa_pass (gcc::context *ctx)
{
  return new tally_cfa_pass (ctx);
}

/* at=early exit=frames: the mark of an entry (ENTRY) or exit hook of FN,
   counted by the hooks if COUNT, a volatile asm with nothing but its text
   ("# tally-hook enter|exit ID COUNT") that clobbers memory as the hooks
   do, in the function's outermost scope, so that inlining copies it with
   the scopes that tell the copies apart.  */
#define EARLY_MARK "# tally-hook "
gasm *
tally_early_marker (function *fun, const tally_fn_info &fn, bool entry,
                    bool count, location_t loc)
{
  char text[64];
  snprintf (text, sizeof text, EARLY_MARK "%s %u %d", entry ? "enter" : "exit",
            fn.id, count ? 1 : 0);
  vec<tree, va_gc> *clobbers = NULL;
  vec_safe_push (clobbers, tally_asm_str ("memory"));
  gasm *g = gimple_build_asm_vec (ggc_strdup (text), NULL, NULL, clobbers,
                                  NULL);
  gimple_asm_set_volatile (g, true);
  gimple_set_location (g, loc);
  tree outer = DECL_INITIAL (fun->decl);
  if (!gimple_block (g) && outer && TREE_CODE (outer) == BLOCK)
    gimple_set_block (g, outer);
  return g;
}

/* Whether FUN calls a part GCC split off a function (partial inlining):
   such a part returns for the function it came from, so that function's
   activation has returns in another body than its entry.  */
static bool
calls_split_part (function *fun)
{
  basic_block bb;
  TALLY_FOR_EACH_STMT (fun, bb, gsi)
      {
        tree callee = is_gimple_call (gsi_stmt (gsi))
                          ? gimple_call_fndecl (gsi_stmt (gsi)) : NULL_TREE;
        cgraph_node *n = callee ? cgraph_node::get (callee) : NULL;
        if (n && n->split_part)
          return true;
      }
  return false;
}

void
tally_expand_early_frames (function *fun)
{
  struct mark
  {
    gimple *stmt;
    bool entry, count;
    unsigned id, depth;
  };
  auto_vec<mark> marks;
  basic_block bb;
  TALLY_FOR_EACH_STMT (fun, bb, gsi)
      {
        gasm *g = dyn_cast<gasm *> (gsi_stmt (gsi));
        if (!g || strncmp (gimple_asm_string (g), EARLY_MARK,
                           sizeof EARLY_MARK - 1) != 0)
          continue;
        mark m;
        char kind[8];
        int count;
        if (sscanf (gimple_asm_string (g) + sizeof EARLY_MARK - 1,
                    "%7s %u %d", kind, &m.id, &count) != 3)
          gcc_unreachable ();
        m.stmt = g;
        m.entry = strcmp (kind, "enter") == 0;
        m.count = count != 0;
        m.depth = 0;
        for (tree b = gimple_block (g); b && TREE_CODE (b) == BLOCK;
             b = BLOCK_SUPERCONTEXT (b))
          if (inlined_function_outer_scope_p (b))
            m.depth++;
        marks.safe_push (m);
      }
  if (marks.is_empty ())
    return;
  /* 1. Which functions get return frames here: those whose entry and
     returns are in this body, outside any inlined scope (this body is
     theirs, out of line), where its return value and its reads of return
     addresses allow (tally_frames_ok), and not split by GCC.  */
  const char *why = NULL;
  bool body_ok = tally_frames_ok (fun, &why);
  if (body_ok && calls_split_part (fun))
    {
      body_ok = false;
      why = "exit=frames: GCC split it (partial inlining)";
    }
  bitmap entry0 = BITMAP_ALLOC (NULL), exit0 = BITMAP_ALLOC (NULL);
  for (const mark &m : marks)
    if (m.depth == 0)
      bitmap_set_bit (m.entry ? entry0 : exit0, m.id);
  auto frames_for = [&] (unsigned id) {
    return body_ok && bitmap_bit_p (entry0, id) && bitmap_bit_p (exit0, id);
  };
  if (dump_file)
    for (const mark &m : marks)
      if (m.entry)
        {
          if (m.depth)
            fprintf (dump_file, "tally: function %u inlined: return-site "
                     "exits\n", m.id);
          else if (frames_for (m.id))
            fprintf (dump_file, "tally: function %u out of line: return "
                     "frames\n", m.id);
          else
            fprintf (dump_file, "tally: function %u gets return-site exits: "
                     "%s\n", m.id,
                     !bitmap_bit_p (exit0, m.id)
                         ? "exit=frames: it never returns here" : why);
        }
  /* 2. The hooks, each where its mark is, which goes.  */
  for (const mark &m : marks)
    {
      tally_fn_info fn = tally_function_info (m.id);
      bool frames = m.depth == 0 && frames_for (m.id);
      location_t loc = gimple_location (m.stmt);
      gimple_stmt_iterator gsi = gsi_for_stmt (m.stmt);
      if (m.entry)
        {
          gimple_seq seq = NULL;
          if (m.count)
            tally_count_hook (fun, fn, TALLY_C_ENTRIES, loc, &seq);
          basic_block b = gimple_bb (m.stmt);
          gsi_prev (&gsi);
          edge e = gsi_end_p (gsi) ? split_block_after_labels (b)
                                   : split_block (b, gsi_stmt (gsi));
          b = e->src;
          if (seq)
            tally_append_to_block (fun, b, seq);
          tally_measure_entry (fun, fn, b, frames, loc);
        }
      else if (frames)
        tally_frames_return_clobber (m.stmt);
      else
        {
          if (m.count)
            {
              gimple_seq seq = NULL;
              tally_count_hook (fun, fn, TALLY_C_EXITS, loc, &seq);
              tally_add_call_edges (fun, seq, gimple_bb (m.stmt));
              gsi_insert_seq_before (&gsi, seq, GSI_SAME_STMT);
            }
          tally_measure_exit (fun, fn, m.stmt);
        }
      gsi = gsi_for_stmt (m.stmt);
      gsi_remove (&gsi, true);
    }
  BITMAP_FREE (entry0);
  BITMAP_FREE (exit0);
}
