/* plugin/user-hooks.cc - hooks=user:PREFIX: calls to the user's own
 * PREFIX_enter and PREFIX_exit (include/tally/hooks.h has the contract).
 *
 * With at=early the calls are added to the function body before it is
 * gimplified (PLUGIN_PRE_GENERICIZE; in C++ once the front end has
 * genericized it), wrapped like -finstrument-functions does it, so the exit hook also runs when an exception unwinds, and GCC's
 * inliners then inline the hooks:
 *
 *   int f (int x)                    int f (int x)
 *   {                                {
 *     return g (x);                    struct tally_frame __tally_frame;
 *   }                                  my_enter (&__tally.d.3, &__tally_frame);
 *                                      try { return g (x); }
 *                                      finally { my_exit (&__tally.d.3,
 *                                                         &__tally_frame); }
 *                                    }
 *
 * With at=late the GIMPLE pass in hooks.cc inserts the calls (entry edge,
 * before each return); they stay calls, so the hook functions are kept in
 * the object (PLUGIN_FINISH_PARSE_FUNCTION marks them preserved).  */
#include "tally-plugin.h"

/* The user's hook functions, found by name on first use.  */
static GTY (()) tree user_enter;
static GTY (()) tree user_exit;

static const struct ggc_root_tab tally_user_roots[]
    = { TALLY_GC_TREE (user_enter),
        TALLY_GC_TREE (user_exit),
        LAST_GGC_ROOT_TAB };

/* Whether a missing hook was reported already (once per unit is enough).  */
static bool user_error_given;

/* "PREFIX_enter" or "PREFIX_exit", built once.  */
static const char *
hook_name (const char *which)
{
  static const char *enter_name, *exit_name;
  const char **name = strcmp (which, "enter") == 0 ? &enter_name : &exit_name;
  if (!*name)
    *name = concat (tally_opts.user_prefix, "_", which, NULL);
  return *name;
}

static bool
named (tree decl, const char *name)
{
  return DECL_NAME (decl) && strcmp (IDENTIFIER_POINTER (DECL_NAME (decl)), name) == 0;
}

/* A file-scope function called NAME with a body, or NULL.  */
static tree
find_function (const char *name)
{
  cgraph_node *node;
  FOR_EACH_FUNCTION (node)
    if (named (node->decl, name) && node->definition
        && (!DECL_CONTEXT (node->decl)
            || TREE_CODE (DECL_CONTEXT (node->decl)) == TRANSLATION_UNIT_DECL))
      return node->decl;
  return NULL_TREE;
}

/* Is HOOK a function "void (T *, U *)"?  */
static bool
hook_signature_ok (tree hook)
{
  tree type = TREE_TYPE (hook);
  tree args = TYPE_ARG_TYPES (type);
  return VOID_TYPE_P (TREE_TYPE (type)) && args && POINTER_TYPE_P (TREE_VALUE (args))
         && TREE_CHAIN (args) && POINTER_TYPE_P (TREE_VALUE (TREE_CHAIN (args)))
         && TREE_CHAIN (TREE_CHAIN (args))
         && VOID_TYPE_P (TREE_VALUE (TREE_CHAIN (TREE_CHAIN (args))))
         && COMPLETE_TYPE_P (TREE_TYPE (TREE_VALUE (TREE_CHAIN (args))));
}

