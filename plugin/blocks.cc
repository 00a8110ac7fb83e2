/* plugin/blocks.cc - basic-block counters (blocks=count|visited).
 *
 * Options: blocks=none|count|visited, placement=tree|block,
 * update=single|atomic|tls (updates.cc builds the increments).
 *
 * blocks=count gives the exact number of times every basic block ran, and
 * blocks=visited a byte per block set to 1 when it runs.  Each function
 * also gets a block map (tally/format.h): its blocks with their source lines,
 * its edges, and which value counts what.  The report tools solve the
 * counts the map leaves out, so a count never has to be added at run time
 * when it follows from others:
 *
 *   int f (int n)                       int f (int n)
 *   {                                   {
 *     int s = 0;                          int s = 0;
 *     for (int i = 0; i < n; i++)         for (int i = 0; i < n; i++)
 *       s += g (i);                         { s += g (i); __tally.c.3[2]++; }
 *     return s;                           return s;
 *   }                                   }
 *
 * (placement=tree: only the edge around the loop is counted; f's entry
 * count, the loop test's and the exit's follow from it and from the
 * caller's counters.  placement=block counts every block at its start,
 * and the edges the block counts leave undetermined: see step 5.)
 *
 * The flow graph the counts must satisfy:
 *   1. Blocks are split after every call that may not return (exit, longjmp,
 *      a throw), as GCC's own -fprofile-arcs does, so that a block's count
 *      is the count of each of its statements.  (blocks=visited gives a byte
 *      only to blocks no other block implies: see find_implied; one that
 *      a loop's header shares is stored on the loop's entry edge:
 *      hoist_visited.)
 *   2. Each block B is two nodes, B.in and B.out, joined by B's "block edge"
 *      (its count is B's count).  CFG edges run from B.out to C.in.
 *   3. Edges that cannot carry code (exception and abnormal edges) are
 *      replaced by fake edges B.out -> EXIT ("left by a throw or longjmp")
 *      and ENTRY -> C.in ("arrived by one"); a block ending in a call that
 *      may not return, or with no successor, gets a fake edge to EXIT too.
 *      (A second return from setjmp arrives after the call: resume_block.
 *      The setjmp block itself always returns, and the edge out of it is
 *      never counted: a counter there would see the second returns too.)
 *      EXIT flows back into ENTRY.
 *   4. Every edge that cannot be counted (fake edges, and edges into EXIT,
 *      which would go between the return value and the return) goes on a
 *      spanning tree first.  Fake edges from distinct nodes all meet the
 *      ENTRY/EXIT node, so they never close a cycle.
 *   5. The rest of the tree is a maximum spanning tree weighted by how often
 *      each edge is expected to run (GCC's estimated profile after
 *      optimisation, loop depth before it; with profile=FILE the counts
 *      an earlier run measured, profile.cc), with edges that would need a
 *      new block (critical edges) weighted higher: the hot edges go
 *      uncounted.
 *      placement=block counts every block edge, and builds the forest of
 *      the other edges the same way.
 *      At late placement, optimised, the latch edge of a loop with a
 *      constant trip count (counted at every iteration wherever the tree
 *      leaves the loop's counter) is left off the tree and counted once
 *      per run of the loop instead, by adding the trip count on entry
 *      (derive_latches), where the loop cannot be left otherwise.
 *   6. Every edge off the tree gets a counter.  Flow conservation at each
 *      node then determines every tree edge, hence every block, exactly
 *      (the Knuth-Stevenson / Ball-Larus result that gcov relies on).
 * Locations are recorded as gcov records them (each statement's line once
 * per block, the function's own line in its first block, the goto locus of a
 * block's only successor unless a statement had that location), on the
 * blocks gcov has (split after calls as in 1., edges whose goto locus is on
 * another line than their block's end split off, loops in normal form where
 * -Wformat makes GCC 12 and later do so at -O0), so tally's line counts can
 * be checked against gcov's.
 *
 * This file plans: the weights, the graph and its spanning tree, the
 * derived latches (5a), profile=FILE's weighing (5b), the values (6) and
 * the map's encoding.  What blocks=visited adds to the plan (the implied,
 * derived and hoisted bytes, and which of the unit's functions always
 * return) is blocks-visited.cc; the counters and bytes put into the code
 * as planned, blocks-insert.cc; what the three share, blocks.h.  */
#include "tally-plugin.h"
#include "blocks.h"

#include "tree-ssa-loop.h"
#include "tree-ssa-loop-niter.h"
#include "tree-scalar-evolution.h"
#include "gimplify-me.h"
#include "tree-pretty-print.h"

/* profile=FILE (profile.cc): the counts an earlier run measured for the
   function being planned, while it is planned (weigh_by_profile); NULL
   when it has none.  */
struct measured_weights
{
  auto_vec<double> block;          /* by block index */
  hash_map<edge, double> by_edge;  /* its normal edges */
};
static measured_weights *measured;

