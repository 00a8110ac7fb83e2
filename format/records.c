/* The optional records of a data file after its modules, as the strict
   reader (format/datafile.c) meets them: MEAS (measure=cycles), FRMS
   (paths=on with libunwind), PATH (paths=on), PEVT (paths=on with
   measure=papi), RNKS (libtally-mpi).  Each checks every count against
   the bytes left and against the records before it.  */
#include <stdlib.h>

#include "reader.h"

/* The optional MEAS record (measure=cycles) after the modules: per module
   record, in order, its functions' inclusive and exclusive values.  */
int
parse_meas (struct parser *p, struct tally_data *d)
{
  size_t at = p->pos;
  uint32_t tag, nvalues, nrecords;
  if (take_u32 (p, &tag, "measurement tag") != 0
      || take_u32 (p, &nvalues, "measurement value count") != 0)
    return -1;
  if (nvalues == 0 || nvalues > TALLY_MAX_MEAS)
    return fail (p->err, p->errlen, "measurement record at byte %zu: %lu "
                 "values per function, expected 1 to %u: file is corrupt",
                 at, (unsigned long) nvalues, (unsigned) TALLY_MAX_MEAS);
  for (uint32_t v = 0; v < nvalues; v++)
    if (take_str (p, &d->meas_names[v], "measurement value name") != 0)
      return -1;
  if (take_u32 (p, &nrecords, "measurement module count") != 0)
    return -1;
  if (nrecords != d->nmodules)
    return fail (p->err, p->errlen, "measurement record at byte %zu covers "
                 "%lu modules, the file holds %lu: file is corrupt", at,
                 (unsigned long) nrecords, (unsigned long) d->nmodules);
  for (uint32_t mi = 0; mi < d->nmodules; mi++)
    {
      struct tally_data_module *m = &d->modules[mi];
      uint32_t nfns;
      if (take_u32 (p, &nfns, "measurement function count") != 0)
        return -1;
      if (nfns != m->nfns)
        return fail (p->err, p->errlen, "measurement record: module %lu has "
                     "%lu functions, the record gives %lu: file is corrupt",
                     (unsigned long) mi, (unsigned long) m->nfns,
                     (unsigned long) nfns);
      size_t per_fn = (size_t) nvalues * TALLY_MEAS_PAIR;
      if (nfns > left (p) / per_fn)
        return fail (p->err, p->errlen, "measurement record: module %lu's "
                     "values run past the end of the records: file is "
                     "corrupt", (unsigned long) mi);
      for (uint32_t fi = 0; fi < nfns; fi++)
        {
          if (per_fn > p->pool_size - p->pool_low - p->pool_high)
            return fail (p->err, p->errlen, "internal error: measurement "
                         "pool exhausted");
          uint64_t *vals = (uint64_t *) (void *) (p->pool + p->pool_low);
          p->pool_low += per_fn;
          for (uint32_t k = 0; k < 2 * nvalues; k++)
            {
              vals[k] = tally_le_get64 (p->buf + p->pos);
              p->pos += 8;
            }
          for (uint32_t v = 0; v < nvalues; v++)
            if (vals[2 * v + 1] > vals[2 * v])
              return fail (p->err, p->errlen, "measurement record: module "
                           "%lu function %lu: exclusive %s above inclusive: "
                           "file is corrupt", (unsigned long) mi,
                           (unsigned long) fi, d->meas_names[v]);
          m->fns[fi].meas = vals;
        }
    }
  d->nmeas = nvalues;
  return 0;
}

/* The optional FRMS record (paths=on with libunwind), before PATH.  */
int
parse_frames (struct parser *p, struct tally_data *d)
{
  size_t at = p->pos;
  uint32_t tag, n;
  if (take_u32 (p, &tag, "frames tag") != 0
      || take_u32 (p, &n, "frame count") != 0)
    return -1;
  if (n == 0 || n > left (p) / (TALLY_FRAME_FIXED + TALLY_STR_FIXED))
    return fail (p->err, p->errlen, "frames record at byte %zu: %lu frames "
                 "cannot be, or fit in the %zu bytes left: file is corrupt",
                 at, (unsigned long) n, left (p));
  d->frames = calloc (n, sizeof *d->frames);
  if (!d->frames)
    return fail (p->err, p->errlen, "out of memory");
  d->nframes = n;
  for (uint32_t i = 0; i < n; i++)
    {
      struct tally_data_frame *f = &d->frames[i];
      if (take_u32 (p, &f->id, "frame id") != 0
          || take_u64 (p, &f->addr, "frame address") != 0
          || take_str (p, &f->name, "frame name") != 0)
        return -1;
      if (f->id < TALLY_FRAME_ID_BASE || (i && f->id <= f[-1].id))
        return fail (p->err, p->errlen, "frame %lu: id %#lx is below %#lx "
                     "or not above the one before: file is corrupt",
                     (unsigned long) i, (unsigned long) f->id,
                     (unsigned long) TALLY_FRAME_ID_BASE);
    }
  return 0;
}

