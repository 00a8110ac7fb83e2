/* tally/abi.h - the contract between the tally GCC plugin and the runtime.
 *
 * The plugin emits, in every instrumented translation unit, one
 * `struct tally_module` and an array of `struct tally_fn` (as GCC trees whose
 * layout must match these structs exactly), plus a constructor that calls
 * __tally_register(&module).  Instrumented code either updates the
 * counters itself (hooks=inline) or calls __tally_enter/__tally_exit with the
 * module and a small function index (hooks=call).
 *
 * Changing a layout here means bumping TALLY_ABI_VERSION and the matching
 * code in plugin/descriptor.cc; the runtime refuses modules of another
 * version with a message instead of misreading them.
 *
 * This header and tally/hooks.h include no system header (they use GCC's
 * __UINT64_TYPE__ and __UINT32_TYPE__), so that giving them with -include
 * does not fix the feature-test macros (_GNU_SOURCE, ...) before the
 * program's own #defines.  */
#ifndef TALLY_ABI_H
#define TALLY_ABI_H

#define TALLY_ABI_VERSION 4u
/* The oldest module ABI this runtime still registers.  ABI 4 changed
   struct tally_fn (offsets into the blob instead of pointers), so modules
   of ABI 2 and 3 are refused with a message; struct tally_module's first
   fields (magic, abi_version, checksum, source) are the same in every ABI,
   so the message can name the module.  */
#define TALLY_ABI_VERSION_MIN 4u
#define TALLY_MODULE_MAGIC 0x4d594c54u /* "TLYM" little-endian */

/* Indexes into struct tally_fn.counters.  */
enum tally_counter
{
  TALLY_C_ENTRIES = 0, /* times the function was entered */
  TALLY_C_EXITS = 1,   /* times it left through a return statement */
  TALLY_C_CORE = 2     /* counters every function has */
};

/* struct tally_fn.flags */
#define TALLY_FN_CLONE 0x1u /* a GCC clone or split part of `origin` */
#define TALLY_FN_CALLS_DERIVED 0x2u /* counters[ENTRIES] and [EXITS] are not
                                       updated: readers compute them from the
                                       block counts (blocks=count) */
#define TALLY_FN_SYSTEM 0x4u /* defined in a system header (GCC's
                                in_system_header_at: -isystem, /usr/include);
                                meaningful in modules with
                                TALLY_MOD_SYSTEM_MARKED only */
#define TALLY_FN_ARTIFICIAL 0x8u /* made by the compiler (C++ implicit
                                    members, a unit's initializer function):
                                    like gcov, line coverage leaves it out */
#define TALLY_FN_TLS_ARMED 0x10u /* update=tls: the thread-local copies of
                                    counters[ENTRIES] start at -1 (the attach
                                    test folded into the count, rt/tls.c);
                                    plugin and runtime only, never written
                                    into a data file */

/* struct tally_module.flags */
#define TALLY_MOD_HOOKS_INLINE 0x1u /* counters updated by inline code */
#define TALLY_MOD_HOOKS_CALL 0x2u   /* counters updated by runtime calls */
#define TALLY_MOD_AT_EARLY 0x4u     /* instrumented before IPA inlining */
#define TALLY_MOD_AT_LATE 0x8u      /* instrumented after IPA (default) */
#define TALLY_MOD_UPDATE_ATOMIC 0x10u /* counters use relaxed atomic adds */
#define TALLY_MOD_HOOKS_USER 0x20u  /* user hooks (hooks=user:PREFIX); the
                                       counters are not updated */
#define TALLY_MOD_BLOCKS_COUNT 0x40u   /* blocks=count: exact block counts */
#define TALLY_MOD_BLOCKS_VISITED 0x80u /* blocks=visited: a byte per block */
#define TALLY_MOD_UPDATE_TLS 0x100u    /* counters are per thread (update=tls),
                                          summed at thread exit and at dump */
#define TALLY_MOD_HOOKS_NONE 0x200u    /* hooks=none: no entry/exit hooks */
#define TALLY_MOD_BLOCKS_TREE 0x400u   /* blocks counted on the edges off a
                                          spanning tree (placement=tree) */
