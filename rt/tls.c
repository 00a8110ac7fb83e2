/* Per-thread counters (-fplugin-arg-tally-update=tls).
 *
 * With update=tls the plugin gives every instrumented function a
 * thread-local copy of its counters, and makes the code update that copy:
 * no atomic instruction, no cache line shared between threads, and still
 * exact.  The module's ordinary counters (struct tally_fn.counters) receive
 * each thread's counts when the thread exits.
 *
 * The first instrumented function of a module that runs in a thread calls
 * __tally_tls_attach, which records an "attachment": the module, the
 * addresses of this thread's copies (the module's tls_locate function says
 * where they are) and the thread, and sets the module's thread-local word
 * __tally.tlive.  A function whose entry count is inline tests its own
 * count (TALLY_FN_TLS_ARMED): its thread-local counters[ENTRIES] starts
 * at -1 in the TLS image, so that "addq $1; je" finds 0 on its first call
 * in the thread only, and the cold path attaches the thread if
 * __tally.tlive is 0 and adds the call the -1 took.  A copy at -1 is a
 * function not called in that thread: it reads as 0.  Other functions
 * test __tally.tlive (block counters; measure; hooks=call counts in the
 * runtime and attaches nothing).  Then:
 *   - thread exit (a pthread key destructor): the thread's attachments are
 *     added to the module's counters and released for reuse, each armed
 *     entry copy back at -1 and __tally.tlive at 0, so that instrumented
 *     code a later destructor runs attaches again;
 *   - the exit dump: first the same as a thread exit for the thread that
 *     makes it (tally_rt_tls_exit_dump), so that the dump and its late
 *     checks read that thread's counts in the counters, not in its copies;
 *   - a dump: each value written is the module's counter plus the copies of
 *     every live attachment (tally_rt_tls_add, tally_rt_tls_sum, over the
 *     module's attachments gathered once by tally_rt_tls_of), so
 *     threads still running and the main thread (whose key destructors
 *     never run) are counted;
 *   - a module going away (dlclose, or the end of the process): its live
 *     attachments are added to its counters first, and dropped;
 *   - tally_reset: the copies are zeroed with the counters;
 *   - fork: in the child, only the forking thread exists; the others'
 *     attachments are dropped, and the counters start from zero.
 *
 * Attachments live in mmap'ed memory (no malloc), are published on a
 * push-only lock-free list, and change state with compare-and-swap, so
 * attaching is safe from signal handlers and from any thread.  A dump that
 * races with a thread's exit may miss or repeat that thread's counts in
 * that one snapshot; the final counts are exact.  */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "rt.h"

enum
{
  ATT_FREE,   /* reusable by any thread for a module of the same size */
  ATT_LIVE,   /* counting for its owner thread */
  ATT_BUSY    /* being set up, flushed or dropped */
};

struct attachment
{
  struct attachment *next; /* the all-attachments list; never unlinked */
  struct tally_module *m;
  const void *owner;       /* the owner thread's `self_tag` */
  uint64_t *live;          /* the owner's __tally.tlive for m */
  uint32_t state;
  uint32_t nfns;
  uint64_t **copies;       /* nfns addresses, right after this struct */
};

static struct attachment *all;
static pthread_key_t exit_key;
static int key_state; /* 0 none, 1 being made, 2 made, 3 failed */

/* Its address tells threads apart (unique among live threads).  */
static __thread char self_tag;
/* The module this thread is attaching: a signal handler's instrumented
   code must not attach it again (its counts go to the copies, which the
   interrupted attach is about to publish, or was: nothing is lost).  */
static __thread struct tally_module *attaching;

/* Bump allocator over mmap'ed chunks; lock-free.  Each chunk starts with
   its header; `chunk` is the one being bumped.  */
struct chunk
{
  size_t used, cap;
};
static struct chunk *chunk;

