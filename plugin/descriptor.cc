/* plugin/descriptor.cc - the module descriptor of one translation unit.
 *
 * Every instrumented function gets a static counter array when the pass
 * first sees it (tally_add_function).  At the end of the translation unit
 * (PLUGIN_FINISH_UNIT, after every function has been compiled) this file
 * emits the function table, the module record and a constructor/destructor
 * pair, so the object file carries everything the runtime and the report
 * need; no notes file to lose.  The layout must match include/tally/abi.h.
 *
 * Before:                          After (roughly, as C):
 *   int f (int x) { ... }            static uint64_t __tally.c.0[2];
 *                                    int f (int x) { __tally.c.0[0]++; ... }
 *                                    static const char __tally.blob[]
 *                                      = { the module record: "f", "f",
 *                                          "f", "x.c", 1, 0, ..., map };
 *                                    static struct tally_fn __tally.d.0
 *                                      = { __tally.c.0, 0, 0, REC, MAP,
 *                                          MAPSIZE, 2, 0, 0, 1, 0 };
 *                                    static struct tally_fn *const __tally.fns[1]
 *                                      = { &__tally.d.0 };
 *                                    static struct tally_module __tally.module
 *                                      = { MAGIC, ABI, checksum, "x.c", cwd,
 *                                          __tally.fns, 1, flags, ...,
 *                                          __tally.blob };
 *
 * REC and MAP are offsets into the blob (ABI 4): the descriptor's only
 * pointers are to what the program writes (counters, visited bytes), so
 * a PIE relocates two words a function (that and the table's entry).
 *
 * Like __tally.module, each __tally.d.N is created when the function is
 * instrumented (hooks=call and hooks=user code refers to it) but only given
 * its contents, and handed to the varpool, at the end of the unit.
 *                                    ctor () { __tally_register (&__tally.module); }
 *                                    dtor () { __tally_unregister (&__tally.module); }
 */
#include "tally-plugin.h"
#include "md5.h"

#include "tally/abi.h"
#include "tally/mapcode.h"

/* What the table needs of one instrumented function; strings are xstrdup'd
   because the trees they come from may be freed before the unit ends.  */
struct fn_record
{
  char *name, *symbol, *origin, *file;
  unsigned line, flags;
  unsigned ncounters, nvisited;
  vec<unsigned char> map;
  vec<unsigned char> map_v1; /* a kind 6 map until the unit's end, when its
                                callers trailer is known (callers.cc) */
};

/* Records in function-id order.  */
static vec<fn_record> records;

/* Counter arrays and descriptors in function-id order (GC-rooted below).  */
static GTY (()) vec<tree, va_gc> *counter_decls;
static GTY (()) vec<tree, va_gc> *desc_decls;
/* update=tls: each function's thread-local counters; blocks=visited: its
   visited bytes (NULL_TREE entries where there are none).  */
static GTY (()) vec<tree, va_gc> *tls_decls;
static GTY (()) vec<tree, va_gc> *visited_decls;
/* update=tls: the thread-local word "this thread is attached".  */
static GTY (()) tree tls_live;

/* counters=mapped: the unit's bias (tally_bias_decl).  */
static GTY (()) tree bias_decl;

/* The section of a counters=mapped unit's counter arrays and visited
   bytes: one input section per object file, so the runtime maps one span
   per unit.  ".bss." makes it zero-filled (no file bytes) like the
   arrays' usual home.  */
#define MAPPED_SECTION ".bss.tally.cnt"

/* The module record variable; its address is what hooks=call passes.  */
static GTY (()) tree module_decl;

/* The runtime's registration functions, built on first use.  */
static GTY (()) tree register_decl;
static GTY (()) tree unregister_decl;

/* struct tally_fn and struct tally_fn_names as GCC types, built on first
   use.  */
static GTY (()) tree fn_type_node;
static GTY (()) tree names_type_node;

TALLY_GC_ROOTS (descriptor,
                TALLY_GC_VEC (counter_decls),
                TALLY_GC_VEC (desc_decls),
                TALLY_GC_VEC (tls_decls),
                TALLY_GC_VEC (visited_decls),
                TALLY_GC_TREE (tls_live),
                TALLY_GC_TREE (module_decl),
                TALLY_GC_TREE (bias_decl),
                TALLY_GC_TREE (register_decl),
                TALLY_GC_TREE (unregister_decl),
                TALLY_GC_TREE (fn_type_node),
                TALLY_GC_TREE (names_type_node))

/* Make DECL the plugin's own: static, artificial, out of the debug
   information, and kept by every IPA clean-up.  */
static tree
plugin_own (tree decl)
{
  TREE_STATIC (decl) = 1;
  TREE_PUBLIC (decl) = 0;
  DECL_ARTIFICIAL (decl) = 1;
  DECL_IGNORED_P (decl) = 1;
  DECL_PRESERVE_P (decl) = 1;
  TREE_USED (decl) = 1;
  return decl;
}

