/* plugin/measure.cc - measure=cycles: the shadow-stack push at entry and
 * pop at exit (include/tally/abi.h, rt/shadow.c).
 *
 * Options: measure=count|cycles, with hooks=inline|call.
 *
 * hooks=call: one call per hook, which also counts:
 *
 *   f () { body; return; }  =>  f () { __tally_enter_cyc (&__tally.module, 7,
 *                                                        __builtin_dwarf_cfa ());
 *                                      body;
 *                                      __tally_exit_cyc (&__tally.module, 7,
 *                                                        __builtin_dwarf_cfa ());
 *                                      return; }
 *
 * hooks=inline: the counters as usual, then the fast path written into
 * the function and a call to the runtime on its cold side:
 *
 *   entry:  top = __tally_ss.top; cfa = __builtin_dwarf_cfa ();
 *           if (top == __tally_ss.end | top[-1].cfa <= cfa)
 *             __tally_cyc_enter_slow (&__tally.d.7, cfa);   (*)
 *           else
 *             { top->cfa = ~0; __tally_ss.top = top + 1; top->fn = &__tally.d.7;
 *               top->child = 0; top->start = rdtsc; top->cfa = cfa; }
 *   exit:   now = rdtsc; f = __tally_ss.top - 1; cfa = __builtin_dwarf_cfa ();
 *           if (f->cfa != cfa)
 *             __tally_cyc_exit_slow (&__tally.d.7, cfa, now);
 *           else
 *             { d = now - f->start; c = f->child; __tally_ss.top = f;
 *               (compiler barriers around that store: see below)
 *               f[-1].child += d; m = &__tally_meas[__tally.d.7.id];
 *               m->incl += d; m->excl += MAX (d, c) - c; }
 *
 * (*) On x86-64 the slow calls are asm statements calling
 * __tally_cyc_enter_slow_all / __tally_cyc_exit_slow_all, which preserve
 * every register: GCC sees no call, so the fast path costs the function
 * no callee-saved register, spill or frame.  A free slot's node and flags
 * are 0 (the runtime clears them when it pops), so the push writes
 * neither.
 *
 * The CFA (the stack pointer before the call) names the activation, so the
 * runtime can tell frames that longjmp or an exception skipped; GCC
 * computes it from the stack pointer, no frame pointer is needed.
 * exit=frames, and the CFAs of at=early's hooks in inlined functions, are
 * frames.cc's.  */
#include "tally-plugin.h"

#include "tally/abi.h"

/* Declarations built on first use (GC-rooted below).  */
static GTY (()) tree enter_cyc_decl;   /* __tally_enter_cyc */
static GTY (()) tree exit_cyc_decl;    /* __tally_exit_cyc */
static GTY (()) tree enter_papi_decl;  /* __tally_enter_papi */
static GTY (()) tree enter_frames_decl; /* __tally_enter_frames */
static GTY (()) tree exit_papi_decl;   /* __tally_exit_papi */
static GTY (()) tree enter_slow_decl;  /* __tally_cyc_enter_slow */
static GTY (()) tree exit_slow_decl;   /* __tally_cyc_exit_slow */
static GTY (()) tree ss_decl;          /* __tally_ss, TLS */
static GTY (()) tree meas_decl;        /* __tally_meas */
static GTY (()) tree frame_type_node;  /* struct tally_sframe */
static GTY (()) tree node_type_node;   /* struct tally_path_node */
static GTY (()) tree nodes_decl;       /* __tally_path_nodes */
static GTY (()) tree tramp_decl;       /* __tally_return_trampoline */
/* paths=on, hooks=inline: each function's node cache (__tally.p.N, by
   function id; NULL_TREE where none was made yet).  */
static GTY (()) vec<tree, va_gc> *cache_decls;

TALLY_GC_ROOTS (measure,
                TALLY_GC_TREE (enter_cyc_decl),
                TALLY_GC_TREE (exit_cyc_decl),
                TALLY_GC_TREE (enter_papi_decl),
                TALLY_GC_TREE (exit_papi_decl),
                TALLY_GC_TREE (enter_frames_decl),
                TALLY_GC_TREE (enter_slow_decl),
                TALLY_GC_TREE (exit_slow_decl),
                TALLY_GC_TREE (ss_decl),
                TALLY_GC_TREE (meas_decl),
                TALLY_GC_TREE (frame_type_node),
                TALLY_GC_TREE (node_type_node),
                TALLY_GC_TREE (nodes_decl),
                TALLY_GC_TREE (tramp_decl),
                TALLY_GC_VEC (cache_decls))

static tree
runtime_var (const char *name, tree type)
{
  tree decl = build_decl (BUILTINS_LOCATION, VAR_DECL, get_identifier (name),
                          type);
  TREE_PUBLIC (decl) = 1;
  DECL_EXTERNAL (decl) = 1;
  DECL_ARTIFICIAL (decl) = 1;
  TREE_USED (decl) = 1;
  return decl;
}

