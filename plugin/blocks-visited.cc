/* plugin/blocks-visited.cc - what blocks=visited adds to the plan of
 * blocks.cc: a byte per block that tells whether it ran, and as few bytes
 * as that takes.
 *
 * Options: blocks=visited (and, for which functions always return,
 * blocks=count placement=tree at=late too).
 *
 * A block needs no byte of its own when another block's tells (its
 * immediate postdominator that it dominates: find_implied, step 1 of
 * blocks.cc); a class of such blocks needs none when its members follow
 * from other bytes (derive_visited, step 6); a byte a loop's header
 * shares is stored once on the loop's entry edge (hoist_visited;
 * roughly, as C):
 *
 *   void f (int n)                  void f (int n)
 *   {                               {
 *     for (int i = 0; i < n; i++)     if (n > 0) __tally.v.3[0] = 1;
 *       g (i);                        for (int i = 0; i < n; i++)
 *   }                                   g (i);
 *                                   }
 *
 * The unit's functions that always come back to their caller
 * (note_returning) let a call to them be like any other statement.  */
#include "tally-plugin.h"
#include "blocks.h"

/* blocks=visited: the functions of this unit planned so far that always
   come back to their caller, by DECL_UID: no loop, no block without a
   way out, no exception or abnormal edge, and no statement that may not
   return but calls to such functions; and the body planned is the one
   that runs (decl_binds_to_current_def_p: not interposable).  GCC
   expands a unit's callees before their callers, so most calls to such
   functions are known when their caller is planned; a callee planned
   later is taken as one that may not return.  A call to one of them is
   like any other statement for find_implied's postdominance and
   derive_visited's rule D (its block still ends there, with its fake
   edge in the map, so that the blocks are blocks=count's).  */
static hash_set<int_hash<int, -1, -2> > *returning_fns;

static bool
visited_may_not_return (function *fun, gimple *stmt)
{
  if (!tally_may_not_return (fun, stmt))
    return false;
  gcall *call = dyn_cast<gcall *> (stmt);
  tree fn = call ? gimple_call_fndecl (call) : NULL_TREE;
  return !(fn && returning_fns && !stmt_can_throw_external (fun, stmt)
           && returning_fns->contains ((int) DECL_UID (fn)));
}

void
tally_blocks_note_returning (function *fun)
{
  if (!decl_binds_to_current_def_p (fun->decl))
    return;
  basic_block bb;
  FOR_EACH_BB_FN (bb, fun)
    {
      if (EDGE_COUNT (bb->succs) == 0)
        return;
      edge e;
      edge_iterator ei;
      FOR_EACH_EDGE (e, ei, bb->succs)
        if (e->flags & (EDGE_COMPLEX | EDGE_FAKE))
          return;
      for (gimple_stmt_iterator gsi = gsi_start_bb (bb); !gsi_end_p (gsi);
           gsi_next (&gsi))
        if (visited_may_not_return (fun, gsi_stmt (gsi)))
          return;
    }
  if (mark_dfs_back_edges ())
    return;
  if (!returning_fns)
    returning_fns = new hash_set<int_hash<int, -1, -2> >;
  returning_fns->add ((int) DECL_UID (fun->decl));
  if (dump_file)
    fprintf (dump_file, "tally: %s always returns\n",
             function_name (fun));
}

/* blocks=visited: for each block, the block whose visited byte tells
   whether it ran: itself, or, when its immediate postdominator C is a block
   it dominates, C's (every path into C passes it, and every path from it
   reaches C).  Postdominance is computed with a fake edge to EXIT from
   every block with a call that may not return, so a block is never
   implied across one.  IMPLIED[i] is the map number, by block index.
   PDOM_EDGES gets the normal edges whose destination postdominates their
   source (derive_visited's rule P).  */
