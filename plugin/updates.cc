/* plugin/updates.cc - the counter updates the hooks and blocks make, and
 * their x86-64 forms.
 *
 * Options: update=single|atomic|tls, hooks=inline|call, at=late.
 *
 * A counter update is three statements, "OLD = ARRAY[K]; NEW = OLD + N;
 * ARRAY[K] = NEW" (tally_build_add), or a relaxed __atomic_fetch_add
 * with update=atomic (tally_build_increment).  On x86-64 at=late, those
 * left in memory after the pass become one asm each, and after reload
 * the add instruction itself:
 *
 *   __tally.c.7[0] = __tally.c.7[0] + 1;   =>  addq $1, __tally.c.7(%rip)
 *
 * (tally_updates_to_asm, the tally_addq pass).  The runtime's
 * register-preserving entry points are called by asm statements that step
 * below the red zone (tally_asm_call); with hooks=call, the tally_redzone
 * pass drops that step where nothing is kept below the stack pointer.  */
#include "tally-plugin.h"

/* A volatile asm statement calling SYM, a register-preserving entry point
   of the runtime, with the operands given: it steps below the red zone (a
   leaf may keep data there) and calls through the GOT (resolved at load:
   glibc's lazy PLT resolver, which clobbers r10 and r11, never runs; a
   direct call where the runtime is in the same image).  */
static const char step_below[] = "leaq -128(%%rsp), %%rsp\n\t";
static const char step_back[] = "\n\tleaq 128(%%rsp), %%rsp";

gasm *
tally_asm_call (const char *sym, vec<tree, va_gc> *inputs,
                vec<tree, va_gc> *outputs, vec<tree, va_gc> *clobbers)
{
  char text[160];
  snprintf (text, sizeof text, "%scall *%s@GOTPCREL(%%%%rip)%s", step_below,
            sym, step_back);
  gasm *a = gimple_build_asm_vec (ggc_strdup (text), inputs, outputs, clobbers,
                                  NULL);
  gimple_asm_set_volatile (a, true);
  return a;
}

tree
tally_make_temp (function *fun, tree type)
{
  if (gimple_in_ssa_p (fun))
    return make_ssa_name (type);
  return create_tmp_reg (type, "tally");
}

tree
tally_build_add (function *fun, tree ref, tree n, location_t loc,
                 gimple_seq *seq)
{
  tree old_val = tally_make_temp (fun, uint64_type_node);
  tree new_val = tally_make_temp (fun, uint64_type_node);
  gimple *g = gimple_build_assign (old_val, ref);
  gimple_set_location (g, loc);
  gimple_seq_add_stmt (seq, g);
  g = gimple_build_assign (new_val, PLUS_EXPR, old_val, n);
  gimple_set_location (g, loc);
  gimple_seq_add_stmt (seq, g);
  g = gimple_build_assign (unshare_expr (ref), new_val);
  gimple_set_location (g, loc);
  gimple_seq_add_stmt (seq, g);
  return new_val;
}

void
tally_build_increment (function *fun, tree array, unsigned k, location_t loc,
                       gimple_seq *seq)
{
  gimple *g;
  tree ref = build4 (ARRAY_REF, uint64_type_node, array,
                     build_int_cst (integer_type_node, k), NULL_TREE, NULL_TREE);
  if (tally_opts.mapped)
    {
      /* counters=mapped: the counter at its address plus the unit's bias,
         loaded here, at the update, so that an update made after the
         runtime moved the counters reaches the file (descriptor.cc).  */
      TREE_ADDRESSABLE (array) = 1;
      tree addr = tally_mapped_address (fun, ref, loc, seq);
      ref = build2 (MEM_REF, uint64_type_node, addr,
                    build_int_cst (build_pointer_type (uint64_type_node), 0));
    }
  if (tally_opts.update == TALLY_UPDATE_ATOMIC)
    {
      tree f = builtin_decl_explicit (BUILT_IN_ATOMIC_FETCH_ADD_8);
      TREE_ADDRESSABLE (array) = 1;
      g = gimple_build_call (f, 3, build_fold_addr_expr (ref),
                             build_int_cst (uint64_type_node, 1),
                             build_int_cst (integer_type_node, MEMMODEL_RELAXED));
      gimple_set_location (g, loc);
      gimple_seq_add_stmt (seq, g);
      return;
    }
  tally_build_add (fun, ref, build_int_cst (uint64_type_node, 1), loc, seq);
}

/* The counter update ending in STORE, "OLD = ARRAY[K]; NEW = OLD + N;
   ARRAY[K] = NEW" as tally_build_increment and blocks.cc's build_add
   make it, three statements of one block with NEW and OLD used once:
   *LOAD and *ADD are its first two.  */
