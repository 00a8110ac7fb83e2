/* Hooks for -fplugin-arg-tally-hooks=call.  No locks, no libc, errno is
   left alone.
 *
 * On x86-64 the plugin calls __tally_count (&counter) or, with
 * update=atomic|tls, __tally_count_atomic: the counter's address is a
 * link-time constant, so the hook is one add and a return.  They are
 * written in assembly and change no register but the flags, and the plugin
 * calls them from an asm statement (plugin/hooks.cc,
 * build_preserving_call: below the red zone, through the GOT, the argument
 * in %rdi), which GCC does not take for a call: the caller spills nothing
 * and a leaf keeps no frame.  __tally_tls_attach_all is update=tls's cold
 * path, called the same way: it saves everything the C attach and libc may
 * change, the vector registers included (XSAVE, or FXSAVE without it).
 *
 * Elsewhere, and for counters=mapped, the plugin emits ordinary calls and
 * passes the module and the function's index in it (LOPI's "inlined
 * function identifier"), so the hook is an array index, never a lookup.  */
#include "rt.h"

#if defined(__x86_64__) && !defined(__ILP32__)
__asm__ (
    "\t.text\n"
    "\t.globl __tally_count\n"
    "\t.type __tally_count, @function\n"
    "__tally_count:\n"
    "\t.cfi_startproc\n"
    "\taddq $1, (%rdi)\n"
    "\tret\n"
    "\t.cfi_endproc\n"
    "\t.size __tally_count, .-__tally_count\n"
    "\t.globl __tally_count_atomic\n"
    "\t.type __tally_count_atomic, @function\n"
    "__tally_count_atomic:\n"
    "\t.cfi_startproc\n"
    "\tlock addq $1, (%rdi)\n"
    "\tret\n"
    "\t.cfi_endproc\n"
    "\t.size __tally_count_atomic, .-__tally_count_atomic\n"
    /* In: the module in %rdi.  Out: every register as it was (cpuid
       changes %rax, %rbx, %rcx and %rdx, all saved).  */
    "\t.globl __tally_tls_attach_all\n"
    "\t.type __tally_tls_attach_all, @function\n"
    "__tally_tls_attach_all:\n"
    "\t.cfi_startproc\n"
    "\tpushq %rbp\n"
    "\t.cfi_def_cfa_offset 16\n"
    "\t.cfi_offset %rbp, -16\n"
    "\tmovq %rsp, %rbp\n"
    "\t.cfi_def_cfa_register %rbp\n"
    "\tpushq %rax\n\tpushq %rcx\n\tpushq %rdx\n\tpushq %rsi\n"
    "\tpushq %rdi\n\tpushq %r8\n\tpushq %r9\n\tpushq %r10\n"
    "\tpushq %r11\n\tpushq %rbx\n"
    "\tmovl $1, %eax\n"
    "\tcpuid\n"
    "\tbtl $27, %ecx\n" /* OSXSAVE */
    "\tjnc 1f\n"
    "\tmovl $0xd, %eax\n"
    "\txorl %ecx, %ecx\n"
    "\tcpuid\n" /* %ebx: the XSAVE area of what XCR0 enables */
    "\tsubq %rbx, %rsp\n"
    "\tandq $-64, %rsp\n"
    "\txorl %eax, %eax\n"
    "\tmovq %rax, 512(%rsp)\n\tmovq %rax, 520(%rsp)\n"
    "\tmovq %rax, 528(%rsp)\n\tmovq %rax, 536(%rsp)\n"
    "\tmovq %rax, 544(%rsp)\n\tmovq %rax, 552(%rsp)\n"
    "\tmovq %rax, 560(%rsp)\n\tmovq %rax, 568(%rsp)\n"
    "\tmovl $-1, %eax\n"
    "\tmovl $-1, %edx\n"
    "\txsave (%rsp)\n"
    "\tcall __tally_tls_attach@PLT\n"
    "\tmovl $-1, %eax\n"
    "\tmovl $-1, %edx\n"
    "\txrstor (%rsp)\n"
    "\tjmp 2f\n"
    "1:\n"
    "\tsubq $512, %rsp\n"
    "\tandq $-16, %rsp\n"
    "\tfxsave (%rsp)\n"
    "\tcall __tally_tls_attach@PLT\n"
    "\tfxrstor (%rsp)\n"
    "2:\n"
    "\tleaq -80(%rbp), %rsp\n"
    "\tpopq %rbx\n\tpopq %r11\n\tpopq %r10\n\tpopq %r9\n"
    "\tpopq %r8\n\tpopq %rdi\n\tpopq %rsi\n\tpopq %rdx\n"
    "\tpopq %rcx\n\tpopq %rax\n"
    "\tpopq %rbp\n"
    "\t.cfi_def_cfa %rsp, 8\n"
    "\tret\n"
    "\t.cfi_endproc\n"
    "\t.size __tally_tls_attach_all, .-__tally_tls_attach_all\n");
#else
void
__tally_count (uint64_t *c)
{
  ++*c;
}

void
__tally_count_atomic (uint64_t *c)
{
  __atomic_fetch_add (c, 1, __ATOMIC_RELAXED);
}
#endif

static inline void
bump (struct tally_module *m, uint64_t *c)
{
  /* update=tls counts the blocks per thread; the calls are counted here,
     atomically.  */
  if (m->flags & (TALLY_MOD_UPDATE_ATOMIC | TALLY_MOD_UPDATE_TLS))
    __atomic_fetch_add (c, 1, __ATOMIC_RELAXED);
  else
    ++*c;
}

void
__tally_enter (struct tally_module *m, uint32_t fn)
{
  bump (m, &m->fns[fn]->counters[TALLY_C_ENTRIES]);
}

void
__tally_exit (struct tally_module *m, uint32_t fn)
{
  bump (m, &m->fns[fn]->counters[TALLY_C_EXITS]);
}

/* counters=mapped units call these instead (the plugin chooses), so the
   ordinary hooks above test nothing more: the counter lives at its address
   plus the unit's bias, which the runtime may point into the data file
   (continuous.c).  */
static inline uint64_t *
mapped (struct tally_module *m, uint64_t *c)
{
  return (uint64_t *) (void *) ((char *) c
                                + __atomic_load_n (m->bias, __ATOMIC_RELAXED));
}

void
__tally_enter_mapped (struct tally_module *m, uint32_t fn)
{
  bump (m, mapped (m, &m->fns[fn]->counters[TALLY_C_ENTRIES]));
}

void
__tally_exit_mapped (struct tally_module *m, uint32_t fn)
{
  bump (m, mapped (m, &m->fns[fn]->counters[TALLY_C_EXITS]));
}