/* A measured count W with GCC's guess G to break ties: G scaled into
   [0, 0.5), less than any difference of two counts, so that among the
   edges (blocks) the run took equally often, never for instance, the
   guess still decides.  */
static double
with_guess (double w, double g)
{
  return w + 0.5 * g / (1 + g);
}

/* How often BB is expected to run, relative to the function's entry
   (measured: how often it ran).  */
double
tally_blocks_block_weight (function *fun, basic_block bb, bool profile)
{
  double w = 1;
  if (profile)
    w = bb->count.to_sreal_scale (ENTRY_BLOCK_PTR_FOR_FN (fun)->count)
        .to_double ();
  else if (current_loops && bb->loop_father)
    for (unsigned d = bb_loop_depth (bb); d > 0; d--)
      w *= 8;
  if (measured && (unsigned) bb->index < measured->block.length ())
    return with_guess (measured->block[bb->index], w);
  return w;
}

double
tally_blocks_edge_weight (function *fun, edge e, bool profile)
{
  double w;
  if (profile)
    w = e->count ().to_sreal_scale (ENTRY_BLOCK_PTR_FOR_FN (fun)->count)
        .to_double ();
  else
    {
      /* The guess by loop depth, without the measured counts.  */
      measured_weights *m = measured;
      measured = NULL;
      double a = tally_blocks_block_weight (fun, e->src, false);
      double b = tally_blocks_block_weight (fun, e->dest, false);
      measured = m;
      w = a < b ? a : b;
    }
  if (double *c = measured ? measured->by_edge.get (e) : NULL)
    return with_guess (*c, w);
  return w;
}

/* Union-find over graph nodes.  */
static int
find_root (vec<int> &parent, int x)
{
  while (parent[x] != x)
    {
      parent[x] = parent[parent[x]];
      x = parent[x];
    }
  return x;
}

static bool
join (vec<int> &parent, int a, int b)
{
  a = find_root (parent, a);
  b = find_root (parent, b);
  if (a == b)
    return false;
  parent[a] = b;
  return true;
}

static unsigned
file_index (tally_block_plan *plan, const char *file)
{
  for (unsigned i = 0; i < plan->files.length (); i++)
    if (strcmp (plan->files[i], file) == 0)
      return i;
  plan->files.safe_push (file);
  return plan->files.length () - 1;
}

/* Record LOC for map block M, once per (file, line).  */
static void
add_location (tally_block_plan *plan, unsigned m, location_t loc)
{
  if (RESERVED_LOCATION_P (loc))
    return;
  expanded_location x = expand_location (loc);
  if (!x.file || x.line <= 0)
    return;
  block_loc l = { file_index (plan, x.file), (unsigned) x.line };
  for (const block_loc &o : plan->locs[m])
    if (o.file == l.file && o.line == l.line)
      return;
  plan->locs[m].safe_push (l);
}

static void
serialize (tally_block_plan *plan, vec<unsigned char> *out)
{
  unsigned nblocks = plan->blocks.length ();
  unsigned nmapped = 0;
  for (const plan_edge &pe : plan->edges)
    nmapped += pe.bb == NULL;
  struct tally_maphdr h = { plan->kind, nblocks, nmapped,
                             plan->files.length () };
  tally_maphdr_put (tally_put_part (out, TALLY_MAP_FIXED), &h);
  for (const char *f : plan->files)
    {
      size_t n = strlen (f);
      tally_put_u32 (out, n);
      for (size_t i = 0; i < n; i++)
        out->safe_push ((unsigned char) f[i]);
    }
  auto_vec<unsigned> block_value;
  block_value.safe_grow_cleared (nblocks);
  for (unsigned m = 0; m < nblocks; m++)
    block_value[m] = TALLY_MAP_NONE;
  for (const plan_edge &pe : plan->edges)
    if (pe.bb)
      block_value[(pe.src + 2) / 2] = pe.value; /* src is IN_NODE (m) */
  for (unsigned m = 0; m < nblocks; m++)
    {
      struct tally_mapblk b = { block_value[m], plan->block_flags[m],
                                plan->locs[m].length () };
      tally_mapblk_put (tally_put_part (out, TALLY_MAPBLK_FIXED), &b);
      for (const block_loc &l : plan->locs[m])
        {
          tally_put_u32 (out, l.file);
          tally_put_u32 (out, l.line);
        }
    }
  for (const plan_edge &pe : plan->edges)
    if (!pe.bb)
      {
        struct tally_mapedge e = { (uint32_t) pe.map_src,
                                   (uint32_t) pe.map_dst, pe.flags,
                                   pe.value };
        tally_mapedge_put (tally_put_part (out, TALLY_MAP_EDGE), &e);
      }
}

/* A new edge of the graph, from node SRC to DST: on no tree, with no value
   yet.  */
