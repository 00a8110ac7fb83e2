/* cfg-prep.cc - the CFG made into the graph gcov counts, before
 * blocks.cc plans counters on it: blocks split after calls that may not
 * return (1.), edges whose goto locus is on another line split off, loops
 * in normal form with one latch (as -fprofile-arcs sees them at -O0).
 * Only GCC's CFG is touched; the plan is blocks.cc's.  */
#include "tally-plugin.h"

#include "tree-ssa-loop.h"
#include "tree-ssa-loop-niter.h"
#include "tree-scalar-evolution.h"
#include "gimplify-me.h"
#include "tree-pretty-print.h"

bool
tally_may_not_return (function *fun, gimple *stmt)
{
  if (stmt_can_throw_external (fun, stmt))
    return true;
  if (gasm *as = dyn_cast<gasm *> (stmt))
    return gimple_asm_volatile_p (as) || gimple_asm_ninputs (as) > 0;
  gcall *call = dyn_cast<gcall *> (stmt);
  if (!call)
    return false;
  tree fndecl = gimple_call_fndecl (call);
  int flags = gimple_call_flags (call);
  if (fndecl && fndecl_built_in_p (fndecl) && (flags & ECF_NOTHROW)
      && !(flags & ECF_RETURNS_TWICE)
      && !fndecl_built_in_p (fndecl, BUILT_IN_FORK))
    return false;
  if ((flags & (ECF_PURE | ECF_CONST)) && !(flags & ECF_LOOPING_CONST_OR_PURE))
    return false;
  return true;
}

/* Split FUN's blocks after calls that may not return; set bit N of
   CALL_ENDED for each block that ends with such a call.  */
void
tally_split_after_calls (function *fun, bitmap call_ended)
{
  basic_block bb;
  TALLY_FOR_EACH_STMT (fun, bb, gsi)
      {
        gimple *stmt = gsi_stmt (gsi);
        if (!tally_may_not_return (fun, stmt))
          continue;
        bitmap_set_bit (call_ended, bb->index);
        gimple_stmt_iterator next = gsi;
        gsi_next_nondebug (&next);
        if (!gsi_end_p (next))
          split_block (bb, stmt); /* the rest is the next block visited */
        break;
      }
}

/* Whether BB has a single successor in the graph GCC's -fprofile-arcs
   reads lines from (branch_prob), where a block whose last statement may
   not return, or that has no successor, has a fake edge to EXIT as well,
   and so has (WITH_ABNORMAL) one left over an abnormal edge.  */
bool
tally_profile_single_succ_p (function *fun, basic_block bb,
                             bitmap call_ended, bool with_abnormal)
{
  unsigned n = EDGE_COUNT (bb->succs);
  bool to_exit = find_edge (bb, EXIT_BLOCK_PTR_FOR_FN (fun)) != NULL;
  bool fake = n == 0 || (bitmap_bit_p (call_ended, bb->index) && !to_exit);
  if (with_abnormal && !to_exit)
    {
      edge e;
      edge_iterator ei;
      FOR_EACH_EDGE (e, ei, bb->succs)
        fake |= (e->flags & (EDGE_ABNORMAL | EDGE_ABNORMAL_CALL)) != 0;
    }
  return n + fake == 1;
}

/* 1. As branch_prob does before it numbers the blocks: an edge out of a
   block with several successors whose goto_locus (a `goto`, `break`,
   `return` or the end of a branch that the CFG turned into an edge) is on
   another line than the block's last statement gets a block of its own,
   so that line counts as often as the edge is taken.  */
void
tally_split_goto_edges (function *fun, bitmap call_ended)
{
  auto_vec<edge> todo;
  basic_block bb;
  FOR_EACH_BB_FN (bb, fun)
    {
      if (tally_profile_single_succ_p (fun, bb, call_ended, false))
        continue;
      gimple *last = NULL;
      for (gimple_stmt_iterator gsi = gsi_last_nondebug_bb (bb);
           !gsi_end_p (gsi); gsi_prev_nondebug (&gsi))
        {
          last = gsi_stmt (gsi);
          if (!RESERVED_LOCATION_P (gimple_location (last)))
            break;
        }
      if (!last || !gimple_has_location (last))
        continue;
      location_t at = gimple_location (last);
      edge e;
      edge_iterator ei;
      FOR_EACH_EDGE (e, ei, bb->succs)
        if (!RESERVED_LOCATION_P (e->goto_locus) && !(e->flags & EDGE_COMPLEX)
            && (LOCATION_FILE (e->goto_locus) != LOCATION_FILE (at)
                || LOCATION_LINE (e->goto_locus) != LOCATION_LINE (at)))
          todo.safe_push (e);
    }
  for (edge e : todo)
    {
      basic_block nb = split_edge (e);
      single_succ_edge (nb)->goto_locus = e->goto_locus;
    }
}