void
tally_blocks_find_implied (function *fun, const vec<int> &map_of,
                           vec<int> *implied,
                           hash_set<edge> *pdom_edges)
{
  basic_block bb;
  FOR_EACH_BB_FN (bb, fun)
    (*implied)[bb->index] = map_of[bb->index];
  FOR_EACH_BB_FN (bb, fun)
    {
      bool call = false;
      for (gimple_stmt_iterator gsi = gsi_start_bb (bb); !gsi_end_p (gsi);
           gsi_next (&gsi))
        call |= visited_may_not_return (fun, gsi_stmt (gsi));
      if (call && !find_edge (bb, EXIT_BLOCK_PTR_FOR_FN (fun)))
        make_edge (bb, EXIT_BLOCK_PTR_FOR_FN (fun), EDGE_FAKE);
    }
  add_noreturn_fake_exit_edges ();
  connect_infinite_loops_to_exit ();
  calculate_dominance_info (CDI_DOMINATORS);
  calculate_dominance_info (CDI_POST_DOMINATORS);
  /* Follow each chain to its end: the chains follow postdominators, so
     they have no cycle.  */
  auto_vec<basic_block> next;
  next.safe_grow_cleared (last_basic_block_for_fn (fun));
  FOR_EACH_BB_FN (bb, fun)
    {
      basic_block c = get_immediate_dominator (CDI_POST_DOMINATORS, bb);
      if (c && c != EXIT_BLOCK_PTR_FOR_FN (fun)
          && dominated_by_p (CDI_DOMINATORS, c, bb))
        next[bb->index] = c;
    }
  FOR_EACH_BB_FN (bb, fun)
    {
      basic_block c = bb;
      while (next[c->index])
        c = next[c->index];
      (*implied)[bb->index] = map_of[c->index];
      if (dump_file && c != bb)
        fprintf (dump_file, "tally: bb %d ran iff bb %d ran\n", bb->index,
                 c->index);
    }
  /* derive_visited's rule P: the edges whose destination postdominates
     their source.  */
  FOR_EACH_BB_FN (bb, fun)
    {
      edge e;
      edge_iterator ei;
      FOR_EACH_EDGE (e, ei, bb->preds)
        if (e->src != ENTRY_BLOCK_PTR_FOR_FN (fun)
            && !(e->flags & EDGE_FAKE)
            && dominated_by_p (CDI_POST_DOMINATORS, e->src, bb))
          pdom_edges->add (e);
    }
  free_dominance_info (CDI_POST_DOMINATORS);
  remove_fake_edges ();
}

/* blocks=visited: a byte whose block C is inside a loop, where it would
   be stored at every iteration, but which a loop's header shares (C ran
   exactly when the header did: find_implied), is stored on the loop's one
   entry edge instead: the header runs exactly when that edge is taken.  Of
   nested loops, the outermost whose header shares the byte.  Not with
   counters=mapped: the byte would be in the file before the blocks it
   stands for ran.  IMPLIED is find_implied's, by block index.  */
void
tally_blocks_hoist_visited (function *fun, tally_block_plan *plan,
                            const vec<int> &map_of,
                            const vec<int> &implied)
{
  if (!current_loops || tally_opts.mapped
      || loops_state_satisfies_p (fun, LOOPS_NEED_FIXUP)
      || number_of_loops (fun) <= 1)
    return;
  hash_map<int_hash<int, -1, -2>, plan_edge *> by_block; /* map number */
  for (plan_edge &pe : plan->edges)
    if (pe.bb && !pe.implied && pe.value != TALLY_MAP_NONE)
      by_block.put (map_of[pe.bb->index], &pe);
  auto_vec<int> depth; /* of the loop chosen, by map number */
  depth.safe_grow_cleared (plan->blocks.length ());
  for (auto loop : loops_list (fun, 0))
    {
      if (!loop->header || (loop->header->flags & BB_IRREDUCIBLE_LOOP))
        continue;
      unsigned nentries;
      edge entry = tally_blocks_loop_entry (loop, &nentries);
      if (nentries != 1 || (entry->flags & (EDGE_COMPLEX | EDGE_FAKE)))
        continue;
      int rep = implied[loop->header->index];
      plan_edge **pe = by_block.get (rep);
      if (!pe || !flow_bb_inside_loop_p (loop, (*pe)->store_bb
                                                    ? (*pe)->store_bb
                                                    : plan->blocks[rep]))
        continue;
      int d = loop_depth (loop);
      if (depth[rep] && depth[rep] <= d)
        continue;
      depth[rep] = d;
      (*pe)->mark_on = entry;
      if (dump_file)
        fprintf (dump_file, "tally: loop %d: the visited byte of bb %d is "
                 "stored on its entry from bb %d\n", loop->num,
                 plan->blocks[rep]->index, entry->src->index);
    }
}

/* Whether a statement of BB may not return, calls to returning_fns
   apart.  */
bool
tally_blocks_block_may_not_return (function *fun, basic_block bb)
{
  for (gimple_stmt_iterator gsi = gsi_start_bb (bb); !gsi_end_p (gsi);
       gsi_next (&gsi))
    if (visited_may_not_return (fun, gsi_stmt (gsi)))
      return true;
  return false;
}

