/* plugin/hooks.cc - the entry/exit instrumentation pass.
 *
 * Options: hooks=inline|call, at=early|late, update=single|atomic.
 *
 * Every function with a body gets an entry hook on the edge out of the entry
 * block and an exit hook before each return statement:
 *
 *   int f (int x)                    int f (int x)
 *   {                                {
 *     if (x) return g (x);             __tally.c.7[0]++;          (inline)
 *     return 0;                        if (x) { t = g (x); __tally.c.7[1]++;
 *   }                                           return t; }
 *                                      __tally.c.7[1]++;
 *                                      return 0;
 *                                    }
 *
 * With hooks=call the increments become __tally_enter (&__tally.module, 7)
 * and __tally_exit (&__tally.module, 7) (with counters=mapped
 * __tally_enter_mapped and __tally_exit_mapped); with update=atomic the inline
 * increment is a relaxed __atomic_fetch_add.  With hooks=user:PREFIX and
 * at=late they are PREFIX_enter (&__tally.d.7, &frame) and PREFIX_exit
 * (&__tally.d.7, &frame); with at=early user-hooks.cc inserts those before
 * gimplification, and this pass only warns about hooks left out of line.
 *
 * at=late runs after "optimized", the last GIMPLE pass, so exactly the
 * function bodies that reach the object file are counted (IPA clones
 * included, fully inlined functions not).  at=early runs right after the CFG
 * is built, before any inlining, so an inlined call still counts as a call
 * of its source function (the semantics of -finstrument-functions).
 *
 * The updates themselves and their x86-64 forms are updates.cc's; the
 * return frames of exit=frames and the completion of at=early's hooks
 * after inlining, frames.cc's.
 */
#include "tally-plugin.h"

#include "tally/abi.h"

/* __tally_enter and __tally_exit, built on first use.  */
static GTY (()) tree enter_decl;
static GTY (()) tree exit_decl;
/* __tally_tls_attach (update=tls), built on first use.  */
static GTY (()) tree attach_decl;

/* The exec functions whose calls are redirected to the runtime's
   __tally_NAME, which writes the data file before the image is replaced
   (like gcov's __gcov_execve).  SHAPE is the libc signature: 'v' (const
   char *, char *const[]), 'e' (const char *, char *const[], char *const[]),
   'f' (int, char *const[], char *const[]), 'l' (const char *, const char *,
   ...).  */
struct exec_fn
{
  const char *name;
  char shape;
};
static const struct exec_fn exec_fns[]
    = { { "execve", 'e' }, { "execv", 'v' },   { "execvp", 'v' },
        { "execvpe", 'e' }, { "execl", 'l' },  { "execlp", 'l' },
        { "execle", 'l' },  { "fexecve", 'f' } };
#define N_EXEC_FNS (sizeof exec_fns / sizeof exec_fns[0])

/* __tally_NAME for each of exec_fns, built on first use.  */
static GTY (()) tree exec_decls[N_EXEC_FNS];

TALLY_GC_ROOTS (hooks,
                TALLY_GC_TREE (enter_decl),
                TALLY_GC_TREE (exit_decl),
                TALLY_GC_TREE (attach_decl),
                { &exec_decls[0], N_EXEC_FNS, sizeof (tree),
                  &gt_ggc_mx_tree_node, &gt_pch_nx_tree_node })

tree
tally_runtime_decl (const char *name, tree type)
{
  tree decl = build_fn_decl (name, type);
  TREE_NOTHROW (decl) = 1;
  DECL_ARTIFICIAL (decl) = 1;
  DECL_ATTRIBUTES (decl)
      = tree_cons (get_identifier ("leaf"), NULL_TREE,
                   tree_cons (get_identifier ("nothrow"), NULL_TREE, NULL_TREE));
  return decl;
}

/* void NAME (void *module, unsigned fn).  */
static tree
build_hook_decl (const char *name)
{
  return tally_runtime_decl (name, build_function_type_list (
                                       void_type_node, ptr_type_node,
                                       uint32_type_node, NULL_TREE));
}

/* Append to *SEQ (or insert at *GSI when SEQ is NULL) an asm statement
   that calls SYM, one of the runtime's x86-64 entry points that change no
   register but the flags (rt/hooks.c), with ARG in %rdi: GCC sees no call,
   so the caller spills nothing, keeps its values in the call-clobbered
   registers, and a leaf stays a leaf (no frame, no stack alignment).  The
   asm steps below the red zone first (a leaf may keep data there), and
   calls through the GOT (-fno-plt style: resolved when the image is
   loaded, so glibc's lazy PLT resolver, which clobbers r10 and r11, never
   runs; the linker makes it a direct call where the runtime is linked into
   the same image).  MEM, if given, is the memory the call changes (an
   in-out operand); without it the asm clobbers "memory".  */