/* normalize_loops: the latch edges make_forwarder_block leaves on the
   old header.  */
static hash_set<edge> *latch_edges;

static bool
keep_latch_edge (edge e)
{
  return latch_edges->contains (e);
}

/* normalize_loops, for a loop with several latch edges: which definition of
   VAR reaches the end of block B, as into-SSA would name it: the last
   statement of B setting VAR, or the one reaching all of B's
   predecessors, or else B itself, standing for a PHI there (the header's
   PHI when B is the header).  MEMO holds what is known, per block index;
   a block being computed stands for a PHI (an inner loop changing VAR).  */
struct reach_def
{
  gimple *stmt;    /* the definition, or NULL */
  basic_block phi; /* else the block of the PHI */
  bool operator== (const reach_def &o) const
  {
    return stmt == o.stmt && phi == o.phi;
  }
};

static reach_def
reaching_def (basic_block b, tree var, const class loop *loop,
              hash_map<int_hash<int, -1, -2>, reach_def> *memo)
{
  if (reach_def *known = memo->get (b->index))
    return *known;
  reach_def r = { NULL, b };
  memo->put (b->index, r); /* in progress: a PHI at B */
  for (gimple_stmt_iterator gsi = gsi_last_bb (b); !gsi_end_p (gsi);
       gsi_prev (&gsi))
    if (gimple_get_lhs (gsi_stmt (gsi)) == var)
      {
        r.stmt = gsi_stmt (gsi);
        r.phi = NULL;
        memo->put (b->index, r);
        return r;
      }
  if (b != loop->header)
    {
      bool first = true, same = true;
      reach_def all = r;
      edge e;
      edge_iterator ei;
      FOR_EACH_EDGE (e, ei, b->preds)
        {
          reach_def d = reaching_def (e->src, var, loop, memo);
          if (first)
            all = d;
          else if (!(d == all))
            same = false;
          first = false;
        }
      if (!first && same)
        r = all;
    }
  memo->put (b->index, r);
  return r;
}

/* Whether T mentions VAR.  */
static tree
find_var (tree *t, int *walk_subtrees, void *var)
{
  if (*t == (tree) var)
    return *t;
  if (TYPE_P (*t))
    *walk_subtrees = 0;
  return NULL_TREE;
}

static bool
uses_var (gimple *stmt, tree var)
{
  unsigned first = gimple_get_lhs (stmt) ? 1 : 0;
  for (unsigned i = first; i < gimple_num_ops (stmt); i++)
    if (gimple_op (stmt, i)
        && walk_tree (gimple_op_ptr (stmt, i), find_var, var, NULL))
      return true;
  return false;
}

/* Whether VAR is live where HEADER starts (used on some path from there
   before being set), so that into-SSA gives it a PHI there.  */
static bool
live_at (basic_block header, tree var)
{
  auto_vec<basic_block> work;
  auto_bitmap seen;
  work.safe_push (header);
  bitmap_set_bit (seen, header->index);
  while (!work.is_empty ())
    {
      basic_block b = work.pop ();
      bool killed = false;
      for (gimple_stmt_iterator gsi = gsi_start_bb (b); !gsi_end_p (gsi);
           gsi_next (&gsi))
        {
          gimple *stmt = gsi_stmt (gsi);
          if (is_gimple_debug (stmt))
            continue;
          if (uses_var (stmt, var))
            return true;
          if (gimple_get_lhs (stmt) == var)
            {
              killed = true;
              break;
            }
        }
      if (killed)
        continue;
      edge e;
      edge_iterator ei;
      FOR_EACH_EDGE (e, ei, b->succs)
        if (e->dest != EXIT_BLOCK_PTR_FOR_FN (cfun)
            && bitmap_set_bit (seen, e->dest->index))
          work.safe_push (e->dest);
    }
  return false;
}