/* A file-scope static variable that survives every IPA clean-up: the
   descriptor refers to it only at the end of the unit.  */
static tree
make_static_var (const char *name, tree type)
{
  tree decl = plugin_own (build_decl (BUILTINS_LOCATION, VAR_DECL,
                                      get_identifier (name), type));
  DECL_EXTERNAL (decl) = 0;
  DECL_CONTEXT (decl) = NULL_TREE;
  return decl;
}

tree
tally_static_var (const char *name, tree type)
{
  tree decl = make_static_var (name, type);
  varpool_node::finalize_decl (decl);
  return decl;
}

tally_fn_info
tally_function_info (unsigned id)
{
  tally_fn_info info;
  info.id = id;
  info.shared = (*counter_decls)[id];
  info.counters = (*tls_decls)[id] ? (*tls_decls)[id] : info.shared;
  info.visited = (*visited_decls)[id];
  info.desc = (*desc_decls)[id];
  return info;
}

static tree
pointer_to (tree type)
{
  return build_pointer_type (type);
}

static tree
const_char_ptr (void)
{
  return build_pointer_type (build_qualified_type (char_type_node,
                                                   TYPE_QUAL_CONST));
}

tree
tally_record_type (const char *name, const tally_field *fields, size_t n,
                   unsigned expected_size)
{
  tree chain = NULL_TREE; /* in reverse, as finish_builtin_struct takes it */
  for (size_t i = 0; i < n; i++)
    {
      tree f = build_decl (BUILTINS_LOCATION, FIELD_DECL,
                           get_identifier (fields[i].name), fields[i].type);
      DECL_CHAIN (f) = chain;
      chain = f;
    }
  tree type = make_node (RECORD_TYPE);
  finish_builtin_struct (type, name, chain, NULL_TREE);
  if (!tree_fits_uhwi_p (TYPE_SIZE_UNIT (type))
      || tree_to_uhwi (TYPE_SIZE_UNIT (type)) != expected_size)
    fatal_error (UNKNOWN_LOCATION,
                 "tally: %qs has an unexpected size on this target; "
                 "plugin and include/tally/abi.h disagree", name);
  return type;
}

/* struct tally_fn_names (include/tally/abi.h): hooks=user only.  */
static tree
names_type (void)
{
  if (names_type_node)
    return names_type_node;
  const tally_field fn_names_fields[] = {
    { "name", const_char_ptr () },
    { "symbol", const_char_ptr () },
    { "origin", const_char_ptr () },
    { "file", const_char_ptr () },
  };
  names_type_node = TALLY_RECORD ("tally_fn_names", fn_names_fields,
                                  struct tally_fn_names);
  return names_type_node;
}

/* struct tally_fn (include/tally/abi.h).  */
static tree
fn_type (void)
{
  if (fn_type_node)
    return fn_type_node;
  const tally_field fn_fields[] = {
    { "counters", pointer_to (uint64_type_node) },
    { "visited", pointer_to (unsigned_char_type_node) },
    { "names", pointer_to (names_type ()) },
    { "record", uint32_type_node },
    { "map", uint32_type_node },
    { "map_size", uint32_type_node },
    { "ncounters", uint32_type_node },
    { "nvisited", uint32_type_node },
    { "flags", uint32_type_node },
    { "line", uint32_type_node },
    { "id", uint32_type_node },
  };
  fn_type_node = TALLY_RECORD ("tally_fn", fn_fields, struct tally_fn);
  return fn_type_node;
}

/* struct tally_module (include/tally/abi.h).  */
static tree
module_type (void)
{
  const tally_field module_fields[] = {
    { "magic", uint32_type_node },
    { "abi_version", uint32_type_node },
    { "checksum", uint64_type_node },
    { "source", const_char_ptr () },
    { "directory", const_char_ptr () },
    { "fns", pointer_to (pointer_to (fn_type ())) },
    { "nfns", uint32_type_node },
    { "flags", uint32_type_node },
    { "next", ptr_type_node },
    { "rt_state", uint64_type_node },
    { "tls_locate", ptr_type_node },
    { "bias", ptr_type_node },
    { "blob", ptr_type_node },
  };
  return TALLY_RECORD ("tally_module", module_fields, struct tally_module);
}

tree
tally_module_address (void)
{
  if (!module_decl)
    module_decl = make_static_var ("__tally.module", module_type ());
  return build_fold_addr_expr (module_decl);
}

/* The source function a body came from: IPA clones and split parts point
   at it through DECL_ABSTRACT_ORIGIN.  */