/* The index of the frame with id ID in D's FRMS record, or UINT32_MAX.  */
static uint32_t
find_frame (const struct tally_data *d, uint32_t id)
{
  uint32_t lo = 0, hi = d->nframes;
  while (lo < hi)
    {
      uint32_t mid = lo + (hi - lo) / 2;
      if (d->frames[mid].id == id)
        return mid;
      if (d->frames[mid].id < id)
        lo = mid + 1;
      else
        hi = mid;
    }
  return UINT32_MAX;
}

/* The optional PATH record (paths=on), after MEAS and FRMS.  */
int
parse_paths (struct parser *p, struct tally_data *d)
{
  size_t at = p->pos;
  uint32_t tag, nrecords, n;
  if (take_u32 (p, &tag, "path tag") != 0
      || take_u32 (p, &d->path_depth, "path depth limit") != 0
      || take_u64 (p, &d->path_lost, "lost path count") != 0
      || take_u32 (p, &nrecords, "path module count") != 0)
    return -1;
  if (d->path_depth > TALLY_PATH_DEPTH_MAX)
    return fail (p->err, p->errlen, "path record at byte %zu: depth limit "
                 "%lu is above %u: file is corrupt", at,
                 (unsigned long) d->path_depth, TALLY_PATH_DEPTH_MAX);
  if (nrecords != d->nmodules)
    return fail (p->err, p->errlen, "path record at byte %zu covers %lu "
                 "modules, the file holds %lu: file is corrupt", at,
                 (unsigned long) nrecords, (unsigned long) d->nmodules);
  if (nrecords > left (p) / 4)
    return fail (p->err, p->errlen, "path record at byte %zu: module bases "
                 "run past the end of the records: file is corrupt", at);
  uint32_t *bases = calloc (nrecords + 1, sizeof *bases), *depth = NULL;
  if (!bases)
    return fail (p->err, p->errlen, "out of memory");
  for (uint32_t i = 0; i < nrecords; i++)
    {
      bases[i] = tally_le_get32 (p->buf + p->pos);
      p->pos += 4;
    }
  int rc = -1;
  if (take_u32 (p, &n, "path node count") != 0)
    goto out;
  if (n > left (p) / TALLY_PATH_NODE)
    {
      fail (p->err, p->errlen, "path record at byte %zu: %lu nodes cannot "
            "fit in the %zu bytes left: file is corrupt", at,
            (unsigned long) n, left (p));
      goto out;
    }
  d->paths = calloc ((size_t) n + 1, sizeof *d->paths);
  /* Each node's depth (the root's is 0): none deeper than the limit, so
     the tools' tree walks and printed paths stay bounded.  */
  depth = calloc ((size_t) n + 1, sizeof *depth);
  if (!d->paths || !depth)
    {
      fail (p->err, p->errlen, "out of memory");
      goto out;
    }
  d->paths[0].parent = d->paths[0].module = d->paths[0].fn = UINT32_MAX;
  for (uint32_t i = 1; i <= n; i++)
    {
      struct tally_data_path *q = &d->paths[i];
      struct tally_pnode node;
      tally_pnode_get (p->buf + p->pos, &node);
      p->pos += TALLY_PATH_NODE;
      uint32_t id = node.fn;
      q->parent = node.parent;
      q->calls = node.calls;
      q->incl = node.incl;
      q->excl = node.excl;
      q->module = q->fn = UINT32_MAX;
      if (q->parent >= i)
        {
          fail (p->err, p->errlen, "path node %lu: parent %lu is not an "
                "earlier node: file is corrupt", (unsigned long) i,
                (unsigned long) q->parent);
          goto out;
        }
      depth[i] = depth[q->parent] + 1;
      if (depth[i] > d->path_depth)
        {
          fail (p->err, p->errlen, "path node %lu is %lu calls deep, deeper "
                "than the file's depth limit %lu: file is corrupt",
                (unsigned long) i, (unsigned long) depth[i],
                (unsigned long) d->path_depth);
          goto out;
        }
      if (q->excl > q->incl)
        {
          fail (p->err, p->errlen, "path node %lu: exclusive cycles above "
                "inclusive: file is corrupt", (unsigned long) i);
          goto out;
        }
      if (id == UINT32_MAX)
        {
          if (q->calls || q->incl)
            {
              fail (p->err, p->errlen, "path node %lu has values but no "
                    "function: file is corrupt", (unsigned long) i);
              goto out;
            }
          continue;
        }
      if (id >= TALLY_FRAME_ID_BASE)
        {
          q->fn = find_frame (d, id);
          if (q->fn == UINT32_MAX)
            {
              fail (p->err, p->errlen, "path node %lu: outside frame %#lx is "
                    "not in the frames record: file is corrupt",
                    (unsigned long) i, (unsigned long) id);
              goto out;
            }
          if (q->calls || q->incl)
            {
              fail (p->err, p->errlen, "path node %lu: an outside frame "
                    "with values: file is corrupt", (unsigned long) i);
              goto out;
            }
          q->module = TALLY_DATA_FRAME;
          continue;
        }
      for (uint32_t m = 0; m < nrecords && q->module == UINT32_MAX; m++)
        if (bases[m] != UINT32_MAX && id >= bases[m]
            && id - bases[m] < d->modules[m].nfns)
          {
            q->module = m;
            q->fn = id - bases[m];
          }
      if (q->module == UINT32_MAX)
        {
          fail (p->err, p->errlen, "path node %lu: function id %lu is in no "
                "module: file is corrupt", (unsigned long) i,
                (unsigned long) id);
          goto out;
        }
    }
  d->npaths = n + 1;
  rc = 0;
out:
  free (bases);
  free (depth);
  return rc;
}

