/* plugin/blocks.cc - basic-block counters (blocks=count|visited).
 *
 * Options: blocks=none|count|visited, placement=tree|block,
 * update=single|atomic|tls (hooks.cc builds the increments).
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
 * be checked against gcov's.  */
#include "tally-plugin.h"

#include "tree-ssa-loop.h"
#include "tree-ssa-loop-niter.h"
#include "tree-scalar-evolution.h"
#include "gimplify-me.h"
#include "tree-pretty-print.h"

/* The map numbers of ENTRY and EXIT (tally/format.h), as ints.  */
#define TALLY_MAP_ENTRY_NUM ((int) TALLY_MAP_ENTRY)
#define TALLY_MAP_EXIT_NUM ((int) TALLY_MAP_EXIT)
#define ENTRY_NODE 0
#define EXIT_NODE 1
/* Map block M (>= 2) is graph nodes IN (M) and OUT (M).  */
#define IN_NODE(m) (2 * (m) - 2)
#define OUT_NODE(m) (2 * (m) - 1)

struct plan_edge
{
  int src, dst;        /* graph nodes */
  int map_src, map_dst; /* map block numbers; -1 for a block edge */
  unsigned flags;      /* TALLY_EDGE_* */
  edge e;              /* the CFG edge, or NULL (fake or block edge) */
  basic_block bb;      /* block edge: its block */
  double cost;         /* what counting it would cost per run */
  bool can_count;
  bool on_tree;
  bool implied;        /* visited: the value is another block's */
  unsigned value;      /* index into the function's values, or TALLY_MAP_NONE */
  struct derived_latch *derived; /* a loop's latch edge counted once per
                                   run of the loop (derive_latches) */
  basic_block store_bb; /* visited: the class member the byte is stored in
                           (cheapest_member), if not this block */
  edge mark_on;        /* visited: the byte is stored on this edge instead
                          (hoist_visited) */
  bool mark_visited;   /* visited: a CFG edge with a byte of its own, that
                          a derived block's value comes from
                          (derive_visited) */
  bool from_callers;   /* the normal edge out of ENTRY of a function whose
                          entry count its callers' blocks give (kind 6) */
};

struct block_loc
{
  unsigned file, line;
};

struct tally_block_plan
{
  auto_vec<plan_edge> edges;
  auto_vec<basic_block> blocks;      /* map number -> block (0, 1: NULL) */
  auto_vec<int> map_of;              /* block index -> map number */
  auto_vec<unsigned> block_flags;    /* map number -> TALLY_BLOCK_* */
  auto_vec<vec<block_loc> > locs;    /* map number -> locations */
  auto_vec<const char *> files;
  unsigned kind;
  auto_vec<struct derived_latch *> derived;
  ~tally_block_plan ();
};

/* 1. Whether control may fail to come back from STMT to the next statement
   of its block (it may exit, longjmp or throw), so that the rest of the
   block needs its own count.  The same test as GCC's
   stmt_can_terminate_bb_p, which gives -fprofile-arcs its blocks: internal
   calls (.VA_ARG at -O0) and volatile asm split a block too.  */
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
static double
block_weight (function *fun, basic_block bb, bool profile)
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

static double
edge_weight (function *fun, edge e, bool profile)
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
      double a = block_weight (fun, e->src, false);
      double b = block_weight (fun, e->dest, false);
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

static void
note_returning (function *fun)
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
static void
find_implied (function *fun, const vec<int> &map_of, vec<int> *implied,
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

/* The edge into LOOP's header from outside the loop, and in *N how many
   such edges there are (the edge is one of them, NULL if none).  */
static edge
loop_entry (const class loop *loop, unsigned *n)
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

/* 5a. A derived latch count: the loop's constant trip count NITER,
   added on its ENTRY edge.  */
struct derived_latch
{
  edge entry;
  tree niter;
};

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
      edge entry = loop_entry (loop, &nentries);
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

/* blocks=visited: a byte whose block C is inside a loop, where it would
   be stored at every iteration, but which a loop's header shares (C ran
   exactly when the header did: find_implied), is stored on the loop's one
   entry edge instead: the header runs exactly when that edge is taken.  Of
   nested loops, the outermost whose header shares the byte.  Not with
   counters=mapped: the byte would be in the file before the blocks it
   stands for ran.  IMPLIED is find_implied's, by block index.  */
static void
hoist_visited (function *fun, tally_block_plan *plan, const vec<int> &map_of,
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
      edge entry = loop_entry (loop, &nentries);
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
       find_implied (a call that may not return, a block without
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
   or P, with edge bytes that together cost less than its byte.  The derived values must form no cycle (a block derived, through
   others, from itself would say nothing); classes are tried in decreasing
   order of expected runs, so the hot ones are derived from the cold ones
   and their bytes are the ones left out.  DERIVED gets, by map number,
   0 for a block with a byte (its class's) and the rule's flag
   otherwise.  */
/* Whether a statement of BB may not return, calls to returning_fns
   apart.  */
static bool
block_may_not_return (function *fun, basic_block bb)
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

static void
derive_visited (function *fun, tally_block_plan *plan,
                const vec<int> &implied, hash_set<edge> &pdom_edges,
                bool profile, vec<unsigned> *derived)
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
          && !block_may_not_return (fun, plan->blocks[s]))
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
    return edge_weight (fun, e, profile) * (split ? 1.5 : 1.0);
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
      class_weight c = { block_weight (fun, plan->blocks[r], profile), r };
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
          double w = block_weight (fun, plan->blocks[k[j]], profile);
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

/* Whether BB's first statement (after its labels) is a setjmp-like call,
   one that returns twice.  */
static bool
returns_twice_first (basic_block bb)
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
  if (returns_twice_first (bb))
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
      pe.cost = block_weight (fun, pe.bb, profile);
    else if (pe.e)
      {
        bool split = !single_pred_p (pe.e->dest) && !single_succ_p (pe.e->src);
        pe.cost = edge_weight (fun, pe.e, profile) * (split ? 1.5 : 1.0);
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
      find_implied (fun, map_of, &implied, &pdom_edges);
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
          double cost = edge_weight (fun, e, profile) * (split ? 1.5 : 1.0);
          /* A counter on the edge out of a setjmp block would also count
             the second returns, which the map brings in from ENTRY.  */
          add_edge (plan, map_of[bb->index], m, flags, e, cost,
                    e->dest != EXIT_BLOCK_PTR_FOR_FN (fun) && !setjmp_block);
        }
      if (bb == ENTRY_BLOCK_PTR_FOR_FN (fun))
        continue;
      if ((bitmap_bit_p (call_ended, bb->index) && !setjmp_block
           && !(returns_known && !block_may_not_return (fun, bb)))
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
               plan->blocks[m], block_weight (fun, plan->blocks[m], profile),
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
      derive_visited (fun, plan, implied, pdom_edges, profile,
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
          if (block_weight (fun, plan->blocks[m], profile)
              < block_weight (fun, c, profile))
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
    hoist_visited (fun, plan, map_of, implied);
  if (visited)
    {
      layout->nvisited = next;
      note_returning (fun);
    }
  else
    layout->ncounters = TALLY_C_CORE + next;
  if (returns_known)
    note_returning (fun);
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

tally_block_plan::~tally_block_plan ()
{
  for (derived_latch *d : derived)
    delete d;
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
      else if (b && returns_twice_first (b))
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