static void
push_edge (tally_block_plan *plan, int src, int dst, int map_src, int map_dst,
           unsigned flags, edge e, basic_block bb, double cost, bool can_count)
{
  plan_edge pe = { .src = src, .dst = dst, .map_src = map_src,
                   .map_dst = map_dst, .flags = flags, .e = e, .bb = bb,
                   .cost = cost, .can_count = can_count, .on_tree = false,
                   .implied = false, .value = TALLY_MAP_NONE, .derived = NULL,
                   .store_bb = NULL, .mark_on = NULL,
                   .mark_visited = false, .from_callers = false };
  plan->edges.safe_push (pe);
}

/* The edge of the map from block MAP_SRC to MAP_DST.  */
static void
add_edge (tally_block_plan *plan, int map_src, int map_dst, unsigned flags,
          edge e, double cost, bool can_count)
{
  push_edge (plan,
             map_src == TALLY_MAP_ENTRY_NUM ? ENTRY_NODE : OUT_NODE (map_src),
             map_dst == TALLY_MAP_EXIT_NUM ? EXIT_NODE : IN_NODE (map_dst),
             map_src, map_dst, flags, e, NULL, cost, can_count);
}

static int
cmp_cost (const void *a, const void *b)
{
  const plan_edge *x = *(const plan_edge *const *) a;
  const plan_edge *y = *(const plan_edge *const *) b;
  if (x->cost != y->cost)
    return x->cost > y->cost ? -1 : 1;
  return x < y ? -1 : x > y; /* stable: creation order */
}

/* The edge into LOOP's header from outside the loop, and in *N how many
   such edges there are (the edge is one of them, NULL if none).  */
edge
tally_blocks_loop_entry (const class loop *loop, unsigned *n)
{
  edge entry = NULL, e;
  edge_iterator ei;
  *n = 0;
  FOR_EACH_EDGE (e, ei, loop->header->preds)
    if (!flow_bb_inside_loop_p (loop, e->src))
      {
        entry = e;
        ++*n;
      }
  return entry;
}

/* 5a. placement=tree at=late: a loop's latch edge, whose counter would be
   updated at every iteration, is counted once per run of the loop instead
   when GCC's trip-count analysis (number_of_iterations_exit) gives a
   constant: counter += trip count on the loop's entry edge.  The tree is
   then built without that edge.  Only loops that cannot be left but by
   their one exit: no call that may not return (split_after_calls marked
   them in CALL_ENDED), no exception, abnormal or fake edge, no block
   without successors; one entry edge.  Not with counters=mapped (the
   count would reach the file before the iterations ran: a process killed
   in the loop would overcount).  The derived latches are appended to
   *OUT.  */
