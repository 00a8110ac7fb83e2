/* paths=on: the calling-context tree.
 *
 * One tree per process: node 0 is the root (the bottom of every thread's
 * stack); a node is (parent node, function id) and holds the calls, and
 * inclusive and exclusive cycles, of the activations entered on that path.
 * Nodes live in one mmap'ed array (reserved, not committed: TALLY_PATH_NODES
 * of them, default 1 Mi, 40 bytes each) and are found through an
 * open-addressing hash table of node indexes, twice as large.  Both only
 * grow, lock-free: a new node takes the next index (an atomic add), is
 * filled, and is published by a compare-and-swap on its hash slot; a thread
 * that loses the race uses the winner's node (the loser's index stays
 * unused, with zero values).  When the array is full, activations on new
 * paths are not recorded in the tree (their functions' totals still are)
 * and the number lost is written to the file.
 *
 * Depth: paths are cut at TALLY_PATH_DEPTH frames (default 64, at most
 * 1024): an activation deeper than that is recorded as a sibling of its
 * caller at the deepest level, so deep recursion makes one node, not one
 * per level.  */
#include <stdlib.h>
#include <sys/mman.h>

#include "rt.h"

#define DEFAULT_NODES (1u << 20)
#define MAX_NODES (1u << 24)
#define DEFAULT_DEPTH 64u
#define MAX_DEPTH 1024u

/* The nodes; fn_plus1 is 0 until the node is filled, so a reader (the
   dump) never takes a half-made node for a real one.  Public for the
   inline exit of paths=on hooks=inline (include/tally/abi.h), which adds
   to the node of a frame whose node a hook of the runtime found, so after
   this is set.  */
struct tally_path_node *__tally_path_nodes;
#define nodes __tally_path_nodes
/* The hash slots (node indexes, 0 = empty: the root is never in it).  */
static uint32_t *slots;
static uint32_t nslots;   /* a power of two */
static uint32_t capacity; /* nodes reserved */
static uint32_t used;     /* nodes handed out (atomic), root included */
static uint32_t depth_limit;
static uint64_t lost;     /* activations on paths that did not fit */
/* measure=papi: the events per node, [capacity][TALLY_PAPI_MAX] pairs
   (inclusive, exclusive), mapped (reserved) by the first one added.  */
static uint64_t *events;
/* 0 before the first use, 1 while being set up, 2 ready, 3 failed.  */
static int state;

static uint32_t
env_u32 (const char *name, uint32_t def, uint32_t lo, uint32_t hi)
{
  const char *s = tally_rt_env (name);
  if (!s || !*s)
    return def;
  uint64_t v = 0;
  for (const char *p = s; *p; p++)
    {
      if (*p < '0' || *p > '9' || v > hi)
        goto bad;
      v = v * 10 + (uint64_t) (*p - '0');
    }
  if (v >= lo && v <= hi)
    return (uint32_t) v;
bad:
  tally_rt_error ("%s=%s is not a number from %u to %u; using %u", name, s,
                  lo, hi, def);
  return def;
}

/* Set while this thread maps the tree: a signal handler's hook in between
   gets no path instead of waiting for itself.  */
static __thread int setting_up __attribute__ ((tls_model ("initial-exec")));