bool
tally_counter_update_p (gimple *store, tree array, gimple **load,
                        gimple **add)
{
  if (!gimple_assign_single_p (store))
    return false;
  tree lhs = gimple_assign_lhs (store), nv = gimple_assign_rhs1 (store);
  if (TREE_CODE (lhs) != ARRAY_REF || TREE_OPERAND (lhs, 0) != array
      || TREE_CODE (nv) != SSA_NAME || !has_single_use (nv))
    return false;
  gimple *a = SSA_NAME_DEF_STMT (nv);
  if (!is_gimple_assign (a) || gimple_assign_rhs_code (a) != PLUS_EXPR
      || gimple_bb (a) != gimple_bb (store))
    return false;
  tree ov = gimple_assign_rhs1 (a), n = gimple_assign_rhs2 (a);
  if (TREE_CODE (ov) != SSA_NAME || !has_single_use (ov)
      || (TREE_CODE (n) != INTEGER_CST && TREE_CODE (n) != SSA_NAME))
    return false;
  gimple *l = SSA_NAME_DEF_STMT (ov);
  if (!gimple_assign_single_p (l) || gimple_bb (l) != gimple_bb (store)
      || !operand_equal_p (gimple_assign_rhs1 (l), lhs, 0))
    return false;
  *load = l;
  *add = a;
  return true;
}

/* The template of a counter update's asm statement (AT&T and Intel
   dialects), which counter_asms_to_insns looks for.  */
static const char counter_asm[] = "add{q} {%1, %0|%0, %1}";
const char *const tally_counter_asm_template = counter_asm;

/* x86-64, update=single|tls, FUN in SSA form (at=late): each counter
   update left in memory after the pass (a promoted loop's counters are
   registers, their exit adds are updates too) becomes one asm statement,
   "addq N, ARRAY[K]" with the counter an in-out memory operand.  The
   instructions are what GCC makes of the three statements (combine
   fuses them), but the RTL passes see one insn instead of a load, an
   add, a store and two pseudos: RTL PRE no longer treats every counter
   as a load expression it could move, and the dataflow and register
   allocation passes have fewer pseudos
   (doc/benchmarks/compile-time.md).  */
void
tally_updates_to_asm (function *fun, tree array)
{
  if (!array || !tally_target_x86_64 () || !gimple_in_ssa_p (fun)
      || tally_opts.update == TALLY_UPDATE_ATOMIC || tally_opts.mapped)
    return;
  basic_block bb;
  FOR_EACH_BB_FN (bb, fun)
    for (gimple_stmt_iterator gsi = gsi_start_bb (bb); !gsi_end_p (gsi);)
      {
        gimple *store = gsi_stmt (gsi), *load, *add;
        if (!tally_counter_update_p (store, array, &load, &add))
          {
            gsi_next (&gsi);
            continue;
          }
        tree ref = gimple_assign_lhs (store);
        vec<tree, va_gc> *inputs = NULL, *outputs = NULL, *clobbers = NULL;
        vec_safe_push (outputs, tally_asm_op ("+m", ref));
        vec_safe_push (inputs, tally_asm_op ("er", gimple_assign_rhs2 (add)));
        vec_safe_push (clobbers, tally_asm_str ("cc"));
        gasm *a = gimple_build_asm_vec (ggc_strdup (counter_asm), inputs,
                                        outputs, clobbers, NULL);
        gimple_set_location (a, gimple_location (store));
        gsi_insert_before (&gsi, a, GSI_SAME_STMT);
        /* The store, then the add and the load (their SSA names die).  */
        unlink_stmt_vdef (store);
        gsi_remove (&gsi, true);
        gimple_stmt_iterator g = gsi_for_stmt (add);
        gsi_remove (&g, true);
        release_defs (add);
        g = gsi_for_stmt (load);
        unlink_stmt_vdef (load);
        gsi_remove (&g, true);
        release_defs (load);
      }
}

/* Right after reload, before the prologue is placed: each counter
   update's asm becomes the add instruction itself, "ADDR += N" with the
   flags clobbered (x86's *adddi_1, memory destination), once the passes
   the asm is there for have run.  Shrink-wrapping, the block reordering,
   the second scheduler and the final output then see the instruction and
   its real length (an asm counts as 16 bytes, which kept the copying of
   short blocks ending in an update from happening: a shared return block
   not copied puts the prologue's pushes on a leaf's fast path), and the
   assembly has no #APP lines.  An asm whose replacement the target does
   not accept stays.  */
