/* plugin/tally.cc - plugin_init and option parsing, nothing else.
 *
 * Options (-fplugin-arg-tally-KEY[=VALUE]):
 *   hooks=inline|call|user:PREFIX|none
 *                        how entry/exit counting is emitted (default inline),
 *                        or calls to the user's PREFIX_enter/PREFIX_exit, or
 *                        no entry/exit hooks at all
 *   blocks=none|count|visited
 *                        basic-block counters (blocks.cc): exact counts, or
 *                        a byte per block set when it runs
 *   placement=tree|block where blocks=count puts its counters: on the edges
 *                        off a spanning tree (default) or one per block
 *   entries=callers|counted
 *                        blocks=count: a local function's entry count from
 *                        its callers' blocks (default, callers.cc), or a
 *                        counter in every function
 *   at=late|early        after IPA inlining (default) or before it
 *   update=single|atomic|tls
 *                        plain, relaxed-atomic or per-thread counters
 *   tls-model=initial-exec|dynamic
 *                        update=tls's thread-locals in static TLS (default)
 *                        or in GCC's default model (descriptor.cc)
 *   counters=static|mapped
 *                        counters updated in place (default), or at their
 *                        address plus the unit's bias, which the runtime
 *                        points into a mapped data file (descriptor.cc)
 *   measure=count|cycles|papi
 *                        only count (default), or also inclusive and
 *                        exclusive TSC cycles (and PAPI events) per
 *                        function (measure.cc)
 *   paths=on|off         a calling-context tree (measure=cycles or papi)
 *   exit=returns|frames  exit hooks at every return (default), or LOPI's
 *                        return frames: the entry hook swaps the return
 *                        address for a trampoline (x86-64, measure=cycles)
 *   filter=FILE          include/exclude rules and a size threshold (filter.cc)
 *   select=PROFILE[:P%]  only the functions making up P% (default 80) of
 *                        PROFILE's measured time (select.cc)
 *   profile=FILE         blocks=count|visited: counters placed by the block
 *                        counts of an earlier run, not GCC's guess
 *                        (profile.cc)
 *   verbose              a note per function: instrumented, or why not
 *   help                 print this list
 * The passes live in hooks.cc (updates.cc the RTL ones, frames.cc tally_cfa),
 * the module descriptor in descriptor.cc.  */
#include "tally-plugin.h"

#ifndef TALLY_VERSION
#define TALLY_VERSION "unknown"
#endif

int plugin_is_GPL_compatible;

struct tally_options tally_opts
    = { TALLY_HOOKS_INLINE, TALLY_AT_LATE,     TALLY_UPDATE_SINGLE,
        NULL,               TALLY_BLOCKS_NONE, TALLY_PLACE_TREE,
        TALLY_MEASURE_COUNT, false, false, false, false, true };
bool tally_emitting;