static tree
origin_of (tree fndecl)
{
  tree origin = DECL_ORIGIN (fndecl);
  return origin && TREE_CODE (origin) == FUNCTION_DECL ? origin : fndecl;
}

/* The name the symbol table will show: an asm label ("int f () __asm__
   ("g")") is stored as "*g", the '*' meaning "no user-label prefix".  */
static const char *
symbol_name (tree decl)
{
  return targetm.strip_name_encoding (IDENTIFIER_POINTER (DECL_ASSEMBLER_NAME (decl)));
}

tree
tally_bias_decl (void)
{
  if (bias_decl)
    return bias_decl;
  /* A pointer-sized integer type of its own alias set: the C front end
     gives every integer type of a size the alias set of its signed
     variant, which the uint64_t counters share.  */
  tree type = build_distinct_type_copy (TYPE_PRECISION (ptr_type_node) == 64
                                            ? long_long_integer_type_node
                                            : integer_type_node);
  if (TYPE_PRECISION (type) != TYPE_PRECISION (ptr_type_node))
    type = build_distinct_type_copy (long_integer_type_node);
  TYPE_ALIAS_SET (type) = new_alias_set ();
  bias_decl = make_static_var ("__tally.bias", type);
  /* The runtime writes it through the descriptor: never read-only, never
     a constant.  */
  TREE_ADDRESSABLE (bias_decl) = 1;
  varpool_node::finalize_decl (bias_decl);
  return bias_decl;
}

tree
tally_mapped_address (function *fun, tree ref, location_t loc,
                      gimple_seq *seq)
{
  tree bias = tally_bias_decl ();
  tree b = tally_make_temp (fun, TREE_TYPE (bias));
  gimple *g = gimple_build_assign (b, bias);
  gimple_set_location (g, loc);
  gimple_seq_add_stmt (seq, g);
  tree off = tally_make_temp (fun, sizetype);
  g = gimple_build_assign (off, NOP_EXPR, b);
  gimple_set_location (g, loc);
  gimple_seq_add_stmt (seq, g);
  tree ptype = build_pointer_type (TREE_TYPE (ref));
  tree addr = tally_make_temp (fun, ptype);
  g = gimple_build_assign (addr, POINTER_PLUS_EXPR,
                           build_fold_addr_expr (ref), off);
  gimple_set_location (g, loc);
  gimple_seq_add_stmt (seq, g);
  return addr;
}

/* update=tls: the counters and the attached word are initial-exec (or
   local-exec, where GCC's default already is): one %fs-relative access,
   never a __tls_get_addr call, also in -fPIC code.  The price is static TLS:
   a dlopen'ed library must find room for them in the surplus glibc keeps
   (doc/runtime.md, "Per-thread counters and dlopen"); tls-model=dynamic
   keeps GCC's default model for that.  */
static void
make_thread_local (tree decl)
{
  /* The variable's symbol-table node first: outside a function GCC 16's
     decl_default_tls_model reads it (and crashed on a variable made at the
     end of the unit, update=tls with -fPIC).  */
  varpool_node::get_create (decl);
  enum tls_model model = decl_default_tls_model (decl);
  if (!tally_opts.tls_dynamic
      && (model == TLS_MODEL_GLOBAL_DYNAMIC
          || model == TLS_MODEL_LOCAL_DYNAMIC))
    model = TLS_MODEL_INITIAL_EXEC;
  set_decl_tls_model (decl, model);
}

tree
tally_tls_live_decl (void)
{
  if (!tls_live)
    {
      tls_live = make_static_var ("__tally.tlive", uint64_type_node);
      make_thread_local (tls_live);
      varpool_node::finalize_decl (tls_live);
    }
  return tls_live;
}

/* The block map as it goes into the blob: the plugin's version 1 map
   (blocks.cc) encoded as version 2 (tally/mapcode.h), about a quarter of
   its size.  */
static vec<unsigned char>
encode_map (const vec<unsigned char> &v1)
{
  vec<unsigned char> out = vNULL;
  if (v1.is_empty ())
    return out;
  size_t n = tally_map2_encode (v1.address (), v1.length (), NULL, 0);
  if (!n) /* not ours: cannot happen; the file stays readable */
    return v1.copy ();
  out.safe_grow (n);
  tally_map2_encode (v1.address (), v1.length (), out.address (), n);
  return out;
}