static tree
field (tree type, const char *name)
{
  for (tree f = TYPE_FIELDS (type); f; f = DECL_CHAIN (f))
    if (DECL_NAME (f) && strcmp (IDENTIFIER_POINTER (DECL_NAME (f)), name) == 0)
      return f;
  gcc_unreachable ();
}

static void
build_decls (void)
{
  if (enter_cyc_decl)
    return;
  tree hook = build_function_type_list (void_type_node, ptr_type_node,
                                        uint32_type_node, ptr_type_node,
                                        NULL_TREE);
  enter_cyc_decl = tally_runtime_decl ("__tally_enter_cyc", hook);
  exit_cyc_decl = tally_runtime_decl ("__tally_exit_cyc", hook);
  enter_papi_decl = tally_runtime_decl ("__tally_enter_papi", hook);
  exit_papi_decl = tally_runtime_decl ("__tally_exit_papi", hook);
  enter_frames_decl = tally_runtime_decl ("__tally_enter_frames", hook);
  enter_slow_decl = tally_runtime_decl (
      "__tally_cyc_enter_slow",
      build_function_type_list (void_type_node, ptr_type_node, ptr_type_node,
                                NULL_TREE));
  exit_slow_decl = tally_runtime_decl (
      "__tally_cyc_exit_slow",
      build_function_type_list (void_type_node, ptr_type_node, ptr_type_node,
                                uint64_type_node, NULL_TREE));

  /* struct tally_sframe, struct tally_sstack, struct tally_meas.  */
  const tally_field sframe_fields[] = {
    { "start", uint64_type_node },
    { "child", uint64_type_node },
    { "cfa", uint64_type_node },
    { "fn", ptr_type_node },
    { "node", uint32_type_node },
    { "flags", uint32_type_node },
    { "ret", uint64_type_node },
  };
  frame_type_node = TALLY_RECORD ("tally_sframe", sframe_fields,
                                  struct tally_sframe);
  tree frame_ptr = build_pointer_type (frame_type_node);
  const tally_field sstack_fields[] = {
    { "top", frame_ptr },
    { "end", frame_ptr },
  };
  tree ss_type = TALLY_RECORD ("tally_sstack", sstack_fields,
                               struct tally_sstack);
  const tally_field meas_fields[] = {
    { "incl", uint64_type_node },
    { "excl", uint64_type_node },
  };
  tree meas_type = TALLY_RECORD ("tally_meas", meas_fields, struct tally_meas);

  const tally_field path_node_fields[] = {
    { "parent", uint32_type_node },
    { "fn_plus1", uint32_type_node },
    { "depth", uint32_type_node },
    { "pad", uint32_type_node },
    { "calls", uint64_type_node },
    { "incl", uint64_type_node },
    { "excl", uint64_type_node },
  };
  node_type_node = TALLY_RECORD ("tally_path_node", path_node_fields,
                                 struct tally_path_node);
  nodes_decl = runtime_var ("__tally_path_nodes",
                            build_pointer_type (node_type_node));
  tramp_decl = tally_runtime_decl ("__tally_return_trampoline",
                                   build_function_type_list (void_type_node,
                                                             NULL_TREE));
  varpool_node::get_create (nodes_decl);
  ss_decl = runtime_var ("__tally_ss", ss_type);
  /* Initial-exec: one %fs-relative access, no __tls_get_addr call.  The
     variable is in the runtime, loaded with the program.  */
  set_decl_tls_model (ss_decl, TLS_MODEL_INITIAL_EXEC);
  meas_decl = runtime_var ("__tally_meas", build_pointer_type (meas_type));
  varpool_node::get_create (ss_decl);
  varpool_node::get_create (meas_decl);
}

/* Append "LHS = RHS" (or an operation) to SEQ.  */
static tree
assign (function *fun, gimple_seq *seq, tree type, tree rhs)
{
  tree lhs = tally_make_temp (fun, type);
  gimple_seq_add_stmt (seq, gimple_build_assign (lhs, rhs));
  return lhs;
}

static tree
op (function *fun, gimple_seq *seq, tree type, enum tree_code code, tree a,
    tree b)
{
  tree lhs = tally_make_temp (fun, type);
  gimple_seq_add_stmt (seq, gimple_build_assign (lhs, code, a, b));
  return lhs;
}

static void
store (gimple_seq *seq, tree ref, tree value)
{
  gimple_seq_add_stmt (seq, gimple_build_assign (ref, value));
}

/* FIELD of the frame at PTR + OFFSET bytes.  */
static tree
frame_field (tree ptr, HOST_WIDE_INT offset, const char *name)
{
  tree mem = build2 (MEM_REF, frame_type_node, ptr,
                     build_int_cst (TREE_TYPE (ptr), offset));
  tree f = field (frame_type_node, name);
  return build3 (COMPONENT_REF, TREE_TYPE (f), mem, f, NULL_TREE);
}

