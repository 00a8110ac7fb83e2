/* plugin/callers.cc - entry counts from the callers' blocks (blocks=count,
 * placement=tree, at=late).
 *
 * Every function's flow graph closes through EXIT -> ENTRY, so a spanning
 * tree placement puts at least one counter on every path from entry to
 * exit: each call runs one increment at least, however simple the
 * function (a leaf of three instructions pays a fourth).  For a function
 * whose calls are all known, the count is already there: it is the sum of
 * the counts of the blocks that call it, which the callers' own counters
 * determine.  Such a function gets no counter for its entry; its block map
 * is kind 6 (TALLY_MAP_TREE_CALLERS) and lists the call sites, (function,
 * block) pairs of the same module, after its edges, and the reader solves
 * the callers first (doc/data-format.md, "Entries from the callers").
 *
 *   static int leaf (int x) { return x * 3; }     no counter at all
 *   int f (int n) { ... leaf (i) ... }            leaf's calls: f's block
 *
 * Which functions (entry_from_callers): a body of this unit, at=late (the
 * call graph is final: nothing is inlined or cloned after this pass), that
 * cgraph knows every call of: local, not externally visible, address never
 * taken, no alias, no constructor or destructor, not `used`; called only
 * directly (cgraph's callers), by functions this pass instruments with
 * block counters; and on no cycle of calls, so that no entry depends,
 * through others, on itself.
 *
 * Functions are compiled one at a time, callees mostly first, and a caller
 * compiled already has lost its call graph edges.  So each function this
 * pass sees reports its direct calls (note_calls): an instrumented caller
 * its call sites by map block, any other the callees it reaches uncounted,
 * which then keep their entry counter.  A caller compiled after the callee
 * was decided is judged by cgraph, with the same tests instrument_function
 * applies; should one of them still be left uninstrumented, the callee's
 * map says the sites are incomplete and its entry count is undetermined
 * (the report says so), rather than wrong.  */
#include "tally-plugin.h"

#include "cgraph.h"

/* A site: the caller's function id and the map block holding the call.  */
struct callers_site
{
  unsigned caller, block;
};

/* One callee that calls were seen for, or that takes its entry from its
   callers.  By DECL_UID: the decls may be collected before the unit ends.  */
struct callers_callee
{
  int uid;
  bool uncounted;   /* a function without block counters calls it */
  vec<callers_site> sites;
};

static vec<callers_callee> callees;
static hash_map<int_hash<int, -1, -2>, unsigned> callee_index;
/* Function id -> index in CALLEES, -1 where the entry is counted.  */
static vec<int> derived_by_id;

static callers_callee *
callee_of (tree fndecl, bool make)
{
  int uid = DECL_UID (fndecl);
  if (unsigned *i = callee_index.get (uid))
    return &callees[*i];
  if (!make)
    return NULL;
  callers_callee c = { uid, false, vNULL };
  callee_index.put (uid, callees.length ());
  callees.safe_push (c);
  return &callees.last ();
}

/* Whether the options let any entry come from its callers.  */
static bool
callers_enabled (void)
{
  return tally_opts.blocks == TALLY_BLOCKS_COUNT
         && tally_opts.placement == TALLY_PLACE_TREE
         && tally_opts.at == TALLY_AT_LATE
         && tally_opts.hooks != TALLY_HOOKS_USER && tally_opts.entries_derived
         && !tally_filter_by_size ();
}

/* The callee a call statement reaches directly, if it is a function of
   this unit's.  */
static tree
direct_callee (gimple *stmt)
{
  gcall *call = dyn_cast<gcall *> (stmt);
  if (!call)
    return NULL_TREE;
  tree d = gimple_call_fndecl (call);
  if (!d || TREE_CODE (d) != FUNCTION_DECL || fndecl_built_in_p (d))
    return NULL_TREE;
  return d;
}

/* Whether NODE's calls are all direct calls that cgraph lists.  */
static bool
all_calls_known (cgraph_node *node)
{
  tree d = node->decl;
  return node->local && !node->address_taken && !node->externally_visible
         && !node->in_other_partition
         && !node->has_aliases_p () && !node->force_output && !node->thunk
         && !node->inlined_to && !DECL_PRESERVE_P (d)
         && !DECL_STATIC_CONSTRUCTOR (d) && !DECL_STATIC_DESTRUCTOR (d)
         && !DECL_EXTERNAL (d) && !TREE_PUBLIC (d);
}