static gasm *
build_preserving_call (const char *sym, tree arg, tree mem, location_t loc)
{
  vec<tree, va_gc> *inputs = NULL, *outputs = NULL, *clobbers = NULL;
  vec_safe_push (inputs, tally_asm_op ("D", arg));
  if (mem)
    {
      vec_safe_push (outputs, tally_asm_op ("=m", mem));
      vec_safe_push (inputs, tally_asm_op ("m", unshare_expr (mem)));
    }
  else
    vec_safe_push (clobbers, tally_asm_str ("memory"));
  vec_safe_push (clobbers, tally_asm_str ("cc"));
  gasm *a = tally_asm_call (sym, inputs, outputs, clobbers);
  gimple_set_location (a, loc);
  return a;
}

/* Whether hooks=call and update=tls's cold path use the runtime's
   register-preserving entry points: x86-64, counters updated in place
   (counters=mapped calls __tally_enter_mapped and __tally_exit_mapped).  */
static bool
preserving_calls_p (void)
{
  return tally_target_x86_64 () && !tally_opts.mapped;
}

/* The user's hooks and this activation's frame (hooks=user, at=late).  */
struct user_call
{
  tree enter, exit, frame;
};

/* Append to *SEQ the update of counter K of FN.  */
static void
build_hook (function *fun, const tally_fn_info &fn, unsigned k,
            const user_call *user, location_t loc, gimple_seq *seq)
{
  gimple *g;
  if (user)
    {
      tree hook = k == TALLY_C_ENTRIES ? user->enter : user->exit;
      tree args = TYPE_ARG_TYPES (TREE_TYPE (hook));
      g = gimple_build_call (hook, 2,
                             fold_convert (TREE_VALUE (args),
                                           build_fold_addr_expr (fn.desc)),
                             fold_convert (TREE_VALUE (TREE_CHAIN (args)),
                                           build_fold_addr_expr (user->frame)));
      gimple_set_location (g, loc);
      gimple_seq_add_stmt (seq, g);
      return;
    }
  if (tally_opts.hooks == TALLY_HOOKS_CALL && preserving_calls_p ())
    {
      /* __tally_count (&counter) or, with update=atomic|tls,
         __tally_count_atomic: the counter's address is a link-time
         constant.  update=tls: the runtime counts the calls in the shared
         counters, as __tally_enter does.  */
      tree ref = build4 (ARRAY_REF, uint64_type_node, fn.shared,
                         build_int_cst (integer_type_node, k), NULL_TREE,
                         NULL_TREE);
      TREE_ADDRESSABLE (fn.shared) = 1;
      gimple_seq_add_stmt (
          seq, build_preserving_call (tally_opts.update == TALLY_UPDATE_SINGLE
                                          ? "__tally_count"
                                          : "__tally_count_atomic",
                                      build_fold_addr_expr (ref), ref, loc));
      return;
    }
  if (tally_opts.hooks == TALLY_HOOKS_CALL)
    {
      if (!enter_decl)
        {
          /* counters=mapped: hooks that add the unit's bias, so the
             ordinary ones test nothing more.  */
          enter_decl = build_hook_decl (tally_opts.mapped ? "__tally_enter_mapped"
                                                          : "__tally_enter");
          exit_decl = build_hook_decl (tally_opts.mapped ? "__tally_exit_mapped"
                                                         : "__tally_exit");
        }
      tree callee = k == TALLY_C_ENTRIES ? enter_decl : exit_decl;
      g = gimple_build_call (callee, 2, tally_module_address (),
                             build_int_cstu (uint32_type_node, fn.id));
      gimple_set_location (g, loc);
      gimple_seq_add_stmt (seq, g);
      return;
    }

  tally_build_increment (fun, fn.counters, k, loc, seq);
}

void
tally_count_hook (function *fun, const tally_fn_info &fn, unsigned k,
                  location_t loc, gimple_seq *seq)
{
  build_hook (fun, fn, k, NULL, loc, seq);
}

void
tally_add_call_edge (function *fun, gcall *call, profile_count count)
{
  if (!gimple_in_ssa_p (fun))
    return;
  if (tree callee = gimple_call_fndecl (call))
    cgraph_node::get (fun->decl)->create_edge (cgraph_node::get_create (callee),
                                               call, count);
}

void
tally_add_call_edges (function *fun, gimple_seq seq, basic_block bb)
{
  for (gimple_stmt_iterator i = gsi_start (seq); !gsi_end_p (i); gsi_next (&i))
    if (gcall *call = dyn_cast<gcall *> (gsi_stmt (i)))
      tally_add_call_edge (fun, call, bb->count);
}

static bool
is_ifunc_resolver (tree fndecl)
{
  cgraph_node *node = cgraph_node::get (fndecl);
  ipa_ref *ref;
  for (unsigned i = 0; node && node->iterate_direct_aliases (i, ref); i++)
    if (ref->referring->ifunc_resolver)
      return true;
  return false;
}

