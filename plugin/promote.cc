/* promote.cc - counters held in registers across loops (blocks=count,
 * at=late, update=single|tls): run by hooks.cc after blocks.cc has put
 * every counter update of a function in place.  */
#include "tally-plugin.h"

#include "tree-ssa-loop.h"
#include "tree-ssa-loop-niter.h"
#include "tree-scalar-evolution.h"
#include "gimplify-me.h"
#include "tree-into-ssa.h"
#include "tree-ssa-loop-ivopts.h"
#include "tree-ssa-loop-manip.h"

/* Functions of more basic blocks than this keep their counters in memory
   (tally_blocks_promote).  bzip2's largest, BZ2_decompress, has 668.  */
#define TALLY_PROMOTE_MAX_BLOCKS 1000

/* Append to *SEQ "COUNTERS[K] += N" as a load, an add and a store: the
   form of update=single's updates and of update=tls's, whose COUNTERS is
   the function's thread-local copy (update=atomic is not promoted).  */
static void
build_add (tree array, unsigned k, tree n, gimple_seq *seq)
{
  tree ref = build4 (ARRAY_REF, uint64_type_node, array,
                     build_int_cst (integer_type_node, k), NULL_TREE, NULL_TREE);
  tally_build_add (cfun, ref, n, UNKNOWN_LOCATION, seq);
}

/* At at=late GCC's loop optimisers have run, so a counter in a loop is a
   memory add at every iteration.  In a loop without calls or asm nothing
   but the loop itself can read the counters (a signal handler aside, and
   with update=tls a dump by another thread, which reads this thread's
   copies: see doc/guarantees.md), so each counter the loop updates becomes
   a register T set to 0 on the loop's entry, "T += 1" where the counter
   was updated, and "counter += T" on every exit edge (update=tls: the
   running thread's copy, so each thread's counts stay its own and exact).
   A register add costs what the memory add did; the gain is GCC's
   induction-variable optimiser (run here again, on the loops with promoted
   counters): T is an induction variable of the loop, and where another one
   moves with it (a pointer or an index), T's exit value is computed from
   that one at the exit and the add leaves the loop, as gcov's counters do
   after GCC's own loop invariant motion.  Adding at the exits (rather than
   loading on entry and storing at the exits) keeps the read-modify-write
   of update=single and tls as short as before.  */

/* The counter update STORE ("COUNTERS[k] = NEW") of the triplet
   tally_build_increment and build_add make, at a constant index: its load
   in *LOAD and its add in *ADD, or false when STORE is not one.  */
static bool
counter_update (gimple *store, tree counters, gimple **load, gimple **add)
{
  return tally_counter_update_p (store, counters, load, add)
         && TREE_CODE (TREE_OPERAND (gimple_assign_lhs (store), 1))
            == INTEGER_CST;
}

/* Why LOOP's counters cannot be held in registers, or NULL.  */
static const char *
promote_blocker (function *fun, class loop *loop)
{
  if (!loop->header || (loop->header->flags & BB_IRREDUCIBLE_LOOP))
    return "irreducible";
  edge e;
  edge_iterator ei;
  FOR_EACH_EDGE (e, ei, loop->header->preds)
    if (!flow_bb_inside_loop_p (loop, e->src) && (e->flags & EDGE_COMPLEX))
      return "entered by an abnormal edge";
  const char *why = NULL;
  basic_block *body = get_loop_body (loop);
  for (unsigned i = 0; i < loop->num_nodes && !why; i++)
    {
      basic_block b = body[i];
      if ((b->flags & BB_IRREDUCIBLE_LOOP) || EDGE_COUNT (b->succs) == 0)
        why = "no way out of a block";
      FOR_EACH_EDGE (e, ei, b->succs)
        if ((e->flags & (EDGE_COMPLEX | EDGE_FAKE))
            || e->dest == EXIT_BLOCK_PTR_FOR_FN (fun))
          why = "left by a return, an exception or a jump";
      for (gimple_stmt_iterator gsi = gsi_start_bb (b);
           !why && !gsi_end_p (gsi); gsi_next (&gsi))
        {
          gimple *g = gsi_stmt (gsi);
          if (is_gimple_call (g))
            why = "a call";
          else if (gimple_code (g) == GIMPLE_ASM)
            why = "an asm";
        }
    }
  free (body);
  if (!why && get_loop_exit_edges (loop).is_empty ())
    why = "no exit";
  return why;
}