tally_fn_info
tally_add_function (tree fndecl, const tally_fn_layout &layout)
{
  tally_fn_info info;
  info.id = records.length ();

  char name[32];
  snprintf (name, sizeof name, "__tally.c.%u", info.id);
  tree type = build_array_type_nelts (uint64_type_node, layout.ncounters);
  info.counters = make_static_var (name, type);
  if (tally_opts.mapped)
    set_decl_section_name (info.counters, MAPPED_SECTION);
  varpool_node::finalize_decl (info.counters);
  vec_safe_push (counter_decls, info.counters);
  info.shared = info.counters;
  tree tls = NULL_TREE;
  if (tally_opts.update == TALLY_UPDATE_TLS)
    {
      snprintf (name, sizeof name, "__tally.t.%u", info.id);
      tls = make_static_var (name, type);
      make_thread_local (tls);
      /* The entry's first count in a thread makes it 0: the attach
         (hooks.cc, insert_tls_fold).  Set before finalizing: at -O0 the
         variable is written out at once.  */
      if (layout.flags & TALLY_FN_TLS_ARMED)
        DECL_INITIAL (tls) = build_constructor_single (
            type, size_int (TALLY_C_ENTRIES),
            build_int_cst (uint64_type_node, -1));
      varpool_node::finalize_decl (tls);
      info.counters = tls;
    }
  vec_safe_push (tls_decls, tls);
  info.visited = NULL_TREE;
  if (layout.nvisited)
    {
      snprintf (name, sizeof name, "__tally.v.%u", info.id);
      info.visited = make_static_var (
          name, build_array_type_nelts (unsigned_char_type_node,
                                        layout.nvisited));
      if (tally_opts.mapped)
        set_decl_section_name (info.visited, MAPPED_SECTION);
      varpool_node::finalize_decl (info.visited);
    }
  vec_safe_push (visited_decls, info.visited);
  snprintf (name, sizeof name, "__tally.d.%u", info.id);
  info.desc = make_static_var (name, fn_type ());
  vec_safe_push (desc_decls, info.desc);

  tree origin = origin_of (fndecl);
  expanded_location loc = expand_location (DECL_SOURCE_LOCATION (origin));
  const char *symbol = symbol_name (fndecl);
  const char *origin_symbol = symbol_name (origin);
  fn_record r;
  r.name = xstrdup (lang_hooks.decl_printable_name (origin, 2));
  r.symbol = xstrdup (symbol);
  r.origin = xstrdup (origin_symbol);
  r.file = xstrdup (loc.file ? loc.file : "");
  r.line = loc.line;
  r.flags = (origin != fndecl || strcmp (symbol, origin_symbol) != 0)
                ? TALLY_FN_CLONE : 0;
  r.flags |= layout.flags;
  if (in_system_header_at (DECL_SOURCE_LOCATION (origin)))
    r.flags |= TALLY_FN_SYSTEM;
  /* gcov's test (coverage.cc): such a function has no lines of its own.  */
  if (DECL_ARTIFICIAL (origin) && !DECL_FUNCTION_VERSIONED (origin)
      && !DECL_LAMBDA_FUNCTION_P (origin))
    r.flags |= TALLY_FN_ARTIFICIAL;
  r.ncounters = layout.ncounters;
  r.nvisited = layout.nvisited;
  /* Kind 6 (the u32 after the version): its trailer comes at the end.  */
  r.map = vNULL;
  r.map_v1 = vNULL;
  if (layout.map.length () >= 8 && layout.map[4] == 6 && !layout.map[5]
      && !layout.map[6] && !layout.map[7])
    r.map_v1 = layout.map.copy ();
  else
    r.map = encode_map (layout.map);
  records.safe_push (r);
  return info;
}

/* The module checksum: the first 64 bits of the MD5 digest (GCC's own,
   from libiberty) of this compilation's instrumentation layout, so reports
   and merges tell two builds of a module apart; a cryptographic digest,
   so no two layouts collide by construction of the bytes hashed, as they
   can with a multiply-xor hash.  Deterministic: the same source and
   options give the same checksum.  */
static void
hash_bytes (md5_ctx *h, const void *p, size_t n)
{
  md5_process_bytes (p, n, h);
}

static void
hash_str (md5_ctx *h, const char *s)
{
  hash_bytes (h, s, strlen (s) + 1);
}

static uint64_t
hash_finish (md5_ctx *h)
{
  unsigned char digest[16];
  md5_finish_ctx (h, digest);
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = (v << 8) | digest[i];
  return v;
}

static tree
string_ptr (const char *s)
{
  return fold_convert (const_char_ptr (), build_string_literal (strlen (s) + 1, s));
}

/* Helper for building a CONSTRUCTOR field by field.  */
struct ctor_builder
{
  vec<constructor_elt, va_gc> *elts;
  tree field;
};

static void
ctor_begin (ctor_builder *b, tree type)
{
  b->elts = NULL;
  b->field = TYPE_FIELDS (type);
}

static void
ctor_add (ctor_builder *b, tree value)
{
  CONSTRUCTOR_APPEND_ELT (b->elts, b->field,
                          fold_convert (TREE_TYPE (b->field), value));
  b->field = DECL_CHAIN (b->field);
}