static void
derive_latches (function *fun, tally_block_plan *plan, bitmap call_ended,
                vec<derived_latch *> *out)
{
  if (!optimize || !gimple_in_ssa_p (fun) || !current_loops || tally_opts.mapped
      || loops_state_satisfies_p (fun, LOOPS_NEED_FIXUP)
      || number_of_loops (fun) <= 1)
    return;
  free_dominance_info (CDI_DOMINATORS);
  calculate_dominance_info (CDI_DOMINATORS);
  /* GCC's trip-count and scalar-evolution code is made for loops in its
     normal form (LOOPS_NORMAL: preheaders, simple latches, irreducible
     regions marked), which scev_initialize asserts from GCC 13 on; after
     the loop optimisers the loops need not be in it.  Of that form the
     analysis uses each loop's preheader edge (loop_preheader_edge: the one
     edge into the header from outside), its one latch edge, and the marks
     of irreducible regions.  So it runs only when every loop has exactly
     one edge from outside into its header and one latch edge, and with
     the irreducible regions marked afresh (mark_irreducible_loops: the
     marks left by the loop optimisers may be stale), the state saying
     normal form for the time of the analysis.  The rest of the form is
     that latches and preheaders are blocks of their own, which only jump
     to the header: loop_optimizer_init would make them, but those blocks
     would be in every block mode's map, and measured they cost blocks=visited
     stores (visited/cost, visited3/latch) and change what a dump from
     a signal handler sees of a promoted loop (promote/signal-boundary).
     The analysis counts iterations by the exit test, which must dominate
     the latch (number_of_iterations_exit checks it), whichever block the
     latch is: the trip count it gives is the number of times the latch
     edge is taken.  */
  bool niter_ok = true;
  for (auto loop : loops_list (fun, 0))
    {
      unsigned outside = 0, inside = 0;
      edge e;
      edge_iterator ei;
      FOR_EACH_EDGE (e, ei, loop->header->preds)
        if (flow_bb_inside_loop_p (loop, e->src))
          inside += e->src == loop->latch;
        else
          outside++;
      if (!loop->latch || outside != 1 || inside != 1
          || EDGE_COUNT (loop->header->preds) != 2)
        niter_ok = false;
    }
  int saved_state = loops_for_fn (fun)->state;
  bool scev = false;
  if (niter_ok)
    {
      mark_irreducible_loops ();
      loops_state_set (fun, LOOPS_NORMAL);
      loops_state_clear (fun, LOOPS_MAY_HAVE_MULTIPLE_LATCHES);
      scev = !scev_initialized_p ();
      if (scev)
        scev_initialize ();
    }
  hash_map<edge, plan_edge *> by_edge;
  for (plan_edge &pe : plan->edges)
    if (pe.e)
      by_edge.put (pe.e, &pe);
  for (auto loop : loops_list (fun, 0))
    {
      const char *why = NULL;
      edge latch = loop->latch ? find_edge (loop->latch, loop->header) : NULL;
      plan_edge **lp = latch ? by_edge.get (latch) : NULL;
      unsigned nentries;
      edge entry = tally_blocks_loop_entry (loop, &nentries);
      auto_vec<edge> exits = get_loop_exit_edges (loop);
      if (!lp || !(*lp)->can_count || (latch->flags & EDGE_COMPLEX)
          || (loop->header->flags & BB_IRREDUCIBLE_LOOP))
        why = "no single countable latch edge";
      else if (nentries != 1 || (entry->flags & EDGE_COMPLEX)
               || EDGE_COUNT (loop->header->preds) != 2)
        why = "no single entry edge and latch";
      else if (exits.is_empty ())
        why = "no exit";
      for (edge x : exits)
        if (!why && ((x->flags & (EDGE_COMPLEX | EDGE_FAKE))
                     || x->dest == EXIT_BLOCK_PTR_FOR_FN (fun)))
          why = "an exit edge that cannot take code";
      if (!why)
        {
          basic_block *body = get_loop_body (loop);
          for (unsigned i = 0; i < loop->num_nodes && !why; i++)
            {
              basic_block b = body[i];
              edge e;
              edge_iterator ei;
              if (bitmap_bit_p (call_ended, b->index)
                  || EDGE_COUNT (b->succs) == 0
                  || (b->flags & BB_IRREDUCIBLE_LOOP))
                why = "may be left by a call or have no way out";
              FOR_EACH_EDGE (e, ei, b->succs)
                if (e->flags & (EDGE_COMPLEX | EDGE_FAKE))
                  why = "may be left by an exception or a jump";
              for (gimple_stmt_iterator gsi = gsi_start_bb (b);
                   !why && !gsi_end_p (gsi); gsi_next (&gsi))
                if (tally_may_not_return (fun, gsi_stmt (gsi)))
                  why = "may be left by a call";
            }
          free (body);
        }
      if (why)
        {
          if (dump_file)
            fprintf (dump_file, "tally: loop %d: latch counted: %s\n",
                     loop->num, why);
          continue;
        }
      derived_latch *d = new derived_latch ();
      d->entry = entry;
      d->niter = NULL_TREE;
      tree_niter_desc desc;
      if (niter_ok && exits.length () == 1
          && number_of_iterations_exit (loop, exits[0], &desc, false)
          && desc.niter && integer_nonzerop (desc.assumptions)
          && INTEGRAL_TYPE_P (TREE_TYPE (desc.niter)))
        {
          tree niter = desc.niter;
          if (!integer_zerop (desc.may_be_zero))
            niter = fold_build3 (COND_EXPR, TREE_TYPE (niter),
                                 desc.may_be_zero,
                                 build_int_cst (TREE_TYPE (niter), 0), niter);
          niter = fold_convert (uint64_type_node, niter);
          /* Only a constant trip count: one add of it per run of the loop
             is never dearer than one add per iteration.  Computing a
             trip count or an induction variable's iterations costs 3 to
             5 instructions per run, which measured dearer than the adds
             it saves on bzip2, lua and sqlite (the loops GCC's guessed
             profile expects to go round often mostly go round once or
             twice): see doc/benchmarks/placement-floor.md.  */
          if (TREE_CODE (niter) == INTEGER_CST && !integer_zerop (niter))
            d->niter = niter;
        }
      if (!d->niter)
        {
          if (dump_file)
            fprintf (dump_file, "tally: loop %d: latch counted: no constant "
                     "trip count\n", loop->num);
          delete d;
          continue;
        }
      (*lp)->derived = d;
      out->safe_push (d);
      if (dump_file)
        {
          fprintf (dump_file, "tally: loop %d (header bb %d): latch count "
                   "from the trip count, added on entry from bb %d: ",
                   loop->num, loop->header->index, entry->src->index);
          print_generic_expr (dump_file, d->niter);
          fprintf (dump_file, "\n");
        }
    }
  if (scev)
    scev_finalize ();
  loops_for_fn (fun)->state = saved_state;
}

/* Whether BB's first statement (after its labels) is a setjmp-like call,
   one that returns twice.  */
bool
tally_blocks_returns_twice_first (basic_block bb)
{
  gimple_stmt_iterator gsi = gsi_after_labels (bb);
  if (gsi_end_p (gsi) || is_gimple_debug (gsi_stmt (gsi)))
    gsi = gsi_start_nondebug_after_labels_bb (bb);
  gcall *call = gsi_end_p (gsi) ? NULL : dyn_cast<gcall *> (gsi_stmt (gsi));
  return call && (gimple_call_flags (call) & ECF_RETURNS_TWICE);
}