/* The 8 bytes at PTR + OFFSET, as a uint64_t lvalue (a frame's node and
   flags together, a return slot).  */
static tree
u64_at (tree ptr, HOST_WIDE_INT offset)
{
  /* Alias set 0 (void *): it may be any field, or the return slot.  */
  return build2 (MEM_REF, uint64_type_node, ptr,
                 build_int_cst (ptr_type_node, offset));
}

/* paths=on, hooks=inline: FN's node cache, a static word of the unit
   (zero: no key matches it), made on first use.  */
static tree
cache_decl (const tally_fn_info &fn)
{
  if (vec_safe_length (cache_decls) <= fn.id)
    vec_safe_grow_cleared (cache_decls, fn.id + 1);
  if (!(*cache_decls)[fn.id])
    {
      char name[32];
      snprintf (name, sizeof name, "__tally.p.%u", fn.id);
      tree v = tally_static_var (name, uint64_type_node);
      TREE_ADDRESSABLE (v) = 1;
      (*cache_decls)[fn.id] = v;
    }
  return (*cache_decls)[fn.id];
}

static tree
ss_field (const char *name)
{
  tree f = field (TREE_TYPE (ss_decl), name);
  return build3 (COMPONENT_REF, TREE_TYPE (f), ss_decl, f, NULL_TREE);
}

/* The CFA of the current activation, as a pointer, in a temporary named
   TALLY_CFA_TEMP.  */
static tree
cfa (function *fun, gimple_seq *seq)
{
  tree t = gimple_in_ssa_p (fun)
               ? make_temp_ssa_name (ptr_type_node, NULL, TALLY_CFA_TEMP)
               : create_tmp_reg (ptr_type_node, TALLY_CFA_TEMP);
  gcall *g = gimple_build_call (builtin_decl_explicit (BUILT_IN_DWARF_CFA), 0);
  /* GCC does not declare the builtin nothrow: inlined into a try block,
     the call would be taken for one that throws in the middle of a block
     (-fchecking: "statement marked for throw in middle of block").  */
  gimple_call_set_nothrow (g, true);
  gimple_call_set_lhs (g, t);
  gimple_seq_add_stmt (seq, g);
  return t;
}

/* The time-stamp counter (volatile asm, so it is neither merged nor
   moved across other volatile code).  */
static tree
rdtsc (function *fun, gimple_seq *seq)
{
  tree t = tally_make_temp (fun, uint64_type_node);
  vec<tree, va_gc> *outputs = NULL, *clobbers = NULL;
  vec_safe_push (outputs, tally_asm_op ("=a", t));
  vec_safe_push (clobbers, tally_asm_str ("rdx"));
  gasm *g = gimple_build_asm_vec ("rdtsc\n\tsalq\t$32, %%rdx\n\torq\t%%rdx, %0",
                                  NULL, outputs, clobbers, NULL);
  gimple_asm_set_volatile (g, true);
  if (TREE_CODE (t) == SSA_NAME)
    SSA_NAME_DEF_STMT (t) = g;
  gimple_seq_add_stmt (seq, g);
  return t;
}

/* A compiler barrier (an empty volatile asm clobbering memory): the
   stores around it stay in order, as a signal handler on this thread
   sees them.  */
static void
barrier (gimple_seq *seq)
{
  vec<tree, va_gc> *clobbers = NULL;
  vec_safe_push (clobbers, tally_asm_str ("memory"));
  gasm *g = gimple_build_asm_vec ("", NULL, NULL, clobbers, NULL);
  gimple_asm_set_volatile (g, true);
  gimple_seq_add_stmt (seq, g);
}

/* x86-64: move the shadow stack's top by DELTA bytes with one
   read-modify-write instruction (addq $DELTA, %fs:top), a volatile asm
   that clobbers memory, so the stores around it stay in order as a signal
   handler on this thread sees them (what barrier () does).  Elsewhere the
   store of NEXT between two barriers.  */
static void
move_top (gimple_seq *seq, HOST_WIDE_INT delta, tree next)
{
  if (!tally_target_x86_64 ())
    {
      barrier (seq);
      store (seq, ss_field ("top"), next);
      barrier (seq);
      return;
    }
  char text[40];
  snprintf (text, sizeof text, "addq\t$%ld, %%0", (long) delta);
  vec<tree, va_gc> *outputs = NULL, *clobbers = NULL;
  vec_safe_push (outputs, tally_asm_op ("+m", ss_field ("top")));
  vec_safe_push (clobbers, tally_asm_str ("memory"));
  vec_safe_push (clobbers, tally_asm_str ("cc"));
  gasm *g = gimple_build_asm_vec (ggc_strdup (text), NULL, outputs, clobbers,
                                  NULL);
  gimple_asm_set_volatile (g, true);
  gimple_seq_add_stmt (seq, g);
}