static const char help_text[]
    = "tally " TALLY_VERSION ": count function entries and exits, and "
      "basic blocks.\n"
      "  -fplugin-arg-tally-hooks=inline|call|user:PREFIX|none  emit "
      "entry/exit counter updates inline (default), as calls into the "
      "runtime, as calls to your own PREFIX_enter/PREFIX_exit (tally/hooks.h), "
      "or not at all\n"
      "  -fplugin-arg-tally-blocks=none|count|visited  exact basic-block "
      "counts, or a byte per block set when it runs (default none)\n"
      "  -fplugin-arg-tally-placement=tree|block  blocks=count counters on "
      "the edges off a spanning tree (default) or one per block\n"
      "  -fplugin-arg-tally-entries=callers|counted  blocks=count: take a "
      "local function's entry count from the blocks that call it (default; "
      "placement=tree, at=late) or count it in the function\n"
      "  -fplugin-arg-tally-at=late|early       instrument after IPA inlining "
      "(default) or before it\n"
      "  -fplugin-arg-tally-update=single|atomic|tls  plain (default), "
      "relaxed-atomic or per-thread counter updates\n"
      "  -fplugin-arg-tally-tls-model=initial-exec|dynamic  update=tls's "
      "thread-locals in static TLS (default: no __tls_get_addr; a dlopen'ed "
      "library needs room in glibc's static TLS surplus) or in GCC's default "
      "model\n"
      "  -fplugin-arg-tally-counters=static|mapped  counters updated in "
      "place (default), or through a per-unit bias the runtime points "
      "into a memory-mapped data file (TALLY_OUTPUT with %c: continuous "
      "output that survives SIGKILL)\n"
      "  -fplugin-arg-tally-measure=count|cycles|papi count calls only "
      "(default), or also inclusive and exclusive cycles per function "
      "(x86-64), and with papi the TALLY_PAPI_EVENTS (hooks=call, -lpapi)\n"
      "  -fplugin-arg-tally-paths=on|off        a calling-context tree: "
      "calls and cycles per call path (needs measure=cycles or papi)\n"
      "  -fplugin-arg-tally-exit=returns|frames  exit hooks before every "
      "return (default), or LOPI return frames: the entry hook swaps the "
      "return address for a trampoline (needs measure=cycles)\n"
      "  -fplugin-arg-tally-filter=FILE         which functions to instrument "
      "(rules: include|exclude function|file GLOB, min-statements N)\n"
      "  -fplugin-arg-tally-select=PROFILE[:P%]  only the functions that "
      "made up P% (default 80) of the measured time in PROFILE, a data file "
      "of a measure=cycles run\n"
      "  -fplugin-arg-tally-profile=FILE        blocks=count|visited: place "
      "the counters by the block counts of FILE, a data file of an earlier "
      "blocks=count run of these sources (the hot edges go uncounted), "
      "instead of GCC's guess; the counts stay exact\n"
      "  -fplugin-arg-tally-verbose             a note for every function: "
      "instrumented, or why not\n"
      "  -fplugin-arg-tally-help                print this help\n"
      "Link the program with -ltally-rt; it writes tally.<pid>.data at exit.";

static struct plugin_info tally_info = { TALLY_VERSION, help_text };

/* One option with a fixed set of values.  */
struct choice
{
  const char *value;
  int code;
};

static bool
parse_choice (const char *plugin, const struct plugin_argument *arg,
              const struct choice *choices, const char *accepted, int *out)
{
  if (arg->value)
    for (const struct choice *c = choices; c->value; c++)
      if (strcmp (arg->value, c->value) == 0)
        {
          *out = c->code;
          return true;
        }
  if (arg->value)
    error ("invalid value %qs for %<-fplugin-arg-%s-%s%>; accepted values: %s",
           arg->value, plugin, arg->key, accepted);
  else
    error ("%<-fplugin-arg-%s-%s%> needs a value; accepted values: %s",
           plugin, arg->key, accepted);
  return false;
}

static const struct choice hooks_choices[]
    = { { "inline", TALLY_HOOKS_INLINE },
        { "call", TALLY_HOOKS_CALL },
        { "none", TALLY_HOOKS_NONE },
        { NULL, 0 } };
static const struct choice at_choices[]
    = { { "late", TALLY_AT_LATE }, { "early", TALLY_AT_EARLY }, { NULL, 0 } };
static const struct choice measure_choices[]
    = { { "count", TALLY_MEASURE_COUNT },
        { "cycles", TALLY_MEASURE_CYCLES },
        { "papi", TALLY_MEASURE_PAPI },
        { NULL, 0 } };
static const struct choice paths_choices[]
    = { { "off", 0 }, { "on", 1 }, { NULL, 0 } };
static const struct choice exit_choices[]
    = { { "returns", 0 }, { "frames", 1 }, { NULL, 0 } };
static const struct choice update_choices[]
    = { { "single", TALLY_UPDATE_SINGLE },
        { "atomic", TALLY_UPDATE_ATOMIC },
        { "tls", TALLY_UPDATE_TLS },
        { NULL, 0 } };
static const struct choice tls_model_choices[]
    = { { "initial-exec", 0 }, { "dynamic", 1 }, { NULL, 0 } };