/* Where control arriving over an abnormal edge into BB resumes, as a map
   number: BB itself, except for the block of a setjmp-like call (GCC's
   abnormal edges into it stand for the call's second return), where it is
   the block after the call (step 1 made the call end its block).  */
static unsigned
resume_block (basic_block bb, const vec<int> &map_of)
{
  if (tally_blocks_returns_twice_first (bb))
    {
      edge e;
      edge_iterator ei;
      FOR_EACH_EDGE (e, ei, bb->succs)
        if (!(e->flags & (EDGE_COMPLEX | EDGE_FAKE))
            && e->dest != EXIT_BLOCK_PTR_FOR_FN (cfun))
          return map_of[e->dest->index];
    }
  return map_of[bb->index];
}

/* 5b. profile=FILE: the counts of FUN's blocks and normal edges in an
   earlier run, when the profile has FUN with the graph PLAN has
   (profile.cc), into *MW by block index and by edge; the costs of
   PLAN's edges are then those counts (an edge that needs a block of its
   own 1.5 times, as with the guess), and the spanning tree leaves the
   edges the run took most uncounted.  Only where counters go changes:
   every count stays exact whatever a later run does.  */
static bool
weigh_by_profile (function *fun, tally_block_plan *plan, bool profile,
                  measured_weights *mw)
{
  vec<unsigned char> map = vNULL;
  serialize (plan, &map);
  const uint64_t *blocks, *edges;
  bool found = tally_profile_counts (fun, map, &blocks, &edges);
  map.release ();
  if (!found)
    return false;
  mw->block.safe_grow_cleared (last_basic_block_for_fn (fun));
  mw->block[ENTRY_BLOCK] = blocks[TALLY_MAP_ENTRY_NUM];
  mw->block[EXIT_BLOCK] = blocks[TALLY_MAP_EXIT_NUM];
  for (unsigned m = 2; m < plan->blocks.length (); m++)
    mw->block[plan->blocks[m]->index] = blocks[m];
  unsigned k = 0;
  for (const plan_edge &pe : plan->edges)
    if (!pe.bb && !(pe.flags & TALLY_EDGE_FAKE))
      mw->by_edge.put (pe.e, edges[k++]);
  measured = mw;
  for (plan_edge &pe : plan->edges)
    if (pe.bb)
      pe.cost = tally_blocks_block_weight (fun, pe.bb, profile);
    else if (pe.e)
      {
        bool split = !single_pred_p (pe.e->dest) && !single_succ_p (pe.e->src);
        pe.cost = tally_blocks_edge_weight (fun, pe.e, profile)
                  * (split ? 1.5 : 1.0);
      }
  return true;
}

bool
tally_blocks_entry_from_callers (const tally_block_plan *plan)
{
  return plan->kind == TALLY_MAP_TREE_CALLERS;
}

int
tally_blocks_map_block (const tally_block_plan *plan, basic_block bb)
{
  if (bb->index < 0 || (unsigned) bb->index >= plan->map_of.length ())
    return -1;
  return plan->map_of[bb->index];
}

/* 5c. What PLAN's updates cost by the measured profile: the runs of the
   blocks and edges its counters and visited bytes are updated on (a
   derived latch count's on the loop's entry edge).  */
static double
plan_cost (const tally_block_plan *plan)
{
  auto edge_runs = [] (edge e) -> double {
    double *c = measured->by_edge.get (e);
    return c ? *c : 0;
  };
  auto block_runs = [] (basic_block bb) -> double {
    return (unsigned) bb->index < measured->block.length ()
               ? measured->block[bb->index] : 0;
  };
  double cost = 0;
  for (const plan_edge &pe : plan->edges)
    {
      if (pe.value == TALLY_MAP_NONE || pe.implied)
        continue;
      if (pe.derived)
        cost += edge_runs (pe.derived->entry);
      else if (pe.mark_on)
        cost += edge_runs (pe.mark_on);
      else if (pe.bb)
        cost += block_runs (pe.store_bb ? pe.store_bb : pe.bb);
      else if (pe.e)
        cost += edge_runs (pe.e);
    }
  return cost;
}

static tally_block_plan *plan_blocks (function *fun, tally_fn_layout *layout,
                                      bool entry_from_callers, bool visited,
                                      double *cost);

/* blocks=visited with profile=: a function whose exact block counts cost
   fewer updates than its visited bytes, by the profile (plan_cost: a
   loop's one counter against a byte at each of its arms, say), gets the
   counters of blocks=count instead (map kind 2; a visited module's
   readers read each function by its map's kind, and its counts tell
   which blocks ran).  Not with counters=mapped, whose visited bytes
   promise more about killed processes than derived counts do.  */
