/* exit=frames: LOPI's return frames at source level (x86-64).
 *
 * The entry hook (__tally_enter_frames, or the plugin's inline fast path
 * with __tally_cyc_enter_slow_frames* behind it) pushes a shadow frame as
 * measure=cycles does, keeps the activation's return address (the word
 * at CFA - 8) in it, and writes the address of the trampoline below,
 * __tally_return_trampoline, there instead.  When the function returns,
 * it returns into the trampoline, which saves the return-value registers,
 * calls tally_rt_frames_exit with the CFA (the stack pointer after the
 * return), and returns to the real address that call gives back.  The
 * shadow stack is the pool of frames: a fixed array, the most recently
 * freed slot reused first, so the trampoline can be one piece of code
 * rather than one per frame.
 *
 * Frames skipped by longjmp or a signal handler that never returns are
 * closed by the next hook, as for return-site exits (shadow.c); their
 * return slots are dead stack and are never written again.
 *
 * Unwinding (C++ exceptions, pthread_exit and pthread_cancel's forced
 * unwinding, backtraces).  An unwinder finds a function's caller through
 * the return address in its frame, and in an armed frame that is the
 * trampoline.  So the trampoline has unwind information of its own (its
 * FDE, below), which makes it a frame between the armed function and its
 * caller, with the armed function's CFA, and a personality routine,
 * tally_rt_frames_personality.  Every unwinder that runs personality
 * routines (libgcc's _Unwind_RaiseException, _Unwind_Resume,
 * _Unwind_Resume_or_Rethrow and _Unwind_ForcedUnwind, whichever copy:
 * libgcc_s, the static libgcc_eh, or the libgcc_s glibc loads for
 * pthread_cancel) calls it for that frame before it reads the caller's
 * address, and it puts the real return address back into the slot.  So
 * an exception unwinds exactly as without tally, with no symbol
 * interposed and nothing on the normal path: the search phase restores
 * the slots of the frames the exception will leave (those between the
 * throw and the handler), and only those, since it stops at the handler's
 * frame; the frames that stay live keep their trampolines, and the ones
 * left are closed at the next hook, as after longjmp.  A forced unwind
 * (no search phase) restores each slot as it passes.
 *
 * An unwinder that runs no personality routine (_Unwind_Backtrace,
 * libunwind's unw_step, gdb) cannot learn the real address from the
 * unwind information (it is in thread-local memory), so the trampoline's
 * return-address rule gives 0 while the slot still holds the trampoline:
 * the walk ends at the trampoline, which it shows as the outermost frame,
 * instead of looping on it.  The rule tells the two apart by the code at
 * the address in the slot: the trampoline begins with a movabs of a
 * constant no real return site has.  backtrace () and _Unwind_Backtrace
 * themselves are defined here (weak: a definition of the program's wins,
 * and a static libgcc's _Unwind_Backtrace is the one used then), and
 * tally_backtrace calls tally_rt_frames_disarm: they put the real return
 * addresses back while they walk and the trampolines after, so they show
 * the real callers.
 *
 * What cannot be made safe is left to return-site exits by the plugin:
 * functions that read their return address (__builtin_return_address),
 * functions returning x87 or wide vector values (the trampoline keeps
 * rax, rdx, xmm0 and xmm1), and functions that never return.  */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <unwind.h>

#include "rt.h"

/* The first 8 bytes of the trampoline's code (movabs $0x544552796c6c6174,
   %r11: "tallyRET"), as the unwind rule reads them, little-endian.  */
#define TRAMP_HEAD_BYTES "0x49, 0xbb, 0x74, 0x61, 0x6c, 0x6c, 0x79, 0x52"

/* The trampoline.  A 1-byte nop precedes it, so that an unwinder or
   debugger that looks up the instruction before a return address (as they
   do) finds this function, not the one before it.  Its unwind rows: the
   CFA is the returning function's (the stack pointer at the entry); the
   return address is the word below it (the return slot, which the code
   reuses for the real address) unless that word still points at this
   code (then 0: the outermost frame).  In DWARF, for the CFA on the
   stack: lit8 minus deref (the slot), dup deref (the code there),
   const8u HEAD ne (1 unless it is ours), mul.  */