static unsigned int
counter_asms_to_insns (void)
{
#ifdef FLAGS_REG
  unsigned made = 0;
  for (rtx_insn *insn = get_insns (); insn; insn = NEXT_INSN (insn))
    {
      if (!NONJUMP_INSN_P (insn) || GET_CODE (PATTERN (insn)) != PARALLEL)
        continue;
      rtx set = XVECEXP (PATTERN (insn), 0, 0);
      if (GET_CODE (set) != SET || GET_CODE (SET_SRC (set)) != ASM_OPERANDS)
        continue;
      rtx op = SET_SRC (set), mem = SET_DEST (set);
      if (MEM_VOLATILE_P (op) || strcmp (ASM_OPERANDS_TEMPLATE (op), counter_asm)
          || !MEM_P (mem) || GET_MODE (mem) != DImode
          || ASM_OPERANDS_INPUT_LENGTH (op) != 2)
        continue;
      rtx n = ASM_OPERANDS_INPUT (op, 0);
      if (!CONST_INT_P (n) && !REG_P (n))
        continue;
      rtx add = gen_rtx_SET (copy_rtx (mem),
                             gen_rtx_PLUS (DImode, copy_rtx (mem), n));
      rtx clobber = gen_rtx_CLOBBER (VOIDmode, gen_rtx_REG (CCmode, FLAGS_REG));
      if (validate_change (insn, &PATTERN (insn),
                           gen_rtx_PARALLEL (VOIDmode, gen_rtvec (2, add, clobber)),
                           0))
        made++;
    }
  if (dump_file)
    fprintf (dump_file, "tally: %u counter updates made instructions\n", made);
#endif
  return 0;
}

namespace {

/* An RTL pass of the plugin's: DATA names it, WORK is what it does.  */
class tally_rtl_pass : public rtl_opt_pass
{
public:
  tally_rtl_pass (gcc::context *ctx, const pass_data &data,
                  unsigned int (*fn) (void))
      : rtl_opt_pass (data, ctx), work (fn)
  {
  }
  unsigned int execute (function *) final override
  {
    return work ();
  }

private:
  unsigned int (*work) (void);
};

} // namespace

opt_pass *
tally_make_rtl_pass (gcc::context *ctx, const char *name,
                     unsigned int (*work) (void))
{
  /* The pass keeps a copy of its pass_data.  */
  const pass_data data = { RTL_PASS, name, OPTGROUP_NONE, TV_NONE,
                           0, 0, 0, 0, 0 };
  return new tally_rtl_pass (ctx, data, work);
}

opt_pass *
tally_make_counter_insn_pass (gcc::context *ctx)
{
  return tally_make_rtl_pass (ctx, "tally_addq", counter_asms_to_insns);
}

/* hooks=call, after the prologue pass: the asm calls of __tally_count and
   __tally_count_atomic in a function that keeps nothing below the stack
   pointer (every function but a leaf with part of its frame in the red
   zone) lose their two steps over the red zone, "leaq -128(%rsp), %rsp"
   and back: four instructions a call instead of six.  The call's return
   address then lands where nothing is kept.  */
static bool
drop_red_zone_step (rtx asm_op)
{
  const char *t = ASM_OPERANDS_TEMPLATE (asm_op);
  static const char count[] = "call *__tally_count";
  size_t n = strlen (t), below = sizeof step_below - 1,
         back = sizeof step_back - 1;
  if (n <= below + back || strncmp (t, step_below, below) != 0
      || strncmp (t + below, count, sizeof count - 1) != 0
      || strcmp (t + n - back, step_back) != 0)
    return false;
  char *inner = XALLOCAVEC (char, n - below - back + 1);
  memcpy (inner, t + below, n - below - back);
  inner[n - below - back] = 0;
  ASM_OPERANDS_TEMPLATE (asm_op) = ggc_strdup (inner);
  return true;
}

static unsigned int
drop_red_zone_steps (void)
{
  if (tally_red_zone_used ())
    return 0;
  unsigned dropped = 0;
  for (rtx_insn *insn = get_insns (); insn; insn = NEXT_INSN (insn))
    {
      if (!NONJUMP_INSN_P (insn))
        continue;
      rtx pat = PATTERN (insn);
      int n = GET_CODE (pat) == PARALLEL ? XVECLEN (pat, 0) : 1;
      for (int i = 0; i < n; i++)
        {
          rtx x = GET_CODE (pat) == PARALLEL ? XVECEXP (pat, 0, i) : pat;
          if (GET_CODE (x) == SET)
            x = SET_SRC (x);
          if (GET_CODE (x) == ASM_OPERANDS && drop_red_zone_step (x))
            dropped++;
        }
    }
  if (dump_file && dropped)
    fprintf (dump_file, "tally: %u hook calls without the red-zone step\n",
             dropped);
  return 0;
}

opt_pass *
tally_make_red_zone_pass (gcc::context *ctx)
{
  return tally_make_rtl_pass (ctx, "tally_redzone", drop_red_zone_steps);
}