#define TALLY_MOD_PATHS 0x1000u        /* paths=on: a calling-context tree */
#define TALLY_MOD_EXIT_FRAMES 0x4000u  /* exit=frames: LOPI return frames */
#define TALLY_MOD_MEASURE_PAPI 0x2000u /* measure=papi: cycles and the
                                          TALLY_PAPI_EVENTS per function */
#define TALLY_MOD_MEASURE_CYCLES 0x800u /* measure=cycles: shadow stack,
                                           inclusive/exclusive TSC cycles */
#define TALLY_MOD_SYSTEM_MARKED 0x10000u /* the plugin set TALLY_FN_SYSTEM
                                           where it applies (older plugins
                                           did not: readers judge by path) */
#define TALLY_MOD_COUNTERS_MAPPED 0x8000u /* counters=mapped: every update
                                             goes to its address plus
                                             *bias (ABI 3) */
#define TALLY_MOD_BLOB 0x80000000u /* the record has `blob` (ABI 3 modules
                                      of plugins before it end at `bias`);
                                      plugin and runtime only, never
                                      written into a data file */

/* hooks=user: what tally_fn.names points to.  */
struct tally_fn_names
{
  const char *name;   /* printable source name: "main", "ns::f(int)" */
  const char *symbol; /* assembler name of this body: "f.constprop.0" */
  const char *origin; /* assembler name of the source function: "f" */
  const char *file;   /* source file the function is written in */
};

/* One instrumented function body.  Emitted writable by the plugin (the
   runtime fills in `id`); hooks=user hooks receive a pointer to it.

   ABI 4: the descriptor holds no pointer the linker must relocate in a
   position-independent program but `counters` (and `visited`, and
   `names`, where they are not 0): the function's strings, line and flags
   and its block map are in the unit's record blob (below), which the
   data file needs anyway, and the descriptor gives their offsets in it.
   ABI 3's descriptor had seven pointers (each a 24-byte R_X86_64_RELATIVE
   relocation in a PIE) and its own copies of the four strings.  */
struct tally_fn
{
  __UINT64_TYPE__ *counters; /* ncounters values, TALLY_C_* first */
  unsigned char *visited;    /* blocks=visited: set to 1 when a block runs */
  /* hooks=user only (0 in every other mode): the function's strings as C
     strings, for the hooks.  */
  const struct tally_fn_names *names;
  __UINT32_TYPE__ record;    /* offset in the module's blob of the
                                function's record (str name, str symbol,
                                str origin, str file, u32 line, u32 flags:
                                tally/format.h) */
  __UINT32_TYPE__ map;       /* offset in the module's blob of its block map
                                (tally/format.h "block map"), 0: none; copied
                                verbatim into the data file */
  __UINT32_TYPE__ map_size;  /* bytes of the map */
  __UINT32_TYPE__ ncounters; /* at least TALLY_C_CORE */
  __UINT32_TYPE__ nvisited;  /* bytes at `visited` */
  __UINT32_TYPE__ flags;     /* TALLY_FN_* */
  __UINT32_TYPE__ line;      /* line of the function's opening */
  __UINT32_TYPE__ id;        /* process-wide number, set at registration: unique
                         over all registered functions, dense from 0 */
};

/* One instrumented translation unit.  The runtime links registered modules
   through `next`, so the plugin emits it writable.  */
struct tally_module
{
  __UINT32_TYPE__ magic;          /* TALLY_MODULE_MAGIC */
  __UINT32_TYPE__ abi_version;    /* TALLY_ABI_VERSION the plugin was built with */
  __UINT64_TYPE__ checksum;       /* hash of this compilation's instrumentation */
  const char *source;      /* main input file as given to the compiler */
  const char *directory;   /* working directory of the compiler */
  struct tally_fn *const *fns; /* nfns function records */
  __UINT32_TYPE__ nfns;
  __UINT32_TYPE__ flags;          /* TALLY_MOD_* */
  struct tally_module *next; /* runtime-owned: registration list */
  __UINT64_TYPE__ rt_state;       /* runtime-owned: registration state */
  /* update=tls: fills fn_counters[i] with the address of this thread's copy
     of fns[i]->counters and returns the address of this thread's "attached"
     word, which the instrumented code tests at every function entry and
     the runtime sets (__tally_tls_attach).  0 without update=tls.  */
  __UINT64_TYPE__ *(*tls_locate) (__UINT64_TYPE__ **fn_counters);
  /* counters=mapped (ABI 3): the unit's bias, a static variable the runtime
     sets.  Instrumented code updates a counter or visited byte at address
     A by writing A + *bias, so 0 means the counters themselves, and the
     runtime moves every update of the unit into a file mapping (continuous
     output, rt/continuous.c) by setting it.  All of the unit's counter
     arrays and visited bytes are in one section (".bss.tally.cnt"), so
     they make one span.  0 without counters=mapped.  */
  __INTPTR_TYPE__ *bias;
  /* The unit's record blob, below (ABI 4: always; ABI 3 with
     TALLY_MOD_BLOB).  */
  const unsigned char *blob;
};