static const struct choice counters_choices[]
    = { { "static", 0 }, { "mapped", 1 }, { NULL, 0 } };
static const struct choice blocks_choices[]
    = { { "none", TALLY_BLOCKS_NONE },
        { "count", TALLY_BLOCKS_COUNT },
        { "visited", TALLY_BLOCKS_VISITED },
        { NULL, 0 } };
static const struct choice entries_choices[]
    = { { "callers", 1 }, { "counted", 0 }, { NULL, 0 } };
static const struct choice placement_choices[]
    = { { "tree", TALLY_PLACE_TREE }, { "block", TALLY_PLACE_BLOCK }, { NULL, 0 } };

/* The options that take one of a list of words: the key, the words, the
   list as the error message gives it, and where the choice goes.  */
struct choice_option
{
  const char *key;
  const struct choice *choices;
  const char *accepted;
  void (*set) (int v);
};
static const struct choice_option choice_options[] = {
  { "hooks", hooks_choices, "inline, call, user:PREFIX, none",
    [] (int v) { tally_opts.hooks = (enum tally_hooks_mode) v; } },
  { "at", at_choices, "late, early",
    [] (int v) { tally_opts.at = (enum tally_at) v; } },
  { "update", update_choices, "single, atomic, tls",
    [] (int v) { tally_opts.update = (enum tally_update) v; } },
  { "measure", measure_choices, "count, cycles, papi",
    [] (int v) { tally_opts.measure = (enum tally_measure) v; } },
  { "paths", paths_choices, "on, off",
    [] (int v) { tally_opts.paths = v != 0; } },
  { "exit", exit_choices, "returns, frames",
    [] (int v) { tally_opts.exit_frames = v != 0; } },
  { "tls-model", tls_model_choices, "initial-exec, dynamic",
    [] (int v) { tally_opts.tls_dynamic = v != 0; } },
  { "counters", counters_choices, "static, mapped",
    [] (int v) { tally_opts.mapped = v != 0; } },
  { "blocks", blocks_choices, "none, count, visited",
    [] (int v) { tally_opts.blocks = (enum tally_blocks) v; } },
  { "placement", placement_choices, "tree, block",
    [] (int v) { tally_opts.placement = (enum tally_placement) v; } },
  { "entries", entries_choices, "callers, counted",
    [] (int v) { tally_opts.entries_derived = v != 0; } },
};

static const struct choice_option *
find_choice_option (const char *key)
{
  for (const struct choice_option &o : choice_options)
    if (strcmp (o.key, key) == 0)
      return &o;
  return NULL;
}

/* The option keys, as the unknown-option message lists them.  */
static const char *const option_keys[]
    = { "hooks", "blocks", "placement", "entries", "at", "update", "tls-model", "counters",
        "measure",
        "paths", "exit", "filter", "select", "profile", "verbose", "help" };

static bool
known_option (const char *key)
{
  for (const char *k : option_keys)
    if (strcmp (k, key) == 0)
      return true;
  return false;
}

/* "hooks, blocks, ...": option_keys as the unknown-option message lists
   them, made from the table so that no key is left out of it.  */
static const char *
accepted_keys (void)
{
  static char list[256];
  if (!*list)
    for (const char *k : option_keys)
      {
        if (*list)
          strncat (list, ", ", sizeof list - strlen (list) - 1);
        strncat (list, k, sizeof list - strlen (list) - 1);
      }
  return list;
}

