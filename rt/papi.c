/* measure=papi: the events named in TALLY_PAPI_EVENTS (comma-separated,
 * default PAPI_TOT_INS; at most TALLY_PAPI_MAX) per function, inclusive
 * and exclusive, beside the cycles of the shadow stack (shadow.c).
 *
 * The first measuring hook sets PAPI up (PAPI_library_init, thread
 * support) and tries each event once: one that this machine lacks gets one
 * message naming it, and the others are measured.  Every thread then gets
 * its own event set on its first hook, and two arrays beside its shadow
 * stack (the events at each frame's entry, and its callees' share), mmap'ed
 * and reserved like the stack.  Totals are indexed by function id.
 *
 * PAPI itself allocates when a thread starts and is not async-signal-safe:
 * functions built with measure=papi must not run in signal handlers.
 * Without PAPI at build time, these hooks measure cycles and say once that
 * the events are missing.  */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "rt.h"
#include "tally-config.h"

#if TALLY_HAVE_PAPI
#include <papi.h>

/* Functions with event totals (reserved address space).  */
#define PAPI_FNS ((size_t) 1 << 20)

struct ev_total
{
  uint64_t incl, excl;
};

static pthread_once_t setup_once = PTHREAD_ONCE_INIT;
static unsigned nev;                        /* events that work */
static int codes[TALLY_PAPI_MAX];
static char names[TALLY_PAPI_MAX][64];
static const char *name_ptrs[TALLY_PAPI_MAX];
static struct ev_total (*totals)[TALLY_PAPI_MAX]; /* [fn][event] */

/* The thread's event set (-1: none, 0: not tried yet) and its arrays.  */
static __thread int thread_state __attribute__ ((tls_model ("initial-exec")));
static __thread int event_set __attribute__ ((tls_model ("initial-exec")));
static __thread uint64_t (*ev_start)[TALLY_PAPI_MAX]
    __attribute__ ((tls_model ("initial-exec")));
static __thread uint64_t (*ev_child)[TALLY_PAPI_MAX]
    __attribute__ ((tls_model ("initial-exec")));

static unsigned long
thread_id (void)
{
  return (unsigned long) pthread_self ();
}