/* The optional PEVT record (paths=on with measure=papi), after PATH: the
   events of each node.  Values of a node without a function are ignored
   (the writer may have seen it filled after it wrote PATH).  */
int
parse_path_events (struct parser *p, struct tally_data *d)
{
  size_t at = p->pos;
  uint32_t tag, e, n;
  if (take_u32 (p, &tag, "path events tag") != 0
      || take_u32 (p, &e, "path event count") != 0
      || take_u32 (p, &n, "path events node count") != 0)
    return -1;
  if (e == 0 || e + 1 != d->nmeas)
    return fail (p->err, p->errlen, "path events record at byte %zu: %lu "
                 "events, the measurement record names %lu: file is corrupt",
                 at, (unsigned long) e,
                 (unsigned long) (d->nmeas ? d->nmeas - 1 : 0));
  if ((uint64_t) n + 1 != d->npaths)
    return fail (p->err, p->errlen, "path events record at byte %zu covers "
                 "%lu nodes, the path record has %lu: file is corrupt", at,
                 (unsigned long) n, (unsigned long) (d->npaths - 1));
  if (n && n > left (p) / ((size_t) e * TALLY_MEAS_PAIR))
    return fail (p->err, p->errlen, "path events record at byte %zu: the "
                 "values run past the end of the records: file is corrupt",
                 at);
  d->path_events = calloc ((size_t) d->npaths * e * 2, sizeof *d->path_events);
  if (!d->path_events)
    return fail (p->err, p->errlen, "out of memory");
  for (uint32_t i = 1; i <= n; i++)
    for (uint32_t k = 0; k < e; k++)
      {
        uint64_t incl = tally_le_get64 (p->buf + p->pos);
        uint64_t excl = tally_le_get64 (p->buf + p->pos + 8);
        p->pos += TALLY_MEAS_PAIR;
        if (excl > incl)
          return fail (p->err, p->errlen, "path node %lu: exclusive %s above "
                       "inclusive: file is corrupt", (unsigned long) i,
                       d->meas_names[k + 1]);
        if (d->paths[i].module == UINT32_MAX
            || d->paths[i].module == TALLY_DATA_FRAME)
          continue;
        d->path_events[((size_t) i * e + k) * 2] = incl;
        d->path_events[((size_t) i * e + k) * 2 + 1] = excl;
      }
  d->path_nevents = e;
  return 0;
}