/* The record blob (rt/mapblob.c): the constant bytes of the unit's module
   record in the data file (tally/format.h), exactly as the file has them,
   so that a dump writes them as they are.  The record is constant but for
   the functions' values: segment 0 is the module header and function 0's
   fields up to its values, segment i (1 <= i < nfns) function i-1's map
   size and map and function i's fields up to its values, segment nfns the
   last function's map size and map (with no functions: the header alone).
   All integers little-endian:
     u32 magic (TALLY_BLOB_MAGIC), u32 segments (nfns + 1),
     u64 values (the functions' value counts added up),
     u64 constant bytes (the segments' lengths added up),
     per segment: u32 offset (from the blob's start), u32 length,
       u32 CRC-32 of its bytes, u32 x^(8 length) mod the CRC polynomial
       (reflected; appends the segment to a running CRC: zlib's
       crc32_combine), and the same two for the segment followed by the
       next function's values all 0 (for the last segment: the same
       values again),
     then the segments' bytes.  Each function's `record` and `map` are
   offsets from the blob's start.  */
#define TALLY_BLOB_MAGIC 0x42594c54u /* "TLYB" little-endian */

/* measure=cycles (rt/shadow.c).  Every thread has a shadow stack of the
   activations entered and not yet left; inline code pushes and pops it
   itself on the fast path and calls the runtime for everything else.  A
   frame is identified by the CFA of its activation (the stack pointer
   before the call), so frames that longjmp, an exception or pthread_exit
   skipped are recognised (their CFA is below the current one) and closed
   at the next hook.  */
struct tally_sframe
{
  __UINT64_TYPE__ start;  /* time-stamp counter at entry */
  __UINT64_TYPE__ child;  /* inclusive cycles of the callees that returned */
  __UINT64_TYPE__ cfa;    /* the activation's canonical frame address */
  struct tally_fn *fn;    /* the function */
  __UINT32_TYPE__ node;   /* paths=on: its calling-context node (rt/paths.c),
                             meaningful with TALLY_SF_PATH only */
  __UINT32_TYPE__ flags;  /* TALLY_SF_*.  0 in every free slot (a new
                             stack's are, and the runtime clears them when
                             it pops a frame), so inline code writes
                             neither node nor flags */
  __UINT64_TYPE__ ret;    /* exit=frames: the real return address */
};

/* struct tally_sframe.flags */
#define TALLY_SF_PAPI 0x1u   /* PAPI events were read at entry (rt/papi.c) */
#define TALLY_SF_FRAMES 0x2u /* exit=frames: the return address was swapped
                                for the trampoline (rt/frames.c) */
#define TALLY_SF_PATH 0x4u   /* `node` is the frame's calling-context node */

/* The thread's shadow stack: frames [base + 1, top) are open, base[0] is a
   sentinel.  Before the first hook of a thread, top == end, which sends
   the inline entry to the runtime (that maps the stack).  */
struct tally_sstack
{
  struct tally_sframe *top;
  struct tally_sframe *end;
};

/* paths=on (rt/paths.c): one node of the calling-context tree, the
   activations of one function on one call path.  The inline exit of
   paths=on hooks=inline adds to calls, incl and excl of its frame's node
   (__tally_path_nodes[node]).  */
struct tally_path_node
{
  __UINT32_TYPE__ parent;   /* node index; the root (0) has UINT32_MAX */
  __UINT32_TYPE__ fn_plus1; /* function id + 1; 0 until the node is filled */
  __UINT32_TYPE__ depth;    /* the root is 0 */
  __UINT32_TYPE__ pad;
  __UINT64_TYPE__ calls, incl, excl;
};

