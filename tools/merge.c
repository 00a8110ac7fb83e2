/* merge.c - `tally merge`: sum data files into one data file
 * (doc/cli.md, "tally merge").  */
/* getline, getcwd.  */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "blockmap.h"
#include "builds.h"
#include "cli.h"
#include "coverage.h"
#include "datafile.h"
#include "hide.h"
#include "output.h"
#include "paths.h"
#include "prefetch.h"
#include "print.h"
#include "ranks.h"
#include "select.h"
#include "summed.h"
#include "tally/abi.h"
#include "tally/format.h"
#include "tally/mapcode.h"

/* tally merge: sum data files into one.
 *
 * The inputs are read one at a time and folded into an accumulator of
 * distinct module records, so memory is bounded by the output (the
 * distinct modules) plus the largest input, whatever the number of files.
 * Records pair as in the runtime's merge-on-write: a module sums with an
 * accumulated record of the same build (same ABI, compile checksum, flags,
 * source, and the same function symbols and counter counts in the same
 * order), each accumulated record taking at most one module per input
 * file; another build of the same source stays a record of its own.  With
 * --force, modules with the same source are merged whatever their
 * checksum (and within one input file too): functions pair by symbol and
 * a function only one build has is added.  The output is written to a new
 * temporary and renamed over OUT (output.c), so it may be one of the
 * inputs.
 *
 * The measured values (MEAS) of a function add up as its counts do; a file
 * without them adds zeros; files that measure other values (other PAPI
 * events) are refused, naming the first one that differs.  The outside
 * frames (FRMS) are the union of the inputs' (a frame is its name, or its
 * address if it has none), and the calling-context trees (PATH) are merged
 * by path: a node is the chain of (output record, function) or frame keys
 * from the root, found through a hash table, and its calls and cycles add
 * up.  Like the records, the tree and the frames are the output's size,
 * whatever the number of inputs.  */

struct acc_fn
{
  char *name, *symbol, *origin, *file;
  uint32_t line, flags, ncounters;
  uint64_t *counters;
  uint32_t map_size;
  unsigned char *map; /* block map, or NULL */
  uint64_t *meas;     /* accumulator.nmeas (inclusive, exclusive) pairs;
                         NULL while all are zero */
};

struct acc_module
{
  uint32_t abi_version, flags;
  uint64_t checksum;
  char *source, *directory;
  struct acc_fn *fns;
  size_t nfns, cap;
  size_t last_file; /* 1 + index of the input that last paired with it */
  int forced;       /* --force merged another build into it */
  int reordered;    /* ... whose functions stood in another order */
};

/* A function of a frame outside instrumented code (FRMS).  */
struct acc_frame
{
  uint64_t addr;
  char *name;
};

/* A node of the merged tree: parent node, and record and function (record
   UINT32_MAX: a frame, fn indexing the frames).  */
struct acc_node
{
  uint32_t parent, rec, fn;
  uint64_t calls, incl, excl;
};

struct accumulator
{
  struct acc_module *mods;
  size_t n, cap;
  uint32_t nmeas; /* values per function, 0 until an input has MEAS */
  char *meas_names[TALLY_MAX_MEAS];
  struct acc_frame *frames;
  size_t nframes, frames_cap;
  struct acc_node *nodes; /* [0] is the root */
  size_t nnodes, nodes_cap;
  uint32_t *slots; /* node indexes by hash of (parent, rec, fn); 0 empty */
  size_t nslots;
  uint64_t *node_ev; /* nodes x (nmeas - 1) event pairs (PEVT), when
                        nmeas > 1 */
  size_t node_ev_cap;
  int paths;       /* an input had a PATH record */
  uint32_t depth;  /* the largest depth limit */
  uint64_t lost;
};

static void
acc_fn_copy (struct acc_fn *to, const struct tally_data_fn *f)
{
  to->name = xstrdup (f->name);
  to->symbol = xstrdup (f->symbol);
  to->origin = xstrdup (f->origin);
  to->file = xstrdup (f->file);
  to->line = f->line;
  to->flags = f->flags;
  to->ncounters = f->ncounters;
  to->counters = xmalloc (f->ncounters * sizeof *to->counters);
  memcpy (to->counters, f->counters, f->ncounters * sizeof *to->counters);
  to->map_size = f->map_size;
  to->map = NULL;
  to->meas = NULL;
  if (f->map_size)
    {
      to->map = xmalloc (f->map_size);
      memcpy (to->map, f->map, f->map_size);
    }
}

/* The calls and exits of a function whose FLAGS, MAP (SIZE bytes) and
   COUNTERS (N) are given: counted, or derived from its block map
   (TALLY_FN_CALLS_DERIVED) into OUT.  Returns 0, OUT both 0, where they do
   not follow from its own map (kind 6: they come from its callers').  */