/* Why FNDECL is left alone, or NULL if it is instrumented.  */
static const char *
skip_reason (tree fndecl)
{
  if (tally_emitting)
    return "tally's own constructor";
  if (symtab->state == FINISHED)
    return "made after the unit was compiled (a sanitizer or profiler "
           "constructor)";
  if (lookup_attribute ("no_instrument_function", DECL_ATTRIBUTES (fndecl)))
    return "no_instrument_function";
  /* The constructors and destructors GCC builds itself
     (cgraph_build_static_cdtor: --coverage's, the sanitizers'), which carry
     the location of the file's end; a C++ unit's constructor of its
     globals runs the user's initializers and is not DECL_IGNORED_P.  */
  if (DECL_ARTIFICIAL (fndecl) && DECL_IGNORED_P (fndecl)
      && (DECL_STATIC_CONSTRUCTOR (fndecl) || DECL_STATIC_DESTRUCTOR (fndecl)))
    return "made by the compiler (a profiler or sanitizer constructor)";
  if (lookup_attribute ("naked", DECL_ATTRIBUTES (fndecl)))
    return "naked function";
  if (is_ifunc_resolver (fndecl))
    return "ifunc resolver (runs before relocation)";
  if (tally_user_reserved (fndecl))
    return "a user hook, or named like one";
  return NULL;
}

/* Whether the type of FNDECL is the libc signature SHAPE (see exec_fns):
   int result, pointer arguments (an int first for 'f'), variadic for 'l'.
   A program's own function of the same name with another type is left
   alone.  */
static bool
exec_signature_p (tree fndecl, char shape)
{
  tree type = TREE_TYPE (fndecl);
  tree ret = TREE_TYPE (type);
  if (TREE_CODE (ret) != INTEGER_TYPE || TYPE_UNSIGNED (ret)
      || TYPE_PRECISION (ret) != TYPE_PRECISION (integer_type_node)
      || !prototype_p (type))
    return false;
  unsigned want = shape == 'v' || shape == 'l' ? 2 : 3, n = 0;
  for (tree a = TYPE_ARG_TYPES (type); a && TREE_VALUE (a) != void_type_node;
       a = TREE_CHAIN (a), n++)
    {
      tree t = TREE_VALUE (a);
      bool ok = n == 0 && shape == 'f' ? TREE_CODE (t) == INTEGER_TYPE
                                       : POINTER_TYPE_P (t);
      if (!ok)
        return false;
    }
  return n == want && (stdarg_p (type) == (shape == 'l'));
}

/* Redirect every direct call in FUN to one of exec_fns, declared but not
   defined in this unit and with C linkage and the libc signature, to
   __tally_NAME (same type).  The runtime's wrapper writes the data file and
   then calls the real function, so the counts of the image an exec
   replaces are not lost.  Done in every function with a body, instrumented
   or not: the counts at stake are the whole process's.  Calls through a
   pointer are not seen.  */
static unsigned int
redirect_exec_calls (function *fun)
{
  unsigned changed = 0;
  basic_block bb;
  TALLY_FOR_EACH_STMT (fun, bb, gsi)
      {
        gcall *call = dyn_cast<gcall *> (gsi_stmt (gsi));
        tree callee = call ? gimple_call_fndecl (call) : NULL_TREE;
        /* GCC knows execl, execle, execlp, execv, execve and execvp as
           built-ins (for gcov's own redirection), so built-ins are not
           excluded; the checks below still require the libc function.  */
        if (!callee || !DECL_NAME (callee) || !TREE_PUBLIC (callee)
            || !DECL_EXTERNAL (callee))
          continue;
        const char *name = IDENTIFIER_POINTER (DECL_NAME (callee));
        unsigned i = 0;
        while (i < N_EXEC_FNS && strcmp (name, exec_fns[i].name) != 0)
          i++;
        /* The assembler name is the plain name only with C linkage and no
           asm label.  */
        if (i == N_EXEC_FNS
            || strcmp (IDENTIFIER_POINTER (DECL_ASSEMBLER_NAME (callee)), name)
                   != 0
            || !exec_signature_p (callee, exec_fns[i].shape))
          continue;
        if (!exec_decls[i])
          {
            char wrapper[32];
            snprintf (wrapper, sizeof wrapper, "__tally_%s", name);
            tree decl = build_fn_decl (wrapper, TREE_TYPE (callee));
            TREE_NOTHROW (decl) = TREE_NOTHROW (callee);
            DECL_ARTIFICIAL (decl) = 1;
            exec_decls[i] = decl;
          }
        gimple_call_set_fndecl (call, exec_decls[i]);
        update_stmt_if_modified (call);
        if (gimple_in_ssa_p (fun))
          if (cgraph_edge *e = cgraph_node::get (fun->decl)->get_edge (call))
            e->redirect_callee (cgraph_node::get_create (exec_decls[i]));
        changed++;
        if (dump_file)
          fprintf (dump_file, "tally: call to %s redirected to __tally_%s\n",
                   name, name);
      }
  return changed;
}

/* update=tls: append to CALL_BB (new, empty) the cold call
   "__tally_tls_attach (&__tally.module)".  */