static tree
u32 (unsigned v)
{
  return build_int_cstu (uint32_type_node, v);
}

static unsigned
module_flags (void)
{
  unsigned flags = 0;
  flags |= tally_opts.hooks == TALLY_HOOKS_CALL   ? TALLY_MOD_HOOKS_CALL
           : tally_opts.hooks == TALLY_HOOKS_USER ? TALLY_MOD_HOOKS_USER
           : tally_opts.hooks == TALLY_HOOKS_NONE ? TALLY_MOD_HOOKS_NONE
                                                  : TALLY_MOD_HOOKS_INLINE;
  flags |= tally_opts.at == TALLY_AT_EARLY ? TALLY_MOD_AT_EARLY : TALLY_MOD_AT_LATE;
  if (tally_opts.update == TALLY_UPDATE_ATOMIC)
    flags |= TALLY_MOD_UPDATE_ATOMIC;
  if (tally_opts.update == TALLY_UPDATE_TLS)
    flags |= TALLY_MOD_UPDATE_TLS;
  if (tally_opts.blocks == TALLY_BLOCKS_COUNT)
    flags |= TALLY_MOD_BLOCKS_COUNT;
  if (tally_opts.blocks == TALLY_BLOCKS_COUNT
      && tally_opts.placement == TALLY_PLACE_TREE)
    flags |= TALLY_MOD_BLOCKS_TREE;
  if (tally_opts.blocks == TALLY_BLOCKS_VISITED)
    flags |= TALLY_MOD_BLOCKS_VISITED;
  if (tally_opts.measure != TALLY_MEASURE_COUNT)
    flags |= TALLY_MOD_MEASURE_CYCLES;
  if (tally_opts.measure == TALLY_MEASURE_PAPI)
    flags |= TALLY_MOD_MEASURE_PAPI;
  if (tally_opts.paths)
    flags |= TALLY_MOD_PATHS;
  if (tally_opts.exit_frames)
    flags |= TALLY_MOD_EXIT_FRAMES;
  if (tally_opts.mapped)
    flags |= TALLY_MOD_COUNTERS_MAPPED;
  flags |= TALLY_MOD_SYSTEM_MARKED;
  return flags;
}

static tree
runtime_fn (const char *name)
{
  return tally_runtime_decl (name, build_function_type_list (
                                       void_type_node, ptr_type_node, NULL_TREE));
}

/* update=tls: "uint64_t *__tally.tls_locate (uint64_t **out)" stores the
   calling thread's address of each function's thread-local counters in
   out[i] and returns the address of its __tally.tlive.  */
static tree
build_tls_locate (void)
{
  tree u64p = pointer_to (uint64_type_node);
  tree type = build_function_type_list (u64p, pointer_to (u64p), NULL_TREE);
  tree decl = build_decl (BUILTINS_LOCATION, FUNCTION_DECL,
                          get_identifier ("__tally.tls_locate"), type);
  tree result = build_decl (BUILTINS_LOCATION, RESULT_DECL, NULL_TREE, u64p);
  DECL_ARTIFICIAL (result) = 1;
  DECL_IGNORED_P (result) = 1;
  DECL_CONTEXT (result) = decl;
  DECL_RESULT (decl) = result;
  tree out = build_decl (BUILTINS_LOCATION, PARM_DECL, get_identifier ("out"),
                         pointer_to (u64p));
  DECL_ARG_TYPE (out) = pointer_to (u64p);
  DECL_CONTEXT (out) = decl;
  DECL_ARGUMENTS (decl) = out;
  plugin_own (decl);
  DECL_NO_INSTRUMENT_FUNCTION_ENTRY_EXIT (decl) = 1;
  DECL_UNINLINABLE (decl) = 1;

  tree body = NULL_TREE;
  for (unsigned i = 0; i < records.length (); i++)
    {
      tree slot = build2 (MEM_REF, u64p, out,
                          build_int_cst (pointer_to (u64p), i * 8));
      tree addr = fold_convert (u64p, build_fold_addr_expr ((*tls_decls)[i]));
      append_to_statement_list (build2 (MODIFY_EXPR, u64p, slot, addr), &body);
    }
  tree ret = build2 (MODIFY_EXPR, u64p, result,
                     build_fold_addr_expr (tally_tls_live_decl ()));
  append_to_statement_list (build1 (RETURN_EXPR, void_type_node, ret), &body);
  tree bind = build3 (BIND_EXPR, void_type_node, NULL_TREE, body,
                      make_node (BLOCK));
  BLOCK_SUPERCONTEXT (BIND_EXPR_BLOCK (bind)) = decl;
  DECL_INITIAL (decl) = BIND_EXPR_BLOCK (bind);
  DECL_SAVED_TREE (decl) = bind;

  tree saved = current_function_decl;
  current_function_decl = decl;
  allocate_struct_function (decl, false);
  gimplify_function_tree (decl);
  cgraph_node::add_new_function (decl, false);
  set_cfun (NULL);
  current_function_decl = saved;
  return decl;
}