static int
fn_calls (uint32_t flags, const unsigned char *map, uint32_t size,
          const uint64_t *counters, uint32_t n, uint64_t *out)
{
  out[0] = counters[TALLY_C_ENTRIES];
  out[1] = counters[TALLY_C_EXITS];
  if (!(flags & TALLY_FN_CALLS_DERIVED) || !size)
    return 1;
  struct tally_blockmap bm;
  struct tally_flow flow;
  char err[256];
  if (tally_map_decode (map, size, n, &bm, err, sizeof err) != 0)
    return 0;
  int ok = 0;
  out[0] = out[1] = 0;
  if (bm.kind != TALLY_MAP_VISITED)
    {
      tally_flow_solve (&bm, counters, n, &flow);
      ok = flow.entries_known && flow.exits_known;
      if (ok)
        {
          out[0] = flow.entries;
          out[1] = flow.exits;
        }
      tally_flow_free (&flow);
    }
  tally_map_free (&bm);
  return ok;
}

/* Add the counters of F to T; a counter only one of them has is kept.  */
static void
acc_fn_add (struct acc_fn *t, const struct tally_data_fn *f)
{
  if (t->map_size != f->map_size
      || (t->map_size && memcmp (t->map, f->map, t->map_size) != 0))
    {
      /* Two builds (--force) with other blocks: their block values do
         not line up.  The entry and exit counts still add up: those
         derived from the blocks are solved on each side first.  */
      static int said, lost;
      uint64_t tc[2], fc[2];
      int known = fn_calls (t->flags, t->map, t->map_size, t->counters,
                            t->ncounters, tc)
                  & fn_calls (f->flags, f->map, f->map_size, f->counters,
                              f->ncounters, fc);
      if (!said++)
        error_msg ("merge: %s: the builds merged have different basic "
                   "blocks; block counts dropped, call counts kept",
                   t->symbol);
      if (!known && !lost++)
        error_msg ("merge: %s: the builds merged have different basic "
                   "blocks, and in one of them its calls came from its "
                   "callers' blocks, which do not line up either: those "
                   "calls are left out", t->symbol);
      free (t->map);
      t->map = NULL;
      t->map_size = 0;
      t->flags &= ~TALLY_FN_CALLS_DERIVED;
      if (t->ncounters > TALLY_C_CORE)
        t->ncounters = TALLY_C_CORE;
      for (uint32_t k = 0; k < TALLY_C_CORE; k++)
        t->counters[k] = add_sat (tc[k], fc[k]);
      return;
    }
  if (f->ncounters > t->ncounters)
    {
      t->counters = realloc (t->counters, f->ncounters * sizeof *t->counters);
      if (!t->counters)
        {
          error_msg ("out of memory");
          exit (EXIT_BAD_DATA);
        }
      memset (t->counters + t->ncounters, 0,
              (f->ncounters - t->ncounters) * sizeof *t->counters);
      t->ncounters = f->ncounters;
    }
  for (uint32_t k = 0; k < f->ncounters; k++)
    t->counters[k] = add_sat (t->counters[k], f->counters[k]);
}

/* Whether M is the same build as A (see above).  */
static int
same_build (const struct acc_module *a, const struct tally_data_module *m)
{
  if (a->abi_version != m->abi_version || a->checksum != m->checksum
      || a->flags != m->flags || a->nfns != m->nfns
      || strcmp (a->source, m->source) != 0)
    return 0;
  for (uint32_t i = 0; i < m->nfns; i++)
    if (strcmp (a->fns[i].symbol, m->fns[i].symbol) != 0
        || a->fns[i].ncounters != m->fns[i].ncounters)
      return 0;
  return 1;
}

/* Add module M of input FILE to ACC; the record it went to is returned,
   and the index there of each of its functions put in FNMAP.  */