__asm__ (".text\n"
         "  .p2align 4\n"
         "  .type tally_rt_trampoline_area, @function\n"
         "tally_rt_trampoline_area:\n"
         "  .cfi_startproc\n"
         "  .cfi_personality 0x1b, tally_rt_frames_personality\n"
         "  .cfi_def_cfa_offset 0\n"
         "  .cfi_escape 0x16, 0x10, 16, 0x38, 0x1c, 0x06, 0x12, 0x06, 0x0e, "
         TRAMP_HEAD_BYTES ", 0x2e, 0x1e\n"
         "  nop\n"
         "  .globl __tally_return_trampoline\n"
         "  .type __tally_return_trampoline, @function\n"
         "__tally_return_trampoline:\n"
         "tally_rt_trampoline:\n"
         "  movabs $0x544552796c6c6174, %r11\n" /* the mark; r11 is free */
         /* rsp is the returning function's CFA (16-byte aligned).  */
         "  sub $8, %rsp\n"           /* the slot for the real address */
         "  .cfi_adjust_cfa_offset 8\n"
         "  push %rax\n"
         "  .cfi_adjust_cfa_offset 8\n"
         "  push %rdx\n"
         "  .cfi_adjust_cfa_offset 8\n"
         "  sub $40, %rsp\n"          /* xmm0, xmm1; 16-byte aligned again */
         "  .cfi_adjust_cfa_offset 40\n"
         "  movdqu %xmm0, (%rsp)\n"
         "  movdqu %xmm1, 16(%rsp)\n"
         "  lea 64(%rsp), %rdi\n"     /* the CFA */
         "  call tally_rt_frames_exit\n"
         "  mov %rax, 56(%rsp)\n"     /* CFA - 8: where the address was */
         "  movdqu (%rsp), %xmm0\n"
         "  movdqu 16(%rsp), %xmm1\n"
         "  add $40, %rsp\n"
         "  .cfi_adjust_cfa_offset -40\n"
         "  pop %rdx\n"
         "  .cfi_adjust_cfa_offset -8\n"
         "  pop %rax\n"
         "  .cfi_adjust_cfa_offset -8\n"
         "  ret\n"
         "  .cfi_endproc\n"
         "  .size __tally_return_trampoline, .-__tally_return_trampoline\n"
         "  .size tally_rt_trampoline_area, .-tally_rt_trampoline_area\n");

extern char tally_rt_trampoline[] TALLY_HIDDEN;
#define TRAMP ((uint64_t) (uintptr_t) tally_rt_trampoline)

/* Swap the return address of F's activation (CFA) for the trampoline.
   A slot that holds the trampoline already was left by a tail call into
   this function from an armed one (tally_rt_enter_slow gave F that
   frame's address).  */
static inline void
arm (struct tally_sframe *f, void *cfa)
{
  uint64_t *slot = (uint64_t *) cfa - 1;
  uint64_t ret = *slot;
  if (ret == TRAMP)
    {
      if (!f->ret)
        {
          f->flags &= ~TALLY_SF_FRAMES; /* nothing to return to: left as
                                           it is, the trampoline says so */
          return;
        }
      ret = f->ret;
    }
  f->ret = ret;
  *slot = TRAMP;
}

void
__tally_enter_frames (struct tally_module *m, uint32_t fn, void *cfa)
{
  struct tally_sframe *f = tally_rt_enter (m, fn, cfa, TALLY_SF_FRAMES);
  if (f)
    arm (f, cfa); /* else a full stack: it returns normally, uncounted */
}

/* hooks=inline: the slow paths of the inline frames entry (first hook of
   a thread, a full stack, stale frames; with paths=on a node not in the
   cache), which pushed nothing.  */
void
__tally_cyc_enter_slow_frames (struct tally_fn *fn, void *cfa)
{
  struct tally_sframe *f = tally_rt_enter_slow (fn, cfa, 0, TALLY_SF_FRAMES,
                                                NULL);
  if (f)
    arm (f, cfa);
}