tally_block_plan *
tally_blocks_plan (function *fun, tally_fn_layout *layout,
                   bool entry_from_callers)
{
  bool visited = tally_opts.blocks == TALLY_BLOCKS_VISITED;
  if (!visited || !tally_profile_given () || tally_opts.mapped)
    return plan_blocks (fun, layout, entry_from_callers, visited, NULL);
  double bytes, counts;
  tally_fn_layout counted = *layout; /* its map is still empty */
  tally_block_plan *v = plan_blocks (fun, layout, false, true, &bytes);
  if (bytes <= 0)
    return v; /* not in the profile, or no byte ever stored */
  tally_block_plan *c = plan_blocks (fun, &counted, false, false, &counts);
  if (dump_file)
    fprintf (dump_file, "tally: profile: %s counted (%.0f updates in the "
             "profile's run) %s visited (%.0f)\n", function_name (fun),
             counts, counts < bytes ? "rather than" : "no cheaper than", bytes);
  if (counts < bytes)
    {
      delete v;
      layout->map.release ();
      *layout = counted;
      return c;
    }
  delete c;
  counted.map.release ();
  return v;
}

/* The plan of FUN's block counters (VISITED: visited bytes), with its
   map and counter counts in *LAYOUT; with COST, also what it costs by
   the profile (plan_cost), or -1 when the profile does not have FUN.  */