/* What measure=cycles accumulates per function, indexed by tally_fn.id.  */
struct tally_meas
{
  __UINT64_TYPE__ incl; /* cycles from entry to exit, callees included */
  __UINT64_TYPE__ excl; /* the same less the callees' inclusive cycles */
};

#include "tally/public.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Called from the constructor the plugin emits into every module.  */
TALLY_PUBLIC void __tally_register (struct tally_module *m);
/* Called from the destructor the plugin emits (dlclose, process end).  */
TALLY_PUBLIC void __tally_unregister (struct tally_module *m);
/* hooks=call: function entry and normal exit.  */
TALLY_PUBLIC void __tally_enter (struct tally_module *m, __UINT32_TYPE__ fn);
TALLY_PUBLIC void __tally_exit (struct tally_module *m, __UINT32_TYPE__ fn);
/* hooks=call on x86-64 (plugin since ABI 3's second hook set): add 1 to
   the counter given, plainly or with a relaxed atomic add (update=atomic,
   tls).  They change no register but the flags (rt/hooks.c); the plugin
   calls them from an asm statement, the counter in %rdi, through the GOT.
   Elsewhere ordinary C functions (the plugin uses the pair above).  */
TALLY_PUBLIC void __tally_count (__UINT64_TYPE__ *counter);
TALLY_PUBLIC void __tally_count_atomic (__UINT64_TYPE__ *counter);
/* The same for counters=mapped units: the counter at its address plus
   *m->bias (ABI 3).  */
TALLY_PUBLIC void __tally_enter_mapped (struct tally_module *m,
                                        __UINT32_TYPE__ fn);
TALLY_PUBLIC void __tally_exit_mapped (struct tally_module *m,
                                       __UINT32_TYPE__ fn);
/* measure=cycles, hooks=call: count, then push (enter) or pop (exit) the
   frame of the activation whose CFA is given.  */
TALLY_PUBLIC void __tally_enter_cyc (struct tally_module *m,
                                     __UINT32_TYPE__ fn, void *cfa);
TALLY_PUBLIC void __tally_exit_cyc (struct tally_module *m,
                                    __UINT32_TYPE__ fn, void *cfa);
/* x86-64, measure=cycles hooks=call without paths=on (plugin since ABI 3's
   third hook set): the shadow stack's push and pop alone (the caller counts
   the call in its own code first), called from the plugin's asm statement
   below the caller's red zone.  Enter: FN's descriptor in %rcx, the CFA in
   %rdx; it changes %rax, %rdx, %r10, %r11 and the flags.  Exit: FN in %rcx,
   the CFA in %rsi; it changes %rax, %rdx, %rsi, %r10, %r11 and the flags.
   Nothing else (rt/shadow.c: the fast path in assembly, the rest through
   the register-preserving slow paths below).  The _atomic exit adds the
   totals atomically (update=atomic, tls).  */
TALLY_PUBLIC void __tally_cyc_call_enter (void);
TALLY_PUBLIC void __tally_cyc_call_exit (void);
TALLY_PUBLIC void __tally_cyc_call_exit_atomic (void);
/* measure=papi (hooks=call): the same, also reading the PAPI events
   (rt/papi.c: in the shared runtime, or for static links in
   libtally-rt-papi.a, with -lpapi).  */
TALLY_PUBLIC void __tally_enter_papi (struct tally_module *m,
                                      __UINT32_TYPE__ fn, void *cfa);
TALLY_PUBLIC void __tally_exit_papi (struct tally_module *m,
                                     __UINT32_TYPE__ fn, void *cfa);
/* exit=frames (x86-64, hooks=call): count and push like
   __tally_enter_cyc, then swap the activation's return address (at CFA - 8)
   for the runtime's return trampoline, which runs the exit accounting and
   returns to the real address (rt/frames.c).  No exit hooks.  */
TALLY_PUBLIC void __tally_enter_frames (struct tally_module *m,
                                        __UINT32_TYPE__ fn, void *cfa);
/* The return trampoline of exit=frames (rt/frames.c): with hooks=inline
   the entry's fast path writes its address into the return slot itself.
   Not a function to call.  */