/* VALUE through an empty asm statement: GCC keeps the result in a
   register instead of computing it again where it is used twice (the
   CFA: `lea 8(%rsp)` for the stale test and again for the store).  */
static tree
opaque (function *fun, gimple_seq *seq, tree value)
{
  tree t = tally_make_temp (fun, TREE_TYPE (value));
  vec<tree, va_gc> *inputs = NULL, *outputs = NULL;
  vec_safe_push (outputs, tally_asm_op ("=r", t));
  vec_safe_push (inputs, tally_asm_op ("0", value));
  gasm *g = gimple_build_asm_vec ("", inputs, outputs, NULL, NULL);
  if (TREE_CODE (t) == SSA_NAME)
    SSA_NAME_DEF_STMT (t) = g;
  gimple_seq_add_stmt (seq, g);
  return t;
}

/* LOC for every statement of SEQ, and a scope: the function's outermost
   block when LOC has none (the entry hook), so that inlining puts the
   statements in the inlined function's scope (tally_fix_inlined_cfa counts
   those scopes).  */
static void
set_locations (gimple_seq seq, location_t loc)
{
  tree outer = cfun ? DECL_INITIAL (cfun->decl) : NULL_TREE;
  for (gimple_stmt_iterator i = gsi_start (seq); !gsi_end_p (i); gsi_next (&i))
    {
      gimple_set_location (gsi_stmt (i), loc);
      if (!gimple_block (gsi_stmt (i)) && outer && TREE_CODE (outer) == BLOCK)
        gimple_set_block (gsi_stmt (i), outer);
    }
}

void
tally_append_to_block (function *fun, basic_block bb, gimple_seq seq)
{
  gimple_stmt_iterator gsi = gsi_last_bb (bb);
  if (gsi_end_p (gsi))
    {
      gsi = gsi_start_bb (bb);
      gsi_insert_seq_before (&gsi, seq, GSI_NEW_STMT);
    }
  else
    gsi_insert_seq_after (&gsi, seq, GSI_NEW_STMT);
  tally_add_call_edges (fun, seq, bb);
}

/* Append PRE and "if (FLAG) SLOW else FAST" to BB, which falls through to
   its single successor; both arms join in a new block before it.  */
static void
add_diamond (function *fun, basic_block bb, gimple_seq pre, tree flag,
             gimple_seq fast, gimple_seq slow, location_t loc)
{
  gcond *cond = gimple_build_cond (NE_EXPR, flag,
                                   build_zero_cst (TREE_TYPE (flag)),
                                   NULL_TREE, NULL_TREE);
  gimple_seq_add_stmt (&pre, cond);
  set_locations (pre, loc);
  set_locations (fast, loc);
  set_locations (slow, loc);
  tally_append_to_block (fun, bb, pre);

  /* The arms join in a new block: BB's successor may have PHI nodes (a
     loop header right after the entry, when GCC turned tail recursion
     into a loop), which would need arguments for the new edge.  */
  basic_block join = split_edge (single_succ_edge (bb));
  edge e = single_succ_edge (bb);
  e->flags = (e->flags & ~EDGE_FALLTHRU) | EDGE_FALSE_VALUE;
  e->probability = profile_probability::very_likely ();
  basic_block fast_bb = split_edge (e);
  basic_block slow_bb = create_empty_bb (bb);
  edge t = make_edge (bb, slow_bb, EDGE_TRUE_VALUE);
  t->probability = profile_probability::very_unlikely ();
  slow_bb->count = t->count ();
  make_single_succ_edge (slow_bb, join, EDGE_FALLTHRU);
  if (current_loops)
    add_bb_to_loop (slow_bb, bb->loop_father);

  tally_append_to_block (fun, fast_bb, fast);
  tally_append_to_block (fun, slow_bb, slow);
  free_dominance_info (CDI_DOMINATORS);
  free_dominance_info (CDI_POST_DOMINATORS);
}

/* Add VALUE to field FLD of the struct tally_meas MEM: plain, or a
   relaxed atomic add with update=atomic (threads sharing a function).  */
static void
add_total (function *fun, gimple_seq *seq, tree mem, tree fld, tree value)
{
  tree ref = build3 (COMPONENT_REF, uint64_type_node, unshare_expr (mem), fld,
                     NULL_TREE);
  /* update=tls keeps per-thread counters, but the totals are shared.  */
  if (tally_opts.update == TALLY_UPDATE_ATOMIC
      || tally_opts.update == TALLY_UPDATE_TLS)
    {
      tree f = builtin_decl_explicit (BUILT_IN_ATOMIC_FETCH_ADD_8);
      gimple_seq_add_stmt (seq, gimple_build_call (
          f, 3, build_fold_addr_expr (ref), value,
          build_int_cst (integer_type_node, MEMMODEL_RELAXED)));
      return;
    }
  tree old_val = assign (fun, seq, uint64_type_node, ref);
  tree new_val = op (fun, seq, uint64_type_node, PLUS_EXPR, old_val, value);
  store (seq, unshare_expr (ref), new_val);
}