static tally_block_plan *
plan_blocks (function *fun, tally_fn_layout *layout, bool entry_from_callers,
             bool visited, double *cost)
{
  tally_block_plan *plan = new tally_block_plan;
  bool per_block = visited || tally_opts.placement == TALLY_PLACE_BLOCK;
  plan->kind = visited ? TALLY_MAP_VISITED
               : per_block ? TALLY_MAP_BLOCK
                           : TALLY_MAP_TREE;

  /* 1. Split after calls that may not return (visited too, so that a
     visited block is one whose statements all ran, and the blocks are the
     same as with blocks=count).  */
  if (!optimize && (warn_format_overflow > 0 || warn_format_trunc > 0)
      && tally_wformat_normalizes_loops () && current_loops)
    tally_normalize_loops (fun);
  auto_bitmap call_ended;
  tally_split_after_calls (fun, call_ended);
  tally_split_goto_edges (fun, call_ended);

  /* Number the blocks: ENTRY 0, EXIT 1, the others in layout order.  */
  auto_vec<int> &map_of = plan->map_of;
  map_of.safe_grow_cleared (last_basic_block_for_fn (fun));
  plan->blocks.safe_push (NULL);
  plan->blocks.safe_push (NULL);
  basic_block bb;
  FOR_EACH_BB_FN (bb, fun)
    {
      map_of[bb->index] = plan->blocks.length ();
      plan->blocks.safe_push (bb);
    }
  map_of[ENTRY_BLOCK] = TALLY_MAP_ENTRY_NUM;
  map_of[EXIT_BLOCK] = TALLY_MAP_EXIT_NUM;
  unsigned nblocks = plan->blocks.length ();
  auto_vec<int> implied;
  hash_set<edge> pdom_edges;
  if (visited)
    {
      implied.safe_grow_cleared (last_basic_block_for_fn (fun));
      tally_blocks_find_implied (fun, map_of, &implied, &pdom_edges);
    }
  plan->block_flags.safe_grow_cleared (nblocks);
  plan->locs.safe_grow_cleared (nblocks);

  /* Locations, as gcov records them: a block's goto_locus only when no
     statement so far had that very location.  */
  hash_set<int_hash<location_t, UNKNOWN_LOCATION, BUILTINS_LOCATION> > seen;
  FOR_EACH_BB_FN (bb, fun)
    {
      unsigned m = map_of[bb->index];
      if (bb == ENTRY_BLOCK_PTR_FOR_FN (fun)->next_bb)
        {
          location_t loc = DECL_SOURCE_LOCATION (fun->decl);
          if (!RESERVED_LOCATION_P (loc))
            seen.add (loc);
          add_location (plan, m, loc);
        }
      for (gimple_stmt_iterator gsi = gsi_start_nondebug_bb (bb);
           !gsi_end_p (gsi); gsi_next_nondebug (&gsi))
        {
          location_t loc = gimple_location (gsi_stmt (gsi));
          if (!RESERVED_LOCATION_P (loc))
            seen.add (loc);
          add_location (plan, m, loc);
        }
      if (tally_profile_single_succ_p (fun, bb, call_ended, true)
          && single_succ_p (bb)
          && !RESERVED_LOCATION_P (single_succ_edge (bb)->goto_locus)
          && !seen.contains (single_succ_edge (bb)->goto_locus))
        add_location (plan, m, single_succ_edge (bb)->goto_locus);
      if (bitmap_bit_p (call_ended, bb->index))
        plan->block_flags[m] |= TALLY_BLOCK_CALL;
    }

  bool profile = ENTRY_BLOCK_PTR_FOR_FN (fun)->count.initialized_p ()
                 && ENTRY_BLOCK_PTR_FOR_FN (fun)->count.nonzero_p ();

  /* 2, 3. The edges.  placement=tree at=late: a block that ends with a
     call to a function of the unit that always returns (returning_fns)
     needs no fake edge to EXIT, which would take a counter of its own on
     the cycle it closes: the rest of the block runs as often as the call
     (a process killed, or a dump made, while the callee runs counts it
     ahead; not with counters=mapped, whose files of killed processes
     count only what ran).  The block still ends there, as gcov's do.  */
  bool returns_known = !per_block && tally_opts.at == TALLY_AT_LATE
                       && !tally_opts.mapped;
  auto_vec<unsigned> inject;
  inject.safe_grow_cleared (nblocks);
  FOR_ALL_BB_FN (bb, fun)
    {
      if (bb == EXIT_BLOCK_PTR_FOR_FN (fun))
        continue;
      unsigned leak = 0;
      edge e;
      edge_iterator ei;
      bool setjmp_block = bb != ENTRY_BLOCK_PTR_FOR_FN (fun)
                          && resume_block (bb, map_of) != (unsigned) map_of[bb->index];
      FOR_EACH_EDGE (e, ei, bb->succs)
        {
          unsigned m = map_of[e->dest->index];
          if (e->flags & EDGE_EH)
            {
              leak |= TALLY_EDGE_EH;
              inject[m] |= TALLY_EDGE_EH;
              continue;
            }
          if (e->flags & (EDGE_ABNORMAL | EDGE_FAKE))
            {
              leak |= TALLY_EDGE_ABNORMAL;
              inject[resume_block (e->dest, map_of)] |= TALLY_EDGE_ABNORMAL;
              continue;
            }
          unsigned flags = 0;
          if (e->flags & EDGE_FALLTHRU)
            flags |= TALLY_EDGE_FALLTHRU;
          if (e->flags & EDGE_TRUE_VALUE)
            flags |= TALLY_EDGE_TRUE;
          if (e->flags & EDGE_FALSE_VALUE)
            flags |= TALLY_EDGE_FALSE;
          bool split = !single_pred_p (e->dest) && !single_succ_p (e->src);
          double cost = tally_blocks_edge_weight (fun, e, profile)
                        * (split ? 1.5 : 1.0);
          /* A counter on the edge out of a setjmp block would also count
             the second returns, which the map brings in from ENTRY.  */
          add_edge (plan, map_of[bb->index], m, flags, e, cost,
                    e->dest != EXIT_BLOCK_PTR_FOR_FN (fun) && !setjmp_block);
        }
      if (bb == ENTRY_BLOCK_PTR_FOR_FN (fun))
        continue;
      if ((bitmap_bit_p (call_ended, bb->index) && !setjmp_block
           && !(returns_known && !tally_blocks_block_may_not_return (fun, bb)))
          || EDGE_COUNT (bb->succs) == 0)
        leak |= TALLY_EDGE_CALL;
      /* setjmp returns (twice), and never leaves by a longjmp itself,
         whatever abnormal edges GCC gives its call.  */
      if (setjmp_block)
        leak = 0;
      if (leak)
        add_edge (plan, map_of[bb->index], TALLY_MAP_EXIT_NUM,
                  TALLY_EDGE_FAKE | leak, NULL, 0, false);
    }
  for (unsigned m = 2; m < nblocks; m++)
    if (inject[m])
      add_edge (plan, TALLY_MAP_ENTRY_NUM, m, TALLY_EDGE_FAKE | inject[m], NULL,
                0, false);
  for (unsigned m = 2; m < nblocks; m++)
    push_edge (plan, IN_NODE (m), OUT_NODE (m), -1, -1, 0, NULL,
               plan->blocks[m],
               tally_blocks_block_weight (fun, plan->blocks[m], profile),
               true);

  measured_weights mw;
  if (tally_profile_given ())
    weigh_by_profile (fun, plan, profile, &mw);

  /* 4, 5. The spanning tree.  placement=block counts every block edge:
     of the rest, the edges off a spanning forest get counters as well,
     since the block counts alone leave the edges of every cycle of
     uncounted edges undetermined (a block with two successors that both
     join other paths).  */
  bool edges_too = per_block && !visited;
  if (!per_block)
    derive_latches (fun, plan, call_ended, &plan->derived);
  /* entries=callers (callers.cc): the normal edge out of ENTRY is known
     without a counter, so it stays off the tree; the rest stays connected
     through EXIT -> ENTRY.  */
  if (entry_from_callers && !per_block)
    {
      plan_edge *entry = NULL;
      unsigned normal = 0;
      for (plan_edge &pe : plan->edges)
        if (pe.map_src == TALLY_MAP_ENTRY_NUM && !(pe.flags & TALLY_EDGE_FAKE))
          {
            normal++;
            entry = &pe;
          }
      if (normal == 1 && entry->can_count && !entry->derived)
        {
          entry->from_callers = true;
          plan->kind = TALLY_MAP_TREE_CALLERS;
        }
    }
  if (!visited)
    {
      auto_vec<int> parent;
      parent.safe_grow (2 * nblocks);
      for (unsigned i = 0; i < 2 * nblocks; i++)
        parent[i] = i;
      join (parent, EXIT_NODE, ENTRY_NODE);
      bool stuck = false;
      for (plan_edge &pe : plan->edges)
        if (!pe.can_count)
          {
            pe.on_tree = join (parent, pe.src, pe.dst);
            stuck |= !pe.on_tree;
          }
      auto_vec<plan_edge *> rest;
      for (plan_edge &pe : plan->edges)
        if (pe.can_count && !(edges_too && pe.bb) && !pe.derived
            && !pe.from_callers)
          rest.safe_push (&pe);
      rest.qsort (cmp_cost);
      for (plan_edge *pe : rest)
        pe->on_tree = join (parent, pe->src, pe->dst);
      if (stuck && !per_block)
        {
          /* An edge that cannot be counted closes a cycle of such edges
             (not expected, see step 4): count every block instead.  */
          if (dump_file)
            fprintf (dump_file, "tally: uncountable cycle, a counter per "
                     "block instead\n");
          per_block = true;
          plan->kind = TALLY_MAP_BLOCK;
          for (plan_edge &pe : plan->edges)
            pe.from_callers = false;
        }
      else if (stuck && dump_file)
        fprintf (dump_file, "tally: uncountable cycle, its edges are left "
                 "undetermined\n");
    }

  /* 6. Values: counters after the core ones, or visited bytes after
     them.  */
  auto_vec<unsigned> derived; /* visited: by map number */
  derived.safe_grow_cleared (nblocks);
  if (visited)
    {
      tally_blocks_derive_visited (fun, plan, implied, pdom_edges, profile,
                      &derived);
      for (unsigned m = 2; m < nblocks; m++)
        if (derived[m])
          {
            plan->block_flags[m] |= derived[m];
            plan->kind = TALLY_MAP_VISITED_DERIVED;
          }
      for (const plan_edge &pe : plan->edges)
        if (pe.mark_visited)
          plan->kind = TALLY_MAP_VISITED_EDGES;
    }
  unsigned next = 0;
  auto_vec<unsigned> value_of; /* visited: by map number */
  value_of.safe_grow_cleared (nblocks);
  for (plan_edge &pe : plan->edges)
    {
      bool counted = per_block && !edges_too ? pe.bb != NULL
                                             : pe.can_count && !pe.on_tree
                                                   && !pe.from_callers;
      if (visited && pe.mark_visited)
        counted = true;
      else if (visited && counted)
        {
          /* Only blocks no other block implies get a byte.  */
          unsigned m = (pe.src + 2) / 2;
          counted = implied[pe.bb->index] == (int) m && !derived[m];
          if (counted)
            value_of[m] = TALLY_C_CORE + next;
        }
      if (counted)
        pe.value = TALLY_C_CORE + next++;
    }
  if (visited)
    for (plan_edge &pe : plan->edges)
      if (pe.bb && pe.value == TALLY_MAP_NONE)
        {
          if (!derived[(pe.src + 2) / 2])
            pe.value = value_of[implied[pe.bb->index]];
          pe.implied = true;
        }
  if (visited && !tally_opts.mapped)
    {
      /* The blocks of a class run together: the byte goes into the one
         expected to run least often (a loop's preheader rather than its
         body), the class's representative if none is.  Not with
         counters=mapped, for the reason hoist_visited gives.  */
      auto_vec<basic_block> cheapest;
      cheapest.safe_grow_cleared (nblocks);
      for (unsigned m = 2; m < nblocks; m++)
        {
          unsigned r = implied[plan->blocks[m]->index];
          basic_block c = cheapest[r] ? cheapest[r] : plan->blocks[r];
          if (tally_blocks_block_weight (fun, plan->blocks[m], profile)
              < tally_blocks_block_weight (fun, c, profile))
            c = plan->blocks[m];
          cheapest[r] = c;
        }
      for (plan_edge &pe : plan->edges)
        if (pe.bb && !pe.implied && pe.value != TALLY_MAP_NONE)
          {
            basic_block c = cheapest[map_of[pe.bb->index]];
            if (c && c != pe.bb)
              pe.store_bb = c;
          }
    }
  if (visited)
    tally_blocks_hoist_visited (fun, plan, map_of, implied);
  if (visited)
    {
      layout->nvisited = next;
      tally_blocks_note_returning (fun);
    }
  else
    layout->ncounters = TALLY_C_CORE + next;
  if (returns_known)
    tally_blocks_note_returning (fun);
  serialize (plan, &layout->map);
  if (cost)
    *cost = measured ? plan_cost (plan) : -1;
  measured = NULL;

  if (dump_file)
    fprintf (dump_file, "tally: %u blocks, %u edges, %u %s\n", nblocks - 2,
             plan->edges.length () - (nblocks - 2), next,
             visited ? "visited bytes" : "counters");
  return plan;
}

tally_block_plan::~tally_block_plan ()
{
  for (derived_latch *d : derived)
    delete d;
}