static size_t
acc_add_module (struct accumulator *acc, const struct tally_data_module *m,
                size_t file, int force, uint32_t *fnmap)
{
  struct acc_module *a = NULL;
  for (size_t i = 0; i < acc->n && !a; i++)
    if (acc->mods[i].last_file != file + 1 && same_build (&acc->mods[i], m))
      a = &acc->mods[i];
  for (uint32_t i = 0; i < m->nfns; i++)
    fnmap[i] = i;
  if (a)
    {
      for (uint32_t i = 0; i < m->nfns; i++)
        acc_fn_add (&a->fns[i], &m->fns[i]);
      a->last_file = file + 1;
      return (size_t) (a - acc->mods);
    }
  /* --force asks for one record per source, so records of one input file
     merge too.  */
  if (force)
    for (size_t i = 0; i < acc->n && !a; i++)
      if (acc->mods[i].abi_version == m->abi_version
          && strcmp (acc->mods[i].source, m->source) == 0)
        a = &acc->mods[i];
  if (a)
    {
      /* Functions pair by symbol; a quadratic search, but only over the
         functions of one unit.  */
      for (uint32_t i = 0; i < m->nfns; i++)
        {
          size_t j = 0;
          while (j < a->nfns && strcmp (a->fns[j].symbol, m->fns[i].symbol) != 0)
            j++;
          if (j < a->nfns)
            acc_fn_add (&a->fns[j], &m->fns[i]);
          else
            {
              a->fns = xgrow (a->fns, &a->cap, a->nfns + 1, sizeof *a->fns);
              acc_fn_copy (&a->fns[a->nfns++], &m->fns[i]);
            }
          fnmap[i] = (uint32_t) j;
          a->reordered |= j != i;
        }
      a->last_file = file + 1;
      a->forced = 1;
      return (size_t) (a - acc->mods);
    }
  acc->mods = xgrow (acc->mods, &acc->cap, acc->n + 1, sizeof *acc->mods);
  a = &acc->mods[acc->n++];
  memset (a, 0, sizeof *a);
  a->abi_version = m->abi_version;
  a->flags = m->flags;
  a->checksum = m->checksum;
  a->source = xstrdup (m->source);
  a->directory = xstrdup (m->directory);
  a->fns = xgrow (NULL, &a->cap, m->nfns ? m->nfns : 1, sizeof *a->fns);
  for (uint32_t i = 0; i < m->nfns; i++)
    acc_fn_copy (&a->fns[a->nfns++], &m->fns[i]);
  a->last_file = file + 1;
  return acc->n - 1;
}

/* --force: a kind 6 map (entries from the callers) names its call sites by
   function index and block.  After a merge of other builds those can be
   gone (a caller's map dropped above: its blocks did not line up) or name
   another function (the builds ordered their functions otherwise), so such
   a map keeps its blocks but its trailer says the sites are incomplete:
   the function's calls come out undetermined, not wrong, and the file
   stays readable.  A version 1 map (no plugin writes one with kind 6) is
   dropped as a differing map is.  */
static void
acc_fix_callers (struct accumulator *acc)
{
  static int said;
  for (size_t i = 0; i < acc->n; i++)
    {
      struct acc_module *a = &acc->mods[i];
      if (!a->forced)
        continue;
      for (size_t j = 0; j < a->nfns; j++)
        {
          struct acc_fn *f = &a->fns[j];
          struct tally_map2_info info;
          if (f->map_size < 8)
            continue;
          if (tally_le_get32 (f->map) == TALLY_MAP_VERSION
              && tally_le_get32 (f->map + 4) == TALLY_MAP_TREE_CALLERS)
            {
              free (f->map);
              f->map = NULL;
              f->map_size = 0;
              f->flags &= ~TALLY_FN_CALLS_DERIVED;
              continue;
            }
          uint32_t *sites = NULL;
          int ok = tally_le_get32 (f->map) == TALLY_MAP_VERSION2
                   && tally_map2_walk (f->map, f->map_size, f->ncounters,
                                       &info, NULL) == 0
                   && info.kind == TALLY_MAP_TREE_CALLERS && info.complete;
          if (!ok)
            continue;
          sites = xmalloc ((2 * (size_t) info.nsites + 1) * sizeof *sites);
          struct tally_map2_out out = { NULL, NULL, NULL, NULL, sites };
          tally_map2_walk (f->map, f->map_size, f->ncounters, &info, &out);
          int keep = !a->reordered;
          for (uint32_t k = 0; keep && k < info.nsites; k++)
            keep = sites[2 * k] < a->nfns && a->fns[sites[2 * k]].map_size;
          free (sites);
          if (keep)
            continue;
          /* complete 0, no sites: two one-byte varints.  */
          f->map[info.trailer_at] = 0;
          f->map[info.trailer_at + 1] = 0;
          f->map_size = (uint32_t) info.trailer_at + 2;
          if (!said++)
            error_msg ("merge: %s: its callers differ between the builds "
                       "merged; its calls are undetermined", f->symbol);
        }
    }
}

static void acc_node_events (struct accumulator *acc);

/* Whether the value names of D are those ACC has (in any order); VMAP[k]
   gets the accumulator's index of D's value k.  Sets ACC's names from the
   first input that has some.  */