/* Parse every argument; report each bad one.  Returns false on any error.  */
static bool
parse_options (const struct plugin_name_args *info)
{
  bool ok = true;
  for (int i = 0; i < info->argc; i++)
    {
      const struct plugin_argument *arg = &info->argv[i];
      int v;
      /* A known option given twice: which one was meant is not known
         (select= says so itself, with a hint).  */
      int first = -1;
      for (int j = 0; j < i && first < 0; j++)
        if (strcmp (info->argv[j].key, arg->key) == 0)
          first = j;
      if (first >= 0 && strcmp (arg->key, "select") != 0
          && known_option (arg->key))
        {
          error ("%<-fplugin-arg-%s-%s%> given twice (%<%s%s%s%> and "
                 "%<%s%s%s%>); give it once", info->base_name, arg->key,
                 arg->key, info->argv[first].value ? "=" : "",
                 info->argv[first].value ? info->argv[first].value : "",
                 arg->key, arg->value ? "=" : "",
                 arg->value ? arg->value : "");
          ok = false;
          continue;
        }
      if (strcmp (arg->key, "hooks") == 0 && arg->value
          && strncmp (arg->value, "user:", 5) == 0)
        {
          const char *prefix = arg->value + 5;
          bool ident = ISIDST (*prefix);
          for (const char *c = prefix; *c && ident; c++)
            ident = ISIDNUM (*c);
          if (ident)
            {
              tally_opts.hooks = TALLY_HOOKS_USER;
              tally_opts.user_prefix = prefix;
            }
          else
            {
              error ("invalid value %qs for %<-fplugin-arg-%s-hooks%>: the "
                     "prefix after %<user:%> must be a C identifier",
                     arg->value, info->base_name);
              ok = false;
            }
        }
      else if (const struct choice_option *o = find_choice_option (arg->key))
        {
          if ((ok &= parse_choice (info->base_name, arg, o->choices,
                                   o->accepted, &v)))
            o->set (v);
        }
      else if (strcmp (arg->key, "filter") == 0)
        {
          if (!arg->value || !*arg->value)
            {
              error ("%<-fplugin-arg-%s-filter%> needs a value: the path of "
                     "a filter file", info->base_name);
              ok = false;
            }
          else
            ok &= tally_filter_load ("-fplugin-arg-tally-filter", arg->value);
        }
      else if (strcmp (arg->key, "select") == 0)
        ok &= tally_select_load ("-fplugin-arg-tally-select", arg->value);
      else if (strcmp (arg->key, "profile") == 0)
        ok &= tally_profile_load ("-fplugin-arg-tally-profile", arg->value);
      else if (strcmp (arg->key, "verbose") == 0)
        {
          if (arg->value)
            {
              error ("%<-fplugin-arg-%s-verbose%> takes no value",
                     info->base_name);
              ok = false;
            }
          tally_verbose = true;
        }
      else if (strcmp (arg->key, "help") == 0)
        {
          if (arg->value)
            {
              error ("%<-fplugin-arg-%s-help%> takes no value",
                     info->base_name);
              ok = false;
            }
          else
            fprintf (stderr, "%s\n", help_text);
        }
      else
        {
          error ("unknown option %<-fplugin-arg-%s-%s%>; accepted "
                 "options: %s", info->base_name, arg->key, accepted_keys ());
          ok = false;
        }
    }
  if (ok && tally_opts.hooks == TALLY_HOOKS_USER
      && tally_opts.blocks != TALLY_BLOCKS_NONE)
    {
      error ("%<-fplugin-arg-%s-blocks%> cannot be combined with "
             "%<-fplugin-arg-%s-hooks=user:%s%>; use hooks=inline, call or "
             "none with blocks", info->base_name, info->base_name,
             tally_opts.user_prefix);
      ok = false;
    }
  if (ok && tally_profile_given () && tally_opts.blocks == TALLY_BLOCKS_NONE)
    {
      error ("%<-fplugin-arg-%s-profile%> places block counters: it needs "
             "%<-fplugin-arg-%s-blocks=count%> or %<visited%>",
             info->base_name, info->base_name);
      ok = false;
    }
  return ok;
}

/* LTO streams GIMPLE and compiles it in another process; the descriptor this
   plugin emits at the end of the unit would not follow it.  */
static void
check_unit (void *, void *)
{
  if (flag_lto || in_lto_p)
    error ("%<-fplugin=tally%> does not support %<-flto%> yet; build the "
           "instrumented program without %<-flto%>");
  /* The inline code reads the time-stamp counter with x86-64 assembly and
     the frames hold 64-bit CFAs.  */
  if (tally_opts.measure != TALLY_MEASURE_COUNT
      && TYPE_PRECISION (ptr_type_node) != 64)
    error ("%<-fplugin-arg-tally-measure=cycles%> and %<papi%> support "
           "x86-64 only "
           "(this compilation has %d-bit pointers)",
           (int) TYPE_PRECISION (ptr_type_node));
}