/* &__tally.d.N as a void *.  */
static tree
desc_address (const tally_fn_info &fn)
{
  TREE_ADDRESSABLE (fn.desc) = 1;
  return build1 (ADDR_EXPR, ptr_type_node, fn.desc);
}

/* measure=cycles, hooks=inline, x86-64: the call of the runtime's slow
   path SYM (__tally_cyc_enter_slow_all, __tally_cyc_exit_slow_all, ...) as
   an asm statement, below the red zone, through the GOT: at entry FN in
   %rax, CFA in %rdx and the paths=on node cache's address CACHE in %rcx,
   at exit NOW in %rax (where the time-stamp read leaves it), CFA in %rdx
   and FN in %rcx (registers no argument of a function
   with fewer than three or four arguments is in).  The runtime's entry preserves
   every register, so GCC sees no call: the fast path around it needs no
   callee-saved register and the function no frame.  */
static gasm *
preserving_slow_call (const char *sym, tree fn, tree cfa_val, tree now,
                      tree cache = NULL_TREE)
{
  vec<tree, va_gc> *inputs = NULL, *clobbers = NULL;
  if (now)
    {
      vec_safe_push (inputs, tally_asm_op ("a", now));
      vec_safe_push (inputs, tally_asm_op ("c", fn));
    }
  else
    {
      vec_safe_push (inputs, tally_asm_op ("a", fn));
      if (cache)
        vec_safe_push (inputs, tally_asm_op ("c", cache));
    }
  vec_safe_push (inputs, tally_asm_op ("d", cfa_val));
  vec_safe_push (clobbers, tally_asm_str ("memory"));
  vec_safe_push (clobbers, tally_asm_str ("cc"));
  return tally_asm_call (sym, inputs, NULL, clobbers); /* updates.cc */
}

/* Whether hooks=call measure=cycles calls the runtime's assembly hooks
   (__tally_cyc_call_enter, _exit: x86-64, counters in place, no call
   paths, no PAPI, no return frames).  */
static bool
asm_call_hooks_p (bool frames)
{
  return tally_target_x86_64 () && tally_opts.measure == TALLY_MEASURE_CYCLES
         && !tally_opts.mapped && !tally_opts.paths && !frames;
}

/* The asm statement calling the assembly hook: FN in %rcx, the CFA in
   %rdx (entry) or %rsi (exit); %rax, %rdx, %r10, %r11 and at exit %rsi
   change.  */
static gasm *
asm_call_hook (function *fun, bool entry, tree fn, tree cfa_val)
{
  vec<tree, va_gc> *inputs = NULL, *outputs = NULL, *clobbers = NULL;
  tree outs[3];
  unsigned nouts = entry ? 2 : 3;
  for (unsigned i = 0; i < nouts; i++)
    outs[i] = tally_make_temp (fun, ptr_type_node);
  vec_safe_push (outputs, tally_asm_op ("=a", outs[0]));
  vec_safe_push (outputs, tally_asm_op ("=d", outs[1]));
  if (!entry)
    vec_safe_push (outputs, tally_asm_op ("=S", outs[2]));
  vec_safe_push (inputs, tally_asm_op ("c", fn));
  vec_safe_push (inputs, tally_asm_op (entry ? "1" : "2", cfa_val));
  static const char *const regs[] = { "r10", "r11", "cc", "memory" };
  for (const char *r : regs)
    vec_safe_push (clobbers, tally_asm_str (r));
  const char *sym = entry ? "__tally_cyc_call_enter"
                    : tally_opts.update == TALLY_UPDATE_SINGLE
                        ? "__tally_cyc_call_exit"
                        : "__tally_cyc_call_exit_atomic";
  gasm *g = tally_asm_call (sym, inputs, outputs, clobbers); /* updates.cc */
  for (unsigned i = 0; i < nouts; i++)
    if (TREE_CODE (outs[i]) == SSA_NAME)
      SSA_NAME_DEF_STMT (outs[i]) = g;
  return g;
}

/* Append to SEQ the count of counter K of FN in the shared counters (as
   __tally_enter_cyc counts): a plain add, or a relaxed atomic one with
   update=atomic|tls.  */
static void
count_call (function *fun, gimple_seq *seq, const tally_fn_info &fn, unsigned k)
{
  tree ref = build4 (ARRAY_REF, uint64_type_node, fn.shared,
                     build_int_cst (integer_type_node, k), NULL_TREE, NULL_TREE);
  TREE_ADDRESSABLE (fn.shared) = 1;
  if (tally_opts.update != TALLY_UPDATE_SINGLE)
    {
      tree f = builtin_decl_explicit (BUILT_IN_ATOMIC_FETCH_ADD_8);
      gimple_seq_add_stmt (seq, gimple_build_call (
          f, 3, build_fold_addr_expr (ref), build_int_cst (uint64_type_node, 1),
          build_int_cst (integer_type_node, MEMMODEL_RELAXED)));
      return;
    }
  tree old_val = assign (fun, seq, uint64_type_node, ref);
  tree new_val = op (fun, seq, uint64_type_node, PLUS_EXPR, old_val,
                     build_int_cst (uint64_type_node, 1));
  store (seq, unshare_expr (ref), new_val);
}