/* Whether LOOP's counters are worth holding in registers: a register add
   costs what a memory add does, so the gain is only where the induction-
   variable optimiser can compute a counter's exit value from another
   induction variable instead (the loop has one: a header PHI with a
   constant step), and where the loop is expected to go round often
   enough to pay for the 0 on entry and the add at each exit (GCC's
   estimate: 8 rounds or more per entry; a loop that goes round once or
   twice pays more than it saves, measured on bzip2's decoder and gzip's
   longest_match).  A loop with two exits pays the exit value and the add
   on both, and needs more than GCC's guess for a loop whose exit tests it
   cannot predict (9 rounds): sqlite3BtreeTableMoveto's varint skip, "while
   (0x80 <= *p++) if (p >= end) return corrupt", goes round once or twice
   and cost 98 K instructions on speedtest1 --size 1 held in registers,
   while mainQSort3's partition loops (GCC: 13 and 34 rounds) pay.  */
static bool
promote_worth (class loop *loop)
{
  HOST_WIDE_INT rounds = expected_loop_iterations_unbounded (loop);
  unsigned nexits = get_loop_exit_edges (loop).length ();
  if (rounds < 8 || nexits > 2 || (nexits == 2 && rounds < 10))
    return false;
  for (gphi_iterator psi = gsi_start_phis (loop->header); !gsi_end_p (psi);
       gsi_next (&psi))
    {
      tree res = gimple_phi_result (psi.phi ());
      affine_iv iv;
      if (!virtual_operand_p (res)
          && simple_iv (loop, loop, res, &iv, false)
          && TREE_CODE (iv.step) == INTEGER_CST && !integer_zerop (iv.step))
        return true;
    }
  return false;
}

/* Hold LOOP's counter updates in registers: those of blocks run at every
   iteration (they dominate the latch), which are then induction variables
   of the loop; true if there were any.  */
static bool
promote_loop (class loop *loop, tree counters)
{
  hash_map<int_hash<unsigned HOST_WIDE_INT, ~0ul, ~0ul - 1>, tree> regs;
  auto_vec<unsigned HOST_WIDE_INT> order;
  basic_block *body = get_loop_body (loop);
  for (unsigned i = 0; i < loop->num_nodes; i++)
    for (gimple_stmt_iterator gsi = gsi_start_bb (body[i]); !gsi_end_p (gsi);)
      {
        gimple *store = gsi_stmt (gsi), *load, *add;
        if (body[i]->loop_father != loop
            || !dominated_by_p (CDI_DOMINATORS, loop->latch, body[i])
            || !counter_update (store, counters, &load, &add))
          {
            gsi_next (&gsi);
            continue;
          }
        unsigned HOST_WIDE_INT k
            = tree_to_uhwi (TREE_OPERAND (gimple_assign_lhs (store), 1));
        bool existed;
        tree &t = regs.get_or_insert (k, &existed);
        if (!existed)
          {
            t = create_tmp_reg (uint64_type_node, "tally_loop");
            order.safe_push (k);
          }
        /* T = T + N, in place of the load, the add and the store.  */
        gimple *def = gimple_build_assign (t, PLUS_EXPR, t,
                                           gimple_assign_rhs2 (add));
        gimple_set_location (def, gimple_location (store));
        unlink_stmt_vdef (store);
        gsi_remove (&gsi, true);
        release_defs (store);
        gsi_insert_before (&gsi, def, GSI_SAME_STMT);
        gimple_stmt_iterator g2 = gsi_for_stmt (add);
        gsi_remove (&g2, true);
        release_defs (add);
        g2 = gsi_for_stmt (load);
        gsi_remove (&g2, true);
        release_defs (load);
      }
  free (body);
  if (order.is_empty ())
    return false;
  edge e;
  edge_iterator ei;
  auto_vec<edge> exits = get_loop_exit_edges (loop);
  for (unsigned HOST_WIDE_INT k : order)
    {
      tree t = *regs.get (k);
      FOR_EACH_EDGE (e, ei, loop->header->preds)
        if (!flow_bb_inside_loop_p (loop, e->src))
          gsi_insert_on_edge (e, gimple_build_assign (
                                     t, build_int_cst (uint64_type_node, 0)));
      for (edge x : exits)
        {
          gimple_seq seq = NULL;
          build_add (counters, k, t, &seq);
          gsi_insert_seq_on_edge (x, seq);
        }
    }
  if (dump_file)
    fprintf (dump_file, "tally: loop %d (header bb %d): %u counters held in "
             "registers, added on %u exits (GCC expects %d rounds)\n",
             loop->num, loop->header->index, order.length (),
             exits.length (),
             (int) expected_loop_iterations_unbounded (loop));
  return true;
}