static void
build_attach_call (function *fun, basic_block call_bb, location_t loc)
{
  if (!attach_decl)
    {
      attach_decl = tally_runtime_decl (
          "__tally_tls_attach",
          build_function_type_list (void_type_node, ptr_type_node, NULL_TREE));
      DECL_ATTRIBUTES (attach_decl) = tree_cons (get_identifier ("cold"), NULL_TREE,
                                                 DECL_ATTRIBUTES (attach_decl));
    }
  gimple_stmt_iterator gsi = gsi_start_bb (call_bb);
  if (preserving_calls_p ())
    {
      /* Not a call GCC sees (build_preserving_call): the function stays a
         leaf if it was one.  */
      /* The module's address is loaded inside the asm, %rdi kept below
         the red zone around it: an input in %rdi would make GCC move the
         function's first argument out of %rdi on the hot path, for the
         cold call ("mov %rdi,%rdx" in most functions with the test).  */
      vec<tree, va_gc> *inputs = NULL, *clobbers = NULL;
      vec_safe_push (inputs,
                     tally_asm_op ("m", TREE_OPERAND (tally_module_address (), 0)));
      vec_safe_push (clobbers, tally_asm_str ("memory"));
      vec_safe_push (clobbers, tally_asm_str ("cc"));
      gasm *a = gimple_build_asm_vec (
          ggc_strdup ("leaq -136(%%rsp), %%rsp\n\t"
                      "movq %%rdi, (%%rsp)\n\t"
                      "leaq %0, %%rdi\n\t"
                      "call *__tally_tls_attach_all@GOTPCREL(%%rip)\n\t"
                      "movq (%%rsp), %%rdi\n\t"
                      "leaq 136(%%rsp), %%rsp"),
          inputs, NULL, clobbers, NULL);
      gimple_asm_set_volatile (a, true);
      gimple_set_location (a, loc);
      gsi_insert_after (&gsi, a, GSI_NEW_STMT);
    }
  else
    {
      gimple *g = gimple_build_call (attach_decl, 1, tally_module_address ());
      gimple_set_location (g, loc);
      gsi_insert_after (&gsi, g, GSI_NEW_STMT);
      gimple_seq one = g;
      tally_add_call_edges (fun, one, call_bb);
    }
}

/* A new block on the edge FROM -> (nothing yet), taken with probability
   "very unlikely", in FROM's loop.  */
static basic_block
cold_block (basic_block from, edge *take)
{
  basic_block b = create_empty_bb (from);
  if (current_loops)
    add_bb_to_loop (b, from->loop_father);
  edge skip = single_succ_edge (from);
  skip->flags = (skip->flags & ~EDGE_FALLTHRU) | EDGE_FALSE_VALUE;
  *take = make_edge (from, b, EDGE_TRUE_VALUE);
  (*take)->probability = profile_probability::very_unlikely ();
  skip->probability = (*take)->probability.invert ();
  b->count = (*take)->count ();
  return b;
}

/* update=tls: "if (__tally.tlive == 0)" in TEST_BB (empty, its true edge
   to CALL_BB) and the attach call in CALL_BB, at LOC.  */
static void
build_live_test (function *fun, basic_block test_bb, basic_block call_bb,
                 location_t loc)
{
  gimple_stmt_iterator gsi = gsi_start_bb (test_bb);
  tree live = tally_make_temp (fun, uint64_type_node);
  gimple *g = gimple_build_assign (live, tally_tls_live_decl ());
  gimple_set_location (g, loc);
  gsi_insert_after (&gsi, g, GSI_NEW_STMT);
  g = gimple_build_cond (EQ_EXPR, live, build_int_cst (uint64_type_node, 0),
                         NULL_TREE, NULL_TREE);
  gimple_set_location (g, loc);
  gsi_insert_after (&gsi, g, GSI_NEW_STMT);

  build_attach_call (fun, call_bb, loc);
}

/* update=tls: put "if (__tally.tlive == 0) __tally_tls_attach
   (&__tally.module);" on the edge out of the entry block:

     ENTRY -> COND -> JOIN -> (old first block)
                \-> CALL -/                                            */
static void
insert_tls_attach (function *fun, location_t loc)
{
  edge e = single_succ_edge (ENTRY_BLOCK_PTR_FOR_FN (fun));
  basic_block cond_bb = split_edge (e);
  basic_block join_bb = split_edge (single_succ_edge (cond_bb));
  edge take;
  basic_block call_bb = cold_block (cond_bb, &take);
  edge back = make_edge (call_bb, join_bb, EDGE_FALLTHRU);
  back->probability = profile_probability::always ();

  build_live_test (fun, cond_bb, call_bb, loc);
  free_dominance_info (CDI_DOMINATORS);
  free_dominance_info (CDI_POST_DOMINATORS);
}

