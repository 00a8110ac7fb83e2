/* libunwind: tally_backtrace () and the initial stacks of paths=on.
 *
 * tally_backtrace fills the return addresses of the calling thread, as
 * glibc's backtrace () does, and tally_backtrace_print writes them with
 * their symbols to a file descriptor.  Both use libunwind's local-only
 * cursor (UNW_LOCAL_ONLY): unw_getcontext, unw_init_local, unw_step,
 * unw_get_reg and unw_get_proc_name work in signal handlers, so both are
 * async-signal-safe.
 *
 * Initial stacks.  A thread's path tree starts at the bottom of its shadow
 * stack, but the thread was running before its first instrumented call:
 * main's callers, uninstrumented callers, frames entered before the runtime
 * started.  When an entry finds the shadow stack empty (its caller's node
 * would be the root), the caller chain is unwound once, up to
 * UNWIND_FRAMES of the nearest frames, and each frame's function becomes a
 * path node of a pseudo function, TALLY_FRAME_ID_BASE + its index in the
 * frame table below (its start address and symbol name, kept for the data
 * file's FRMS record).  The entry then hangs under the innermost of them:
 * for example
 *
 *   [uninstrumented] _start
 *     [uninstrumented] __libc_start_main
 *       [uninstrumented] __libc_start_call_main
 *         main
 *
 * The result is cached per thread, keyed by the entering function's return
 * address and CFA (UNWIND_CACHE entries), so a loop in uninstrumented code
 * calling instrumented code unwinds once; a thread unwinds at most
 * UNWIND_MAX times, then bottom entries go under the root as they do
 * without libunwind.
 *
 * Linking.  The shared runtime links libunwind.  The static runtime must
 * not make every program link it: it refers to libunwind weakly, and when
 * the program was not linked with it (or the linker's --as-needed dropped
 * it), loads libunwind.so.8 with dlopen when a paths=on module registers
 * (a constructor, where dlopen is safe) or at the first tally_backtrace.
 * Without libunwind, paths start at the root as before and tally_backtrace
 * fails with ENOSYS.  */
#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rt.h"
#include "tally-config.h"
#include "tally/format.h"
#include "tally/tally.h"

#if TALLY_HAVE_LIBUNWIND && defined __x86_64__
#define UNWIND 1
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#ifndef TALLY_RT_SHARED
/* Weak: libtally-rt.a must not need -lunwind.  */
extern __typeof (unw_tdep_getcontext) unw_tdep_getcontext
    __attribute__ ((weak));
extern __typeof (unw_init_local) unw_init_local __attribute__ ((weak));
extern __typeof (unw_step) unw_step __attribute__ ((weak));
extern __typeof (unw_get_reg) unw_get_reg __attribute__ ((weak));
extern __typeof (unw_get_proc_info) unw_get_proc_info __attribute__ ((weak));
extern __typeof (unw_get_proc_name) unw_get_proc_name __attribute__ ((weak));
#endif
#else
#define UNWIND 0
#endif

#define FRAME_SLOTS 4096u   /* distinct outside functions, at most */
#define NAME_POOL (256u << 10) /* bytes of their names */
#define NAME_MAX_LEN 255u
#define UNWIND_FRAMES 32    /* the nearest frames kept of an initial stack */
#define UNWIND_CACHE 4
#define UNWIND_MAX 64       /* unwinds per thread */

/* The frame table: hash slots keyed by start address (0: empty), claimed
   by compare-and-swap; a slot's name is published by `ready`.  Mapped on
   the first unwind.  */
struct frame_sym
{
  uint64_t addr;
  uint32_t name_off, name_len;
  uint32_t ready;
  uint32_t pad;
};
static struct frame_sym *syms;
static char *pool;          /* names, bump-allocated */
static uint32_t pool_used;
/* 0 before the first use, 1 while being mapped, 2 ready, 3 failed.  */
static int syms_state;

/* The table as the dump in progress sees it (dumps are serialised): a bit
   per slot ready when it began, so both its passes write the same.  */
static uint64_t dump_ready[FRAME_SLOTS / 64];

/* Per thread: the cached bottom entries and the unwinds done.  */
struct base_cache
{
  uint64_t ret, cfa;
  uint32_t node;
};
static __thread struct base_cache cache[UNWIND_CACHE]
    __attribute__ ((tls_model ("initial-exec")));
static __thread uint32_t cache_next
    __attribute__ ((tls_model ("initial-exec")));
static __thread uint32_t unwinds
    __attribute__ ((tls_model ("initial-exec")));