static int
acc_meas_names (struct accumulator *acc, const struct tally_data *d,
                uint32_t *vmap, const char *path)
{
  if (!d->nmeas)
    return 0;
  if (!acc->nmeas)
    {
      acc->nmeas = d->nmeas;
      for (uint32_t k = 0; k < d->nmeas; k++)
        acc->meas_names[k] = xstrdup (d->meas_names[k]);
      acc_node_events (acc);
    }
  for (uint32_t k = 0; k < d->nmeas; k++)
    {
      vmap[k] = UINT32_MAX;
      for (uint32_t o = 0; o < acc->nmeas; o++)
        if (strcmp (acc->meas_names[o], d->meas_names[k]) == 0)
          vmap[k] = o;
      if (vmap[k] == UINT32_MAX)
        {
          error_msg ("merge: %s measures %s, the files before it do not; "
                     "merge files of each set of measurements apart",
                     path, d->meas_names[k]);
          return -1;
        }
    }
  if (d->nmeas != acc->nmeas)
    {
      for (uint32_t o = 0; o < acc->nmeas; o++)
        {
          uint32_t k = 0;
          while (k < d->nmeas && strcmp (acc->meas_names[o], d->meas_names[k]))
            k++;
          if (k == d->nmeas)
            {
              error_msg ("merge: %s does not measure %s, the files before "
                         "it do; merge files of each set of measurements "
                         "apart", path, acc->meas_names[o]);
              return -1;
            }
        }
    }
  return 0;
}

/* Add the measured values of function F (D's values, mapped by VMAP) to T.  */
static void
acc_meas_add (const struct accumulator *acc, struct acc_fn *t,
              const struct tally_data_fn *f, uint32_t nmeas,
              const uint32_t *vmap)
{
  if (!f->meas)
    return;
  if (!t->meas)
    {
      t->meas = xmalloc (2 * acc->nmeas * sizeof *t->meas);
      memset (t->meas, 0, 2 * acc->nmeas * sizeof *t->meas);
    }
  for (uint32_t k = 0; k < nmeas; k++)
    {
      t->meas[2 * vmap[k]] = add_sat (t->meas[2 * vmap[k]], f->meas[2 * k]);
      t->meas[2 * vmap[k] + 1] = add_sat (t->meas[2 * vmap[k] + 1],
                                          f->meas[2 * k + 1]);
    }
}

/* The frame of ACC that F is (same name, or same address if unnamed),
   added if new.  */
static uint32_t
acc_frame (struct accumulator *acc, const struct tally_data_frame *f)
{
  for (size_t i = 0; i < acc->nframes; i++)
    if (strcmp (acc->frames[i].name, f->name) == 0
        && (*f->name || acc->frames[i].addr == f->addr))
      return (uint32_t) i;
  acc->frames = xgrow (acc->frames, &acc->frames_cap, acc->nframes + 1,
                       sizeof *acc->frames);
  acc->frames[acc->nframes].addr = f->addr;
  acc->frames[acc->nframes].name = xstrdup (f->name);
  return (uint32_t) acc->nframes++;
}

static size_t
node_hash (uint32_t parent, uint32_t rec, uint32_t fn)
{
  uint64_t h = parent * 0x9e3779b97f4a7c15ull ^ rec * 0xc2b2ae3d27d4eb4full
               ^ fn * 0x165667b19e3779f9ull;
  return (size_t) (h ^ h >> 29);
}

/* Room for the events of the nodes so far (nmeas - 1 pairs each).  */
static void
acc_node_events (struct accumulator *acc)
{
  if (acc->nmeas < 2)
    return;
  size_t per = 2 * (size_t) (acc->nmeas - 1), old = acc->node_ev_cap;
  acc->node_ev = xgrow (acc->node_ev, &acc->node_ev_cap,
                        (acc->nnodes + 1) * per, sizeof *acc->node_ev);
  if (acc->node_ev_cap > old)
    memset (acc->node_ev + old, 0,
            (acc->node_ev_cap - old) * sizeof *acc->node_ev);
}

/* The child of node PARENT for (REC, FN), made if new.  */
static uint32_t
acc_node (struct accumulator *acc, uint32_t parent, uint32_t rec, uint32_t fn)
{
  if (2 * (acc->nnodes + 1) > acc->nslots)
    {
      size_t n = acc->nslots ? 2 * acc->nslots : 1024;
      free (acc->slots);
      acc->slots = xmalloc (n * sizeof *acc->slots);
      memset (acc->slots, 0, n * sizeof *acc->slots);
      acc->nslots = n;
      for (size_t i = 1; i < acc->nnodes; i++)
        {
          const struct acc_node *q = &acc->nodes[i];
          size_t h = node_hash (q->parent, q->rec, q->fn);
          while (acc->slots[h & (n - 1)])
            h++;
          acc->slots[h & (n - 1)] = (uint32_t) i;
        }
    }
  size_t h = node_hash (parent, rec, fn);
  for (;; h++)
    {
      uint32_t *s = &acc->slots[h & (acc->nslots - 1)];
      if (!*s)
        {
          if (acc->nnodes >= TALLY_FRAME_ID_BASE)
            {
              error_msg ("merge: too many call paths for one file");
              exit (EXIT_BAD_DATA);
            }
          acc->nodes = xgrow (acc->nodes, &acc->nodes_cap, acc->nnodes + 1,
                              sizeof *acc->nodes);
          acc->nodes[acc->nnodes] = (struct acc_node){ parent, rec, fn, 0, 0, 0 };
          *s = (uint32_t) acc->nnodes;
          acc_node_events (acc);
          return (uint32_t) acc->nnodes++;
        }
      const struct acc_node *q = &acc->nodes[*s];
      if (q->parent == parent && q->rec == rec && q->fn == fn)
        return *s;
    }
}