/* After the induction-variable optimiser, the exit value of a register
   counter T may be computed from another induction variable at every
   iteration (ivopts rewrites the definition the exit's loop-closed PHI
   uses, where it is).  Move that computation to the exit: a statement
   without memory operands in the exit edge's source block, used only by
   the exit block's PHI or by statements moved before it, gives the same
   value after the edge (its operands are not redefined between it and the
   end of its block).  The exit block (made by inserting the counter's add
   on the edge) has the edge as its only predecessor, so its PHIs are
   copies.  */
static void
sink_exit_values (class loop *loop)
{
  for (edge x : get_loop_exit_edges (loop))
    {
      basic_block dest = x->dest, src = x->src;
      bool any = false;
      for (gphi_iterator psi = gsi_start_phis (dest); !gsi_end_p (psi);
           gsi_next (&psi))
        {
          tree res = gimple_phi_result (psi.phi ());
          any |= !virtual_operand_p (res) && SSA_NAME_VAR (res)
                 && get_name (res)
                 && strncmp (get_name (res), "tally_loop", 10) == 0;
        }
      if (!any)
        continue;
      /* Moved into a block of the edge's own when DEST has other
         predecessors; DEST's PHIs then stay, with their argument now
         defined in that block.  */
      basic_block to_bb = dest;
      if (!single_pred_p (dest))
        to_bb = split_edge (x);
      for (gphi_iterator psi = gsi_start_phis (dest); !gsi_end_p (psi);)
        {
          gphi *phi = psi.phi ();
          tree res = gimple_phi_result (phi);
          tree arg = PHI_ARG_DEF_FROM_EDGE (phi, to_bb == dest ? x
                                                 : single_succ_edge (to_bb));
          if (virtual_operand_p (res) || TREE_CODE (arg) != SSA_NAME
              || !SSA_NAME_VAR (res)
              || strncmp (get_name (res) ? get_name (res) : "", "tally_loop",
                          10) != 0)
            {
              gsi_next (&psi);
              continue;
            }
          if (to_bb == dest)
            {
              /* The PHI is a copy: its result becomes ARG.  */
              replace_uses_by (res, arg);
              remove_phi_node (&psi, true);
            }
          else
            gsi_next (&psi);
          auto_vec<tree> work;
          work.safe_push (arg);
          while (!work.is_empty ())
            {
              tree name = work.pop ();
              gimple *def = SSA_NAME_DEF_STMT (name);
              if (!is_gimple_assign (def) || gimple_bb (def) != src
                  || gimple_vuse (def) || gimple_has_side_effects (def)
                  || stmt_could_throw_p (cfun, def))
                continue;
              bool outside = true;
              imm_use_iterator it;
              use_operand_p use;
              FOR_EACH_IMM_USE_FAST (use, it, name)
                {
                  gimple *u = USE_STMT (use);
                  if (gimple_code (u) == GIMPLE_PHI
                      ? gimple_bb (u) != dest || to_bb == dest
                      : gimple_bb (u) != to_bb)
                    outside = false;
                }
              if (!outside)
                continue;
              gimple_stmt_iterator from = gsi_for_stmt (def);
              gimple_stmt_iterator to = gsi_after_labels (to_bb);
              gsi_move_before (&from, &to);
              ssa_op_iter oi;
              tree op;
              FOR_EACH_SSA_TREE_OPERAND (op, def, oi, SSA_OP_USE)
                work.safe_push (op);
            }
        }
    }
}

/* Promote the counters of every loop that can take it, each loop its own
   (those of the blocks of no inner loop: an inner loop's counters are
   added at its own exits, which keeps the registers held across a loop
   few).  The outermost loops promoted go to *DONE.  */