/* The function a call graph edge's call is in (its body, after inlining).  */
static cgraph_node *
calling_body (cgraph_edge *e)
{
  return e->caller->inlined_to ? e->caller->inlined_to : e->caller;
}

/* Whether FUN, the function being compiled, is reached again from itself
   through the callers of functions whose calls are all known (a function
   that may be called from elsewhere starts every chain afresh: its entry
   is counted, so no cycle of entries from callers goes through it).  FUN's
   own calls are read from its body: its call graph edges may be gone by
   now.  Functions compiled before have lost theirs too; but the first of
   a cycle to be compiled sees all the others' edges, keeps its entry
   counter, and so breaks the cycle.  At most LIMIT functions are looked
   at; past that, the answer is yes.  */
static bool
on_call_cycle (function *fun, cgraph_node *start)
{
  const unsigned limit = 2000;
  hash_set<tree> calls;
  basic_block bb;
  TALLY_FOR_EACH_NONDEBUG_STMT (fun, bb, gsi)
    if (tree d = direct_callee (gsi_stmt (gsi)))
      calls.add (d);
  if (calls.contains (start->decl))
    return true;
  auto_vec<cgraph_node *> work;
  hash_set<cgraph_node *> seen;
  work.safe_push (start);
  seen.add (start);
  while (!work.is_empty ())
    {
      cgraph_node *n = work.pop ();
      for (cgraph_edge *e = n->callers; e; e = e->next_caller)
        {
          cgraph_node *c = calling_body (e);
          if (c == start)
            return true;
          if (!all_calls_known (c) || seen.add (c))
            continue;
          if (calls.contains (c->decl) || seen.elements () > limit)
            return true;
          work.safe_push (c);
        }
    }
  return false;
}

bool
tally_callers_entry_derived (function *fun, bool (*instrumented) (tree))
{
  tree fndecl = fun->decl;
  if (!callers_enabled ())
    return false;
  cgraph_node *node = cgraph_node::get (fndecl);
  if (!node || !node->callers || !all_calls_known (node))
    return false;
  callers_callee *seen = callee_of (fndecl, false);
  if (seen && seen->uncounted)
    return false;
  for (cgraph_edge *e = node->callers; e; e = e->next_caller)
    {
      cgraph_node *c = calling_body (e);
      /* A thunk may be emitted as assembly, uninstrumented; a caller in
         another LTO partition is another module.  */
      if (c == node || !c->definition || c->thunk || c->in_other_partition
          || !instrumented (c->decl))
        return false;
    }
  return !on_call_cycle (fun, node);
}

void
tally_callers_note_calls (function *fun, const tally_block_plan *plan,
                          unsigned id)
{
  if (!callers_enabled ())
    return;
  basic_block bb;
  TALLY_FOR_EACH_NONDEBUG_STMT (fun, bb, gsi)
    {
      tree d = direct_callee (gsi_stmt (gsi));
      if (!d)
        continue;
      cgraph_node *node = cgraph_node::get (d);
      if (!node || !all_calls_known (node))
        continue;
      callers_callee *c = callee_of (d, true);
      int block = plan ? tally_blocks_map_block (plan, bb) : -1;
      if (block < 2)
        c->uncounted = true;
      else
        {
          callers_site s = { id, (unsigned) block };
          c->sites.safe_push (s);
        }
    }
}

void
tally_callers_set_derived (tree fndecl, unsigned id)
{
  callers_callee *c = callee_of (fndecl, true);
  while (derived_by_id.length () <= id)
    derived_by_id.safe_push (-1);
  derived_by_id[id] = c - callees.address ();
}

bool
tally_callers_trailer (unsigned id, vec<unsigned char> *map)
{
  if (id >= derived_by_id.length () || derived_by_id[id] < 0)
    return false;
  const callers_callee &c = callees[derived_by_id[id]];
  struct tally_mapcallers h = { !c.uncounted,
                                c.uncounted ? 0 : c.sites.length () };
  tally_mapcallers_put (tally_put_part (map, TALLY_MAPCALLERS_FIXED), &h);
  if (!c.uncounted)
    for (const callers_site &s : c.sites)
      {
        tally_put_u32 (map, s.caller);
        tally_put_u32 (map, s.block);
      }
  if (c.uncounted && dump_file)
    fprintf (dump_file, "tally: function %u: a caller was left "
             "uninstrumented after all: its entry count is undetermined\n",
             id);
  return true;
}