/* measure=cycles, hooks=call: __tally_enter_cyc or __tally_exit_cyc (the
   _papi ones with measure=papi), or on x86-64 the assembly hooks.  */
static gimple_seq
call_hook (function *fun, const tally_fn_info &fn, bool entry, bool frames)
{
  gimple_seq seq = NULL;
  tree c = cfa (fun, &seq);
  if (asm_call_hooks_p (frames))
    {
      count_call (fun, &seq, fn, entry ? TALLY_C_ENTRIES : TALLY_C_EXITS);
      gimple_seq_add_stmt (&seq, asm_call_hook (fun, entry, desc_address (fn), c));
      return seq;
    }
  bool papi = tally_opts.measure == TALLY_MEASURE_PAPI;
  tree callee = entry ? (papi ? enter_papi_decl : enter_cyc_decl)
                      : (papi ? exit_papi_decl : exit_cyc_decl);
  gcall *g = gimple_build_call (callee, 3,
                                tally_module_address (),
                                build_int_cstu (uint32_type_node, fn.id), c);
  gimple_seq_add_stmt (&seq, g);
  return seq;
}

void
tally_measure_entry (function *fun, const tally_fn_info &fn, basic_block bb,
                     bool frames, location_t loc)
{
  build_decls ();
  if (loc == UNKNOWN_LOCATION)
    loc = DECL_SOURCE_LOCATION (fun->decl);
  if (tally_opts.hooks == TALLY_HOOKS_CALL)
    {
      gimple_seq seq = call_hook (fun, fn, true, frames);
      if (frames)
        gimple_call_set_fndecl (as_a<gcall *> (gimple_seq_last_stmt (seq)),
                                enter_frames_decl);
      set_locations (seq, loc);
      tally_append_to_block (fun, bb, seq);
      return;
    }
  tree frame_ptr = build_pointer_type (frame_type_node);
  tree desc = desc_address (fn);
  const HOST_WIDE_INT fsize = sizeof (struct tally_sframe);
  bool paths = tally_opts.paths;
  gimple_seq pre = NULL, fast = NULL, slow = NULL;
  tree top = assign (fun, &pre, frame_ptr, ss_field ("top"));
  tree end = assign (fun, &pre, frame_ptr, ss_field ("end"));
  tree prev_cfa = assign (fun, &pre, uint64_type_node,
                          frame_field (top, -fsize, "cfa"));
  tree c = cfa (fun, &pre);
  tree cu = tally_make_temp (fun, uint64_type_node);
  gimple_seq_add_stmt (&pre, gimple_build_assign (cu, NOP_EXPR, c));
  if (tally_target_x86_64 ())
    cu = opaque (fun, &pre, cu);
  tree full = op (fun, &pre, boolean_type_node, EQ_EXPR, top, end);
  tree stale = op (fun, &pre, boolean_type_node, LE_EXPR, prev_cfa, cu);
  tree flag = op (fun, &pre, boolean_type_node, BIT_IOR_EXPR, full, stale);
  /* paths=on: the node step.  The function's cache holds the node it got
     under the parent node of its key (the parent frame's node field plus
     one: a frame without a path has node 0, the bottom sentinel one no key
     has); anything else asks the runtime, which fills it.  */
  tree cache = NULL_TREE, node = NULL_TREE;
  if (paths)
    {
      cache = cache_decl (fn);
      tree pnode = assign (fun, &pre, uint32_type_node,
                           frame_field (top, -fsize, "node"));
      tree pn64 = tally_make_temp (fun, uint64_type_node);
      gimple_seq_add_stmt (&pre, gimple_build_assign (pn64, NOP_EXPR, pnode));
      tree key = op (fun, &pre, uint64_type_node, PLUS_EXPR, pn64,
                     build_int_cst (uint64_type_node, 1));
      tree cv = assign (fun, &pre, uint64_type_node, cache);
      tree ck = op (fun, &pre, uint64_type_node, RSHIFT_EXPR, cv,
                    build_int_cst (integer_type_node, 32));
      tree miss = op (fun, &pre, boolean_type_node, NE_EXPR, ck, key);
      flag = op (fun, &pre, boolean_type_node, BIT_IOR_EXPR, flag, miss);
      node = op (fun, &pre, uint64_type_node, BIT_AND_EXPR, cv,
                 build_int_cst (uint64_type_node, 0xffffffffu));
    }

  /* 1. Fast.  A signal handler's hooks push at the top too, so the slot
     is claimed first, marked with a CFA above every frame (never stale,
     never matched), and the real CFA goes in last: a handler that runs in
     between finds a consistent stack and charges its cycles to us.  */
  store (&fast, frame_field (top, 0, "cfa"),
         build_int_cst (uint64_type_node, -1));
  tree next = tally_target_x86_64 ()
                  ? NULL_TREE
                  : op (fun, &fast, frame_ptr, POINTER_PLUS_EXPR, top,
                        size_int (fsize));
  move_top (&fast, fsize, next);
  store (&fast, frame_field (top, 0, "fn"), desc);
  store (&fast, frame_field (top, 0, "child"), build_zero_cst (uint64_type_node));
  /* node and flags (one word): a free slot's are 0 (every pop clears
     them), which is what a frame without path or return frame has.  */
  unsigned flags = (paths ? TALLY_SF_PATH : 0) | (frames ? TALLY_SF_FRAMES : 0);
  if (flags)
    {
      tree nf = build_int_cst (uint64_type_node,
                               (unsigned HOST_WIDE_INT) flags << 32);
      if (node)
        nf = op (fun, &fast, uint64_type_node, BIT_IOR_EXPR, node, nf);
      store (&fast, u64_at (top, 32), nf);
    }
  /* exit=frames: the return address into the frame, the trampoline into
     the return slot (CFA - 8).  */
  if (frames)
    {
      tree slot = op (fun, &fast, ptr_type_node, POINTER_PLUS_EXPR, c,
                      size_int (-8));
      tree ret = assign (fun, &fast, uint64_type_node, u64_at (slot, 0));
      store (&fast, frame_field (top, 0, "ret"), ret);
      TREE_ADDRESSABLE (tramp_decl) = 1;
      cgraph_node::get_create (tramp_decl);
      tree t = build1 (ADDR_EXPR, build_pointer_type (TREE_TYPE (tramp_decl)),
                       tramp_decl);
      tree tu = tally_make_temp (fun, uint64_type_node);
      gimple_seq_add_stmt (&fast, gimple_build_assign (tu, NOP_EXPR, t));
      store (&fast, u64_at (slot, 0), tu);
    }
  tree now = rdtsc (fun, &fast);
  store (&fast, frame_field (top, 0, "start"), now);
  barrier (&fast);
  store (&fast, frame_field (top, 0, "cfa"), cu);

  /* 2. Slow: the runtime.  */
  if (tally_target_x86_64 ())
    {
      const char *sym = paths ? (frames ? "__tally_cyc_enter_slow_paths_frames_all"
                                        : "__tally_cyc_enter_slow_paths_all")
                              : (frames ? "__tally_cyc_enter_slow_frames_all"
                                        : "__tally_cyc_enter_slow_all");
      gimple_seq_add_stmt (&slow, preserving_slow_call (
                                      sym, desc, c, NULL_TREE,
                                      cache ? build_fold_addr_expr (cache)
                                            : NULL_TREE));
    }
  else
    gimple_seq_add_stmt (&slow, gimple_build_call (enter_slow_decl, 2, desc, c));
  add_diamond (fun, bb, pre, flag, fast, slow, loc);
}