/* Add input file D (number FILE, at PATH) to ACC: its modules, measured
   values, frames and calls paths.  Returns 0, or EXIT_BAD_DATA (said) when
   its measurements cannot be merged with the earlier files'.  */
static int
acc_add_file (struct accumulator *acc, const struct tally_data *d,
              size_t file, int force, const char *path)
{
  uint32_t vmap[TALLY_MAX_MEAS];
  if (acc_meas_names (acc, d, vmap, path) != 0)
    return EXIT_BAD_DATA;
  size_t *recmap = xmalloc ((d->nmodules + 1) * sizeof *recmap);
  uint32_t **fnmap = xmalloc ((d->nmodules + 1) * sizeof *fnmap);
  for (uint32_t m = 0; m < d->nmodules; m++)
    {
      const struct tally_data_module *mod = &d->modules[m];
      fnmap[m] = xmalloc ((mod->nfns + 1) * sizeof **fnmap);
      recmap[m] = acc_add_module (acc, mod, file, force, fnmap[m]);
      for (uint32_t i = 0; i < mod->nfns; i++)
        acc_meas_add (acc, &acc->mods[recmap[m]].fns[fnmap[m][i]],
                      &mod->fns[i], d->nmeas, vmap);
    }
  if (d->npaths)
    {
      uint32_t *fmap = xmalloc ((d->nframes + 1) * sizeof *fmap);
      for (uint32_t f = 0; f < d->nframes; f++)
        fmap[f] = acc_frame (acc, &d->frames[f]);
      if (!acc->nnodes)
        {
          acc->nodes = xgrow (acc->nodes, &acc->nodes_cap, 1, sizeof *acc->nodes);
          acc->nodes[0] = (struct acc_node){ UINT32_MAX, UINT32_MAX, UINT32_MAX,
                                             0, 0, 0 };
          acc->nnodes = 1;
        }
      acc->paths = 1;
      if (d->path_depth > acc->depth)
        acc->depth = d->path_depth;
      acc->lost = add_sat (acc->lost, d->path_lost);
      uint32_t *map = xmalloc (d->npaths * sizeof *map);
      map[0] = 0;
      for (uint32_t i = 1; i < d->npaths; i++)
        {
          const struct tally_data_path *p = &d->paths[i];
          map[i] = map[p->parent]; /* the reader checked parent < i */
          if (p->module == UINT32_MAX)
            continue; /* a node the writer had not finished */
          uint32_t k;
          if (p->module == TALLY_DATA_FRAME)
            k = acc_node (acc, map[i], UINT32_MAX, fmap[p->fn]);
          else
            k = acc_node (acc, map[i], (uint32_t) recmap[p->module],
                          fnmap[p->module][p->fn]);
          struct acc_node *n = &acc->nodes[k];
          n->calls = add_sat (n->calls, p->calls);
          n->incl = add_sat (n->incl, p->incl);
          n->excl = add_sat (n->excl, p->excl);
          map[i] = k;
          /* Event e is value e + 1 of the MEAS names.  */
          for (uint32_t e = 0; e < d->path_nevents; e++)
            if (vmap[e + 1] > 0)
              {
                uint64_t *t = acc->node_ev
                              + ((size_t) k * (acc->nmeas - 1) + vmap[e + 1] - 1) * 2;
                const uint64_t *v = d->path_events
                                    + ((size_t) i * d->path_nevents + e) * 2;
                t[0] = add_sat (t[0], v[0]);
                t[1] = add_sat (t[1], v[1]);
              }
        }
      free (map);
      free (fmap);
    }
  for (uint32_t m = 0; m < d->nmodules; m++)
    free (fnmap[m]);
  free (fnmap);
  free (recmap);
  return 0;
}

/* A stream writer that keeps the CRC and the byte count; the fixed parts
   are encoded by tally/format.h's codec.  */
struct out_writer
{
  FILE *f;
  uint32_t crc;
  uint64_t total;
};

static void
out_bytes (struct out_writer *w, const void *p, size_t n)
{
  w->crc = tally_crc32 (w->crc, p, n);
  w->total += n;
  fwrite (p, 1, n, w->f);
}

