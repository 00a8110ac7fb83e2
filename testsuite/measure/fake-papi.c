/* A stand-in for libpapi with two events, for the measure=papi tests on a
 * machine where PAPI measures nothing (a VM without a CPU PMU disables
 * PAPI's perf_event component, software events included): preloaded
 * (LD_PRELOAD) into an instrumented program, it answers the PAPI calls
 * rt/papi.c makes, so the runtime's measuring, its records and the tools
 * that read them run there too.
 *
 *   tally::THREAD-CPU-NS  the thread's CPU time in ns (CLOCK_THREAD_CPUTIME_ID,
 *                         as perf::TASK-CLOCK counts it for a process)
 *   tally::READS          how many times the event set was read: a count
 *                         that depends only on the program's calls
 *
 * Every other name is "no such event" (PAPI_ENOEVNT).  Each event set is
 * used by one thread, as PAPI's are; reading calls nothing but
 * clock_gettime, so it is as safe in a signal handler as the runtime
 * needs.  */
#include <papi.h>
#include <string.h>
#include <time.h>

#define FAKE_SETS 4096
#define FAKE_MAX 16

enum { EV_CPU_NS = 0x40000001, EV_READS = 0x40000002 };

struct fake_set
{
  int codes[FAKE_MAX];
  int n;
  int started;
  long long reads;
};

/* Event sets by number; NEXT is the next one to hand out.  */
static struct fake_set sets[FAKE_SETS];
static int next_set;

static struct fake_set *
set_of (int es)
{
  return es >= 0 && es < FAKE_SETS ? &sets[es] : NULL;
}

int
PAPI_library_init (int version)
{
  return version;
}

int
PAPI_thread_init (unsigned long (*id_fn) (void))
{
  (void) id_fn;
  return PAPI_OK;
}

int
PAPI_create_eventset (int *es)
{
  int n = __atomic_fetch_add (&next_set, 1, __ATOMIC_RELAXED);
  if (n >= FAKE_SETS)
    return PAPI_ENOMEM;
  memset (&sets[n], 0, sizeof sets[n]);
  *es = n;
  return PAPI_OK;
}

int
PAPI_event_name_to_code (const char *name, int *code)
{
  if (!strcmp (name, "tally::THREAD-CPU-NS"))
    *code = EV_CPU_NS;
  else if (!strcmp (name, "tally::READS"))
    *code = EV_READS;
  else
    return PAPI_ENOEVNT;
  return PAPI_OK;
}

int
PAPI_add_event (int es, int code)
{
  struct fake_set *s = set_of (es);
  if (!s || s->started)
    return PAPI_EINVAL;
  if (code != EV_CPU_NS && code != EV_READS)
    return PAPI_ENOEVNT;
  if (s->n == FAKE_MAX)
    return PAPI_ECOUNT;
  s->codes[s->n++] = code;
  return PAPI_OK;
}

int
PAPI_add_events (int es, int *codes, int n)
{
  for (int i = 0; i < n; i++)
    {
      int rc = PAPI_add_event (es, codes[i]);
      if (rc != PAPI_OK)
        return rc;
    }
  return PAPI_OK;
}

int
PAPI_start (int es)
{
  struct fake_set *s = set_of (es);
  if (!s || s->started)
    return PAPI_EINVAL;
  s->started = 1;
  return PAPI_OK;
}

int
PAPI_read (int es, long long *values)
{
  struct fake_set *s = set_of (es);
  if (!s || !s->started)
    return PAPI_EINVAL;
  s->reads++;
  for (int i = 0; i < s->n; i++)
    if (s->codes[i] == EV_READS)
      values[i] = s->reads;
    else
      {
        struct timespec ts;
        clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
        values[i] = ts.tv_sec * 1000000000LL + ts.tv_nsec;
      }
  return PAPI_OK;
}

int
PAPI_stop (int es, long long *values)
{
  int rc = PAPI_read (es, values);
  if (rc == PAPI_OK)
    set_of (es)->started = 0;
  return rc;
}

int
PAPI_cleanup_eventset (int es)
{
  struct fake_set *s = set_of (es);
  if (!s || s->started)
    return PAPI_EINVAL;
  s->n = 0;
  return PAPI_OK;
}

int
PAPI_destroy_eventset (int *es)
{
  if (!set_of (*es))
    return PAPI_EINVAL;
  *es = PAPI_NULL;
  return PAPI_OK;
}

char *
PAPI_strerror (int rc)
{
  static char no_event[] = "Event does not exist";
  static char other[] = "Error (fake PAPI)";
  return rc == PAPI_ENOEVNT ? no_event : other;
}