/* The record blob (include/tally/abi.h): the unit's module record in the
   data file (tally/format.h) but for the values, as segments with their
   CRC-32 and CRC shift, so that the runtime writes it as it is and its
   dump costs O(values) (rt/mapblob.c).  Its fixed parts are written with
   tally/format.h's encoders; tally_crc32 is rt/crc32.c, which the format
   library the plugin links (format/meson.build) compiles.  */

/* A times B modulo the CRC polynomial (reflected: x^0 is bit 31).  */
static unsigned
crc_mulmod (unsigned a, unsigned b)
{
  unsigned m = 1u << 31, p = 0;
  for (; a; m >>= 1, b = (b >> 1) ^ (0xEDB88320u & -(b & 1u)))
    if (a & m)
      {
        p ^= b;
        a &= ~m;
      }
  return p;
}

/* x^(8N) mod P: appends N bytes to a running CRC.  */
static unsigned
crc_shift (unsigned long long n)
{
  unsigned p = 1u << 31, sq = 1u << 23;
  for (; n; n >>= 1, sq = crc_mulmod (sq, sq))
    if (n & 1)
      p = crc_mulmod (sq, p);
  return p;
}

static void
blob_bytes (vec<unsigned char> *b, const void *p, size_t n)
{
  const unsigned char *s = (const unsigned char *) p;
  b->reserve (n);
  for (size_t i = 0; i < n; i++)
    b->quick_push (s[i]);
}

/* As the runtime's put_str: the length (at most TALLY_MAX_STRING), then
   the bytes.  */
static void
blob_str (vec<unsigned char> *b, const char *s)
{
  size_t n = strlen (s);
  if (n > TALLY_MAX_STRING)
    n = TALLY_MAX_STRING;
  tally_put_u32 (b, (unsigned) n);
  blob_bytes (b, s, n);
}

/* Builds the blob of the module with checksum H and flags MFLAGS into
   *OUT; MAP_AT[i] is where function i's map starts in it, REC_AT[i] where
   its record (its name's length) does.  */
static void
build_blob (vec<unsigned char> *out, uint64_t h, unsigned mflags,
            const char *source, const char *directory, vec<unsigned> *map_at,
            vec<unsigned> *rec_at)
{
  unsigned n = records.length ();
  unsigned nseg = n + 1;
  unsigned head = 24 + 24 * nseg;
  auto_vec<unsigned char> data;
  auto_vec<unsigned> cut; /* where each segment ends in DATA */
  unsigned long long nvalues = 0;
  struct tally_modrec m = { TALLY_ABI_VERSION, h, mflags, n };
  tally_modrec_put (tally_put_part (&data, TALLY_MODREC_FIXED), &m);
  blob_str (&data, source);
  blob_str (&data, directory);
  for (unsigned i = 0; i <= n; i++)
    {
      if (i > 0)
        {
          const fn_record &p = records[i - 1];
          tally_put_u32 (&data, p.map.length ());
          map_at->safe_push (head + data.length ());
          blob_bytes (&data, p.map.address (), p.map.length ());
        }
      if (i < n)
        {
          const fn_record &r = records[i];
          rec_at->safe_push (head + data.length ());
          blob_str (&data, r.name);
          blob_str (&data, r.symbol);
          blob_str (&data, r.origin);
          blob_str (&data, r.file);
          struct tally_fnrec f = { r.line, r.flags & ~TALLY_FN_TLS_ARMED,
                                   r.ncounters + r.nvisited, 0 };
          tally_fnrec_put (tally_put_part (&data, TALLY_FNREC_FIXED), &f);
          nvalues += r.ncounters + r.nvisited;
        }
      cut.safe_push (data.length ());
    }
  tally_put_u32 (out, TALLY_BLOB_MAGIC);
  tally_put_u32 (out, nseg);
  tally_put_u64 (out, nvalues);
  tally_put_u64 (out, data.length ());
  unsigned start = 0;
  for (unsigned i = 0; i < nseg; i++)
    {
      unsigned len = cut[i] - start;
      tally_put_u32 (out, head + start);
      tally_put_u32 (out, len);
      unsigned crc = tally_crc32 (0, data.address () + start, len);
      tally_put_u32 (out, crc);
      tally_put_u32 (out, crc_shift (len));
      /* The same with the next function's values all 0.  */
      unsigned long long zeros
          = i < n ? 8ull * (records[i].ncounters + records[i].nvisited) : 0;
      static const unsigned char zero8[8] = { 0 };
      for (unsigned long long k = 0; k < zeros; k += 8)
        crc = tally_crc32 (crc, zero8, 8);
      tally_put_u32 (out, crc);
      tally_put_u32 (out, crc_shift (len + zeros));
      start = cut[i];
    }
  gcc_assert (out->length () == head);
  blob_bytes (out, data.address (), data.length ());
}