void
__tally_cyc_enter_slow_paths_frames (struct tally_fn *fn, void *cfa,
                                     uint64_t *cache)
{
  struct tally_sframe *f = tally_rt_enter_slow (fn, cfa, 1, TALLY_SF_FRAMES,
                                                cache);
  if (f)
    arm (f, cfa);
}

#if defined(__x86_64__) && !defined(__ILP32__)
/* For the plugin's asm statements: FN in %rax, CFA in %rdx, the node
   cache in %rcx (shadow.c's slow entries take the same).  */
__asm__ (TALLY_PRESERVING_STUB ("__tally_cyc_enter_slow_frames_all", "",
                                "__tally_cyc_enter_slow_frames@PLT",
                                "\tmovq -8(%rbp), %rdi\n"
                                "\tmovq -24(%rbp), %rsi\n")
         TALLY_PRESERVING_STUB ("__tally_cyc_enter_slow_paths_frames_all", "",
                                "__tally_cyc_enter_slow_paths_frames@PLT",
                                "\tmovq -8(%rbp), %rdi\n"
                                "\tmovq -24(%rbp), %rsi\n"
                                "\tmovq -16(%rbp), %rdx\n"));
#endif

/* The personality routine of the trampoline's frame: an unwinder is about
   to read the caller's address out of the slot, so the real one goes
   back in (once: a second pass finds it there).  The shadow frame stays;
   the next hook closes it if the exception left it.  */
_Unwind_Reason_Code tally_rt_frames_personality (int, _Unwind_Action,
                                                 _Unwind_Exception_Class,
                                                 struct _Unwind_Exception *,
                                                 struct _Unwind_Context *)
    TALLY_HIDDEN;

_Unwind_Reason_Code
tally_rt_frames_personality (int version, _Unwind_Action actions,
                             _Unwind_Exception_Class cls,
                             struct _Unwind_Exception *exc,
                             struct _Unwind_Context *ctx)
{
  (void) version;
  (void) actions;
  (void) cls;
  (void) exc;
  uint64_t cfa = (uint64_t) _Unwind_GetCFA (ctx);
  uint64_t *slot = (uint64_t *) (uintptr_t) cfa - 1;
  if (*slot == TRAMP)
    {
      struct tally_sframe *f = tally_rt_frame_at (cfa);
      if (f && f->ret)
        *slot = f->ret;
      else
        tally_rt_error ("exit=frames: an exception unwinds through a return "
                        "frame the runtime does not know (CFA %lu; a stack "
                        "switch?): the unwinder stops there",
                        (unsigned long) cfa);
    }
  return _URC_CONTINUE_UNWIND;
}

/* Set while this thread's slots hold the real addresses for a walk.  */
static __thread int disarmed __attribute__ ((tls_model ("initial-exec")));

int
tally_rt_frames_disarm (void)
{
  struct tally_sframe *f;
  if (disarmed || !tally_rt_frames_open (&f))
    return 0;
  disarmed = 1;
  /* Only frames above this one: a frame below it is dead (longjmp), and
     its slot might not even be mapped any more (an alternate signal
     stack).  */
  uint64_t here = (uint64_t) (uintptr_t) __builtin_frame_address (0);
  for (struct tally_sframe *top = __tally_ss.top; f < top; f++)
    if ((f->flags & TALLY_SF_FRAMES) && f->cfa > here && f->cfa != UINT64_MAX)
      {
        uint64_t *slot = (uint64_t *) (uintptr_t) f->cfa - 1;
        if (*slot == TRAMP && f->ret)
          {
            *slot = f->ret;
            f->flags |= TALLY_SF_DISARMED;
          }
      }
  __atomic_signal_fence (__ATOMIC_SEQ_CST);
  return 1;
}

void
tally_rt_frames_rearm (void)
{
  struct tally_sframe *f;
  if (!tally_rt_frames_open (&f))
    return;
  __atomic_signal_fence (__ATOMIC_SEQ_CST);
  for (struct tally_sframe *top = __tally_ss.top; f < top; f++)
    if (f->flags & TALLY_SF_DISARMED)
      {
        f->flags &= ~TALLY_SF_DISARMED;
        uint64_t *slot = (uint64_t *) (uintptr_t) f->cfa - 1;
        if (*slot == f->ret)
          *slot = TRAMP;
      }
  disarmed = 0;
}

