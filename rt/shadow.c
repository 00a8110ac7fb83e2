/* The shadow return-frame stack and measure=cycles (LOPI's "return
 * frames" kept beside the real stack rather than in it).
 *
 * Each thread has a fixed array of frames, mmap'ed on its first hook (no
 * malloc), and an index: __tally_ss.top.  Entry pushes {start time, 0,
 * CFA, function}; exit pops the frame, adds its inclusive cycles to its
 * parent's `child` and both totals of the function to __tally_meas[id].
 * With hooks=inline the plugin writes that fast path into the function and
 * calls the *_slow functions below for anything else; with hooks=call
 * __tally_enter_cyc/__tally_exit_cyc do it all.
 *
 * Lazy reconciliation.  A frame is the activation whose CFA (stack pointer
 * before its call) it records.  The live activations of a thread have
 * strictly decreasing CFAs from the bottom of the stack up, so:
 *   1. at an entry with CFA c, a frame whose CFA is <= c cannot be live (the
 *      new activation occupies its place): longjmp, an exception or a
 *      signal handler that never returned skipped its exit;
 *   2. at an exit with CFA c, the frame with CFA c and the same function is
 *      the one to pop, and any frame above it is stale the same way.
 * Stale frames are closed at the current time, so the time until the next
 * hook (unwinding, the handler) is charged to them, and every total stays
 * consistent: a parent's inclusive cycles are its exclusive cycles plus its
 * callees' inclusive cycles, exactly.  A handler running on an alternate
 * signal stack (sigaltstack) breaks the ordering; frames are then pushed
 * without reconciliation.  A thread's frames still open when it ends
 * (pthread_exit, or returning from its start routine through uninstrumented
 * code) are closed by a thread-specific-data destructor, those of the thread
 * that runs the exit dump by the dump.
 *
 * A stack that is full counts the activations it could not hold
 * (`overflow`) and matches them with exits that find no frame.  */
#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "rt.h"

#define STACK_FRAMES TALLY_STACK_FRAMES

/* Functions with measured totals; ids beyond are not measured.  Reserved
   address space only (16 bytes a function).  */
#define MEAS_FNS ((size_t) 1 << 22)

/* A sentinel every thread's stack starts at: top == end sends the first
   hook to the runtime, and CFA 0 never matches an exit.  */
static struct tally_sframe no_frames[1];

__thread struct tally_sstack __tally_ss
    __attribute__ ((tls_model ("initial-exec")))
    = { &no_frames[1], &no_frames[1] };

/* Where inline exits add; a dummy until the first measuring hook maps the
   real array (inline code only adds after a push, which maps it).  */
static struct tally_meas no_meas[1];
struct tally_meas *__tally_meas = no_meas;
/* The same variable for the hooks=call stubs' assembly (a reference that
   needs no GOT in the shared runtime).  */
extern struct tally_meas *tally_rt_meas_base
    __attribute__ ((alias ("__tally_meas"), visibility ("hidden")));

/* The thread's mapped frames (NULL before its first hook) and the number
   of activations a full stack could not hold.  */
static __thread struct tally_sframe *ss_base
    __attribute__ ((tls_model ("initial-exec")));
static __thread uint64_t ss_overflow
    __attribute__ ((tls_model ("initial-exec")));

/* Re-entry guard: nonzero while the thread is in code outside the runtime
   that the runtime called itself (mmap and pthread while the thread's stack
   is set up, libunwind, PAPI), which may run instrumented code (an
   allocator the program defines, a read(2) wrapper).  Hooks that run
   meanwhile are counted but not measured: a frame is not pushed, a path not
   looked up, PAPI not read again while it is reading.  */
static __thread unsigned rt_busy __attribute__ ((tls_model ("initial-exec")));

/* The key whose destructor closes a thread's frames; created once.  */
static pthread_key_t ss_key;
static pthread_once_t ss_key_once = PTHREAD_ONCE_INIT;
static int ss_key_ok;