/* cfgloop.cc's find_subloop_latch_edge_by_ivs before SSA: the latch edge
   of LOOP (whose source dominates the others') that GCC, in SSA form,
   makes an inner loop of, or NULL when it merges the latches instead: when
   a variable that gets a PHI at the header has the same definition
   reaching it over that edge and over another.  */
static edge
subloop_latch (class loop *loop, const vec<edge> &latches)
{
  edge latch = latches[0];
  for (unsigned i = 1; i < latches.length (); i++)
    if (dominated_by_p (CDI_DOMINATORS, latch->src, latches[i]->src))
      latch = latches[i];
  for (edge e : latches)
    if (!dominated_by_p (CDI_DOMINATORS, e->src, latch->src))
      return NULL;
  /* The variables into-SSA renames that are set inside the loop.  */
  auto_vec<tree> vars;
  hash_set<tree> seen;
  basic_block *body = get_loop_body (loop);
  for (unsigned i = 0; i < loop->num_nodes; i++)
    for (gimple_stmt_iterator gsi = gsi_start_bb (body[i]); !gsi_end_p (gsi);
         gsi_next (&gsi))
      {
        tree lhs = gimple_get_lhs (gsi_stmt (gsi));
        if (lhs && DECL_P (lhs) && is_gimple_reg (lhs) && !seen.add (lhs))
          vars.safe_push (lhs);
      }
  free (body);
  for (tree var : vars)
    {
      if (!live_at (loop->header, var))
        continue;
      hash_map<int_hash<int, -1, -2>, reach_def> memo;
      reach_def d = reaching_def (latch->src, var, loop, &memo);
      if (!d.stmt && d.phi == loop->header)
        continue; /* not changed on the way: the PHI itself */
      for (edge e : latches)
        if (e != latch && reaching_def (e->src, var, loop, &memo) == d)
          return NULL;
    }
  return latch;
}

/* 1. At -O0 with -Wformat (and so -Wall), GCC's printf-warning pass puts
   the loops in normal form before -fprofile-arcs reads the blocks; do the
   same, so the lines count the same.  GCC does it in SSA form, where a loop
   with several latch edges gets an inner loop for the latch edge
   subloop_latch finds, or else the latch edges merged into one forwarder
   (the old header, which keeps its labels) before the code; before SSA
   loop_optimizer_init cannot tell, so that is done here first, as
   cfgloop.cc's form_subloop and merge_latch_edges do, and only then are
   the preheaders and simple latches made.  */
void
tally_normalize_loops (function *fun)
{
  loop_optimizer_init (LOOPS_MAY_HAVE_MULTIPLE_LATCHES);
  calculate_dominance_info (CDI_DOMINATORS);
  for (auto loop : loops_list (fun, 0))
    {
      if (loop->latch)
        continue;
      auto_vec<edge> latches;
      edge e;
      edge_iterator ei;
      bool abnormal = false;
      FOR_EACH_EDGE (e, ei, loop->header->preds)
        {
          abnormal |= (e->flags & EDGE_ABNORMAL) != 0;
          if (dominated_by_p (CDI_DOMINATORS, e->src, loop->header))
            latches.safe_push (e);
        }
      /* As GCC: a header entered by an abnormal edge is not split.  */
      if (abnormal)
        continue;
      if (latches.length () < 2)
        {
          if (latches.length () == 1)
            loop->latch = latches[0]->src;
          continue;
        }
      hash_set<edge> set;
      edge sub = subloop_latch (loop, latches);
      if (sub)
        {
          /* form_subloop: every other edge into the header stays on it,
             the code and SUB go to the inner loop's new header.  */
          FOR_EACH_EDGE (e, ei, loop->header->preds)
            if (e != sub)
              set.add (e);
          latch_edges = &set;
          edge in = make_forwarder_block (loop->header, keep_latch_edge, NULL);
          latch_edges = NULL;
          loop->header = in->src;
          class loop *inner = alloc_loop ();
          inner->header = in->dest;
          inner->latch = sub->src;
          add_loop (inner, loop);
          continue;
        }
      for (edge l : latches)
        set.add (l);
      latch_edges = &set;
      edge fwd = make_forwarder_block (loop->header, keep_latch_edge, NULL);
      latch_edges = NULL;
      loop->header = fwd->dest;
      loop->latch = fwd->src;
    }
  loop_optimizer_init (LOOPS_NORMAL);
}