static int
setup (void)
{
  int expected = 0;
  if (setting_up)
    return 0;
  if (__atomic_compare_exchange_n (&state, &expected, 1, 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE))
    {
      setting_up = 1;
      capacity = env_u32 ("TALLY_PATH_NODES", DEFAULT_NODES, 2, MAX_NODES);
      depth_limit = env_u32 ("TALLY_PATH_DEPTH", DEFAULT_DEPTH, 1, MAX_DEPTH);
      nslots = 32;
      while (nslots < 2 * capacity)
        nslots *= 2;
      void *n = mmap (NULL, (size_t) capacity * sizeof *nodes,
                      PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      void *s = mmap (NULL, (size_t) nslots * sizeof *slots,
                      PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (n == MAP_FAILED || s == MAP_FAILED)
        {
          tally_rt_error ("no memory for the calling-context tree "
                          "(TALLY_PATH_NODES=%u); call paths are not "
                          "recorded", capacity);
          __atomic_store_n (&state, 3, __ATOMIC_RELEASE);
          setting_up = 0;
          return 0;
        }
      nodes = (struct tally_path_node *) n;
      slots = (uint32_t *) s;
      nodes[0].parent = UINT32_MAX;
      nodes[0].fn_plus1 = 0;
      used = 1;
      __atomic_store_n (&state, 2, __ATOMIC_RELEASE);
      setting_up = 0;
      return 1;
    }
  while ((expected = __atomic_load_n (&state, __ATOMIC_ACQUIRE)) == 1)
    ; /* another thread is mapping: a few system calls */
  return expected == 2;
}

/* ready and find are always inlined, into the ordinary lookup below (the
   hooks=call path) as into their general-registers-only entry points for
   the inline entry's fast call (shadow.c).  */
TALLY_GPR_INLINE int
ready (void)
{
  return __atomic_load_n (&state, __ATOMIC_ACQUIRE) == 2;
}

/* Lock-free: a node is claimed (used), filled, then published in its
   slot; two threads making the same node race for the slot, and the loser
   looks at the winner's (its own claimed node stays unused).  */
TALLY_GPR_INLINE uint32_t
find (uint32_t parent, uint32_t fn)
{
  if (parent >= __atomic_load_n (&used, __ATOMIC_ACQUIRE))
    parent = 0;
  if (parent && nodes[parent].depth >= depth_limit)
    parent = nodes[parent].parent; /* cut: a sibling at the deepest level */
  uint32_t h = (parent * 0x9e3779b1u) ^ (fn * 0x85ebca77u);
  h ^= h >> 15;
  uint32_t mine = 0;
  for (uint32_t probe = 0; probe < nslots; probe++)
    {
      uint32_t *slot = &slots[(h + probe) & (nslots - 1)];
      uint32_t n = __atomic_load_n (slot, __ATOMIC_ACQUIRE);
      if (n == 0)
        {
          if (!mine)
            {
              mine = __atomic_fetch_add (&used, 1, __ATOMIC_ACQ_REL);
              if (mine >= capacity)
                {
                  __atomic_store_n (&used, capacity, __ATOMIC_RELAXED);
                  __atomic_fetch_add (&lost, 1, __ATOMIC_RELAXED);
                  return TALLY_PATH_NONE;
                }
              nodes[mine].parent = parent;
              nodes[mine].depth = parent ? nodes[parent].depth + 1 : 1;
              __atomic_store_n (&nodes[mine].fn_plus1, fn + 1, __ATOMIC_RELEASE);
            }
          if (__atomic_compare_exchange_n (slot, &n, mine, 0, __ATOMIC_ACQ_REL,
                                           __ATOMIC_ACQUIRE))
            return mine;
          /* Taken meanwhile: N is the winner; look at it below.  */
        }
      if (nodes[n].parent == parent
          && __atomic_load_n (&nodes[n].fn_plus1, __ATOMIC_ACQUIRE) == fn + 1)
        return n;
    }
  __atomic_fetch_add (&lost, 1, __ATOMIC_RELAXED);
  return TALLY_PATH_NONE;
}

uint32_t
tally_rt_path_node (uint32_t parent, uint32_t fn)
{
  if (!ready () && !setup ())
    return TALLY_PATH_NONE;
  return find (parent, fn);
}

int
tally_rt_paths_ready (void)
{
  return ready ();
}

uint32_t
tally_rt_path_find (uint32_t parent, uint32_t fn)
{
  return find (parent, fn);
}

void
tally_rt_path_add (uint32_t node, uint32_t fn, uint64_t d, uint64_t self)
{
  if (node == TALLY_PATH_NONE || node == 0
      || node >= __atomic_load_n (&used, __ATOMIC_ACQUIRE)
      || __atomic_load_n (&nodes[node].fn_plus1, __ATOMIC_ACQUIRE) != fn + 1)
    return;
  struct tally_path_node *n = &nodes[node];
  __atomic_fetch_add (&n->calls, 1, __ATOMIC_RELAXED);
  __atomic_fetch_add (&n->incl, d, __ATOMIC_RELAXED);
  __atomic_fetch_add (&n->excl, self, __ATOMIC_RELAXED);
}

void
tally_rt_path_add_events (uint32_t node, uint32_t fn, unsigned nev,
                          const uint64_t *d, const uint64_t *self)
{
  if (node == TALLY_PATH_NONE || node == 0
      || node >= __atomic_load_n (&used, __ATOMIC_ACQUIRE)
      || __atomic_load_n (&nodes[node].fn_plus1, __ATOMIC_ACQUIRE) != fn + 1)
    return;
  uint64_t *ev = __atomic_load_n (&events, __ATOMIC_ACQUIRE);
  if (!ev)
    {
      size_t len = (size_t) capacity * TALLY_PAPI_MAX * 16;
      void *p = mmap (NULL, len, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p == MAP_FAILED)
        return;
      uint64_t *expected = NULL;
      if (__atomic_compare_exchange_n (&events, &expected, (uint64_t *) p, 0,
                                       __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        ev = (uint64_t *) p;
      else
        {
          munmap (p, len);
          ev = expected;
        }
    }
  uint64_t *at = ev + (size_t) node * TALLY_PAPI_MAX * 2;
  for (unsigned i = 0; i < nev && i < TALLY_PAPI_MAX; i++)
    {
      __atomic_fetch_add (&at[2 * i], d[i], __ATOMIC_RELAXED);
      __atomic_fetch_add (&at[2 * i + 1], self[i], __ATOMIC_RELAXED);
    }
}

const uint64_t *
tally_rt_path_events (void)
{
  return __atomic_load_n (&events, __ATOMIC_ACQUIRE);
}

uint32_t
tally_rt_path_owner (uint32_t node, uint32_t fn)
{
  return node != TALLY_PATH_NONE && node
                 && node < __atomic_load_n (&used, __ATOMIC_ACQUIRE)
                 && __atomic_load_n (&nodes[node].fn_plus1, __ATOMIC_ACQUIRE)
                        == fn + 1
             ? node
             : 0;
}

const struct tally_path_node *
tally_rt_paths (uint32_t *n, uint32_t *depth, uint64_t *nlost)
{
  if (__atomic_load_n (&state, __ATOMIC_ACQUIRE) != 2)
    {
      *n = 0;
      return NULL;
    }
  uint32_t u = __atomic_load_n (&used, __ATOMIC_ACQUIRE);
  *n = u < capacity ? u : capacity;
  *depth = depth_limit;
  *nlost = __atomic_load_n (&lost, __ATOMIC_RELAXED);
  return nodes;
}

void
tally_rt_paths_zero (void)
{
  if (__atomic_load_n (&state, __ATOMIC_ACQUIRE) != 2)
    return;
  uint32_t u = __atomic_load_n (&used, __ATOMIC_ACQUIRE);
  for (uint32_t i = 0; i < u && i < capacity; i++)
    {
      __atomic_store_n (&nodes[i].calls, 0, __ATOMIC_RELAXED);
      __atomic_store_n (&nodes[i].incl, 0, __ATOMIC_RELAXED);
      __atomic_store_n (&nodes[i].excl, 0, __ATOMIC_RELAXED);
    }
  __atomic_store_n (&lost, 0, __ATOMIC_RELAXED);
  uint64_t *ev = __atomic_load_n (&events, __ATOMIC_ACQUIRE);
  if (ev)
    madvise (ev, (size_t) capacity * TALLY_PAPI_MAX * 16, MADV_DONTNEED);
}