struct class_weight
{
  double weight;
  unsigned rep;
};

static int
cmp_class_weight (const void *a, const void *b)
{
  const class_weight *x = (const class_weight *) a;
  const class_weight *y = (const class_weight *) b;
  if (x->weight != y->weight)
    return x->weight > y->weight ? -1 : 1;
  return x->rep < y->rep ? -1 : x->rep > y->rep;
}

/* blocks=visited: the blocks that need no byte, their visited value
   derived from their neighbours' in the block map (kind
   TALLY_MAP_VISITED_DERIVED: doc/data-format.md "The block map").  Two
   rules, for a block B:
     D (TALLY_BLOCK_ANY_SUCC): B ran iff a block one of B's normal edges
       leads to ran.  Holds when B can be left by its normal edges only
       (no fake edge out of it: no call that may not return, no exception
       or abnormal edge, not a return, it has a successor) and B dominates
       each successor S: B ran, so control went on to some S; S ran, and
       every path into S passes B.
     P (TALLY_BLOCK_ANY_PRED): B ran iff a block with a normal edge into
       B ran.  Holds when B is entered by normal edges only (not the first
       block, no exception, abnormal or setjmp-resume edge into it) and B
       postdominates each predecessor P, with the fake edges to EXIT of
       tally_blocks_find_implied (a call that may not return, a block without
       successors, an infinite loop): B ran, so it was entered from some
       P; P ran, and every way out of the function from P passes B.
   Both are about a run of the function that is over when the counts are
   read: a dump while a block between the two is running (a signal
   handler's, another thread's exit) may see a block derived by P as run
   before it has run, and miss one derived by D until its successor runs
   (doc/guarantees.md, "signals").
   Where a neighbour does not tell (an edge out of B to a block B does
   not dominate, or into B from a block B does not postdominate), the
   edge can have a byte of its own, set when it is taken (map kind
   TALLY_MAP_VISITED_EDGES): through it B's value is the edge's.  Then D
   reads: B ran iff, for one of its normal edges out, the edge's byte is
   set (it has one) or the block it leads to ran (it has none, and B
   dominates that block); P likewise with the edges in.  The edge bytes
   a rule needs are weighed by GCC's estimated profile (edge_weight, an
   edge that needs a block of its own 1.5 times) against the byte of
   the class (its member that runs least often): the cold branch of a
   test into an interpreter loop's latch that every case reaches rather
   than the latch.  Not P with counters=mapped (an edge byte is set
   before B runs).
   Blocks that run exactly together (find_implied's classes, IMPLIED) get
   one byte or none: a class goes without when every member follows by D
   or P, with edge bytes that together cost less than its byte.  The
   derived values must form no cycle (a block derived, through others,
   from itself would say nothing); classes are tried in decreasing
   order of expected runs, so the hot ones are derived from the cold ones
   and their bytes are the ones left out.  DERIVED gets, by map number,
   0 for a block with a byte (its class's) and the rule's flag
   otherwise.  */
