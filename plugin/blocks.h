/* plugin/blocks.h - what the files of blocks=count|visited share: the
 * plan of one function's counters (blocks.cc plans it, blocks-visited.cc
 * adds blocks=visited's bytes, blocks-insert.cc puts it into the code).
 * The graph, its nodes and the steps named here are blocks.cc's opening
 * comment's.  */
#ifndef TALLY_BLOCKS_H
#define TALLY_BLOCKS_H

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


/* 5a. A derived latch count: the loop's constant trip count NITER,
   added on its ENTRY edge.  */
struct derived_latch
{
  edge entry;
  tree niter;
};

/* blocks.cc: how often BB (E) is expected to run, relative to the
   function's entry (by GCC's PROFILE when it has one, else by loop depth;
   with profile=FILE how often it ran); the edge into LOOP's header from
   outside it (*N: how many there are); whether BB starts with a call that
   returns twice (setjmp).  */
double tally_blocks_block_weight (function *fun, basic_block bb, bool profile);
double tally_blocks_edge_weight (function *fun, edge e, bool profile);
edge tally_blocks_loop_entry (const class loop *loop, unsigned *n);
bool tally_blocks_returns_twice_first (basic_block bb);

/* blocks-visited.cc (each says what it does where it is defined).  */
void tally_blocks_note_returning (function *fun);
bool tally_blocks_block_may_not_return (function *fun, basic_block bb);
void tally_blocks_find_implied (function *fun, const vec<int> &map_of,
                                vec<int> *implied,
                                hash_set<edge> *pdom_edges);
void tally_blocks_hoist_visited (function *fun, tally_block_plan *plan,
                                 const vec<int> &map_of,
                                 const vec<int> &implied);
void tally_blocks_derive_visited (function *fun, tally_block_plan *plan,
                                  const vec<int> &implied,
                                  hash_set<edge> &pdom_edges, bool profile,
                                  vec<unsigned> *derived);

#endif /* TALLY_BLOCKS_H */