bool
tally_user_hooks (tree fndecl, tree *enter, tree *exit)
{
  if (!user_enter)
    user_enter = find_function (hook_name ("enter"));
  if (!user_exit)
    user_exit = find_function (hook_name ("exit"));
  if (user_enter && user_exit && hook_signature_ok (user_enter)
      && hook_signature_ok (user_exit))
    {
      *enter = user_enter;
      *exit = user_exit;
      return true;
    }
  if (!user_error_given)
    {
      user_error_given = true;
      tree hooks[2] = { user_enter, user_exit };
      for (tree hook : hooks)
        if (hook && !hook_signature_ok (hook))
          error_at (DECL_SOURCE_LOCATION (hook),
                    "%<-fplugin-arg-tally-hooks=user:%s%>: %qD must be "
                    "%<void %s (const struct tally_fn *, struct tally_frame *)%>",
                    tally_opts.user_prefix, hook,
                    IDENTIFIER_POINTER (DECL_NAME (hook)));
      if (!user_enter || !user_exit)
        error_at (DECL_SOURCE_LOCATION (fndecl),
                  "%<-fplugin-arg-tally-hooks=user:%s%>: no definition of "
                  "%qs before %qD; define %qs and %qs (see tally/hooks.h) "
                  "before the first instrumented function, for instance in "
                  "a header given with %<-include%>",
                  tally_opts.user_prefix,
                  hook_name (user_enter ? "exit" : "enter"), fndecl,
                  hook_name ("enter"), hook_name ("exit"));
    }
  return false;
}

bool
tally_user_reserved (tree fndecl)
{
  if (tally_opts.hooks != TALLY_HOOKS_USER || !DECL_NAME (fndecl))
    return false;
  const char *name = IDENTIFIER_POINTER (DECL_NAME (fndecl));
  size_t n = strlen (tally_opts.user_prefix);
  return strncmp (name, tally_opts.user_prefix, n) == 0 && name[n] == '_';
}

static void wrap_body (void *gcc_data, void *);

/* GNU C nested functions: the C front end genericizes them together with
   their parent, without PLUGIN_PRE_GENERICIZE of their own.  */
static void
wrap_nested (tree fndecl)
{
  cgraph_node *node = cgraph_node::get (fndecl);
  for (cgraph_node *n = node ? first_nested_function (node) : NULL; n;
       n = next_nested_function (n))
    wrap_body (n->decl, NULL);
}

/* at=early: wrap the body of FNDECL before it is gimplified.  */
static void
wrap_body (void *gcc_data, void *)
{
  tree fndecl = (tree) gcc_data;
  tree enter, exit;
  if (fndecl && TREE_CODE (fndecl) == FUNCTION_DECL)
    wrap_nested (fndecl);
  /* C++ constructor and destructor variants (C1, C2, D0...) are copies of
     an abstract body that was wrapped already: wrapping them again would
     run the hooks twice.  */
  if (!fndecl || TREE_CODE (fndecl) != FUNCTION_DECL || !DECL_SAVED_TREE (fndecl)
      || DECL_ABSTRACT_ORIGIN (fndecl)
      || tally_user_reserved (fndecl)
      || lookup_attribute ("no_instrument_function", DECL_ATTRIBUTES (fndecl))
      || lookup_attribute ("naked", DECL_ATTRIBUTES (fndecl)))
    return;
  const char *why = tally_filter_reason (fndecl, NULL);
  tally_verbose_note (fndecl, why);
  if (why || !tally_user_hooks (fndecl, &enter, &exit))
    return;
  tally_fn_info fn = tally_add_function (fndecl, tally_core_layout ());

  location_t loc = DECL_SOURCE_LOCATION (fndecl);
  tree args = TYPE_ARG_TYPES (TREE_TYPE (enter));
  tree desc_type = TREE_VALUE (args);
  tree frame_ptr_type = TREE_VALUE (TREE_CHAIN (args));
  tree frame = build_decl (loc, VAR_DECL, get_identifier ("__tally_frame"),
                           TREE_TYPE (frame_ptr_type));
  DECL_CONTEXT (frame) = fndecl;
  DECL_ARTIFICIAL (frame) = 1;
  TREE_ADDRESSABLE (frame) = 1;
  TREE_USED (frame) = 1;

  tree desc = fold_convert (desc_type, build_fold_addr_expr (fn.desc));
  tree fr = fold_convert (frame_ptr_type, build_fold_addr_expr (frame));
  tree body = NULL_TREE;
  append_to_statement_list (build_call_expr_loc (loc, enter, 2, desc, fr), &body);
  tree on_exit = build_call_expr_loc (loc, exit, 2, unshare_expr (desc),
                                      unshare_expr (fr));
  append_to_statement_list (build2 (TRY_FINALLY_EXPR, void_type_node,
                                    DECL_SAVED_TREE (fndecl), on_exit),
                            &body);
  tree bind = build3 (BIND_EXPR, void_type_node, frame, body, NULL_TREE);
  TREE_SIDE_EFFECTS (bind) = 1;
  DECL_SAVED_TREE (fndecl) = bind;
  if (dump_file)
    fprintf (dump_file, "tally: %s wrapped with user hooks as function %u\n",
             IDENTIFIER_POINTER (DECL_NAME (fndecl)), fn.id);
}