TALLY_GPR_INLINE uint64_t
rdtsc (void)
{
  uint32_t lo, hi;
  __asm__ __volatile__ ("rdtsc" : "=a"(lo), "=d"(hi));
  return ((uint64_t) hi << 32) | lo;
}

/* Add one closed activation of FN: D cycles, CHILD of them in callees.  */
static inline void
account (const struct tally_fn *fn, uint64_t d, uint64_t child, int atomic)
{
  uint32_t id = fn->id;
  if (id >= MEAS_FNS || __tally_meas == no_meas)
    return;
  struct tally_meas *m = &__tally_meas[id];
  uint64_t self = d > child ? d - child : 0; /* a handler that interrupted
                                                 a pop, TSC skew */
  if (atomic)
    {
      __atomic_fetch_add (&m->incl, d, __ATOMIC_RELAXED);
      __atomic_fetch_add (&m->excl, self, __ATOMIC_RELAXED);
    }
  else
    {
      m->incl += d;
      m->excl += self;
    }
}

/* F's calling-context node: only frames pushed with a node have one
   (TALLY_SF_PATH).  A frame without has node 0, as every free slot has
   (a new stack's are, and every pop clears them): inline code of units
   without paths writes neither node nor flags, and the inline paths=on
   entry reads its parent's node as it is (its per-function cache is keyed
   by it, plugin/measure.cc), so a frame without a path reads as the root,
   where the runtime puts its callees too.  */
TALLY_GPR_INLINE uint32_t
frame_node (const struct tally_sframe *f)
{
  return (f->flags & TALLY_SF_PATH) ? f->node : TALLY_PATH_NONE;
}

/* Give F back to the free slots: node and flags 0 (one store).  */
static inline void
free_slot (struct tally_sframe *f)
{
  f->node = 0;
  f->flags = 0;
}

/* Close the frames above NEW_TOP at time NOW, innermost first: read the
   frame, pop it, then charge its parent (a signal handler may push over a
   popped frame).  */
static void
close_frames (struct tally_sframe *new_top, uint64_t now)
{
  uint64_t ev[TALLY_PAPI_MAX]; /* read once, for every frame closed */
  int have_ev = 0;
  struct tally_sframe *f = __tally_ss.top;
  while (f > new_top)
    {
      f--;
      uint64_t d = now - f->start, child = f->child;
      struct tally_fn *fn = f->fn;
      uint32_t node = frame_node (f), flags = f->flags;
      free_slot (f); /* inline pushes may write neither node nor flags */
      __atomic_signal_fence (__ATOMIC_SEQ_CST);
      __tally_ss.top = f;
      __atomic_signal_fence (__ATOMIC_SEQ_CST);
      f[-1].child += d;
      account (fn, d, child, 1); /* the slow path: atomic is cheap */
      if (node != TALLY_PATH_NONE)
        tally_rt_path_add (node, fn->id, d, d > child ? d - child : 0);
      if ((flags & TALLY_SF_PAPI) && tally_rt_papi_pop && !rt_busy)
        {
          rt_busy++;
          if (!have_ev)
            have_ev = tally_rt_papi_read (ev) >= 0;
          if (have_ev)
            tally_rt_papi_pop ((size_t) (f - ss_base), fn->id, node, ev);
          rt_busy--;
        }
    }
}

/* Thread-specific-data destructor: the thread ends with these frames
   open.  */
static void
thread_gone (void *base)
{
  if (base != ss_base || !ss_base)
    return;
  close_frames (ss_base + 1, rdtsc ());
  __tally_ss.top = __tally_ss.end = &no_frames[1];
  ss_base = NULL;
  if (tally_rt_papi_thread_gone)
    tally_rt_papi_thread_gone ();
  munmap (base, STACK_FRAMES * sizeof (struct tally_sframe));
}

static void
make_key (void)
{
  ss_key_ok = pthread_key_create (&ss_key, thread_gone) == 0;
}