static bool
promote_loops (function *fun, tree counters, vec<class loop *> *done)
{
  bool any = false;
  auto_vec<class loop *> all;
  for (auto l : loops_list (fun, 0))
    {
      const char *why = promote_blocker (fun, l);
      if (!why && !promote_worth (l))
        why = "expected to go round less than 8 times (10 with two "
              "exits), more than two exits, or no induction variable to "
              "derive the counts from";
      if (why)
        {
          if (dump_file)
            fprintf (dump_file, "tally: loop %d: counters in memory: %s\n",
                     l->num, why);
          continue;
        }
      if (promote_loop (l, counters))
        {
          all.safe_push (l);
          any = true;
        }
    }
  for (class loop *l : all)
    {
      bool inner = false;
      for (class loop *o : all)
        inner |= o != l && flow_loop_nested_p (o, l);
      if (!inner)
        done->safe_push (l);
    }
  return any;
}

void
tally_blocks_promote (function *fun, const tally_fn_info &fn)
{
  /* A blocks=visited function counted instead (profile=, blocks.cc) has
     no visited bytes.  */
  bool counted = tally_opts.blocks == TALLY_BLOCKS_COUNT
                 || (tally_opts.blocks == TALLY_BLOCKS_VISITED && !fn.visited
                     && tally_profile_given ());
  if (!optimize || tally_opts.at != TALLY_AT_LATE || !counted
      || tally_opts.placement == TALLY_PLACE_BLOCK /* the tests' oracle */
      || tally_opts.update == TALLY_UPDATE_ATOMIC || tally_opts.mapped
      || !gimple_in_ssa_p (fun) || !fn.counters)
    return;
  /* A function of more blocks than this (an interpreter's dispatch loop,
     sqlite3VdbeExec) is left alone: there the register allocation of the
     whole function shifts with the promoted loops (the counter registers,
     the blocks made on the exit edges), and costs more than the loops
     save (sqlite's OP_Column header loop, not promoted itself, then keeps
     four more values on the stack: sqlite3VdbeExec 581 K instructions
     dearer on speedtest1 --size 1 against 46 K saved in sqlite3_step).  */
  if (n_basic_blocks_for_fn (fun) > TALLY_PROMOTE_MAX_BLOCKS)
    {
      if (dump_file)
        fprintf (dump_file, "tally: counters in memory: %d blocks, more "
                 "than %d\n", n_basic_blocks_for_fn (fun),
                 TALLY_PROMOTE_MAX_BLOCKS);
      return;
    }
  /* The updates made so far get their virtual operands first.  */
  mark_virtual_operands_for_renaming (fun);
  update_ssa (TODO_update_ssa_only_virtuals);
  loop_optimizer_init (LOOPS_NORMAL | LOOPS_HAVE_RECORDED_EXITS);
  auto_vec<class loop *> done;
  bool any = false;
  if (number_of_loops (fun) > 1)
    {
      calculate_dominance_info (CDI_DOMINATORS);
      scev_initialize ();
      any = promote_loops (fun, fn.counters, &done);
      scev_finalize ();
    }
  if (any)
    {
      gsi_commit_edge_inserts ();
      mark_virtual_operands_for_renaming (fun);
      update_ssa (TODO_update_ssa);
      rewrite_into_loop_closed_ssa (NULL, TODO_update_ssa);
      /* The optimiser walks the loop tree from its root: for the time of
         the call the root's children are the promoted loops (with the
         loops inside them), so that the program's other loops, optimised
         once already, are left as they are (a second run made some of
         them dearer).  Each loop keeps its superloops, which is what the
         optimiser asks about nesting.  */
      class loop *root = current_loops->tree_root;
      class loop *saved_inner = root->inner;
      auto_vec<class loop *> saved_next;
      for (class loop *l : done)
        saved_next.safe_push (l->next);
      for (unsigned i = 0; i < done.length (); i++)
        done[i]->next = i + 1 < done.length () ? done[i + 1] : NULL;
      root->inner = done[0];
      scev_initialize ();
      tree_ssa_iv_optimize ();
      scev_finalize ();
      root->inner = saved_inner;
      for (unsigned i = 0; i < done.length (); i++)
        done[i]->next = saved_next[i];
      update_ssa (TODO_update_ssa);
      for (auto l : loops_list (fun, 0))
        for (class loop *d : done)
          if (l == d || flow_loop_nested_p (d, l))
            sink_exit_values (l);
    }
  loop_optimizer_finalize ();
}