/* C++: the functions PLUGIN_PRE_GENERICIZE announced (never a template),
   wrapped at the end of their finish_function (PLUGIN_FINISH_PARSE_FUNCTION),
   once the front end has genericized them.  GCC 12 announces a function
   after genericizing it, GCC 16 before: a body wrapped then is the one
   its constant evaluator reads, and a constexpr function calling a hook
   is no constant expression (a static_assert on it failed to compile).
   A set, not one function: genericizing one function may instantiate and
   finish another.  */
static hash_set<tree> *cxx_pending;

static void
note_cxx_body (void *gcc_data, void *)
{
  if (!cxx_pending)
    cxx_pending = new hash_set<tree>;
  cxx_pending->add ((tree) gcc_data);
}

static void
wrap_cxx_body (void *gcc_data, void *)
{
  tree fndecl = (tree) gcc_data;
  if (cxx_pending && fndecl && cxx_pending->contains (fndecl))
    {
      cxx_pending->remove (fndecl);
      wrap_body (fndecl, NULL);
    }
}

/* at=late: the hooks are called after inlining, so their bodies must stay
   in the object even when nothing else uses them.  */
static void
preserve_hook (void *gcc_data, void *)
{
  tree fndecl = (tree) gcc_data;
  if (fndecl && TREE_CODE (fndecl) == FUNCTION_DECL
      && (named (fndecl, hook_name ("enter")) || named (fndecl, hook_name ("exit"))))
    {
      DECL_PRESERVE_P (fndecl) = 1;
      TREE_USED (fndecl) = 1;
    }
}

void
tally_user_check_inlined (function *fun)
{
  basic_block bb;
  TALLY_FOR_EACH_STMT (fun, bb, gsi)
      if (gcall *call = dyn_cast<gcall *> (gsi_stmt (gsi)))
        {
          /* GCC may have cloned the hook (lopi_exit.isra.0): compare the
             source function.  */
          tree callee = gimple_call_fndecl (call);
          if (callee)
            callee = DECL_ORIGIN (callee);
          if (callee && (callee == user_enter || callee == user_exit))
            {
              warning_at (gimple_location (call), 0,
                          "tally: hook %qD was not inlined into %qD; it "
                          "costs a call here (is it %<static inline%>, and "
                          "small?)", callee, fun->decl);
              return;
            }
        }
}

void
tally_user_register (const char *plugin_name)
{
  register_callback (plugin_name, PLUGIN_REGISTER_GGC_ROOTS, NULL,
                     (void *) tally_user_roots);
  if (tally_opts.at == TALLY_AT_EARLY && lang_GNU_CXX ())
    {
      register_callback (plugin_name, PLUGIN_PRE_GENERICIZE, note_cxx_body,
                         NULL);
      register_callback (plugin_name, PLUGIN_FINISH_PARSE_FUNCTION,
                         wrap_cxx_body, NULL);
    }
  else if (tally_opts.at == TALLY_AT_EARLY)
    register_callback (plugin_name, PLUGIN_PRE_GENERICIZE, wrap_body, NULL);
  else
    register_callback (plugin_name, PLUGIN_FINISH_PARSE_FUNCTION,
                       preserve_hook, NULL);
}