TALLY_PUBLIC void __tally_return_trampoline (void);
/* measure=cycles, hooks=inline: the slow paths of the inline code (first
   hook of a thread, a full stack, stale frames, a frame that does not
   match).  The exit gets the time-stamp counter the inline code read.  */
TALLY_PUBLIC void __tally_cyc_enter_slow (struct tally_fn *fn, void *cfa);
TALLY_PUBLIC void __tally_cyc_exit_slow (struct tally_fn *fn, void *cfa,
                                         __UINT64_TYPE__ now);
/* The entry's slow path of hooks=inline with exit=frames (it also swaps
   the return address), with paths=on (CACHE: the function's node cache,
   a word of the unit the inline entry reads: (parent node + 1) << 32 |
   node), and with both.  */
TALLY_PUBLIC void __tally_cyc_enter_slow_frames (struct tally_fn *fn,
                                                 void *cfa);
TALLY_PUBLIC void __tally_cyc_enter_slow_paths (struct tally_fn *fn,
                                                void *cfa,
                                                __UINT64_TYPE__ *cache);
/* Its common case without the vector registers (the _all stub calls it
   first): non-zero if it pushed the frame.  */
TALLY_PUBLIC int __tally_cyc_enter_miss_paths (struct tally_fn *fn,
                                               void *cfa,
                                               __UINT64_TYPE__ *cache);
TALLY_PUBLIC void __tally_cyc_enter_slow_paths_frames (struct tally_fn *fn,
                                                       void *cfa,
                                                       __UINT64_TYPE__ *cache);
/* x86-64: the same for the plugin's asm statement (called below the
   caller's red zone; enter: fn in %rax, cfa in %rdx; exit: now in %rax,
   cfa in %rdx, fn in %rcx): they change no
   register, vector registers included (rt/shadow.c), so the inline fast
   path costs the function no saved register and no spill.  */
TALLY_PUBLIC void __tally_cyc_enter_slow_all (void);
TALLY_PUBLIC void __tally_cyc_exit_slow_all (void);
/* And for the three above (the cache in %rcx).  */
TALLY_PUBLIC void __tally_cyc_enter_slow_frames_all (void);
TALLY_PUBLIC void __tally_cyc_enter_slow_paths_all (void);
TALLY_PUBLIC void __tally_cyc_enter_slow_paths_frames_all (void);
/* The calling thread's shadow stack (initial-exec TLS) and the per-function
   totals (NULL-safe: points at a dummy until a module measures).  */
extern TALLY_PUBLIC __thread struct tally_sstack __tally_ss
    __attribute__ ((tls_model ("initial-exec")));
extern TALLY_PUBLIC struct tally_meas *__tally_meas;
/* paths=on: the nodes of the calling-context tree (NULL until the first
   call path); hooks=inline's exit adds to its frame's node.  */
extern TALLY_PUBLIC struct tally_path_node *__tally_path_nodes;
/* update=tls: called by the first instrumented function of M that runs in a
   thread; the runtime finds the thread's counter copies (m->tls_locate), and
   adds them to the module's counters when the thread exits.  */
TALLY_PUBLIC void __tally_tls_attach (struct tally_module *m);
/* x86-64: the same, for the plugin's asm statement (the module in %rdi,
   called below the caller's red zone); preserves every register, vector
   registers included, so that the hot path of a leaf needs no frame.  */
TALLY_PUBLIC void __tally_tls_attach_all (void);
/* The plugin redirects direct calls to the exec functions to these: they
   write the data file, then call the real function (rt/exec.c).  */
TALLY_PUBLIC int __tally_execve (const char *, char *const[], char *const[]);
TALLY_PUBLIC int __tally_execv (const char *, char *const[]);
TALLY_PUBLIC int __tally_execvp (const char *, char *const[]);
TALLY_PUBLIC int __tally_execvpe (const char *, char *const[], char *const[]);
TALLY_PUBLIC int __tally_fexecve (int, char *const[], char *const[]);
TALLY_PUBLIC int __tally_execl (const char *, const char *, ...);
TALLY_PUBLIC int __tally_execlp (const char *, const char *, ...);
TALLY_PUBLIC int __tally_execle (const char *, const char *, ...);

#ifdef __cplusplus
}
#endif

#endif /* TALLY_ABI_H */