static void
out_u32 (struct out_writer *w, uint32_t v)
{
  unsigned char b[4];
  tally_le_put32 (b, v);
  out_bytes (w, b, sizeof b);
}

static void
out_u64 (struct out_writer *w, uint64_t v)
{
  unsigned char b[8];
  tally_le_put64 (b, v);
  out_bytes (w, b, sizeof b);
}

static void
out_str (struct out_writer *w, const char *s)
{
  size_t n = strlen (s);
  out_u32 (w, (uint32_t) n);
  out_bytes (w, s, n);
}

static uint64_t
str_bytes (const char *s)
{
  return TALLY_STR_FIXED + strlen (s);
}

/* Write ACC to PATH (tools/output.c).  Returns 0 or EXIT_BAD_DATA. */
static int
write_merged (const char *path, const struct accumulator *acc,
              const char *program, uint32_t flags)
{
  uint64_t size = TALLY_HEADER_FIXED + str_bytes (program) + TALLY_TRAILER_SIZE;
  for (size_t i = 0; i < acc->n; i++)
    {
      const struct acc_module *a = &acc->mods[i];
      size += TALLY_MODREC_FIXED + str_bytes (a->source)
              + str_bytes (a->directory);
      for (size_t j = 0; j < a->nfns; j++)
        size += str_bytes (a->fns[j].name) + str_bytes (a->fns[j].symbol)
                + str_bytes (a->fns[j].origin) + str_bytes (a->fns[j].file)
                + TALLY_FNREC_FIXED + 8 * (uint64_t) a->fns[j].ncounters
                + TALLY_STR_FIXED + a->fns[j].map_size;
    }
  if (acc->n > UINT32_MAX)
    {
      error_msg ("merge: too many modules for one file");
      return EXIT_BAD_DATA;
    }
  uint64_t nfns_total = 0;
  for (size_t i = 0; i < acc->n; i++)
    nfns_total += acc->mods[i].nfns;
  if (acc->paths && nfns_total >= TALLY_FRAME_ID_BASE)
    {
      error_msg ("merge: too many functions for the call paths of one file");
      return EXIT_BAD_DATA;
    }
  if (acc->nmeas)
    {
      size += TALLY_MEAS_FIXED + 4 * (uint64_t) acc->n
              + TALLY_MEAS_PAIR * (uint64_t) acc->nmeas * nfns_total;
      for (uint32_t k = 0; k < acc->nmeas; k++)
        size += str_bytes (acc->meas_names[k]);
    }
  if (acc->paths && acc->nframes)
    {
      size += TALLY_FRAMES_FIXED;
      for (size_t f = 0; f < acc->nframes; f++)
        size += TALLY_FRAME_FIXED + str_bytes (acc->frames[f].name);
    }
  if (acc->paths)
    size += TALLY_PATH_FIXED + 4 * (uint64_t) acc->n
            + TALLY_PATH_NODE * (uint64_t) (acc->nnodes - 1);
  if (acc->paths && acc->nmeas > 1)
    size += TALLY_PEVT_FIXED
            + TALLY_MEAS_PAIR * (uint64_t) (acc->nmeas - 1) * (acc->nnodes - 1);
  struct tally_out o;
  char err[512];
  if (strcmp (path, "-") == 0 && isatty (STDOUT_FILENO))
    {
      /* A data file holds any bytes a name has, escape sequences too.  */
      error_msg ("merge: -o -: standard output is a terminal, and the "
                 "output is a binary data file; redirect it, or give -o "
                 "FILE");
      return EXIT_BAD_DATA;
    }
  if (tally_out_open (&o, path, err, sizeof err) != 0)
    {
      error_msg ("merge: %s", err);
      return EXIT_BAD_DATA;
    }
  struct out_writer w = { o.f, 0, 0 };
  /* The fixed parts are encoded here; the header is the largest.  pid 0:
     no single process wrote the file.  */
  unsigned char fixed[TALLY_HEADER_FIXED];
  struct tally_hdr h = { TALLY_FILE_VERSION, TALLY_BYTE_ORDER_MARK, size, 0,
                         (uint64_t) time (NULL), (uint32_t) acc->n, flags };
  tally_hdr_put (fixed, &h);
  out_bytes (&w, fixed, TALLY_HEADER_FIXED);
  out_str (&w, program);
  for (size_t i = 0; i < acc->n; i++)
    {
      const struct acc_module *a = &acc->mods[i];
      struct tally_modrec m = { a->abi_version, a->checksum, a->flags,
                                (uint32_t) a->nfns };
      tally_modrec_put (fixed, &m);
      out_bytes (&w, fixed, TALLY_MODREC_FIXED);
      out_str (&w, a->source);
      out_str (&w, a->directory);
      for (size_t j = 0; j < a->nfns; j++)
        {
          const struct acc_fn *f = &a->fns[j];
          out_str (&w, f->name);
          out_str (&w, f->symbol);
          out_str (&w, f->origin);
          out_str (&w, f->file);
          struct tally_fnrec fr = { f->line, f->flags, f->ncounters, 0 };
          tally_fnrec_put (fixed, &fr);
          out_bytes (&w, fixed, TALLY_FNREC_FIXED);
          for (uint32_t k = 0; k < f->ncounters; k++)
            out_u64 (&w, f->counters[k]);
          out_u32 (&w, f->map_size);
          if (f->map_size)
            out_bytes (&w, f->map, f->map_size);
        }
    }
  if (acc->nmeas)
    {
      struct tally_meashdr mh = { acc->nmeas };
      tally_meashdr_put (fixed, &mh);
      out_bytes (&w, fixed, TALLY_MEAS_HEAD);
      for (uint32_t k = 0; k < acc->nmeas; k++)
        out_str (&w, acc->meas_names[k]);
      out_u32 (&w, (uint32_t) acc->n);
      for (size_t i = 0; i < acc->n; i++)
        {
          out_u32 (&w, (uint32_t) acc->mods[i].nfns);
          for (size_t j = 0; j < acc->mods[i].nfns; j++)
            for (uint32_t k = 0; k < acc->nmeas; k++)
              {
                const uint64_t *m = acc->mods[i].fns[j].meas;
                struct tally_measpair pair = { m ? m[2 * k] : 0,
                                               m ? m[2 * k + 1] : 0 };
                tally_measpair_put (fixed, &pair);
                out_bytes (&w, fixed, TALLY_MEAS_PAIR);
              }
        }
    }
  if (acc->paths && acc->nframes)
    {
      struct tally_frmshdr fh = { (uint32_t) acc->nframes };
      tally_frmshdr_put (fixed, &fh);
      out_bytes (&w, fixed, TALLY_FRAMES_FIXED);
      for (size_t f = 0; f < acc->nframes; f++)
        {
          struct tally_frmsent fe = { TALLY_FRAME_ID_BASE + (uint32_t) f,
                                      acc->frames[f].addr };
          tally_frmsent_put (fixed, &fe);
          out_bytes (&w, fixed, TALLY_FRAME_FIXED);
          out_str (&w, acc->frames[f].name);
        }
    }
  if (acc->paths)
    {
      struct tally_pathhdr ph = { acc->depth, acc->lost, (uint32_t) acc->n };
      tally_pathhdr_put (fixed, &ph);
      out_bytes (&w, fixed, TALLY_PATH_HEAD);
      uint32_t base = 0;
      for (size_t i = 0; i < acc->n; i++)
        {
          out_u32 (&w, base);
          base += (uint32_t) acc->mods[i].nfns;
        }
      out_u32 (&w, (uint32_t) (acc->nnodes - 1));
      /* Function ids: record r's functions from its base.  */
      uint32_t *bases = xmalloc ((acc->n + 1) * sizeof *bases);
      base = 0;
      for (size_t i = 0; i < acc->n; i++)
        {
          bases[i] = base;
          base += (uint32_t) acc->mods[i].nfns;
        }
      for (size_t i = 1; i < acc->nnodes; i++)
        {
          const struct acc_node *q = &acc->nodes[i];
          struct tally_pnode n = {
            q->parent,
            q->rec == UINT32_MAX ? TALLY_FRAME_ID_BASE + q->fn
                                 : bases[q->rec] + q->fn,
            q->calls, q->incl, q->excl < q->incl ? q->excl : q->incl };
          tally_pnode_put (fixed, &n);
          out_bytes (&w, fixed, TALLY_PATH_NODE);
        }
      free (bases);
      if (acc->nmeas > 1)
        {
          uint32_t ne = acc->nmeas - 1;
          struct tally_pevthdr eh = { ne, (uint32_t) (acc->nnodes - 1) };
          tally_pevthdr_put (fixed, &eh);
          out_bytes (&w, fixed, TALLY_PEVT_FIXED);
          for (size_t i = 1; i < acc->nnodes; i++)
            for (uint32_t e = 0; e < ne; e++)
              {
                const uint64_t *t = acc->node_ev + (i * ne + e) * 2;
                struct tally_measpair pair = { t[0], t[1] < t[0] ? t[1] : t[0] };
                tally_measpair_put (fixed, &pair);
                out_bytes (&w, fixed, TALLY_MEAS_PAIR);
              }
        }
    }
  struct tally_trailer trl = { w.crc, size };
  tally_trailer_put (fixed, &trl);
  out_bytes (&w, fixed, TALLY_TRAILER_SIZE);
  if (w.total != size)
    {
      error_msg ("merge: cannot write %s: size mismatch (internal error)",
                 path);
      tally_out_discard (&o);
      return EXIT_BAD_DATA;
    }
  if (tally_out_close (&o, err, sizeof err) != 0)
    {
      error_msg ("merge: %s", err);
      return EXIT_BAD_DATA;
    }
  return 0;
}