/* Element INDEX (an integer value) of the array the pointer variable
   BASE_DECL points to, as a TYPE lvalue of SIZE bytes; its address is
   computed into temporaries appended to SEQ.  */
static tree
array_element (function *fun, gimple_seq *seq, tree base_decl, tree index,
               size_t size, tree type)
{
  tree ptr_type = TREE_TYPE (base_decl);
  tree base = assign (fun, seq, ptr_type, base_decl);
  tree idx = tally_make_temp (fun, sizetype);
  gimple_seq_add_stmt (seq, gimple_build_assign (idx, NOP_EXPR, index));
  tree off = op (fun, seq, sizetype, MULT_EXPR, idx, size_int (size));
  tree p = op (fun, seq, ptr_type, POINTER_PLUS_EXPR, base, off);
  return build2 (MEM_REF, type, p, build_int_cst (ptr_type, 0));
}

void
tally_measure_exit (function *fun, const tally_fn_info &fn, gimple *ret)
{
  build_decls ();
  location_t loc = gimple_location (ret);
  gimple_stmt_iterator gsi = gsi_for_stmt (ret);
  if (tally_opts.hooks == TALLY_HOOKS_CALL)
    {
      gimple_seq seq = call_hook (fun, fn, false, false);
      set_locations (seq, loc);
      gsi_insert_seq_before (&gsi, seq, GSI_SAME_STMT);
      tally_add_call_edges (fun, seq, gimple_bb (ret));
      return;
    }
  /* The block before the return, falling through to it.  */
  basic_block bb = gimple_bb (ret);
  gsi_prev (&gsi);
  edge e = gsi_end_p (gsi) ? split_block_after_labels (bb)
                           : split_block (bb, gsi_stmt (gsi));
  bb = e->src;

  tree frame_ptr = build_pointer_type (frame_type_node);
  tree desc = desc_address (fn);
  const HOST_WIDE_INT fsize = sizeof (struct tally_sframe);
  gimple_seq pre = NULL, fast = NULL, slow = NULL;
  tree now = rdtsc (fun, &pre);
  tree top = assign (fun, &pre, frame_ptr, ss_field ("top"));
  tree f = op (fun, &pre, frame_ptr, POINTER_PLUS_EXPR, top,
               size_int (-fsize));
  tree fcfa = assign (fun, &pre, uint64_type_node, frame_field (top, -fsize, "cfa"));
  tree c = cfa (fun, &pre);
  tree cu = tally_make_temp (fun, uint64_type_node);
  gimple_seq_add_stmt (&pre, gimple_build_assign (cu, NOP_EXPR, c));
  /* The CFA names the activation: the live ones have distinct CFAs, and
     a frame with ours that is not ours would be a stale one, which an
     entry at our CFA closed before we were pushed.  */
  tree flag = op (fun, &pre, boolean_type_node, NE_EXPR, fcfa, cu);
  /* paths=on: only a frame with its node (pushed inline, or by the
     runtime when the tree had room) is popped here.  */
  if (tally_opts.paths)
    {
      tree ff = assign (fun, &pre, uint32_type_node,
                        frame_field (top, -fsize, "flags"));
      tree other = op (fun, &pre, boolean_type_node, NE_EXPR, ff,
                       build_int_cst (uint32_type_node, TALLY_SF_PATH));
      flag = op (fun, &pre, boolean_type_node, BIT_IOR_EXPR, flag, other);
    }

  /* 1. Fast: read the frame before giving it up (a signal handler may
     push over it), pop, charge the parent, add the totals.  */
  tree start = assign (fun, &fast, uint64_type_node, frame_field (top, -fsize, "start"));
  tree child = assign (fun, &fast, uint64_type_node, frame_field (top, -fsize, "child"));
  tree d = op (fun, &fast, uint64_type_node, MINUS_EXPR, now, start);
  tree node = NULL_TREE;
  if (tally_opts.paths)
    {
      /* Its node, then the slot given back as a free one (node and flags
         0) before the pop.  */
      node = assign (fun, &fast, uint32_type_node,
                     frame_field (top, -fsize, "node"));
      tree fp = op (fun, &fast, frame_ptr, POINTER_PLUS_EXPR, top,
                    size_int (-fsize));
      store (&fast, u64_at (fp, 32), build_zero_cst (uint64_type_node));
    }
  move_top (&fast, -fsize, f);
  tree pc = assign (fun, &fast, uint64_type_node, frame_field (top, -2 * fsize, "child"));
  tree pc2 = op (fun, &fast, uint64_type_node, PLUS_EXPR, pc, d);
  store (&fast, frame_field (top, -2 * fsize, "child"), pc2);
  tree id_field = NULL_TREE;
  for (tree x = TYPE_FIELDS (TREE_TYPE (fn.desc)); x; x = DECL_CHAIN (x))
    if (DECL_NAME (x) && strcmp (IDENTIFIER_POINTER (DECL_NAME (x)), "id") == 0)
      id_field = x;
  tree id = assign (fun, &fast, uint32_type_node,
                    build3 (COMPONENT_REF, uint32_type_node, fn.desc, id_field,
                            NULL_TREE));
  tree meas_type = TREE_TYPE (TREE_TYPE (meas_decl));
  tree mem = array_element (fun, &fast, meas_decl, id,
                            sizeof (struct tally_meas), meas_type);
  tree fi = field (meas_type, "incl"), fe = field (meas_type, "excl");
  tree hi = op (fun, &fast, uint64_type_node, MAX_EXPR, d, child);
  tree self = op (fun, &fast, uint64_type_node, MINUS_EXPR, hi, child);
  add_total (fun, &fast, mem, fi, d);
  add_total (fun, &fast, mem, fe, self);
  /* paths=on: the same to the frame's node, and one call.  */
  if (node)
    {
      tree nmem = array_element (fun, &fast, nodes_decl, node,
                                 sizeof (struct tally_path_node),
                                 node_type_node);
      add_total (fun, &fast, nmem, field (node_type_node, "calls"),
                 build_int_cst (uint64_type_node, 1));
      add_total (fun, &fast, nmem, field (node_type_node, "incl"), d);
      add_total (fun, &fast, nmem, field (node_type_node, "excl"), self);
    }

  /* 2. Slow: the runtime.  */
  if (tally_target_x86_64 ())
    gimple_seq_add_stmt (&slow, preserving_slow_call (
                                    "__tally_cyc_exit_slow_all", desc, c, now));
  else
    gimple_seq_add_stmt (&slow,
                         gimple_build_call (exit_slow_decl, 3, desc, c, now));
  add_diamond (fun, bb, pre, flag, fast, slow, loc);
}