void
tally_blocks_derive_visited (function *fun, tally_block_plan *plan,
                             const vec<int> &implied,
                             hash_set<edge> &pdom_edges, bool profile,
                             vec<unsigned> *derived)
{
  unsigned nb = plan->blocks.length ();
  unsigned ne = plan->edges.length ();
  /* D_OK, P_OK: whether M can be left (entered) by its normal edges only,
     the precondition of rule D (P).  */
  auto_vec<bool> d_ok, p_ok;
  d_ok.safe_grow_cleared (nb);
  p_ok.safe_grow_cleared (nb);
  auto_vec<unsigned> nsucc, npred;
  nsucc.safe_grow_cleared (nb);
  npred.safe_grow_cleared (nb);
  for (unsigned m = 2; m < nb; m++)
    {
      d_ok[m] = true;
      /* counters=mapped: not P, which would put a block in the file
         before it ran (a process killed in between).  */
      p_ok[m] = !tally_opts.mapped;
    }
  for (const plan_edge &pe : plan->edges)
    {
      if (pe.bb)
        continue;
      int s = pe.map_src, d = pe.map_dst;
      if (pe.flags == (TALLY_EDGE_FAKE | TALLY_EDGE_CALL) && s >= 2
          && !tally_blocks_block_may_not_return (fun, plan->blocks[s]))
        continue; /* its calls all return (returning_fns) */
      if (pe.flags & TALLY_EDGE_FAKE)
        {
          if (s >= 2)
            d_ok[s] = false;
          if (d >= 2)
            p_ok[d] = false;
          continue;
        }
      if (d == TALLY_MAP_EXIT_NUM)
        d_ok[s] = false;
      if (s == TALLY_MAP_ENTRY_NUM)
        p_ok[d] = false;
      if (s >= 2 && d >= 2)
        {
          nsucc[s]++;
          npred[d]++;
        }
    }
  /* The normal edges between blocks, both ways (CSR of indexes into
     PLAN->edges), and per edge: whether its source dominates its
     destination (a term of rule D without a byte), whether its
     destination postdominates its source (rule P), whether a byte can be
     stored on it, and whether one is.  */
  auto_vec<unsigned> so, po, sl, pl;
  so.safe_grow_cleared (nb + 1);
  po.safe_grow_cleared (nb + 1);
  for (unsigned m = 0; m < nb; m++)
    {
      so[m + 1] = so[m] + nsucc[m];
      po[m + 1] = po[m] + npred[m];
    }
  sl.safe_grow_cleared (so[nb] + 1);
  pl.safe_grow_cleared (po[nb] + 1);
  auto_vec<unsigned> fs, fp;
  fs.safe_grow_cleared (nb);
  fp.safe_grow_cleared (nb);
  auto_vec<bool> dom, pdom, can_mark;
  auto_vec<unsigned char> marked; /* 0 no, 1 tried for a class, 2 yes */
  dom.safe_grow_cleared (ne);
  pdom.safe_grow_cleared (ne);
  can_mark.safe_grow_cleared (ne);
  marked.safe_grow_cleared (ne);
  for (unsigned i = 0; i < ne; i++)
    {
      const plan_edge &pe = plan->edges[i];
      if (pe.bb || (pe.flags & TALLY_EDGE_FAKE) || pe.map_src < 2
          || pe.map_dst < 2)
        continue;
      sl[so[pe.map_src] + fs[pe.map_src]++] = i;
      pl[po[pe.map_dst] + fp[pe.map_dst]++] = i;
      dom[i] = dominated_by_p (CDI_DOMINATORS, plan->blocks[pe.map_dst],
                               plan->blocks[pe.map_src]);
      pdom[i] = pe.e && pdom_edges.contains (pe.e);
      /* Where a counter could go (not out of a setjmp block), on a
         jump.  */
      can_mark[i] = pe.e && pe.can_count && !(pe.e->flags & EDGE_COMPLEX);
    }
  for (unsigned m = 2; m < nb; m++)
    {
      d_ok[m] = d_ok[m] && nsucc[m] > 0;
      p_ok[m] = p_ok[m] && npred[m] > 0;
    }
  auto edge_cost = [&] (unsigned i) -> double {
    edge e = plan->edges[i].e;
    bool split = !single_pred_p (e->dest) && !single_succ_p (e->src);
    return tally_blocks_edge_weight (fun, e, profile) * (split ? 1.5 : 1.0);
  };

  /* The classes, by representative, hottest first.  */
  auto_vec<unsigned> reps;
  auto_vec<vec<unsigned> > members;
  members.safe_grow_cleared (nb);
  for (unsigned m = 2; m < nb; m++)
    {
      unsigned r = implied[plan->blocks[m]->index];
      if (members[r].is_empty ())
        reps.safe_push (r);
      members[r].safe_push (m);
    }
  auto_vec<class_weight> order;
  for (unsigned r : reps)
    {
      class_weight c
          = { tally_blocks_block_weight (fun, plan->blocks[r], profile), r };
      order.safe_push (c);
    }
  order.qsort (cmp_class_weight);

  /* The edges M's value would be derived through by rule D (or P): its
     normal edges out (in).  Through edge I the value is the edge's byte
     when it has one (MARKED 2, or 1 while a class is tried), else the
     block at its other end.  */
  auto dep = [&] (unsigned i, bool d) -> unsigned {
    if (marked[i])
      return 0;
    const plan_edge &pe = plan->edges[i];
    return d ? pe.map_dst : pe.map_src;
  };
  /* Whether deriving M by rule D (or P) would make M depend on itself,
     through the blocks derived so far.  */
  auto_vec<unsigned> stamp;
  stamp.safe_grow_cleared (nb);
  unsigned now = 0;
  auto_vec<unsigned> stack;
  auto push_deps = [&] (unsigned m, bool d) {
    const vec<unsigned> &l = d ? sl : pl;
    const vec<unsigned> &o = d ? so : po;
    for (unsigned k = o[m]; k < o[m + 1]; k++)
      if (unsigned n = dep (l[k], d))
        stack.safe_push (n);
  };
  auto cycle = [&] (unsigned m, bool d) -> bool {
    now++;
    stack.truncate (0);
    push_deps (m, d);
    while (!stack.is_empty ())
      {
        unsigned n = stack.pop ();
        if (n == m)
          return true;
        if (stamp[n] == now || !(*derived)[n])
          continue;
        stamp[n] = now;
        push_deps (n, (*derived)[n] == TALLY_BLOCK_ANY_SUCC);
      }
    return false;
  };
  /* The bytes rule D (P) needs on M's edges for M's value: each edge
     whose other end does not tell (does not dominate, postdominate) and
     that has none yet, marked 1 into TRIED; their cost, or -1 if one
     cannot have a byte.  */
  auto_vec<unsigned> tried;
  auto need = [&] (unsigned m, bool d) -> double {
    const vec<unsigned> &l = d ? sl : pl;
    const vec<unsigned> &o = d ? so : po;
    double cost = 0;
    unsigned first = tried.length ();
    for (unsigned k = o[m]; k < o[m + 1]; k++)
      {
        unsigned i = l[k];
        if (marked[i] || (d ? dom[i] : pdom[i]))
          continue;
        if (!can_mark[i])
          {
            while (tried.length () > first)
              marked[tried.pop ()] = 0;
            return -1;
          }
        marked[i] = 1;
        tried.safe_push (i);
        cost += edge_cost (i);
      }
    return cost;
  };
  auto undo = [&] (unsigned to) {
    while (tried.length () > to)
      marked[tried.pop ()] = 0;
  };
  for (const class_weight &c : order)
    {
      const vec<unsigned> &k = members[c.rep];
      /* What the class's byte would cost: in its member that runs least
         often.  */
      double byte = 0;
      for (unsigned j = 0; j < k.length (); j++)
        {
          double w
              = tally_blocks_block_weight (fun, plan->blocks[k[j]], profile);
          if (j == 0 || w < byte)
            byte = w;
        }
      bool all = true;
      double spent = 0;
      tried.truncate (0);
      for (unsigned m : k)
        {
          /* Rules D and P through the blocks, with the bytes on edges
             where a neighbour does not tell: the cheaper of the two
             whose bytes cost less than the class's own byte.  */
          unsigned best = 0;
          double best_cost = 0;
          for (int d = 1; d >= 0; d--)
            {
              if (!(d ? d_ok[m] : p_ok[m]))
                continue;
              unsigned at = tried.length ();
              double cost = need (m, d);
              bool ok = cost == 0 || (cost > 0 && cost < byte - spent);
              ok = ok && !cycle (m, d);
              undo (at);
              if (ok && (!best || cost < best_cost))
                {
                  best = d ? TALLY_BLOCK_ANY_SUCC : TALLY_BLOCK_ANY_PRED;
                  best_cost = cost;
                }
              if (best && best_cost == 0)
                break;
            }
          if (best)
            need (m, best == TALLY_BLOCK_ANY_SUCC);
          if (!best)
            {
              all = false;
              break;
            }
          (*derived)[m] = best;
          spent += best_cost;
        }
      if (!all)
        {
          for (unsigned m : k)
            (*derived)[m] = 0;
          undo (0);
          continue;
        }
      for (unsigned i : tried)
        marked[i] = 2;
    }
  for (unsigned m = 0; m < nb; m++)
    members[m].release ();
  for (unsigned i = 0; i < ne; i++)
    if (marked[i] == 2)
      {
        plan->edges[i].mark_visited = true;
        if (dump_file)
          fprintf (dump_file, "tally: edge bb %d -> bb %d gets a visited "
                   "byte\n", plan->edges[i].e->src->index,
                   plan->edges[i].e->dest->index);
      }
  if (dump_file)
    for (unsigned m = 2; m < nb; m++)
      if ((*derived)[m])
        fprintf (dump_file, "tally: bb %d visited iff any %s ran\n",
                 plan->blocks[m]->index,
                 (*derived)[m] == TALLY_BLOCK_ANY_SUCC ? "successor"
                                                       : "predecessor");
}