int
cmd_merge (int argc, char **argv)
{
  struct cli_parsed a;
  const char *out, *v;
  int status = cli_parse (argc, argv, &a, NULL), force, jobs = 1;
  if (status == CLI_GO && (v = a.v[OPT_JOBS]))
    {
      /* -j N, -jN, -j=N, --jobs=N, --jobs N */
      if (a.word[OPT_JOBS][1] != '-' && *v == '=')
        v++;
      char *end;
      long n = strtol (v, &end, 10);
      if (!*v || *end || n < 1 || n > 256)
        status = cli_usage ("merge", "-j needs a number of threads from 1 "
                            "to 256");
      jobs = (int) n;
    }
  out = a.v[OPT_OUTPUT];
  force = a.v[OPT_FORCE] != NULL;
  if (status != CLI_GO)
    {
      cli_parsed_free (&a);
      return status;
    }
  const char **paths = a.files;
  size_t npaths = a.nfiles;

  struct accumulator acc;
  memset (&acc, 0, sizeof acc);
  char *program = NULL;
  uint32_t flags = TALLY_FILE_AT_EXIT;
  size_t file = 0;
  status = 0;
  struct tally_builds *builds = tally_builds_new ();
  /* One file at a time (memory: the files being read and the result);
     -j N reads ahead on N - 1 threads (tools/prefetch.c).  */
  struct tally_prefetch *pf = tally_prefetch_start (paths, npaths, jobs);
  if (!pf)
    {
      error_msg ("merge: out of memory");
      status = EXIT_BAD_DATA;
    }
  /* After a bad file the others are still read and checked, not added,
     so that every bad one is named at once (as report does).  */
  for (size_t pi = 0; pi < npaths && pf; pi++)
    {
      const char *a = paths[pi];
      struct tally_data d;
      char err[256];
      char merr[512];
      if (tally_prefetch_next (pf, &d, err, sizeof err) != 0)
        {
          error_msg ("%s: %s", a, err);
          status = EXIT_BAD_DATA;
          continue;
        }
      /* Its maps are copied into the output: one tally report could not
         decode would make the output unreadable.  */
      if (tally_data_check_maps (&d, merr, sizeof merr) != 0)
        {
          error_msg ("%s: %s; nothing written", a, merr);
          tally_data_free (&d);
          status = EXIT_BAD_DATA;
          continue;
        }
      if (status)
        {
          tally_data_free (&d);
          continue;
        }
      note_unfinished (a, &d);
      if (d.ranks)
        fprintf (stderr, "tally: note: %s: the per-rank statistics of its "
                 "%lu ranks (RNKS) are not merged, only the sums\n", a,
                 (unsigned long) d.ranks);
      if (!program)
        program = xstrdup (d.program);
      else if (strcmp (program, d.program) != 0)
        program[0] = 0; /* several programs: name none */
      flags &= d.flags;
      tally_builds_add (builds, a, &d);
      status = acc_add_file (&acc, &d, file, force, a);
      tally_data_free (&d);
      file++;
    }
  tally_prefetch_end (pf);
  if (!status)
    acc_fix_callers (&acc);
  size_t forced = 0;
  for (size_t i = 0; i < acc.n; i++)
    forced += acc.mods[i].forced;
  if (!status && tally_builds_check (builds, "merge", force) != 0)
    status = EXIT_BAD_DATA;
  tally_builds_free (builds);
  if (!status)
    status = write_merged (out, &acc, program ? program : "", flags);
  if (!status && forced)
    fprintf (stderr, "tally: note: --force merged other builds into %zu "
             "module%s\n", forced, forced == 1 ? "" : "s");
  for (size_t i = 0; i < acc.n; i++)
    {
      struct acc_module *a = &acc.mods[i];
      for (size_t j = 0; j < a->nfns; j++)
        {
          free (a->fns[j].name);
          free (a->fns[j].symbol);
          free (a->fns[j].origin);
          free (a->fns[j].file);
          free (a->fns[j].counters);
          free (a->fns[j].map);
          free (a->fns[j].meas);
        }
      free (a->fns);
      free (a->source);
      free (a->directory);
    }
  free (acc.mods);
  for (uint32_t k = 0; k < acc.nmeas; k++)
    free (acc.meas_names[k]);
  for (size_t f = 0; f < acc.nframes; f++)
    free (acc.frames[f].name);
  free (acc.frames);
  free (acc.nodes);
  free (acc.node_ev);
  free (acc.slots);
  free (program);
  cli_parsed_free (&a);
  return status;
}