/* update=tls, the attach test folded into the entry count (the function's
   thread-local counters[ENTRIES] starts at -1, TALLY_FN_TLS_ARMED): on
   the edge out of the entry block,

     ENTRY -> COND: if (++t[0] == 0)  ------------------> JOIN -> (old first)
                \-> LIVE: if (__tally.tlive == 0) -> FIX -/
                            \-> CALL: attach ------/
                                          FIX: ++t[0]

   The hot path is "addq $1, %fs:t; je" (GCC combines the increment and
   the test); the count is 0 only on the function's first call in a
   thread (and after a thread's exit flush put -1 back, rt/tls.c), and the
   cold path attaches the thread to the unit if it is not yet and adds the
   call the -1 took.  */
static void
insert_tls_fold (function *fun, const tally_fn_info &fn, location_t loc)
{
  edge e = single_succ_edge (ENTRY_BLOCK_PTR_FOR_FN (fun));
  basic_block cond_bb = split_edge (e);
  basic_block join_bb = split_edge (single_succ_edge (cond_bb));
  edge take;
  basic_block live_bb = cold_block (cond_bb, &take);
  basic_block fix_bb = split_edge (make_edge (live_bb, join_bb, EDGE_FALLTHRU));
  single_succ_edge (fix_bb)->probability = profile_probability::always ();
  single_pred_edge (fix_bb)->probability = profile_probability::always ();
  fix_bb->count = live_bb->count;
  basic_block call_bb = cold_block (live_bb, &take);
  take->probability = profile_probability::even ();
  single_succ_edge (live_bb)->probability = take->probability.invert ();
  call_bb->count = take->count ();
  edge back = make_edge (call_bb, fix_bb, EDGE_FALLTHRU);
  back->probability = profile_probability::always ();

  /* COND: t[0] = t[0] + 1; if (t[0] == 0).  */
  tree ref = build4 (ARRAY_REF, uint64_type_node, fn.counters,
                     build_int_cst (integer_type_node, TALLY_C_ENTRIES),
                     NULL_TREE, NULL_TREE);
  tree one = build_int_cst (uint64_type_node, 1);
  gimple_seq seq = NULL;
  tree new_val = tally_build_add (fun, ref, one, loc, &seq);
  gimple *g = gimple_build_cond (EQ_EXPR, new_val,
                                 build_int_cst (uint64_type_node, 0),
                                 NULL_TREE, NULL_TREE);
  gimple_set_location (g, loc);
  gimple_seq_add_stmt (&seq, g);
  gimple_stmt_iterator gsi = gsi_start_bb (cond_bb);
  gsi_insert_seq_after (&gsi, seq, GSI_NEW_STMT);

  /* LIVE: if (__tally.tlive == 0).  */
  build_live_test (fun, live_bb, call_bb, loc);

  /* FIX: the call the -1 took, a volatile access: a plain one would let
     GCSE take the count COND stored instead of loading it again, and the
     copy that needs keeps combine from making COND one "addq; je".  (A
     signal handler may have counted calls in between: it is loaded.)  */
  tree vref = build4 (ARRAY_REF, uint64_type_node, fn.counters,
                      build_int_cst (integer_type_node, TALLY_C_ENTRIES),
                      NULL_TREE, NULL_TREE);
  TREE_THIS_VOLATILE (vref) = 1;
  TREE_SIDE_EFFECTS (vref) = 1;
  seq = NULL;
  tally_build_add (fun, vref, one, loc, &seq);
  gsi = gsi_start_bb (fix_bb);
  gsi_insert_seq_after (&gsi, seq, GSI_NEW_STMT);
  free_dominance_info (CDI_DOMINATORS);
  free_dominance_info (CDI_POST_DOMINATORS);
}

/* Whether FNDECL is instrumented when its turn comes: the tests of
   instrument_function that need no body (tls_attach_implied's and
   callers.cc's question about a caller).  */
static bool
will_instrument (tree fndecl)
{
  return !skip_reason (fndecl) && !tally_filter_reason (fndecl, NULL);
}

/* update=tls: whether FNDECL can leave out the attach test because every
   call of it comes from a function of this unit that has the test or is
   covered the same way, in the same thread: at=late, a local function
   (cgraph knows all its calls: not visible outside the unit, address
   never taken, no alias), called directly only, and only by functions
   this pass instruments (no thunk).  The first of its unit's functions that runs in a
   thread is then always one with the test.  */
static bool
tls_attach_implied (tree fndecl)
{
  if (tally_opts.at != TALLY_AT_LATE || tally_filter_by_size ())
    return false;
  cgraph_node *node = cgraph_node::get (fndecl);
  if (!node || !node->local || node->address_taken || node->externally_visible
      || node->has_aliases_p () || !node->callers)
    return false;
  for (cgraph_edge *e = node->callers; e; e = e->next_caller)
    {
      cgraph_node *caller = e->caller->inlined_to ? e->caller->inlined_to
                                                 : e->caller;
      tree d = caller->decl;
      if (d == fndecl)
        continue; /* recursion: entered from another caller first */
      /* A thunk may be emitted as assembly, uninstrumented.  */
      if (!caller->definition || caller->thunk || !will_instrument (d))
        return false;
    }
  return true;
}