/* Registration runs before the program's default-priority constructors, so
   function ids are set before most code runs; unregistration runs after
   its default-priority destructors, so their counts are kept.  */
#define TALLY_CDTOR_PRIORITY 101

/* 1. Emit the function descriptors and table, 2. the module record, 3. the constructor and
   destructor that hand the module to the runtime.  */
void
tally_emit_module (void *, void *)
{
  if (records.is_empty () || seen_error ())
    return;
  tally_emitting = true;

  /* 0. update=tls: the function that finds a thread's counter copies.  It
     is compiled at once, and the collector may run while it is: so before
     anything below is built, which nothing roots until it is finalized
     (a GC there freed the half-built module record: ICE on sqlite3.c).  */
  tree locate = tally_opts.update == TALLY_UPDATE_TLS ? build_tls_locate () : NULL_TREE;

  /* 1. The function descriptors and the table of pointers to them.  First
     the kind 6 maps get their callers (callers.cc).  */
  unsigned n = records.length ();
  for (unsigned i = 0; i < n; i++)
    if (!records[i].map_v1.is_empty ())
      {
        fn_record &r = records[i];
        bool had = tally_callers_trailer (i, &r.map_v1);
        gcc_assert (had);
        r.map = encode_map (r.map_v1);
        r.map_v1.release ();
      }
  md5_ctx hctx;
  md5_init_ctx (&hctx);
  hash_str (&hctx, main_input_filename ? main_input_filename : "");
  unsigned mflags = module_flags ();
  hash_bytes (&hctx, &mflags, sizeof mflags);
  for (unsigned i = 0; i < n; i++)
    {
      const fn_record &r = records[i];
      hash_str (&hctx, r.symbol);
      hash_str (&hctx, r.file);
      hash_bytes (&hctx, &r.line, sizeof r.line);
      hash_bytes (&hctx, &r.ncounters, sizeof r.ncounters);
      hash_bytes (&hctx, &r.nvisited, sizeof r.nvisited);
      if (!r.map.is_empty ())
        hash_bytes (&hctx, r.map.address (), r.map.length ());
    }
  uint64_t h = hash_finish (&hctx);

  /* The record blob; each function's map is in it.  */
  const char *source = main_input_filename ? main_input_filename : "";
  const char *directory = getpwd ();
  auto_vec<unsigned char> bytes;
  auto_vec<unsigned> map_at, rec_at;
  build_blob (&bytes, h, mflags, source, directory, &map_at, &rec_at);
  tree blob_type = build_array_type_nelts (unsigned_char_type_node,
                                           bytes.length ());
  tree blob_decl = make_static_var ("__tally.blob", blob_type);
  TREE_READONLY (blob_decl) = 1;
  tree blob_init = build_string (bytes.length (), (const char *) bytes.address ());
  TREE_TYPE (blob_init) = blob_type;
  TREE_CONSTANT (blob_init) = 1;
  TREE_STATIC (blob_init) = 1;
  DECL_INITIAL (blob_decl) = blob_init;
  varpool_node::finalize_decl (blob_decl);
  tree map_ptr = pointer_to (build_qualified_type (unsigned_char_type_node,
                                                   TYPE_QUAL_CONST));

  /* ABI 4: the descriptors point at nothing read-only (their strings and
     maps are offsets into the blob), so a PIE relocates only `counters`
     (and `visited`) of each; hooks=user alone gets the strings as C
     strings too, for the hooks (struct tally_fn_names).  */
  tree desc_ptr = pointer_to (fn_type ());
  vec<constructor_elt, va_gc> *table = NULL;
  for (unsigned i = 0; i < n; i++)
    {
      const fn_record &r = records[i];
      tree desc = (*desc_decls)[i];
      ctor_builder b;
      tree names = null_pointer_node;
      if (tally_opts.hooks == TALLY_HOOKS_USER)
        {
          char nname[32];
          snprintf (nname, sizeof nname, "__tally.n.%u", i);
          tree ndecl = make_static_var (nname, names_type ());
          TREE_READONLY (ndecl) = 1;
          ctor_builder nb;
          ctor_begin (&nb, names_type ());
          ctor_add (&nb, string_ptr (r.name));
          ctor_add (&nb, string_ptr (r.symbol));
          ctor_add (&nb, string_ptr (r.origin));
          ctor_add (&nb, string_ptr (r.file));
          DECL_INITIAL (ndecl) = build_constructor (names_type (), nb.elts);
          TREE_CONSTANT (DECL_INITIAL (ndecl)) = 1;
          TREE_STATIC (DECL_INITIAL (ndecl)) = 1;
          varpool_node::finalize_decl (ndecl);
          names = build_fold_addr_expr (ndecl);
        }
      ctor_begin (&b, fn_type ());
      ctor_add (&b, build_fold_addr_expr ((*counter_decls)[i]));
      ctor_add (&b, (*visited_decls)[i]
                        ? build_fold_addr_expr ((*visited_decls)[i])
                        : null_pointer_node);
      ctor_add (&b, names);
      ctor_add (&b, u32 (rec_at[i]));
      ctor_add (&b, u32 (r.map.is_empty () ? 0 : map_at[i]));
      ctor_add (&b, u32 (r.map.length ()));
      ctor_add (&b, u32 (r.ncounters));
      ctor_add (&b, u32 (r.nvisited));
      ctor_add (&b, u32 (r.flags));
      ctor_add (&b, u32 (r.line));
      ctor_add (&b, u32 (0));
      DECL_INITIAL (desc) = build_constructor (fn_type (), b.elts);
      TREE_STATIC (DECL_INITIAL (desc)) = 1;
      varpool_node::finalize_decl (desc);
      CONSTRUCTOR_APPEND_ELT (table, build_int_cst (sizetype, i),
                              fold_convert (desc_ptr, build_fold_addr_expr (desc)));
    }
  tree table_type = build_array_type_nelts (desc_ptr, n);
  tree table_decl = make_static_var ("__tally.fns", table_type);
  TREE_READONLY (table_decl) = 1;
  DECL_INITIAL (table_decl) = build_constructor (table_type, table);
  TREE_CONSTANT (DECL_INITIAL (table_decl)) = 1;
  TREE_STATIC (DECL_INITIAL (table_decl)) = 1;
  varpool_node::finalize_decl (table_decl);

  /* 2. The module record (created earlier if hooks=call referred to it).  */
  tally_module_address ();
  tree mtype = TREE_TYPE (module_decl);
  ctor_builder b;
  ctor_begin (&b, mtype);
  ctor_add (&b, u32 (TALLY_MODULE_MAGIC));
  ctor_add (&b, u32 (TALLY_ABI_VERSION));
  ctor_add (&b, build_int_cstu (uint64_type_node, h));
  ctor_add (&b, string_ptr (source));
  ctor_add (&b, string_ptr (directory));
  ctor_add (&b, build_fold_addr_expr (table_decl));
  ctor_add (&b, u32 (n));
  ctor_add (&b, u32 (mflags | TALLY_MOD_BLOB));
  ctor_add (&b, null_pointer_node);
  ctor_add (&b, build_int_cstu (uint64_type_node, 0));
  ctor_add (&b, locate ? build_fold_addr_expr (locate) : null_pointer_node);
  ctor_add (&b, tally_opts.mapped ? build_fold_addr_expr (tally_bias_decl ())
                                  : null_pointer_node);
  ctor_add (&b, fold_convert (map_ptr, build_fold_addr_expr (blob_decl)));
  DECL_INITIAL (module_decl) = build_constructor (mtype, b.elts);
  TREE_STATIC (DECL_INITIAL (module_decl)) = 1;
  varpool_node::finalize_decl (module_decl);

  /* Counter arrays whose varpool entry was not written out yet (for
     instance under -fno-toplevel-reorder) are written now.  */
  for (unsigned i = 0; i < n; i++)
    {
      tree decls[3] = { (*counter_decls)[i], (*tls_decls)[i], (*visited_decls)[i] };
      for (tree d : decls)
        if (d && !TREE_ASM_WRITTEN (d))
          if (varpool_node *node = varpool_node::get (d))
            node->assemble_decl ();
    }

  /* 3. Constructor and destructor.  */
  if (!register_decl)
    {
      register_decl = runtime_fn ("__tally_register");
      unregister_decl = runtime_fn ("__tally_unregister");
    }
  /* Each cdtor is compiled at once, and the collector may run while it is,
     so nothing built for the first one is reused for the second.  */
  tree body = NULL_TREE;
  append_to_statement_list (build_call_expr (register_decl, 1,
                                             build_fold_addr_expr (module_decl)),
                            &body);
  cgraph_build_static_cdtor ('I', body, TALLY_CDTOR_PRIORITY);
  body = NULL_TREE;
  append_to_statement_list (build_call_expr (unregister_decl, 1,
                                             build_fold_addr_expr (module_decl)),
                            &body);
  cgraph_build_static_cdtor ('D', body, TALLY_CDTOR_PRIORITY);

  if (dump_file)
    fprintf (dump_file, "tally: module with %u functions, checksum %016llx\n",
             n, (unsigned long long) h);
  tally_emitting = false;
}