/* The optional RNKS record (libtally-mpi), last: per module record the
   per-rank minimum, maximum and rank of the maximum of every value.  */
int
parse_ranks (struct parser *p, struct tally_data *d)
{
  size_t at = p->pos;
  uint32_t tag, version, size, nrecords;
  if (take_u32 (p, &tag, "ranks tag") != 0
      || take_u32 (p, &version, "ranks record version") != 0
      || take_u32 (p, &size, "job size") != 0
      || take_u32 (p, &nrecords, "ranks module count") != 0)
    return -1;
  if (version != TALLY_RANKS_VERSION)
    return fail (p->err, p->errlen, "ranks record at byte %zu has version "
                 "%lu; this tally reads version %u", at,
                 (unsigned long) version, (unsigned) TALLY_RANKS_VERSION);
  if (size == 0)
    return fail (p->err, p->errlen, "ranks record at byte %zu: a job of 0 "
                 "ranks: file is corrupt", at);
  if (nrecords != d->nmodules)
    return fail (p->err, p->errlen, "ranks record at byte %zu covers %lu "
                 "modules, the file holds %lu: file is corrupt", at,
                 (unsigned long) nrecords, (unsigned long) d->nmodules);
  d->rank_stats = calloc (d->nmodules ? d->nmodules : 1, sizeof *d->rank_stats);
  if (!d->rank_stats)
    return fail (p->err, p->errlen, "out of memory");
  d->ranks = size;
  for (uint32_t mi = 0; mi < d->nmodules; mi++)
    {
      struct tally_data_module *m = &d->modules[mi];
      struct tally_data_ranks *r = &d->rank_stats[mi];
      uint32_t reserved;
      uint64_t nvalues = 0, want = 0;
      if (take_u32 (p, &r->nranks, "ranks holding a module") != 0
          || take_u32 (p, &reserved, "ranks reserved field") != 0
          || take_u64 (p, &nvalues, "ranks value count") != 0)
        return -1;
      for (uint32_t fi = 0; fi < m->nfns; fi++)
        want += m->fns[fi].ncounters + 2 * (uint64_t) d->nmeas;
      if (r->nranks == 0 || r->nranks > size)
        return fail (p->err, p->errlen, "ranks record: module %lu is held by "
                     "%lu ranks of %lu: file is corrupt", (unsigned long) mi,
                     (unsigned long) r->nranks, (unsigned long) size);
      if (nvalues != want)
        return fail (p->err, p->errlen, "ranks record: module %lu has %llu "
                     "values, the record gives %llu: file is corrupt",
                     (unsigned long) mi, (unsigned long long) want,
                     (unsigned long long) nvalues);
      if (nvalues > left (p) / TALLY_RANKS_VALUE)
        return fail (p->err, p->errlen, "ranks record: module %lu's values "
                     "run past the end of the records: file is corrupt",
                     (unsigned long) mi);
      r->nvalues = nvalues;
      size_t n = nvalues ? (size_t) nvalues : 1;
      r->min = malloc (n * sizeof *r->min);
      r->max = malloc (n * sizeof *r->max);
      r->maxrank = malloc (n * sizeof *r->maxrank);
      if (!r->min || !r->max || !r->maxrank)
        return fail (p->err, p->errlen, "out of memory");
      for (uint64_t k = 0; k < nvalues; k++)
        {
          const unsigned char *q = p->buf + p->pos;
          r->min[k] = tally_le_get64 (q);
          r->max[k] = tally_le_get64 (q + TALLY_RANKS_MAX);
          r->maxrank[k] = tally_le_get32 (q + TALLY_RANKS_MAXRANK);
          p->pos += TALLY_RANKS_VALUE;
          if (r->min[k] > r->max[k] || r->maxrank[k] >= size)
            return fail (p->err, p->errlen, "ranks record: module %lu value "
                         "%llu: min %llu, max %llu at rank %lu of %lu: file "
                         "is corrupt", (unsigned long) mi,
                         (unsigned long long) k, (unsigned long long) r->min[k],
                         (unsigned long long) r->max[k],
                         (unsigned long) r->maxrank[k], (unsigned long) size);
        }
    }
  return 0;
}