/* Tail calls.  A tail call jumps to its callee in place of the return
   that follows it, so nothing may run between them.  Every mark is taken
   off before the function is instrumented (step 2); a call whose way to
   its return is still exactly what GCC's tailc pass saw when it marked
   it (no exit hook, no counter, no flush inserted on the way, no edge
   split by a counter) gets its mark back at the end (step 10).  That way
   needs no counter when the call always returns: a call that may not
   return has its block split after it and a counter on the normal path
   (the fake edge to EXIT cannot hold one), so its mark stays off.  */
struct tail_sites
{
  auto_vec<gcall *> calls;
  auto_vec<unsigned> start; /* of each call's statements in STMTS */
  auto_vec<gimple *> stmts;
};

/* Append to OUT the statements from CALL's to the return it is a tail
   call to (debug statements left out), following single fall-through
   successors; false if the walk does not end at a return.  */
static bool
tail_path (function *fun, gcall *call, vec<gimple *> *out)
{
  basic_block bb = gimple_bb (call);
  if (!bb)
    return false;
  gimple_stmt_iterator gsi = gsi_for_stmt (call);
  gsi_next (&gsi);
  for (unsigned blocks = 0; blocks < 16; blocks++)
    {
      for (; !gsi_end_p (gsi); gsi_next (&gsi))
        {
          gimple *s = gsi_stmt (gsi);
          if (is_gimple_debug (s))
            continue;
          out->safe_push (s);
          if (gimple_code (s) == GIMPLE_RETURN)
            return true;
        }
      if (!single_succ_p (bb))
        return false;
      edge e = single_succ_edge (bb);
      if ((e->flags & (EDGE_ABNORMAL | EDGE_EH | EDGE_FAKE))
          || e->dest == EXIT_BLOCK_PTR_FOR_FN (fun))
        return false;
      bb = e->dest;
      gsi = gsi_start_bb (bb);
    }
  return false;
}

/* Step 2: note FUN's tail calls and their ways to the return in SITES,
   and take their marks off.  */
static void
tail_calls_off (function *fun, tail_sites *sites)
{
  basic_block bb;
  TALLY_FOR_EACH_STMT (fun, bb, gsi)
      if (gcall *call = dyn_cast<gcall *> (gsi_stmt (gsi)))
        if (gimple_call_tail_p (call))
          {
            gimple_call_set_tail (call, false);
            unsigned at = sites->stmts.length ();
            if (tail_path (fun, call, &sites->stmts))
              {
                sites->calls.safe_push (call);
                sites->start.safe_push (at);
              }
            else
              sites->stmts.truncate (at);
          }
}

/* Step 10: give the marks back to the calls of SITES whose way to the
   return is unchanged; how many.  */
static unsigned
tail_calls_back (function *fun, const tail_sites *sites)
{
  unsigned back = 0;
  auto_vec<gimple *> now;
  for (unsigned i = 0; i < sites->calls.length (); i++)
    {
      unsigned from = sites->start[i];
      unsigned to = i + 1 < sites->start.length () ? sites->start[i + 1]
                                                   : sites->stmts.length ();
      now.truncate (0);
      if (!tail_path (fun, sites->calls[i], &now) || now.length () != to - from)
        continue;
      bool same = true;
      for (unsigned k = 0; same && k < now.length (); k++)
        same = now[k] == sites->stmts[from + k];
      if (same)
        {
          gimple_call_set_tail (sites->calls[i], true);
          back++;
        }
    }
  return back;
}

/* exit=frames: whether FUN, with NRETURNS returns, can return through
   the trampoline (else WHY says why not).  A function that never returns
   has nothing to swap (and its return slot is not worth one).  */
static bool
frames_ok (function *fun, unsigned nreturns, const char **why)
{
  if (!nreturns)
    {
      *why = "exit=frames: it never returns";
      return false;
    }
  return tally_frames_ok (fun, why);
}