static void *
alloc (size_t size)
{
  size = (size + 15) & ~(size_t) 15;
  for (;;)
    {
      struct chunk *c = __atomic_load_n (&chunk, __ATOMIC_ACQUIRE);
      if (c)
        {
          size_t used = __atomic_load_n (&c->used, __ATOMIC_ACQUIRE);
          if (used + size <= c->cap)
            {
              if (__atomic_compare_exchange_n (&c->used, &used, used + size, 0,
                                               __ATOMIC_ACQ_REL,
                                               __ATOMIC_ACQUIRE))
                return (unsigned char *) c + used;
              continue;
            }
        }
      size_t head = (sizeof (struct chunk) + 15) & ~(size_t) 15;
      size_t cap = head + size > ((size_t) 1 << 20) ? head + size
                                                    : (size_t) 1 << 20;
      struct chunk *n = mmap (NULL, cap, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (n == MAP_FAILED)
        return NULL;
      n->used = head + size;
      n->cap = cap;
      if (__atomic_compare_exchange_n (&chunk, &c, n, 0, __ATOMIC_ACQ_REL,
                                       __ATOMIC_ACQUIRE))
        return (unsigned char *) n + head;
      munmap (n, cap); /* another thread installed a chunk: use that */
    }
}

/* Whether counter K of F's thread-local copies starts at -1.  */
static inline int
armed (const struct tally_fn *f, uint32_t k)
{
  return k == TALLY_C_ENTRIES && (f->flags & TALLY_FN_TLS_ARMED);
}

/* Copy value V of counter K of F as a count.  */
static inline uint64_t
count_of (const struct tally_fn *f, uint32_t k, uint64_t v)
{
  return v == UINT64_MAX && armed (f, k) ? 0 : v;
}

/* Add the copies of A into its module's counters and put them back at
   their start (0, -1 for an armed entry).  */
static void
flush (struct attachment *a)
{
  for (uint32_t i = 0; i < a->nfns; i++)
    {
      struct tally_fn *f = a->m->fns[i];
      uint64_t *c = a->copies[i];
      for (uint32_t k = 0; k < f->ncounters; k++)
        {
          uint64_t v = count_of (
              f, k, __atomic_exchange_n (&c[k], armed (f, k) ? UINT64_MAX : 0,
                                         __ATOMIC_RELAXED));
          if (v)
            __atomic_fetch_add (&f->counters[k], v, __ATOMIC_RELAXED);
        }
    }
}

/* Flush this thread's live attachments into their modules' counters and
   release them: its armed entries back at -1, its __tally.tlive words at
   0, so that instrumented code it runs later attaches again.  */
static void
detach_self (void)
{
  for (struct attachment *a = __atomic_load_n (&all, __ATOMIC_ACQUIRE); a;
       a = a->next)
    {
      uint32_t live = ATT_LIVE;
      if (a->owner != &self_tag
          || !__atomic_compare_exchange_n (&a->state, &live, ATT_BUSY, 0,
                                           __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        continue;
      flush (a);
      __atomic_store_n (a->live, 0, __ATOMIC_RELAXED);
      a->owner = NULL;
      __atomic_store_n (&a->state, ATT_FREE, __ATOMIC_RELEASE);
    }
}

/* pthread key destructor: the thread is exiting.  */
static void
thread_exit (void *unused)
{
  (void) unused;
  int saved = errno;
  detach_self ();
  errno = saved;
}

void
tally_rt_tls_exit_dump (void)
{
  detach_self ();
}

void
tally_rt_tls_init (void)
{
  int none = 0;
  if (!__atomic_compare_exchange_n (&key_state, &none, 1, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE))
    return;
  if (pthread_key_create (&exit_key, thread_exit) != 0)
    {
      tally_rt_error ("pthread_key_create failed: the per-thread counts "
                      "(update=tls) of threads that exit before the process "
                      "are lost");
      __atomic_store_n (&key_state, 3, __ATOMIC_RELEASE);
      return;
    }
  __atomic_store_n (&key_state, 2, __ATOMIC_RELEASE);
}

void
__tally_tls_attach (struct tally_module *m)
{
  tally_rt_primary ()->tls_attach (m);
}

void
tally_rt_tls_attach_local (struct tally_module *m)
{
  if (!m->tls_locate || attaching == m)
    return;
  int saved = errno;
  struct tally_module *outer = attaching;
  attaching = m;
  struct attachment *a = NULL;
  /* Reuse a free attachment of this module...  */
  for (struct attachment *p = __atomic_load_n (&all, __ATOMIC_ACQUIRE); p;
       p = p->next)
    {
      uint32_t free_ = ATT_FREE;
      if (p->m == m
          && __atomic_compare_exchange_n (&p->state, &free_, ATT_BUSY, 0,
                                          __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        {
          a = p;
          break;
        }
    }
  /* ... or make one.  */
  if (!a)
    {
      a = alloc (sizeof *a + (size_t) m->nfns * sizeof (uint64_t *));
      if (!a)
        {
          static int said;
          if (!__atomic_exchange_n (&said, 1, __ATOMIC_RELAXED))
            tally_rt_error ("no memory for a thread's counters (update=tls); "
                            "its counts are not kept");
          attaching = outer;
          errno = saved;
          return;
        }
      a->m = m;
      a->nfns = m->nfns;
      a->copies = (uint64_t **) (a + 1);
      a->state = ATT_BUSY;
      struct attachment *head = __atomic_load_n (&all, __ATOMIC_ACQUIRE);
      do
        a->next = head;
      while (!__atomic_compare_exchange_n (&all, &head, a, 0, __ATOMIC_ACQ_REL,
                                           __ATOMIC_ACQUIRE));
    }
  a->owner = &self_tag;
  a->live = m->tls_locate (a->copies);
  if (__atomic_load_n (&key_state, __ATOMIC_ACQUIRE) == 2)
    pthread_setspecific (exit_key, &self_tag);
  __atomic_store_n (a->live, 1, __ATOMIC_RELAXED);
  __atomic_store_n (&a->state, ATT_LIVE, __ATOMIC_RELEASE);
  attaching = outer;
  errno = saved;
}

uint32_t
tally_rt_tls_of (const struct tally_module *m, const void **att, uint32_t max)
{
  uint32_t n = 0;
  for (struct attachment *a = __atomic_load_n (&all, __ATOMIC_ACQUIRE); a;
       a = a->next)
    if (a->m == m && n++ < max)
      att[n - 1] = a;
  return n;
}

/* The next live attachment of M after A (NULL: the first) of a walk: of
   the N in ATT (tally_rt_tls_of; *J counts them), or of all of them if ATT
   is NULL.  */
static inline const struct attachment *
next_live (const struct tally_module *m, const void *const *att, uint32_t n,
           uint32_t *j, const struct attachment *a)
{
  for (;;)
    {
      if (att)
        a = *j < n ? (const struct attachment *) att[(*j)++] : NULL;
      else
        a = a ? a->next : __atomic_load_n (&all, __ATOMIC_ACQUIRE);
      if (!a || (a->m == m
                 && __atomic_load_n (&a->state, __ATOMIC_ACQUIRE) == ATT_LIVE))
        return a;
    }
}

void
tally_rt_tls_add (const struct tally_module *m, const void *const *att,
                  uint32_t natt, uint32_t fn, uint32_t k, uint32_t n,
                  uint64_t *out)
{
  if (!n)
    return;
  const struct tally_fn *f = m->fns[fn];
  uint32_t j = 0;
  for (const struct attachment *a = next_live (m, att, natt, &j, NULL); a;
       a = next_live (m, att, natt, &j, a))
    {
      const uint64_t *c = a->copies[fn] + k;
      /* An armed entry at -1 (not called in that thread) reads as 0.  */
      out[0] += count_of (f, k, __atomic_load_n (&c[0], __ATOMIC_RELAXED));
      for (uint32_t i = 1; i < n; i++)
        out[i] += __atomic_load_n (&c[i], __ATOMIC_RELAXED);
    }
}

uint64_t
tally_rt_tls_read (const struct tally_module *m, const void *const *att,
                   uint32_t natt, uint32_t fn, const uint64_t *c, uint32_t n,
                   uint64_t *out, uint64_t *any)
{
  if (!n)
    return 0;
  const struct attachment *a, *b = NULL;
  if (att && natt == 1)
    {
      /* The dump's usual case (mapblob.c gathers the module's attachments
         once): one, live or not; next_live's loop for it, unrolled.  */
      a = (const struct attachment *) att[0];
      if (a && (a->m != m
                || __atomic_load_n (&a->state, __ATOMIC_ACQUIRE) != ATT_LIVE))
        a = NULL;
    }
  else
    {
      uint32_t j = 0;
      a = next_live (m, att, natt, &j, NULL);
      b = a ? next_live (m, att, natt, &j, a) : NULL;
    }
  uint64_t s = 0, o = 0, v;
  if (b)
    {
      /* Threads' copies of two and more: as snapshot does it.  */
      for (uint32_t i = 0; i < n; i++)
        out[i] = __atomic_load_n (&c[i], __ATOMIC_RELAXED);
      tally_rt_tls_add (m, att, natt, fn, 0, n, out);
      for (uint32_t i = 0; i < n; i++)
        {
          s += out[i];
          o |= out[i];
          out[i] = tally_rt_le64 (out[i]);
        }
    }
  else if (a)
    {
      /* One thread's: each counter and its copy, then on.  */
      const struct tally_fn *f = m->fns[fn];
      const uint64_t *t = a->copies[fn];
      v = __atomic_load_n (&c[0], __ATOMIC_RELAXED)
          + count_of (f, 0, __atomic_load_n (&t[0], __ATOMIC_RELAXED));
      s = o = v;
      out[0] = tally_rt_le64 (v);
      for (uint32_t i = 1; i < n; i++)
        {
          v = __atomic_load_n (&c[i], __ATOMIC_RELAXED)
              + __atomic_load_n (&t[i], __ATOMIC_RELAXED);
          s += v;
          o |= v;
          out[i] = tally_rt_le64 (v);
        }
    }
  else
    for (uint32_t i = 0; i < n; i++)
      {
        v = __atomic_load_n (&c[i], __ATOMIC_RELAXED);
        s += v;
        o |= v;
        out[i] = tally_rt_le64 (v);
      }
  *any |= o;
  return s;
}

uint64_t
tally_rt_tls_sum (const struct tally_module *m, const void *const *att,
                  uint32_t natt, uint32_t fn, uint32_t n)
{
  uint64_t sum = 0;
  if (!n)
    return 0;
  const struct tally_fn *f = m->fns[fn];
  uint32_t j = 0;
  for (const struct attachment *a = next_live (m, att, natt, &j, NULL); a;
       a = next_live (m, att, natt, &j, a))
    {
      const uint64_t *c = a->copies[fn];
      sum += count_of (f, 0, __atomic_load_n (&c[0], __ATOMIC_RELAXED));
      for (uint32_t i = 1; i < n; i++)
        sum += __atomic_load_n (&c[i], __ATOMIC_RELAXED);
    }
  return sum;
}

void
tally_rt_tls_module_gone (struct tally_module *m)
{
  for (struct attachment *a = __atomic_load_n (&all, __ATOMIC_ACQUIRE); a;
       a = a->next)
    {
      if (a->m != m)
        continue;
      uint32_t live = ATT_LIVE;
      if (__atomic_compare_exchange_n (&a->state, &live, ATT_BUSY, 0,
                                       __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        flush (a);
      /* Never reused: a later module may be loaded at the same address
         with another layout.  */
      a->m = NULL;
      __atomic_store_n (&a->state, ATT_BUSY, __ATOMIC_RELEASE);
    }
}

/* tally_reset (and fork's child): an attached thread's copies go to 0,
   armed entries too (the thread is attached: no cold path needed).  */
void
tally_rt_tls_zero (void)
{
  for (struct attachment *a = __atomic_load_n (&all, __ATOMIC_ACQUIRE); a;
       a = a->next)
    if (__atomic_load_n (&a->state, __ATOMIC_ACQUIRE) == ATT_LIVE)
      for (uint32_t i = 0; i < a->nfns; i++)
        for (uint32_t k = 0; k < a->m->fns[i]->ncounters; k++)
          __atomic_store_n (&a->copies[i][k], 0, __ATOMIC_RELAXED);
}

void
tally_rt_tls_fork_child (void)
{
  for (struct attachment *a = __atomic_load_n (&all, __ATOMIC_ACQUIRE); a;
       a = a->next)
    if (a->state == ATT_LIVE && a->owner != &self_tag)
      {
        /* That thread does not exist here; its copies are the parent's.  */
        a->owner = NULL;
        a->state = ATT_FREE;
      }
    else if (a->state == ATT_BUSY && a->m && a->owner != &self_tag)
      a->state = ATT_FREE; /* caught mid-attach or mid-flush by the fork */
  tally_rt_tls_zero ();
}