/* Runs PASS after the first instance of GCC's pass AFTER.  */
static void
insert_pass_after (const char *plugin, opt_pass *pass, const char *after)
{
  struct register_pass_info rpi;
  rpi.pass = pass;
  rpi.reference_pass_name = after;
  rpi.ref_pass_instance_number = 1;
  rpi.pos_op = PASS_POS_INSERT_AFTER;
  register_callback (plugin, PLUGIN_PASS_MANAGER_SETUP, NULL, &rpi);
}

int
plugin_init (struct plugin_name_args *info, struct plugin_gcc_version *version)
{
  /* 1. Version check: GCC's internal ABI changes between releases.  */
  if (!plugin_default_version_check (version, tally_gcc_headers_version ()))
    {
      error ("%<-fplugin=tally%>: this plugin was built for GCC %s but is "
             "loaded into GCC %s; rebuild tally with the plugin headers of "
             "this compiler (gcc-%.*s-plugin-dev)",
             TALLY_GCC_BUILT_FOR, version->basever,
             (int) strcspn (version->basever, "."), version->basever);
      return 1;
    }

  /* 2. Options.  */
  if (!parse_options (info))
    return 1;
  register_callback (info->base_name, PLUGIN_INFO, NULL, &tally_info);

  /* measure=cycles reads the x86-64 time-stamp counter and keeps its own
     frames: user hooks measure for themselves.  */
  if (tally_opts.measure == TALLY_MEASURE_PAPI
      && tally_opts.hooks != TALLY_HOOKS_CALL)
    {
      error ("%<-fplugin-arg-%s-measure=papi%> needs "
             "%<-fplugin-arg-%s-hooks=call%>: the events are read by the "
             "hooks in the runtime", info->base_name, info->base_name);
      return 1;
    }
  if (tally_opts.measure == TALLY_MEASURE_CYCLES
      && (tally_opts.hooks == TALLY_HOOKS_USER
          || tally_opts.hooks == TALLY_HOOKS_NONE))
    {
      error ("%<-fplugin-arg-%s-measure=cycles%> needs "
             "%<-fplugin-arg-%s-hooks=inline%> or %<call%>; user hooks "
             "(%<hooks=user:PREFIX%>) measure what they like themselves, "
             "and %<hooks=none%> has no entry and exit to measure",
             info->base_name, info->base_name);
      return 1;
    }
  /* The tree hangs each activation under its caller's frame's node: the
     shadow stack of measure=cycles (or papi) keeps the frames.  */
  if (tally_opts.paths && tally_opts.measure == TALLY_MEASURE_COUNT)
    {
      error ("%<-fplugin-arg-%s-paths=on%> needs "
             "%<-fplugin-arg-%s-measure=cycles%> (or %<papi%>): the call "
             "paths are kept on the frames of the shadow stack",
             info->base_name, info->base_name);
      return 1;
    }
  if (tally_opts.exit_frames && tally_opts.measure != TALLY_MEASURE_CYCLES)
    {
      error ("%<-fplugin-arg-%s-exit=frames%> needs "
             "%<-fplugin-arg-%s-measure=cycles%>: the return frames are "
             "frames of the shadow stack (with %<hooks=inline%> or "
             "%<call%>)", info->base_name, info->base_name);
      return 1;
    }
  /* counters=mapped moves the unit's shared counters into a file mapping.
     Per-thread copies (update=tls) are summed into ordinary memory at
     thread exit, user hooks update no counters, and the measured cycles
     and paths live in the runtime's memory: none of them would reach the
     file, so the combination is refused rather than half honoured.  */
  if (tally_opts.mapped)
    {
      const char *clash
          = tally_opts.update == TALLY_UPDATE_TLS ? "update=tls"
            : tally_opts.hooks == TALLY_HOOKS_USER ? "hooks=user"
            : tally_opts.measure == TALLY_MEASURE_CYCLES ? "measure=cycles"
            : tally_opts.measure == TALLY_MEASURE_PAPI ? "measure=papi"
            : tally_opts.paths ? "paths=on"
            : tally_opts.exit_frames ? "exit=frames" : NULL;
      if (clash)
        {
          error ("%<-fplugin-arg-%s-counters=mapped%> cannot be combined "
                 "with %<-fplugin-arg-%s-%s%>: only the counters shared by "
                 "all threads are mapped (use update=single or atomic, "
                 "hooks=inline, call or none, measure=count)",
                 info->base_name, info->base_name, clash);
          return 1;
        }
    }
  /* 3. The pass.  "optimized" is the last GIMPLE pass at every -O level:
     after it, the set of function bodies is the one in the object file.
     "cfg" is the first pass with a CFG, before any inlining.  User hooks
     with at=early go in before gimplification (user-hooks.cc); the pass
     then sits after "optimized" to report hooks GCC did not inline.  */
  bool late_slot = tally_opts.at == TALLY_AT_LATE
                   || tally_opts.hooks == TALLY_HOOKS_USER; /* inlining check */
  insert_pass_after (info->base_name, tally_make_hooks_pass (g),
                     late_slot ? "optimized" : "cfg");
  /* at=early measuring hooks: after inlining (after "optimized", like the
     late pass), the CFAs read in inlined functions are told apart.  */
  if (tally_opts.at == TALLY_AT_EARLY
      && tally_opts.measure != TALLY_MEASURE_COUNT)
    insert_pass_after (info->base_name, tally_make_cfa_pass (g), "optimized");
  /* hooks=call's asm calls: once the frame is laid out, the red-zone step
     goes where the red zone is empty (updates.cc).  */
  if (tally_opts.hooks == TALLY_HOOKS_CALL && tally_target_x86_64 ()
      && !tally_opts.mapped)
    insert_pass_after (info->base_name, tally_make_red_zone_pass (g),
                       "pro_and_epilogue");
  /* Counter updates made one asm each at=late on x86-64 (updates.cc): the
     add instruction again once register allocation is done, and before
     the prologue is placed: shrink-wrapping copies blocks by their size,
     and an asm counts as a long one, so a leaf's fast path would have
     pushed the callee-saved registers its slow path needs.  */
  if (late_slot && tally_target_x86_64 ())
    insert_pass_after (info->base_name, tally_make_counter_insn_pass (g),
                       "reload");
  /* update=tls's counter addresses without a register for the offset
     (promote.cc).  */
  if (late_slot && tally_target_x86_64 ()
      && tally_opts.update == TALLY_UPDATE_TLS)
    insert_pass_after (info->base_name, tally_make_tls_offsets_pass (g),
                       "expand");
  if (tally_opts.hooks == TALLY_HOOKS_USER)
    tally_user_register (info->base_name);
  /* exit=frames: every body of the unit is looked at before the first is
     compiled (after the IPA passes, at -O0 too).  */
  if (tally_opts.exit_frames)
    register_callback (info->base_name, PLUGIN_ALL_IPA_PASSES_END,
                       tally_frames_scan_unit, NULL);

  /* 4. Module descriptor at the end of the unit, GC roots, LTO check.  */
  register_callback (info->base_name, PLUGIN_START_UNIT, check_unit, NULL);
  register_callback (info->base_name, PLUGIN_FINISH_UNIT, tally_emit_module,
                     NULL);
  register_callback (info->base_name, PLUGIN_REGISTER_GGC_ROOTS, NULL,
                     (void *) tally_descriptor_gc_roots ());
  register_callback (info->base_name, PLUGIN_REGISTER_GGC_ROOTS, NULL,
                     (void *) tally_hooks_gc_roots ());
  register_callback (info->base_name, PLUGIN_REGISTER_GGC_ROOTS, NULL,
                     (void *) tally_measure_gc_roots ());
  return 0;
}