#if UNWIND
/* The libunwind functions used, linked or loaded.  */
static struct
{
  __typeof (unw_tdep_getcontext) *getcontext;
  __typeof (unw_init_local) *init_local;
  __typeof (unw_step) *step;
  __typeof (unw_get_reg) *get_reg;
  __typeof (unw_get_proc_info) *get_proc_info;
  __typeof (unw_get_proc_name) *get_proc_name;
} unw;
#endif
/* 0 not tried, 1 being loaded, 2 there, 3 not there.  */
static int unw_state;
/* TALLY_UNWIND=off: paths start at the root, libunwind or not.  */
static int stacks_off;

void
tally_rt_unwind_load (void)
{
#if UNWIND
  int expected = 0;
  if (!__atomic_compare_exchange_n (&unw_state, &expected, 1, 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return;
  const char *v = tally_rt_env ("TALLY_UNWIND");
  if (v && (strcmp (v, "off") == 0 || strcmp (v, "0") == 0))
    stacks_off = 1;
  else if (v && *v && strcmp (v, "on") != 0 && strcmp (v, "1") != 0)
    tally_rt_error ("TALLY_UNWIND=%s is not on or off; using on", v);
# ifdef TALLY_RT_SHARED
  int linked = 1;
# else
  int linked = unw_tdep_getcontext && _ULx86_64_init_local && _ULx86_64_step
               && _ULx86_64_get_reg && _ULx86_64_get_proc_info
               && _ULx86_64_get_proc_name;
# endif
  if (linked)
    {
      unw.getcontext = unw_tdep_getcontext;
      unw.init_local = _ULx86_64_init_local;
      unw.step = _ULx86_64_step;
      unw.get_reg = _ULx86_64_get_reg;
      unw.get_proc_info = _ULx86_64_get_proc_info;
      unw.get_proc_name = _ULx86_64_get_proc_name;
    }
# ifndef TALLY_RT_SHARED
  else
    {
      /* Never closed: the functions stay in use until exit.  */
      void *h = dlopen ("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
      if (!h)
        {
          __atomic_store_n (&unw_state, 3, __ATOMIC_RELEASE);
          return;
        }
      unw.getcontext = (__typeof (unw.getcontext)) dlsym (h, "_Ux86_64_getcontext");
      unw.init_local = (__typeof (unw.init_local)) dlsym (h, "_ULx86_64_init_local");
      unw.step = (__typeof (unw.step)) dlsym (h, "_ULx86_64_step");
      unw.get_reg = (__typeof (unw.get_reg)) dlsym (h, "_ULx86_64_get_reg");
      unw.get_proc_info = (__typeof (unw.get_proc_info)) dlsym (h, "_ULx86_64_get_proc_info");
      unw.get_proc_name = (__typeof (unw.get_proc_name)) dlsym (h, "_ULx86_64_get_proc_name");
    }
# endif
  int ok = unw.getcontext && unw.init_local && unw.step && unw.get_reg
           && unw.get_proc_info && unw.get_proc_name;
  __atomic_store_n (&unw_state, ok ? 2 : 3, __ATOMIC_RELEASE);
#endif
}

/* Whether libunwind is there; never loads it (async-signal-safe).  */
static int
have_unwind (void)
{
  return __atomic_load_n (&unw_state, __ATOMIC_ACQUIRE) == 2;
}

int
tally_rt_have_unwind (void)
{
  return have_unwind ();
}

#if UNWIND
/* A cursor at the function that uses this (a macro: the context must be
   taken in that function's own frame, not in a helper that returns).  */
#define INIT_CURSOR(c, uc)                                                    \
  (unw.getcontext (&(uc)) == 0 && unw.init_local (&(c), &(uc)) == 0)
/* INIT_CURSOR, or return -1 with errno EFAULT from the function using it
   (a macro for the same reason).  */
#define INIT_CURSOR_OR_FAIL(c, uc)                                            \
  do                                                                          \
    {                                                                         \
      if (!INIT_CURSOR (c, uc))                                               \
        {                                                                     \
          errno = EFAULT;                                                     \
          return -1;                                                          \
        }                                                                     \
    }                                                                         \
  while (0)

/* Step C to the frame above: whether there is one, with a return address
   (in *IP).  */
static int
step_ip (unw_cursor_t *c, unw_word_t *ip)
{
  return unw.step (c) > 0 && unw.get_reg (c, UNW_REG_IP, ip) == 0 && *ip != 0;
}
#endif

/* exit=frames: the real return addresses in the calling thread's return
   slots while it walks its stack (frames.c; weak: linked where a unit
   has return frames).  */
static int
disarm (void)
{
  return tally_rt_frames_disarm ? tally_rt_frames_disarm () : 0;
}

static void
rearm (int d)
{
  if (d)
    tally_rt_frames_rearm ();
}

/* Whether libunwind is there, loaded on the static runtime's first call
   of the public functions below; errno ENOSYS if not.  */
static int
unwind_ready (void)
{
  if (__atomic_load_n (&unw_state, __ATOMIC_ACQUIRE) == 0)
    tally_rt_unwind_load ();
  if (have_unwind ())
    return 1;
  errno = ENOSYS;
  return 0;
}

int
tally_backtrace (void **addrs, int max)
{
  int saved = errno;
  if (!unwind_ready ())
    return -1;
  if (max < 0 || (max > 0 && !addrs))
    {
      errno = EINVAL;
      return -1;
    }
  int n = 0;
#if UNWIND
  unw_context_t uc;
  unw_cursor_t c;
  unw_word_t ip;
  INIT_CURSOR_OR_FAIL (c, uc);
  /* The cursor is in this function: each step gives a return address.
     exit=frames: the real ones in the return slots meanwhile.  */
  int d = disarm ();
  while (n < max && step_ip (&c, &ip))
    addrs[n++] = (void *) (uintptr_t) ip;
  rearm (d);
#endif
  errno = saved;
  return n;
}

static size_t
put_hex (char *b, uint64_t v)
{
  char t[16];
  size_t k = 0, n = 0;
  do
    t[k++] = "0123456789abcdef"[v & 15];
  while (v >>= 4);
  b[n++] = '0';
  b[n++] = 'x';
  while (k)
    b[n++] = t[--k];
  return n;
}

int
tally_backtrace_print (int fd)
{
  int saved = errno;
  if (!unwind_ready ())
    return -1;
  int n = 0;
#if UNWIND
  unw_context_t uc;
  unw_cursor_t c;
  unw_word_t ip, off;
  INIT_CURSOR_OR_FAIL (c, uc);
  int d = disarm ();
  while (step_ip (&c, &ip) && n < 1024)
    {
      /* "#N 0xADDR name+0xOFF\n"  */
      char line[NAME_MAX_LEN + 80];
      size_t k = 0;
      line[k++] = '#';
      k += tally_rt_utoa ((char *) line + k, (unsigned long) n);
      line[k++] = ' ';
      k += put_hex (line + k, ip);
      char name[NAME_MAX_LEN + 1];
      if (unw.get_proc_name (&c, name, sizeof name, &off) == 0 && name[0])
        {
          size_t len = strnlen (name, NAME_MAX_LEN);
          line[k++] = ' ';
          memcpy (line + k, name, len);
          k += len;
          line[k++] = '+';
          k += put_hex (line + k, off);
        }
      line[k++] = '\n';
      tally_rt_write_all (fd, line, k, -1);
      n++;
    }
  rearm (d);
#endif
  errno = saved;
  return n;
}

#if UNWIND
static int
syms_setup (void)
{
  int expected = 0;
  if (__atomic_compare_exchange_n (&syms_state, &expected, 1, 0,
                                   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    {
      void *s = mmap (NULL, FRAME_SLOTS * sizeof *syms, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      void *p = mmap (NULL, NAME_POOL, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (s == MAP_FAILED || p == MAP_FAILED)
        {
          __atomic_store_n (&syms_state, 3, __ATOMIC_RELEASE);
          return 0;
        }
      syms = (struct frame_sym *) s;
      pool = (char *) p;
      __atomic_store_n (&syms_state, 2, __ATOMIC_RELEASE);
      return 1;
    }
  while ((expected = __atomic_load_n (&syms_state, __ATOMIC_ACQUIRE)) == 1)
    ; /* another thread is mapping */
  return expected == 2;
}

/* The pseudo function id of the function at cursor C (start address
   START), entered in the table if new; TALLY_PATH_NONE if it is full.  */
static uint32_t
frame_id (unw_cursor_t *c, uint64_t start)
{
  uint32_t h = (uint32_t) ((start * 0x9e3779b97f4a7c15ull) >> 40);
  for (uint32_t probe = 0; probe < FRAME_SLOTS / 2; probe++)
    {
      uint32_t i = (h + probe) & (FRAME_SLOTS - 1);
      struct frame_sym *s = &syms[i];
      uint64_t a = __atomic_load_n (&s->addr, __ATOMIC_ACQUIRE);
      if (a == 0)
        {
          if (!__atomic_compare_exchange_n (&s->addr, &a, start, 0,
                                            __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            {
              if (a == start)
                return TALLY_FRAME_ID_BASE + i;
              continue;
            }
          /* Ours: name it.  */
          char name[NAME_MAX_LEN + 1];
          unw_word_t off;
          uint32_t len = 0;
          if (unw.get_proc_name (c, name, sizeof name, &off) == 0)
            len = (uint32_t) strnlen (name, NAME_MAX_LEN);
          uint32_t at = __atomic_fetch_add (&pool_used, len, __ATOMIC_RELAXED);
          if (at > NAME_POOL - len)
            len = 0; /* the pool is full: the address will do */
          else
            memcpy (pool + at, name, len);
          s->name_off = at;
          s->name_len = len;
          __atomic_store_n (&s->ready, 1, __ATOMIC_RELEASE);
          return TALLY_FRAME_ID_BASE + i;
        }
      if (a == start)
        return TALLY_FRAME_ID_BASE + i;
    }
  return TALLY_PATH_NONE;
}

/* Unwind from here to the caller of the function whose CFA is CFA, and on,
   and make the path nodes of those frames, outermost first.  The
   innermost's node, or 0 (the root).  */
static uint32_t
unwind_base (uint64_t cfa)
{
  if (!syms_setup ())
    return 0;
  unw_context_t uc;
  unw_cursor_t c;
  if (!INIT_CURSOR (c, uc))
    return 0;
  uint32_t ids[UNWIND_FRAMES];
  int n = 0, found = 0;
  while (unw.step (&c) > 0)
    {
      unw_word_t sp, ip;
      if (unw.get_reg (&c, UNW_REG_SP, &sp) != 0
          || unw.get_reg (&c, UNW_REG_IP, &ip) != 0 || ip == 0)
        break;
      /* The runtime's frames and the entering function's are below its CFA;
         its caller's stack pointer is the CFA (or above: an at=early
         inlined function's CFA is lowered).  */
      if (!found && sp < cfa)
        continue;
      found = 1;
      unw_proc_info_t pi;
      uint64_t start = unw.get_proc_info (&c, &pi) == 0 && pi.start_ip
                           ? (uint64_t) pi.start_ip
                           : (uint64_t) ip;
      uint32_t id = frame_id (&c, start);
      if (id == TALLY_PATH_NONE)
        break;
      ids[n++] = id;
      if (n == UNWIND_FRAMES)
        break;
    }
  uint32_t node = 0;
  while (n-- > 0)
    {
      uint32_t next = tally_rt_path_node (node, ids[n]);
      if (next == TALLY_PATH_NONE)
        break;
      node = next;
    }
  return node;
}
#endif

uint32_t
tally_rt_unwind_base (uint64_t cfa)
{
#if UNWIND
  if (!have_unwind () || stacks_off || cfa < 8)
    return 0;
  /* The entering function's return address: with its CFA, it tells one
     caller from another (an at=early inlined function's lowered CFA reads
     a word of its frame instead, which does as well).  */
  uint64_t ret = *(const uint64_t *) (uintptr_t) (cfa - 8);
  for (int i = 0; i < UNWIND_CACHE; i++)
    if (cache[i].cfa == cfa && cache[i].ret == ret)
      return cache[i].node;
  if (unwinds >= UNWIND_MAX)
    return 0;
  unwinds++;
  int saved = errno;
  uint32_t node = unwind_base (cfa);
  errno = saved;
  struct base_cache *e = &cache[cache_next++ % UNWIND_CACHE];
  e->cfa = cfa;
  e->ret = ret;
  e->node = node;
  return node;
#else
  (void) cfa;
  return 0;
#endif
}

uint32_t
tally_rt_frames_snapshot (void)
{
  memset (dump_ready, 0, sizeof dump_ready);
  if (__atomic_load_n (&syms_state, __ATOMIC_ACQUIRE) != 2)
    return 0;
  uint32_t n = 0;
  for (uint32_t i = 0; i < FRAME_SLOTS; i++)
    if (__atomic_load_n (&syms[i].ready, __ATOMIC_ACQUIRE))
      {
        dump_ready[i / 64] |= (uint64_t) 1 << (i % 64);
        n++;
      }
  return n;
}

int
tally_rt_frame_dumped (uint32_t id)
{
  uint32_t i = id - TALLY_FRAME_ID_BASE;
  return id >= TALLY_FRAME_ID_BASE && i < FRAME_SLOTS
         && (dump_ready[i / 64] >> (i % 64) & 1);
}

int
tally_rt_frame_get (uint32_t i, uint64_t *addr, const char **name,
                    uint32_t *len)
{
  if (i >= FRAME_SLOTS || !(dump_ready[i / 64] >> (i % 64) & 1))
    return 0;
  *addr = syms[i].addr;
  *name = pool + syms[i].name_off;
  *len = syms[i].name_len;
  return 1;
}
