/* plugin/blocks-insert.cc - the counters and visited bytes of a
 * blocks=count|visited plan (blocks.cc) put into the function.
 *
 * Options: update=single|atomic|tls (the increments are updates.cc's
 * tally_build_increment), counters=mapped.
 *
 * Each value of the plan becomes an update where its block starts (after
 * the labels and any setjmp-like call, which returns twice) or on its
 * edge (split if critical); a derived latch (blocks.cc's step 5a) adds
 * the loop's trip count on its entry edge:
 *
 *   bb 3:  s += g (i);          bb 3:  s += g (i);
 *                                      __tally.c.3[2] = __tally.c.3[2] + 1;
 *
 * blocks=visited stores a byte, relaxed-atomically.  The calls the updates
 * make get their call-graph edges once in their block.  */
#include "tally-plugin.h"
#include "blocks.h"

#include "gimplify-me.h"

/* Append to *SEQ "VISITED[I] = 1" as a relaxed atomic byte store (a plain
   byte store on every target that has one).  */
static void
build_visit (function *fun, tree visited, unsigned i, gimple_seq *seq)
{
  tree ref = build4 (ARRAY_REF, unsigned_char_type_node, visited,
                     build_int_cst (integer_type_node, i), NULL_TREE, NULL_TREE);
  TREE_ADDRESSABLE (visited) = 1;
  /* counters=mapped: the byte at its address plus the unit's bias.  */
  tree addr = tally_opts.mapped
                  ? tally_mapped_address (fun, ref, UNKNOWN_LOCATION, seq)
                  : build_fold_addr_expr (ref);
  tree f = builtin_decl_explicit (BUILT_IN_ATOMIC_STORE_1);
  gimple *g = gimple_build_call (f, 3, addr,
                                 build_int_cst (unsigned_char_type_node, 1),
                                 build_int_cst (integer_type_node,
                                                MEMMODEL_RELAXED));
  gimple_seq_add_stmt (seq, g);
}

/* Append to *SEQ "COUNTERS[K] += NITER" (derive_latches), as
   tally_build_increment adds 1: relaxed atomic with update=atomic.  */
static void
build_add (tree array, unsigned k, tree niter, gimple_seq *seq)
{
  tree n = force_gimple_operand (unshare_expr (niter), seq, true, NULL_TREE);
  tree ref = build4 (ARRAY_REF, uint64_type_node, array,
                     build_int_cst (integer_type_node, k), NULL_TREE, NULL_TREE);
  gimple *g;
  if (tally_opts.update == TALLY_UPDATE_ATOMIC)
    {
      tree f = builtin_decl_explicit (BUILT_IN_ATOMIC_FETCH_ADD_8);
      TREE_ADDRESSABLE (array) = 1;
      g = gimple_build_call (f, 3, build_fold_addr_expr (ref), n,
                             build_int_cst (integer_type_node, MEMMODEL_RELAXED));
      gimple_seq_add_stmt (seq, g);
      return;
    }
  tally_build_add (cfun, ref, n, UNKNOWN_LOCATION, seq);
}

/* 5a. The update of a derived latch count D: its trip count on the
   loop's entry edge.  */
static void
insert_derived (derived_latch *d, tree counters, unsigned k)
{
  gimple_seq seq = NULL;
  build_add (counters, k, d->niter, &seq);
  gsi_insert_seq_on_edge (d->entry, seq);
}

/* Append the calls of SEQ to *CALLS (their call-graph edges are made
   once SEQ is in its block).  */
static void
note_calls (gimple_seq seq, vec<gcall *> *calls)
{
  for (gimple_stmt_iterator i = gsi_start (seq); !gsi_end_p (i); gsi_next (&i))
    if (gcall *call = dyn_cast<gcall *> (gsi_stmt (i)))
      calls->safe_push (call);
}

void
tally_blocks_insert (function *fun, tally_block_plan *plan,
                     const tally_fn_info &fn)
{
  bool edges = false;
  auto_vec<gcall *> calls;
  for (const plan_edge &pe : plan->edges)
    {
      if (pe.value == TALLY_MAP_NONE || pe.implied)
        continue;
      gimple_seq seq = NULL;
      if (fn.visited)
        build_visit (fun, fn.visited, pe.value - TALLY_C_CORE, &seq);
      else if (pe.derived)
        {
          insert_derived (pe.derived, fn.counters, pe.value);
          edges = true;
          continue;
        }
      else
        tally_build_increment (fun, fn.counters, pe.value, UNKNOWN_LOCATION,
                               &seq);
      basic_block b = pe.bb ? (pe.store_bb ? pe.store_bb : pe.bb) : NULL;
      if (pe.mark_on)
        {
          note_calls (seq, &calls);
          gsi_insert_seq_on_edge (pe.mark_on, seq);
          edges = true;
        }
      else if (b && tally_blocks_returns_twice_first (b))
        {
          /* Not before a setjmp-like call, which GCC wants first in its
             block (its verifier says so from GCC 14 on) since its abnormal
             edges into the block stand for the second returns: on every
             normal edge into the block instead, where it runs once per
             entry as it would at the block's start.  */
          bool first = true;
          edge e;
          edge_iterator ei;
          FOR_EACH_EDGE (e, ei, b->preds)
            if (!(e->flags & (EDGE_ABNORMAL | EDGE_EH | EDGE_FAKE)))
              {
                gimple_seq copy = first ? seq : gimple_seq_copy (seq);
                first = false;
                note_calls (copy, &calls);
                gsi_insert_seq_on_edge (e, copy);
              }
          edges = true;
        }
      else if (b)
        {
          note_calls (seq, &calls);
          gimple_stmt_iterator gsi = gsi_after_labels (b);
          gsi_insert_seq_before (&gsi, seq, GSI_SAME_STMT);
        }
      else
        {
          note_calls (seq, &calls);
          gsi_insert_seq_on_edge (pe.e, seq);
          edges = true;
        }
    }
  if (edges)
    gsi_commit_edge_inserts ();
  for (gcall *call : calls)
    tally_add_call_edge (fun, call, gimple_bb (call)->count);
  delete plan;
}