static void
setup (void)
{
  if (PAPI_library_init (PAPI_VER_CURRENT) != PAPI_VER_CURRENT)
    {
      tally_rt_error ("measure=papi: PAPI could not be initialised; "
                      "measuring cycles only");
      return;
    }
  if (PAPI_thread_init (thread_id) != PAPI_OK)
    {
      tally_rt_error ("measure=papi: PAPI thread support failed; measuring "
                      "cycles only");
      return;
    }
  const char *list = tally_rt_env ("TALLY_PAPI_EVENTS");
  if (!list || !*list)
    list = "PAPI_TOT_INS";
  int probe = PAPI_NULL;
  if (PAPI_create_eventset (&probe) != PAPI_OK)
    return;
  for (const char *p = list; *p;)
    {
      size_t n = strcspn (p, ",");
      char name[64];
      if (n == 0 || n >= sizeof name)
        {
          tally_rt_error ("TALLY_PAPI_EVENTS=%s: an empty or over-long event "
                          "name is skipped", list);
          p += n + (p[n] == ',');
          continue;
        }
      memcpy (name, p, n);
      name[n] = 0;
      p += n + (p[n] == ',');
      int code, rc = PAPI_event_name_to_code (name, &code);
      if (rc == PAPI_OK)
        rc = PAPI_add_event (probe, code);
      if (rc != PAPI_OK)
        {
          tally_rt_error ("TALLY_PAPI_EVENTS: event %s is not available on "
                          "this machine (%s); measuring the others", name,
                          PAPI_strerror (rc));
          continue;
        }
      if (nev == TALLY_PAPI_MAX)
        {
          tally_rt_error ("TALLY_PAPI_EVENTS: at most %u events; %s and the "
                          "rest are not measured", (unsigned) TALLY_PAPI_MAX,
                          name);
          break;
        }
      codes[nev] = code;
      memcpy (names[nev], name, n + 1);
      name_ptrs[nev] = names[nev];
      nev++;
    }
  PAPI_cleanup_eventset (probe);
  PAPI_destroy_eventset (&probe);
  if (!nev)
    {
      tally_rt_error ("TALLY_PAPI_EVENTS=%s: no event is available; "
                      "measuring cycles only", list);
      return;
    }
  void *t = mmap (NULL, PAPI_FNS * sizeof *totals, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (t == MAP_FAILED)
    {
      nev = 0;
      return;
    }
  __atomic_store_n (&totals, (struct ev_total (*)[TALLY_PAPI_MAX]) t,
                    __ATOMIC_RELEASE);
}

static int
thread_start (void)
{
  pthread_once (&setup_once, setup);
  thread_state = -1;
  if (!nev)
    return -1;
  size_t bytes = TALLY_STACK_FRAMES * sizeof *ev_start;
  void *a = mmap (NULL, bytes, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  void *b = mmap (NULL, bytes, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  event_set = PAPI_NULL;
  if (a == MAP_FAILED || b == MAP_FAILED
      || PAPI_create_eventset (&event_set) != PAPI_OK
      || PAPI_add_events (event_set, codes, (int) nev) != PAPI_OK
      || PAPI_start (event_set) != PAPI_OK)
    {
      tally_rt_error ("measure=papi: the events could not be started in a "
                      "thread; it measures cycles only");
      if (a != MAP_FAILED)
        munmap (a, bytes);
      if (b != MAP_FAILED)
        munmap (b, bytes);
      return -1;
    }
  ev_start = (uint64_t (*)[TALLY_PAPI_MAX]) a;
  ev_child = (uint64_t (*)[TALLY_PAPI_MAX]) b;
  thread_state = 1;
  return 0;
}

int
tally_rt_papi_read (uint64_t *ev)
{
  if (thread_state != 1)
    return -1;
  long long v[TALLY_PAPI_MAX];
  if (PAPI_read (event_set, v) != PAPI_OK)
    return -1;
  for (unsigned i = 0; i < nev; i++)
    ev[i] = (uint64_t) v[i];
  return (int) nev;
}

int
tally_rt_papi_push (size_t idx)
{
  if (thread_state == 0)
    thread_start ();
  if (thread_state != 1 || idx >= TALLY_STACK_FRAMES)
    return -1;
  uint64_t ev[TALLY_PAPI_MAX];
  if (tally_rt_papi_read (ev) < 0)
    return -1;
  for (unsigned i = 0; i < nev; i++)
    {
      ev_start[idx][i] = ev[i];
      ev_child[idx][i] = 0;
    }
  return 0;
}

void
tally_rt_papi_pop (size_t idx, uint32_t fn, uint32_t node, const uint64_t *ev)
{
  if (thread_state != 1 || idx == 0 || idx >= TALLY_STACK_FRAMES)
    return;
  uint64_t d[TALLY_PAPI_MAX], self[TALLY_PAPI_MAX];
  for (unsigned i = 0; i < nev; i++)
    {
      uint64_t c = ev_child[idx][i];
      d[i] = ev[i] - ev_start[idx][i];
      self[i] = d[i] > c ? d[i] - c : 0;
      ev_child[idx - 1][i] += d[i]; /* index 0 is the sentinel's */
      if (fn < PAPI_FNS)
        {
          __atomic_fetch_add (&totals[fn][i].incl, d[i], __ATOMIC_RELAXED);
          __atomic_fetch_add (&totals[fn][i].excl, self[i], __ATOMIC_RELAXED);
        }
    }
  if (node != TALLY_PATH_NONE)
    tally_rt_path_add_events (node, fn, nev, d, self);
}

void
tally_rt_papi_thread_gone (void)
{
  if (thread_state != 1)
    return;
  long long v[TALLY_PAPI_MAX];
  PAPI_stop (event_set, v);
  PAPI_cleanup_eventset (event_set);
  PAPI_destroy_eventset (&event_set);
  size_t bytes = TALLY_STACK_FRAMES * sizeof *ev_start;
  munmap (ev_start, bytes);
  munmap (ev_child, bytes);
  thread_state = 0;
}

unsigned
tally_rt_papi_events (const char **out)
{
  if (!__atomic_load_n (&totals, __ATOMIC_ACQUIRE))
    return 0;
  for (unsigned i = 0; i < nev; i++)
    out[i] = name_ptrs[i];
  return nev;
}

void
tally_rt_papi_totals (uint32_t fn, unsigned ev, uint64_t *incl, uint64_t *excl)
{
  *incl = *excl = 0;
  if (fn < PAPI_FNS && ev < nev && totals)
    {
      *incl = __atomic_load_n (&totals[fn][ev].incl, __ATOMIC_RELAXED);
      *excl = __atomic_load_n (&totals[fn][ev].excl, __ATOMIC_RELAXED);
    }
}

void
tally_rt_papi_zero (void)
{
  if (totals)
    madvise (totals, PAPI_FNS * sizeof *totals, MADV_DONTNEED);
}

void
__tally_enter_papi (struct tally_module *m, uint32_t fn, void *cfa)
{
  tally_rt_enter (m, fn, cfa, TALLY_SF_PAPI);
}

#else /* !TALLY_HAVE_PAPI */

void
__tally_enter_papi (struct tally_module *m, uint32_t fn, void *cfa)
{
  static int said;
  if (!__atomic_exchange_n (&said, 1, __ATOMIC_RELAXED))
    tally_rt_error ("measure=papi: this runtime was built without PAPI; "
                    "measuring cycles only");
  tally_rt_enter (m, fn, cfa, 0);
}

#endif

void
__tally_exit_papi (struct tally_module *m, uint32_t fn, void *cfa)
{
  tally_rt_exit (m, fn, cfa);
}