/* update=tls in an executable (local-exec thread-locals, x86-64): GCC
   expands a counter's address as "%fs:(R + K)" with R a pseudo set to the
   copy's offset from the thread pointer (sym@tpoff), and CSE then shares
   one R among every counter of the function: a register held across the
   whole function, a callee-saved one where calls cross it (lua's
   luaV_execute kept sym@tpoff in %r12, and a copy in %r11, and spilled
   what no longer fitted: 2.3 M instructions more than update=single's
   "addq $1, sym+K(%rip)", which takes no register).  Right after expand,
   each counter update's asm (tally_updates_to_asm) gets the offset as a
   constant in its address instead, "%fs:sym@tpoff+K", one instruction and
   no register, as update=single's; the pseudo's set dies.  Initial-exec
   offsets (-fPIC) are loads from the GOT, which sharing saves: left
   alone.  */
static unsigned int
tls_counter_offsets (void)
{
  unsigned made = 0;
#ifdef FLAGS_REG
  for (rtx_insn *insn = get_insns (); insn; insn = NEXT_INSN (insn))
    {
      if (!NONJUMP_INSN_P (insn) || GET_CODE (PATTERN (insn)) != PARALLEL)
        continue;
      rtx set = XVECEXP (PATTERN (insn), 0, 0);
      if (GET_CODE (set) != SET || GET_CODE (SET_SRC (set)) != ASM_OPERANDS
          || !MEM_P (SET_DEST (set))
          || strcmp (ASM_OPERANDS_TEMPLATE (SET_SRC (set)),
                     tally_counter_asm_template))
        continue;
      rtx op = SET_SRC (set), mem = SET_DEST (set);
      /* (plus (plus TP R) K) or (plus TP R).  */
      rtx addr = XEXP (mem, 0);
      HOST_WIDE_INT k = 0;
      if (GET_CODE (addr) == PLUS && CONST_INT_P (XEXP (addr, 1)))
        {
          k = INTVAL (XEXP (addr, 1));
          addr = XEXP (addr, 0);
        }
      if (GET_CODE (addr) != PLUS || GET_CODE (XEXP (addr, 0)) != UNSPEC
          || XINT (XEXP (addr, 0), 1) != UNSPEC_TP || !REG_P (XEXP (addr, 1)))
        continue;
      rtx tp = XEXP (addr, 0), r = XEXP (addr, 1);
      /* R's set, earlier in the block: the constant sym@tpoff.  */
      rtx off = NULL_RTX;
      for (rtx_insn *p = PREV_INSN (insn);
           p && !NOTE_INSN_BASIC_BLOCK_P (p) && !LABEL_P (p);
           p = PREV_INSN (p))
        {
          if (!INSN_P (p) || !reg_set_p (r, p))
            continue;
          rtx s = single_set (p);
          if (s && SET_DEST (s) == r && GET_CODE (SET_SRC (s)) == CONST
              && GET_CODE (XEXP (SET_SRC (s), 0)) == UNSPEC
              && XINT (XEXP (SET_SRC (s), 0), 1) == UNSPEC_NTPOFF)
            off = SET_SRC (s);
          break;
        }
      if (!off)
        continue;
      /* Fresh rtl: the set's constant, and the thread pointer, stay
         unshared.  */
      rtx naddr = gen_rtx_PLUS (Pmode, copy_rtx (tp),
                                plus_constant (Pmode, copy_rtx (off), k));
      /* The output and its "0" input, the same memory (compared before
         either changes).  */
      for (int i = 0; i < ASM_OPERANDS_INPUT_LENGTH (op); i++)
        {
          rtx in = ASM_OPERANDS_INPUT (op, i);
          if (MEM_P (in) && in != mem && rtx_equal_p (in, mem))
            validate_change (insn, &XEXP (in, 0), copy_rtx (naddr), 1);
        }
      validate_change (insn, &XEXP (mem, 0), naddr, 1);
      if (apply_change_group ())
        made++;
    }
#endif
  if (dump_file)
    fprintf (dump_file, "tally: %u thread-local counter addresses with the "
             "offset as a constant\n", made);
  return 0;
}

opt_pass *
tally_make_tls_offsets_pass (gcc::context *ctx)
{
  return tally_make_rtl_pass (ctx, "tally_tpoff", tls_counter_offsets);
}
