/* exit=frames: LOPI's return frames at source level (x86-64).
 *
 * The plugin puts only an entry hook into the function,
 * __tally_enter_frames (module, index, CFA).  It pushes a shadow frame as
 * measure=cycles does, keeps the activation's return address (the word at
 * CFA - 8) in it, and writes the address of tally_return_trampoline there
 * instead.  When the function returns, it returns into the trampoline,
 * which saves the return-value registers, calls tally_rt_frames_exit with
 * the CFA (the stack pointer after the return), and returns to the real
 * address that call gives back.  The shadow stack is the pool of frames: a
 * fixed array, the most recently freed slot reused first, so the
 * trampoline can be one piece of code rather than one per frame.
 *
 * Frames skipped by longjmp or a signal handler that never returns are
 * closed by the next hook, as for return-site exits (shadow.c); their
 * return slots are dead stack and are never written again.  What cannot be
 * made safe is refused by the plugin: C++ and -fexceptions (the unwinder
 * would meet the trampoline instead of the caller), functions that read
 * their return address (__builtin_return_address) and functions returning
 * x87 or wide vector values (the trampoline keeps rax, rdx, xmm0 and xmm1)
 * get return-site exits instead.  */
#include "rt.h"

/* The trampoline.  A 1-byte nop precedes it, so that an unwinder or
   debugger that looks up the instruction before a return address (as they
   do) finds this function, not the one before it.  */
__asm__ (".text\n"
         "  .p2align 4\n"
         "  .type tally_return_trampoline_area, @function\n"
         "tally_return_trampoline_area:\n"
         "  nop\n"
         "  .globl tally_return_trampoline\n"
         "  .hidden tally_return_trampoline\n"
         "tally_return_trampoline:\n"
         /* rsp is the returning function's CFA (16-byte aligned).  */
         "  sub $8, %rsp\n"           /* the slot for the real address */
         "  push %rax\n"
         "  push %rdx\n"
         "  sub $40, %rsp\n"          /* xmm0, xmm1; 16-byte aligned again */
         "  movdqu %xmm0, (%rsp)\n"
         "  movdqu %xmm1, 16(%rsp)\n"
         "  lea 64(%rsp), %rdi\n"     /* the CFA */
         "  call tally_rt_frames_exit\n"
         "  mov %rax, 56(%rsp)\n"     /* CFA - 8: where the address was */
         "  movdqu (%rsp), %xmm0\n"
         "  movdqu 16(%rsp), %xmm1\n"
         "  add $40, %rsp\n"
         "  pop %rdx\n"
         "  pop %rax\n"
         "  ret\n"
         "  .size tally_return_trampoline_area, "
         ".-tally_return_trampoline_area\n");

extern char tally_return_trampoline[] TALLY_HIDDEN;

void
__tally_enter_frames (struct tally_module *m, uint32_t fn, void *cfa)
{
  struct tally_sframe *f = tally_rt_enter (m, fn, cfa, TALLY_SF_FRAMES);
  if (!f)
    return; /* a full stack: this activation returns normally, uncounted */
  uint64_t *slot = (uint64_t *) cfa - 1;
  f->ret = *slot;
  *slot = (uint64_t) (uintptr_t) tally_return_trampoline;
}