/* Map the per-function totals, once per process.  */
static void
map_meas (void)
{
  if (__atomic_load_n (&__tally_meas, __ATOMIC_ACQUIRE) != no_meas)
    return;
  void *p = mmap (NULL, MEAS_FNS * sizeof (struct tally_meas),
                  PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    return;
  struct tally_meas *expected = no_meas;
  if (!__atomic_compare_exchange_n (&__tally_meas, &expected,
                                    (struct tally_meas *) p, 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    munmap (p, MEAS_FNS * sizeof (struct tally_meas));
}

/* Give the calling thread its stack.  Returns 0, or -1 if it cannot be
   mapped (then nothing is measured in this thread).  */
static int
thread_init (void)
{
  map_meas ();
  void *p = mmap (NULL, STACK_FRAMES * sizeof (struct tally_sframe),
                  PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    return -1;
  ss_base = (struct tally_sframe *) p;
  ss_base[0].cfa = UINT64_MAX; /* above every live frame: never stale */
  ss_base[0].fn = NULL;
  ss_base[0].node = TALLY_PATH_BOTTOM; /* no cache key matches it */
  ss_base[0].flags = 0;
  ss_overflow = 0;
  __tally_ss.end = ss_base + STACK_FRAMES;
  __tally_ss.top = ss_base + 1;
  pthread_once (&ss_key_once, make_key);
  if (ss_key_ok)
    pthread_setspecific (ss_key, ss_base);
  return 0;
}

/* Whether the thread runs on its alternate signal stack, where CFAs do not
   order against the frames below.  */
static int
on_alt_stack (void)
{
  stack_t ss;
  return sigaltstack (NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK);
}

/* The slot is claimed before it is filled and gets its real CFA last (see
   plugin/measure.cc): a signal handler's hooks in between see a frame that
   is neither stale nor theirs.  push_frame is claim_frame, measure=papi's
   events, then start_frame; the inline entry's fast call does without the
   events (__tally_cyc_enter_miss_paths).  */
TALLY_GPR_INLINE void
claim_frame (struct tally_sframe *top, struct tally_fn *fn, uint32_t node)
{
  top->cfa = UINT64_MAX;
  __atomic_signal_fence (__ATOMIC_SEQ_CST);
  __tally_ss.top = top + 1;
  __atomic_signal_fence (__ATOMIC_SEQ_CST);
  top->fn = fn;
  top->node = node;
  top->child = 0;
}

TALLY_GPR_INLINE void
start_frame (struct tally_sframe *top, uint64_t cfa, uint32_t node,
             uint32_t flags)
{
  if (node != TALLY_PATH_NONE)
    flags |= TALLY_SF_PATH;
  else
    top->node = 0; /* a free slot's: see frame_node */
  top->flags = flags;
  top->start = rdtsc ();
  __atomic_signal_fence (__ATOMIC_SEQ_CST);
  top->cfa = cfa;
}

static inline void
push_frame (struct tally_sframe *top, struct tally_fn *fn, uint64_t cfa,
            uint32_t node, uint32_t flags)
{
  claim_frame (top, fn, node);
  /* measure=papi: the events' values at entry, then the clock.  */
  if (flags & TALLY_SF_PAPI)
    {
      int ok = 0;
      if (tally_rt_papi_push && !rt_busy)
        {
          rt_busy++;
          ok = tally_rt_papi_push ((size_t) (top - ss_base)) == 0;
          rt_busy--;
        }
      if (!ok)
        flags &= ~TALLY_SF_PAPI;
    }
  start_frame (top, cfa, node, flags);
}

/* paths=on: the node of FN, with CFA CFA, called from the frame below
   TOP; on an empty stack, under the callers libunwind finds (unwind.c).  */
static inline uint32_t
path_of (struct tally_sframe *top, struct tally_fn *fn, uint64_t cfa)
{
  struct tally_sframe *parent = top - 1;
  uint32_t pnode;
  if (parent->fn)
    pnode = tally_rt_path_owner (frame_node (parent), parent->fn->id);
  else if (rt_busy)
    return TALLY_PATH_NONE; /* a hook inside libunwind */
  else
    {
      rt_busy++;
      pnode = tally_rt_unwind_base (cfa);
      rt_busy--;
    }
  /* Lock-free, and safe in signal handlers (paths.c).  */
  return tally_rt_path_node (pnode, fn->id);
}

/* paths=on, hooks=inline: the inline entry's cache of FN's node (the
   plugin's per-function word, plugin/measure.cc): (key << 32) | node,
   where the key is the parent frame's node field plus one as the inline
   code reads it.  Set only where that field decides the node (not at the
   bottom of the stack, whose node libunwind finds), and for a node the
   tree has.  */
TALLY_GPR_INLINE void
cache_node (uint64_t *cache, const struct tally_sframe *f)
{
  const struct tally_sframe *parent = f - 1;
  if (cache && parent->fn && (f->flags & TALLY_SF_PATH))
    __atomic_store_n (cache,
                      ((uint64_t) (parent->node + 1) << 32) | f->node,
                      __ATOMIC_RELAXED);
}

struct tally_sframe *
tally_rt_enter_slow (struct tally_fn *fn, void *cfa_ptr, int paths,
                     uint32_t flags, uint64_t *cache)
{
  int saved = errno;
  struct tally_sframe *pushed = NULL;
  uint64_t cfa = (uint64_t) (uintptr_t) cfa_ptr;
  uint64_t inherited = 0;
  if (rt_busy)
    goto out; /* a hook inside the runtime's own calls: counted only */
  if (!ss_base)
    {
      rt_busy++;
      int rc = thread_init ();
      rt_busy--;
      if (rc != 0)
        goto out;
    }
  struct tally_sframe *top = __tally_ss.top;
  /* 1. Stale frames: every frame whose CFA is not above ours.  */
  if (top[-1].cfa <= cfa && top - 1 > ss_base && !on_alt_stack ())
    {
      struct tally_sframe *f = top - 1;
      while (f > ss_base && f->cfa <= cfa)
        {
          /* exit=frames: a frame at our very CFA whose return slot holds
             the trampoline was left by a tail call into us (the plugin
             turns them off, but not in code it did not see): the real
             return address is its.  */
          if (f->cfa == cfa && (f->flags & TALLY_SF_FRAMES))
            inherited = f->ret;
          f--;
        }
      close_frames (f + 1, rdtsc ());
      ss_overflow = 0; /* deeper than any frame kept, so dead too */
      top = __tally_ss.top;
    }
  if (top == __tally_ss.end)
    {
      /* An activation left out is matched by an exit that finds no frame;
         with exit=frames none comes (no trampoline was put in).  */
      if (!(flags & TALLY_SF_FRAMES))
        ss_overflow++;
    }
  else
    {
      push_frame (top, fn, cfa, paths ? path_of (top, fn, cfa) : TALLY_PATH_NONE,
                  flags);
      top->ret = inherited;
      cache_node (cache, top);
      pushed = top;
    }
out:
  errno = saved;
  return pushed;
}

static inline struct tally_sframe *
enter_slow (struct tally_fn *fn, void *cfa_ptr, int paths, uint32_t flags)
{
  return tally_rt_enter_slow (fn, cfa_ptr, paths, flags, NULL);
}

/* x86-64: the slow paths for the plugin's asm statement (called below the
   caller's red zone; the enter's FN in %rax, CFA in %rdx and node cache
   in %rcx, the exit's NOW in %rax, CFA in %rdx and FN in %rcx): they
   preserve every register, vector registers included
   (TALLY_PRESERVING_STUB, rt.h), so the inline fast path makes the
   function keep no value in a callee-saved register for them and spill
   nothing.  */
#if defined(__x86_64__) && !defined(__ILP32__)
uint32_t tally_rt_xsave_bytes;
/* The saved registers: %rax at -8(%rbp), %rcx -16, %rdx -24.  */
__asm__ (TALLY_PRESERVING_STUB ("__tally_cyc_enter_slow_all", "",
                                "__tally_cyc_enter_slow@PLT",
                                "\tmovq -8(%rbp), %rdi\n"
                                "\tmovq -24(%rbp), %rsi\n")
         TALLY_PRESERVING_STUB ("__tally_cyc_enter_slow_paths_all",
                                TALLY_STUB_FAST (
                                    "__tally_cyc_enter_miss_paths@PLT",
                                    "\tmovq -8(%rbp), %rdi\n"
                                    "\tmovq -24(%rbp), %rsi\n"
                                    "\tmovq -16(%rbp), %rdx\n"),
                                "__tally_cyc_enter_slow_paths@PLT",
                                "\tmovq -8(%rbp), %rdi\n"
                                "\tmovq -24(%rbp), %rsi\n"
                                "\tmovq -16(%rbp), %rdx\n")
         TALLY_PRESERVING_STUB ("__tally_cyc_exit_slow_all", "",
                                "__tally_cyc_exit_slow@PLT",
                                "\tmovq -16(%rbp), %rdi\n"
                                "\tmovq -24(%rbp), %rsi\n"
                                "\tmovq -8(%rbp), %rdx\n"));

/* measure=cycles, hooks=call on x86-64: the shadow stack's push and pop
   in assembly, called by the plugin's asm statement below the caller's red
   zone, after the caller counted the call itself.  Entry: FN (struct
   tally_fn *) in %rcx, the CFA in %rdx; it changes %rax, %rdx, %r10, %r11
   and the flags.  Exit: FN in %rcx, the CFA in %rsi; it changes %rax,
   %rdx, %rsi, %r10, %r11 and the flags.  Nothing else (the asm statement
   says which).  The fast path is inline code's (plugin/measure.cc): entry
   tests full and stale, claims the slot, pushes {start, 0, CFA, FN}; exit
   reads the time, matches the CFA, pops, charges the parent's `child` and
   adds both totals (the exclusive time at least 0).  Anything else jumps
   to the register-preserving slow paths above, which return to the
   caller.  The _atomic exit (update=atomic, tls) adds the totals with lock
   prefixes.  The field offsets are checked below.  */
#define TALLY_CYC_CALL_EXIT(SUFFIX, LOCK)                                       \
  "\t.globl __tally_cyc_call_exit" SUFFIX "\n"                                 \
  "\t.type __tally_cyc_call_exit" SUFFIX ", @function\n"                       \
  "__tally_cyc_call_exit" SUFFIX ":\n"                                         \
  "\t.cfi_startproc\n"                                                         \
  "\trdtsc\n"                                                                  \
  "\tshlq $32, %rdx\n"                                                         \
  "\torq %rdx, %rax\n"                         /* now */                       \
  "\tmovq __tally_ss@gottpoff(%rip), %r11\n"                                   \
  "\tmovq %fs:(%r11), %rdx\n"                  /* top */                       \
  "\tcmpq %rsi, -32(%rdx)\n"                   /* top[-1] ours? */             \
  "\tjne 1f\n"                                                                 \
  "\tsubq -48(%rdx), %rax\n"                   /* d = now - start */           \
  "\tmovq -40(%rdx), %r10\n"                   /* child */                     \
  "\tsubq $48, %fs:(%r11)\n"                   /* pop */                       \
  "\taddq %rax, -88(%rdx)\n"                   /* the parent's child */        \
  "\tmovl 52(%rcx), %r11d\n"                   /* fn->id */                    \
  "\tshlq $4, %r11\n"                                                          \
  "\taddq tally_rt_meas_base(%rip), %r11\n"                                    \
  "\t" LOCK "addq %rax, (%r11)\n"              /* incl */                      \
  "\tcmpq %r10, %rax\n"                                                        \
  "\tcmovbq %r10, %rax\n"                                                      \
  "\tsubq %r10, %rax\n"                                                        \
  "\t" LOCK "addq %rax, 8(%r11)\n"             /* excl */                      \
  "\tret\n"                                                                    \
  "1:\tmovq %rsi, %rdx\n"                                                      \
  "\tjmp .L__tally_cyc_exit_slow_all\n"                                        \
  "\t.cfi_endproc\n"                                                           \
  "\t.size __tally_cyc_call_exit" SUFFIX ", .-__tally_cyc_call_exit" SUFFIX "\n"

__asm__ ("\t.text\n"
         "\t.globl __tally_cyc_call_enter\n"
         "\t.type __tally_cyc_call_enter, @function\n"
         "__tally_cyc_call_enter:\n"
         "\t.cfi_startproc\n"
         "\tmovq __tally_ss@gottpoff(%rip), %r10\n"
         "\tmovq %fs:(%r10), %r11\n"             /* top */
         "\tcmpq %fs:8(%r10), %r11\n"            /* full */
         "\tje 1f\n"
         "\tcmpq %rdx, -32(%r11)\n"              /* top[-1].cfa <= cfa: stale */
         "\tjbe 1f\n"
         "\tmovq $-1, 16(%r11)\n"                /* claim */
         "\taddq $48, %fs:(%r10)\n"              /* push */
         "\tmovq %rcx, 24(%r11)\n"               /* fn */
         "\tmovq $0, 8(%r11)\n"                  /* child */
         "\tmovq %rdx, %r10\n"
         "\trdtsc\n"
         "\tshlq $32, %rdx\n"
         "\torq %rdx, %rax\n"
         "\tmovq %rax, (%r11)\n"                 /* start */
         "\tmovq %r10, 16(%r11)\n"               /* cfa, last */
         "\tret\n"
         "1:\tmovq %rcx, %rax\n"
         "\tjmp .L__tally_cyc_enter_slow_all\n"
         "\t.cfi_endproc\n"
         "\t.size __tally_cyc_call_enter, .-__tally_cyc_call_enter\n"
         TALLY_CYC_CALL_EXIT ("", "")
         TALLY_CYC_CALL_EXIT ("_atomic", "lock "));

_Static_assert (offsetof (struct tally_sframe, start) == 0
                    && offsetof (struct tally_sframe, child) == 8
                    && offsetof (struct tally_sframe, cfa) == 16
                    && offsetof (struct tally_sframe, fn) == 24
                    && sizeof (struct tally_sframe) == 48
                    && offsetof (struct tally_sstack, end) == 8
                    && offsetof (struct tally_fn, id) == 52
                    && sizeof (struct tally_meas) == 16,
                "the offsets in __tally_cyc_call_enter and _exit");
#endif

void
__tally_cyc_enter_slow (struct tally_fn *fn, void *cfa_ptr)
{
  enter_slow (fn, cfa_ptr, 0, 0);
}

/* paths=on, hooks=inline: the same with FN's node cache (measure.cc).  */
void
__tally_cyc_enter_slow_paths (struct tally_fn *fn, void *cfa_ptr,
                              uint64_t *cache)
{
  tally_rt_enter_slow (fn, cfa_ptr, 1, 0, cache);
}

/* The fast call of its stub: a node-cache miss in the common case (the
   thread's stack set up, no stale frame, room for one more, an
   instrumented caller, the tree mapped): the node found or made and the
   frame pushed as tally_rt_enter_slow does, in general registers only, so
   that the stub saves no vector state.  1 if it pushed the frame, 0 for
   the stub's slow call to do everything.  Calls nothing that could touch
   errno.  */
TALLY_GPR_ONLY int
__tally_cyc_enter_miss_paths (struct tally_fn *fn, void *cfa_ptr,
                              uint64_t *cache)
{
  uint64_t cfa = (uint64_t) (uintptr_t) cfa_ptr;
  struct tally_sframe *top = __tally_ss.top, *parent = top - 1;
  if (rt_busy || !ss_base || top == __tally_ss.end || parent->cfa <= cfa
      || !parent->fn || !tally_rt_paths_ready ())
    return 0;
  uint32_t node = tally_rt_path_find (
      tally_rt_path_owner (frame_node (parent), parent->fn->id), fn->id);
  claim_frame (top, fn, node);
  start_frame (top, cfa, node, 0);
  top->ret = 0;
  cache_node (cache, top);
  return 1;
}

void
__tally_cyc_exit_slow (struct tally_fn *fn, void *cfa_ptr, uint64_t now)
{
  uint64_t cfa = (uint64_t) (uintptr_t) cfa_ptr;
  if (!ss_base || rt_busy)
    return; /* entered before this thread had a stack, or inside the
               runtime's own calls: nothing was pushed */
  /* 2. Our frame is the nearest one whose CFA is not below ours.  */
  struct tally_sframe *f = __tally_ss.top - 1;
  while (f > ss_base && f->cfa < cfa)
    f--;
  if (f > ss_base && f->cfa == cfa && f->fn == fn)
    {
      close_frames (f, now);
      return;
    }
  if (ss_overflow)
    ss_overflow--;
  /* else an exit without its entry (a handler on the alternate stack
     that longjmp'ed, say): left alone.  */
}

static inline void
bump (struct tally_module *m, uint64_t *c)
{
  if (m->flags & (TALLY_MOD_UPDATE_ATOMIC | TALLY_MOD_UPDATE_TLS))
    __atomic_fetch_add (c, 1, __ATOMIC_RELAXED);
  else
    ++*c;
}

struct tally_sframe *
tally_rt_enter (struct tally_module *m, uint32_t fn, void *cfa, uint32_t flags)
{
  struct tally_fn *f = m->fns[fn];
  bump (m, &f->counters[TALLY_C_ENTRIES]);
  struct tally_sframe *top = __tally_ss.top;
  int paths = (m->flags & TALLY_MOD_PATHS) != 0;
  if (__builtin_expect (top != __tally_ss.end
                        && top[-1].cfa > (uint64_t) (uintptr_t) cfa, 1))
    {
      push_frame (top, f, (uint64_t) (uintptr_t) cfa,
                  paths ? path_of (top, f, (uint64_t) (uintptr_t) cfa)
                        : TALLY_PATH_NONE,
                  flags);
      return top;
    }
  return enter_slow (f, cfa, paths, flags);
}

void
tally_rt_exit (struct tally_module *m, uint32_t fn, void *cfa)
{
  uint64_t now = rdtsc ();
  struct tally_fn *f = m->fns[fn];
  struct tally_sframe *top = __tally_ss.top - 1;
  uint32_t flags = top->flags;
  if (__builtin_expect (top->cfa == (uint64_t) (uintptr_t) cfa && top->fn == f
                        && !(flags & TALLY_SF_PAPI), 1))
    {
      uint64_t d = now - top->start, child = top->child;
      int atomic = m->flags & (TALLY_MOD_UPDATE_ATOMIC | TALLY_MOD_UPDATE_TLS);
      if (__builtin_expect (flags == 0, 1))
        {
          /* The common frame: no call path, no events.  */
          __atomic_signal_fence (__ATOMIC_SEQ_CST);
          __tally_ss.top = top;
          __atomic_signal_fence (__ATOMIC_SEQ_CST);
          top[-1].child += d;
          account (f, d, child, atomic);
        }
      else
        {
          uint32_t node = frame_node (top);
          free_slot (top);
          __atomic_signal_fence (__ATOMIC_SEQ_CST);
          __tally_ss.top = top;
          __atomic_signal_fence (__ATOMIC_SEQ_CST);
          top[-1].child += d;
          account (f, d, child, atomic);
          if (node != TALLY_PATH_NONE)
            tally_rt_path_add (node, f->id, d, d > child ? d - child : 0);
        }
    }
  else
    __tally_cyc_exit_slow (f, cfa, now); /* also the frames with events */
  bump (m, &f->counters[TALLY_C_EXITS]);
}

void
__tally_enter_cyc (struct tally_module *m, uint32_t fn, void *cfa)
{
  tally_rt_enter (m, fn, cfa, 0);
}

void
__tally_exit_cyc (struct tally_module *m, uint32_t fn, void *cfa)
{
  tally_rt_exit (m, fn, cfa);
}

/* exit=frames: the exit the trampoline counts (not where the block counts
   give it, blocks=count with hooks=inline).  */
static inline void
count_exit (struct tally_fn *fn)
{
  if (!(fn->flags & TALLY_FN_CALLS_DERIVED))
    __atomic_fetch_add (&fn->counters[TALLY_C_EXITS], 1, __ATOMIC_RELAXED);
}

/* exit=frames: the trampoline's exit.  The frame with CFA is popped (the
   frames above it, which longjmp or a signal handler skipped, closed
   first), its exit counted, and its real return address returned.  */
uint64_t
tally_rt_frames_exit (uint64_t cfa)
{
  uint64_t now = rdtsc ();
  struct tally_sframe *f = __tally_ss.top - 1;
  /* The usual case: the returning frame is on top.  */
  if (__builtin_expect (f->cfa == cfa
                        && (f->flags & ~TALLY_SF_PATH) == TALLY_SF_FRAMES, 1))
    {
      uint64_t d = now - f->start, child = f->child, ret = f->ret;
      uint32_t node = frame_node (f);
      free_slot (f);
      struct tally_fn *fn = f->fn;
      __atomic_signal_fence (__ATOMIC_SEQ_CST);
      __tally_ss.top = f;
      __atomic_signal_fence (__ATOMIC_SEQ_CST);
      f[-1].child += d;
      account (fn, d, child, 1);
      if (node != TALLY_PATH_NONE)
        tally_rt_path_add (node, fn->id, d, d > child ? d - child : 0);
      count_exit (fn);
      return ret;
    }
  int saved = errno;
  while (ss_base && f > ss_base && f->cfa < cfa)
    f--;
  if (!ss_base || f <= ss_base || f->cfa != cfa || !(f->flags & TALLY_SF_FRAMES))
    {
      /* Only a stack switch (swapcontext, coroutines) that the CFA order
         cannot see gets here: there is no address to return to.  */
      tally_rt_error ("exit=frames: no return frame for the function "
                      "returning at CFA %lu (a stack switch?); the program "
                      "cannot continue", (unsigned long) cfa);
      abort ();
    }
  uint64_t ret = f->ret;
  struct tally_fn *fn = f->fn;
  close_frames (f, now);
  count_exit (fn);
  errno = saved;
  return ret;
}

/* exit=frames: the calling thread's frame of the activation with CFA
   CFA if it has a return frame, else NULL (frames.c's personality
   routine).  The live frames' CFAs fall from the bottom up, so the search
   ends at the first frame below it.  */
struct tally_sframe *
tally_rt_frame_at (uint64_t cfa)
{
  if (!ss_base)
    return NULL;
  for (struct tally_sframe *f = __tally_ss.top - 1; f > ss_base; f--)
    {
      if (f->cfa == cfa)
        return (f->flags & TALLY_SF_FRAMES) ? f : NULL;
      if (f->cfa > cfa)
        break;
    }
  return NULL;
}

/* The calling thread's frames are [*FIRST, __tally_ss.top); 0 if it has
   no stack.  */
int
tally_rt_frames_open (struct tally_sframe **first)
{
  *first = ss_base ? ss_base + 1 : NULL;
  return ss_base != NULL;
}

/* The exit dump: the dumping thread's open frames will not see their
   exits (exit() called below main, or main itself still open).  */
void
tally_rt_shadow_close_current (void)
{
  if (ss_base)
    close_frames (ss_base + 1, rdtsc ());
}

const struct tally_meas *
tally_rt_meas (uint32_t *nfns)
{
  struct tally_meas *m = __atomic_load_n (&__tally_meas, __ATOMIC_ACQUIRE);
  *nfns = m == no_meas ? 0 : (uint32_t) MEAS_FNS;
  return m == no_meas ? NULL : m;
}

void
tally_rt_meas_zero (void)
{
  struct tally_meas *m = __atomic_load_n (&__tally_meas, __ATOMIC_ACQUIRE);
  if (m == no_meas)
    return;
  /* Only the pages touched so far hold values; madvise gives back zeroed
     pages without touching the rest.  */
  madvise (m, MEAS_FNS * sizeof *m, MADV_DONTNEED);
}