static unsigned int
instrument_function (function *fun)
{
  tree fndecl = fun->decl;
  if (!tally_emitting)
    redirect_exec_calls (fun);
  if (tally_opts.hooks == TALLY_HOOKS_USER && tally_opts.at == TALLY_AT_EARLY)
    {
      /* Instrumented before gimplification (user-hooks.cc); now, after
         inlining, say where a hook still costs a call.  */
      if (!tally_user_reserved (fndecl))
        tally_user_check_inlined (fun);
      return 0;
    }
  const char *why = skip_reason (fndecl);
  bool ours = why && (tally_emitting || symtab->state == FINISHED);
  if (!why)
    why = tally_filter_reason (fndecl, fun);
  if (!ours)
    tally_verbose_note (fndecl, why);
  if (why)
    {
      /* The functions it calls cannot take their entries from it.  */
      tally_callers_note_calls (fun, NULL, 0);
      if (dump_file)
        fprintf (dump_file, "tally: %s not instrumented: %s\n",
                 IDENTIFIER_POINTER (DECL_ASSEMBLER_NAME (fndecl)), why);
      return 0;
    }
  user_call user_storage, *user = NULL;
  if (tally_opts.hooks == TALLY_HOOKS_USER)
    {
      if (!tally_user_hooks (fndecl, &user_storage.enter, &user_storage.exit))
        return 0;
      tree frame_ptr = TREE_VALUE (TREE_CHAIN (TYPE_ARG_TYPES (
          TREE_TYPE (user_storage.enter))));
      user_storage.frame = create_tmp_var (TREE_TYPE (frame_ptr), "tally_frame");
      TREE_ADDRESSABLE (user_storage.frame) = 1;
      user = &user_storage;
    }
  /* 1. Collect the returns first: inserting on the entry edge may split
     blocks.  */
  auto_vec<gimple *> returns;
  basic_block bb;
  FOR_EACH_BB_FN (bb, fun)
    {
      gimple_stmt_iterator gsi = gsi_last_bb (bb);
      if (!gsi_end_p (gsi) && gimple_code (gsi_stmt (gsi)) == GIMPLE_RETURN)
        returns.safe_push (gsi_stmt (gsi));
    }

  /* 2. Tail calls would jump past the exit hook, which now follows them
     (and past an edge counter on the way to the return): off for now.  */
  tail_sites tails;
  tail_calls_off (fun, &tails);

  /* 3. Plan the block counters (blocks.cc): this splits blocks after calls
     that may not return and decides which blocks or edges get a counter,
     so the counter array's size is known before it is made.  */
  tally_fn_layout layout = tally_core_layout ();
  tally_block_plan *plan = NULL;
  if (tally_opts.blocks != TALLY_BLOCKS_NONE)
    plan = tally_blocks_plan (fun, &layout,
                              tally_callers_entry_derived (fun, will_instrument));
  /* Entries and exits follow from exact block counts: no separate counter
     updates (hooks=call still calls the runtime, which counts them).  */
  bool derived = plan && tally_opts.blocks == TALLY_BLOCKS_COUNT
                 && tally_opts.hooks != TALLY_HOOKS_CALL && !user;
  if (derived)
    layout.flags |= TALLY_FN_CALLS_DERIVED;
  bool hooks = !derived && tally_opts.hooks != TALLY_HOOKS_NONE;
  /* update=tls: the attach test, where one is needed, before anything
     else; folded into the inline entry count where there is one.  The
     thread-local counters are the inline hooks' and the block counters'
     (with hooks=call and hooks=user the entry and exit counts are not
     thread-local, but the block counters still are: the runtime's call
     hooks attach nothing).  */
  bool tls_test = tally_opts.update == TALLY_UPDATE_TLS
                  && (plan || (hooks && tally_opts.hooks == TALLY_HOOKS_INLINE));
  if (tls_test && tls_attach_implied (fndecl))
    {
      tls_test = false;
      if (dump_file)
        fprintf (dump_file, "tally: %s: no attach test, its callers have "
                 "it\n", IDENTIFIER_POINTER (DECL_ASSEMBLER_NAME (fndecl)));
    }
  bool tls_fold = tls_test && hooks && tally_opts.hooks == TALLY_HOOKS_INLINE
                  && tally_opts.measure == TALLY_MEASURE_COUNT;
  if (tls_fold)
    layout.flags |= TALLY_FN_TLS_ARMED;
  tally_fn_info fn = tally_add_function (fndecl, layout);
  layout.map.release ();
  if (plan && tally_blocks_entry_from_callers (plan))
    {
      tally_callers_set_derived (fndecl, fn.id);
      if (dump_file)
        fprintf (dump_file, "tally: %s: entry count from its callers\n",
                 IDENTIFIER_POINTER (DECL_ASSEMBLER_NAME (fndecl)));
    }
  /* Before the counters split edges: the calls by map block.  */
  tally_callers_note_calls (fun, plan, fn.id);

  /* 4. Block counters.  */
  if (plan)
    tally_blocks_insert (fun, plan, fn);

  /* 5. Exit hooks, before each return.  With measure=cycles (measure.cc)
     the frame is popped after the count; with hooks=call the runtime's
     measuring hook counts as well.  */
  bool cycles = tally_opts.measure != TALLY_MEASURE_COUNT;
  bool count_hooks = hooks && !(cycles && tally_opts.hooks == TALLY_HOOKS_CALL);
  /* exit=frames: no exit hooks, the trampoline counts and measures.
     at=early: markers where the hooks go, which the pass after inlining
     makes return frames where the function stays out of line and
     return-site hooks in the copies GCC inlined (expand_early_frames).  */
  bool early_frames = tally_opts.exit_frames && tally_opts.at == TALLY_AT_EARLY;
  const char *no_frames = NULL;
  bool frames = tally_opts.exit_frames && !early_frames
                && frames_ok (fun, returns.length (), &no_frames);
  if (tally_opts.exit_frames && !early_frames && !frames && dump_file)
    fprintf (dump_file, "tally: %s gets return-site exits: %s\n",
             IDENTIFIER_POINTER (DECL_ASSEMBLER_NAME (fndecl)), no_frames);
  for (gimple *ret : returns)
    {
      if (frames)
        {
          tally_frames_return_clobber (ret);
          continue;
        }
      if (early_frames)
        {
          gimple_stmt_iterator gsi = gsi_for_stmt (ret);
          gsi_insert_before (&gsi, tally_early_marker (fun, fn, false, count_hooks,
                                                 gimple_location (ret)),
                             GSI_SAME_STMT);
          continue;
        }
      if (count_hooks)
        {
          gimple_seq seq = NULL;
          build_hook (fun, fn, TALLY_C_EXITS, user, gimple_location (ret), &seq);
          tally_add_call_edges (fun, seq, gimple_bb (ret));
          gimple_stmt_iterator gsi = gsi_for_stmt (ret);
          gsi_insert_seq_before (&gsi, seq, GSI_SAME_STMT);
        }
      if (cycles)
        tally_measure_exit (fun, fn, ret);
    }

  /* 6. The entry hook, on the edge out of the entry block; the push
     after the count, in a block of its own that its branch can end.  */
  gimple_seq seq = NULL;
  if (count_hooks && !tls_fold && !early_frames)
    build_hook (fun, fn, TALLY_C_ENTRIES, user, DECL_SOURCE_LOCATION (fndecl),
                &seq);
  edge e = single_succ_edge (ENTRY_BLOCK_PTR_FOR_FN (fun));
  if (early_frames)
    {
      basic_block b = split_edge (e);
      gimple_stmt_iterator gsi = gsi_start_bb (b);
      gsi_insert_before (&gsi, tally_early_marker (fun, fn, true, count_hooks,
                                             DECL_SOURCE_LOCATION (fndecl)),
                         GSI_NEW_STMT);
    }
  else if (cycles)
    {
      basic_block b = split_edge (e);
      gimple_stmt_iterator gsi = gsi_start_bb (b);
      gsi_insert_seq_before (&gsi, seq, GSI_NEW_STMT);
      tally_add_call_edges (fun, seq, b);
      tally_measure_entry (fun, fn, b, frames);
    }
  else if (count_hooks && !tls_fold)
    {
      tally_add_call_edges (fun, seq, e->dest);
      gsi_insert_seq_on_edge_immediate (e, seq);
    }

  /* 7. update=tls: before anything else, attach the thread to this unit's
     counters the first time one of its functions runs in it.  */
  if (tls_fold)
    insert_tls_fold (fun, fn, DECL_SOURCE_LOCATION (fndecl));
  else if (tls_test)
    insert_tls_attach (fun, DECL_SOURCE_LOCATION (fndecl));

  if (dump_file)
    fprintf (dump_file, "tally: %s instrumented as function %u, %u exits, "
             "%u counters\n",
             IDENTIFIER_POINTER (DECL_ASSEMBLER_NAME (fndecl)), fn.id,
             returns.length (), layout.ncounters);

  /* 8. Counters held in registers across call-free loops (promote.cc).  */
  if (plan)
    tally_blocks_promote (fun, fn);

  /* 9. Last (after the promotion of loop counters, which needs the
     three-statement form): the updates left in memory, the promoted
     loops' exit adds among them, as one asm each.  */
  tally_updates_to_asm (fun, fn.counters);

  /* 10. Tail calls with nothing now between them and their return, where
     no exit hook or measurement follows the function's calls.  */
  if (!count_hooks && !cycles && !frames && !user)
    {
      unsigned back = tail_calls_back (fun, &tails);
      if (dump_file && back)
        fprintf (dump_file, "tally: %s: %u of %u tail calls kept\n",
                 IDENTIFIER_POINTER (DECL_ASSEMBLER_NAME (fndecl)), back,
                 tails.calls.length ());
    }

  if (gimple_in_ssa_p (fun))
    {
      mark_virtual_operands_for_renaming (fun);
      return TODO_update_ssa_only_virtuals;
    }
  return 0;
}

namespace {

const pass_data tally_hooks_pass_data = {
  GIMPLE_PASS,
  "tally",         /* name; -fdump-tree-tally shows the decisions */
  OPTGROUP_NONE,
  TV_NONE,
  PROP_cfg,        /* properties_required */
  0, 0, 0, 0
};

class tally_hooks_pass : public gimple_opt_pass
{
public:
  tally_hooks_pass (gcc::context *ctx)
      : gimple_opt_pass (tally_hooks_pass_data, ctx)
  {
  }
  unsigned int execute (function *fun) final override
  {
    return instrument_function (fun);
  }
};

} // namespace

opt_pass *
tally_make_hooks_pass (gcc::context *ctx)
{
  return new tally_hooks_pass (ctx);
}