/* The _Unwind_Backtrace the wrapper below calls: the next definition
   after it, or the one linked (a static libgcc's, which then is also the
   one the program's calls reach).  Found by the constructor, where dlsym
   is safe.  */
typedef _Unwind_Reason_Code (*backtrace_fn) (_Unwind_Trace_Fn, void *);
static backtrace_fn real_backtrace;

_Unwind_Reason_Code tally_rt_unwind_backtrace (_Unwind_Trace_Fn, void *)
    TALLY_HIDDEN;

/* The wrapper's own frame is the first a walk finds: its callback skips
   it, so the caller's trace function sees its caller first, as without
   the wrapper.  */
struct trace_fwd
{
  _Unwind_Trace_Fn fn;
  void *arg;
  int skip;
};

static _Unwind_Reason_Code
trace_fwd (struct _Unwind_Context *ctx, void *arg)
{
  struct trace_fwd *t = arg;
  if (t->skip)
    {
      t->skip = 0;
      return _URC_NO_REASON;
    }
  return t->fn (ctx, t->arg);
}

__attribute__ ((noinline)) _Unwind_Reason_Code
tally_rt_unwind_backtrace (_Unwind_Trace_Fn fn, void *arg)
{
  backtrace_fn real = real_backtrace;
  if (!real || real == tally_rt_unwind_backtrace)
    return _URC_END_OF_STACK;
  struct trace_fwd t = { fn, arg, 1 };
  int d = tally_rt_frames_disarm ();
  _Unwind_Reason_Code r = real (trace_fwd, &t);
  if (d)
    tally_rt_frames_rearm ();
  return r;
}

extern __typeof (tally_rt_unwind_backtrace) _Unwind_Backtrace
    __attribute__ ((weak, alias ("tally_rt_unwind_backtrace"),
                    visibility ("default")));

/* glibc's backtrace (), on the same walk.  */
struct trace_arg
{
  void **buf;
  int size, n;
  uint64_t cfa;
};

static _Unwind_Reason_Code
trace_one (struct _Unwind_Context *ctx, void *arg)
{
  struct trace_arg *t = arg;
  /* The first frame is backtrace's own.  */
  if (t->n >= 0)
    {
      void *ip = (void *) _Unwind_GetIP (ctx);
      uint64_t cfa = (uint64_t) _Unwind_GetCFA (ctx);
      /* No progress: a loop in the unwind information.  */
      if (t->n > 0 && t->buf[t->n - 1] == ip && cfa == t->cfa)
        return _URC_END_OF_STACK;
      t->cfa = cfa;
      t->buf[t->n] = ip;
    }
  if (++t->n == t->size)
    return _URC_END_OF_STACK;
  return _URC_NO_REASON;
}

int tally_rt_backtrace (void **buf, int size) TALLY_HIDDEN;

__attribute__ ((noinline)) int
tally_rt_backtrace (void **buf, int size)
{
  if (size <= 0)
    return 0;
  backtrace_fn real = real_backtrace;
  if (!real || real == tally_rt_unwind_backtrace)
    return 0;
  struct trace_arg t = { buf, size, -1, 0 };
  int d = tally_rt_frames_disarm ();
  real (trace_one, &t);
  if (d)
    tally_rt_frames_rearm ();
  /* The outermost frame's address may be 0 (the end of the stack).  */
  if (t.n > 1 && buf[t.n - 1] == NULL)
    t.n--;
  return t.n < 0 ? 0 : t.n;
}

extern __typeof (tally_rt_backtrace) backtrace
    __attribute__ ((weak, alias ("tally_rt_backtrace"),
                    visibility ("default")));

__attribute__ ((constructor)) static void
find_backtrace (void)
{
  backtrace_fn next = (backtrace_fn) dlsym (RTLD_NEXT, "_Unwind_Backtrace");
  if (!next)
    next = _Unwind_Backtrace;
  real_backtrace = next;
}
