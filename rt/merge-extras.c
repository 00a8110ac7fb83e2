/* Merge-on-write of the records after the modules: MEAS (measured values
 * per function), FRMS (functions of frames below the instrumented code) and
 * PATH (the calling-context tree).
 *
 * merge-write.c pairs this process's module records ("ours") with the
 * existing file's ("old") and writes ours first, then the old records no
 * one of ours paired with.  Here the rest follows the same pairing, without
 * malloc (mmap'ed scratch) and in time linear in the records and nodes:
 *
 * 1. MEAS: a function's values are the sums of its values in the two paired
 *    records; an unpaired record keeps its own; a side without MEAS gives
 *    zeros (as a writer does for modules it does not measure).  The value
 *    names must be the same set on both sides (merge-write.c checks that
 *    first and keeps the files apart otherwise); they may come in another order.
 * 2. FRMS: the union of the two sides' frames, the old ones first; a frame
 *    is its symbol name, or its address when it has none.  Ids are
 *    renumbered from TALLY_FRAME_ID_BASE in output order.
 * 3. PATH: a node is the path of function keys from the root, a key being
 *    (output module record, function index) or an output frame.  The old
 *    tree, then ours, is folded into one tree through a hash table of
 *    (output parent, key); calls and cycles add up.  Output function ids
 *    are dense: record r's base is the number of functions before it.
 *    Nodes the writer had not finished (id ~0) fold into their parent.
 *
 * The baseline.  Like the counters (merge-write.c, step 6), what this
 * process merged is remembered so that its next merged write adds only what came
 * after: the measured values by function id, the tree's values by node
 * index (nodes are never removed), as read for the last successful write.
 * ("Read once": the values serialised for the write are the ones kept.)  */
#include <string.h>
#include <sys/mman.h>

#include "rt.h"
#include "tally/format.h"

/* A baseline: the values a write read from this process's records.  */
struct baseline
{
  /* Values per function: v (inclusive, exclusive) pairs, by id.  */
  uint64_t *meas;
  size_t meas_len; /* bytes mapped */
  uint32_t meas_ids, v;
  /* The tree: calls, inclusive, exclusive per node index, and `lost`.  */
  uint64_t *nodes;
  size_t nodes_len;
  uint32_t nnodes;
  uint64_t lost;
  /* The events per node: ne (inclusive, exclusive) pairs per node.  */
  uint64_t *nev;
  size_t nev_len;
  uint32_t nev_nodes, ne;
};
/* The baseline and the one the write in progress will make; guarded by
   the dump lock (records.c).  */
static struct baseline base, next;

static uint64_t
add_sat (uint64_t a, uint64_t b)
{
  return a + b < a ? UINT64_MAX : a + b;
}

static void *
map (size_t len)
{
  void *p = mmap (NULL, len ? len : 1, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

static void
unmap (void *p, size_t len)
{
  if (p)
    munmap (p, len ? len : 1);
}

void
tally_rt_extras_locate (const unsigned char *buf, size_t pos, size_t end,
                        struct tally_rt_extras *x)
{
  memset (x, 0, sizeof *x);
  x->end = end;
  if (end - pos >= 4 && tally_le_get32 (buf + pos) == TALLY_TAG_MEAS)
    {
      x->meas = pos;
      x->nmeas = tally_le_get32 (buf + pos + 4);
      const unsigned char *p = buf + pos + 8;
      for (uint32_t i = 0; i < x->nmeas; i++)
        p = tally_rt_skip_str (p);
      uint32_t n = tally_le_get32 (p);
      p += 4;
      x->meas_values = (size_t) (p - buf);
      for (uint32_t r = 0; r < n; r++)
        p += 4 + (size_t) tally_le_get32 (p) * x->nmeas * 16;
      pos = (size_t) (p - buf);
    }
  if (end - pos >= 4 && tally_le_get32 (buf + pos) == TALLY_TAG_FRAMES)
    {
      x->frames = pos;
      x->nframes = tally_le_get32 (buf + pos + 4);
      const unsigned char *p = buf + pos + 8;
      for (uint32_t i = 0; i < x->nframes; i++)
        p = tally_rt_skip_str (p + 12);
      pos = (size_t) (p - buf);
    }
  if (end - pos >= 4 && tally_le_get32 (buf + pos) == TALLY_TAG_PATH)
    {
      x->paths = pos;
      uint32_t n = tally_le_get32 (buf + pos + 16);
      x->npaths = tally_le_get32 (buf + pos + 20 + (size_t) n * 4);
      pos += 24 + (size_t) n * 4 + (size_t) x->npaths * 32;
      if (end - pos >= 4 && tally_le_get32 (buf + pos) == TALLY_TAG_PATH_EVENTS)
        {
          x->pevt = pos;
          x->nevents = tally_le_get32 (buf + pos + 4);
        }
    }
}

/* The I-th value name of the MEAS record at M.  */
static const unsigned char *
meas_name (const unsigned char *m, uint32_t i)
{
  const unsigned char *p = m + 8;
  while (i--)
    p = tally_rt_skip_str (p);
  return p;
}

/* The index of name NAME (a str field) among the V names of MEAS record M,
   or UINT32_MAX.  */
static uint32_t
meas_find (const unsigned char *m, uint32_t v, const unsigned char *name)
{
  const unsigned char *p = m + 8;
  for (uint32_t i = 0; i < v; i++, p = tally_rt_skip_str (p))
    if (tally_le_get32 (p) == tally_le_get32 (name)
        && memcmp (p + 4, name + 4, tally_le_get32 (p)) == 0)
      return i;
  return UINT32_MAX;
}

const char *
tally_rt_meas_conflict (const unsigned char *a, const struct tally_rt_extras *ax,
                        const unsigned char *b, const struct tally_rt_extras *bx)
{
  static char why[160];
  if (!ax->meas || !bx->meas)
    return NULL;
  const unsigned char *odd = NULL;
  const char *whose = "";
  for (uint32_t i = 0; i < bx->nmeas && !odd; i++)
    if (meas_find (a + ax->meas, ax->nmeas, meas_name (b + bx->meas, i))
        == UINT32_MAX)
      {
        odd = meas_name (b + bx->meas, i);
        whose = "it measures";
      }
  for (uint32_t i = 0; i < ax->nmeas && !odd; i++)
    if (meas_find (b + bx->meas, bx->nmeas, meas_name (a + ax->meas, i))
        == UINT32_MAX)
      {
        odd = meas_name (a + ax->meas, i);
        whose = "it does not measure";
      }
  if (!odd)
    return NULL;
  size_t n = 0;
  for (const char *s = whose; *s; s++)
    why[n++] = *s;
  why[n++] = ' ';
  for (uint32_t i = 0; i < tally_le_get32 (odd) && n < 100; i++)
    why[n++] = (char) odd[4 + i];
  const char *tail = ", which this process does not";
  if (whose[3] == 'd') /* "it does not measure" */
    tail = ", which this process does";
  for (const char *s = tail; *s && n + 1 < sizeof why; s++)
    why[n++] = *s;
  why[n] = 0;
  return why;
}

/* Unmap B's values and empty it.  */
static void
forget (struct baseline *b)
{
  unmap (b->meas, b->meas_len);
  unmap (b->nodes, b->nodes_len);
  unmap (b->nev, b->nev_len);
  memset (b, 0, sizeof *b);
}

/* Ours: subtract the baseline, note what was read as the next one.  */

void
tally_rt_extras_delta (unsigned char *buf, const struct tally_rt_extras *x,
                       uint32_t nrec, const uint32_t *nfns, const uint32_t *ids)
{
  forget (&next);
  if (x->meas)
    {
      uint32_t v = x->nmeas, top = 0;
      for (uint32_t r = 0; r < nrec; r++)
        if (ids[r] != UINT32_MAX && nfns[r] && ids[r] + nfns[r] > top)
          top = ids[r] + nfns[r];
      next.meas_len = (size_t) top * v * 16;
      next.meas = (uint64_t *) map (next.meas_len);
      next.meas_ids = next.meas ? top : 0;
      next.v = v;
      unsigned char *p = buf + x->meas_values;
      for (uint32_t r = 0; r < nrec; r++)
        {
          p += 4;
          for (uint32_t i = 0; i < nfns[r]; i++)
            for (uint32_t k = 0; k < v; k++, p += 16)
              {
                uint64_t in = tally_le_get64 (p), ex = tally_le_get64 (p + 8);
                uint64_t id = ids[r] == UINT32_MAX ? UINT64_MAX
                                                   : (uint64_t) ids[r] + i;
                if (id < base.meas_ids && k < base.v)
                  {
                    uint64_t *b = base.meas + (id * base.v + k) * 2;
                    /* The totals only grow: a smaller value read is a
                       race with an update, never less than was merged.  */
                    in = in > b[0] ? in : b[0];
                    ex = ex > b[1] ? ex : b[1];
                  }
                if (id < next.meas_ids)
                  {
                    next.meas[(id * v + k) * 2] = in;
                    next.meas[(id * v + k) * 2 + 1] = ex;
                  }
                if (id < base.meas_ids && k < base.v)
                  {
                    in -= base.meas[(id * base.v + k) * 2];
                    ex -= base.meas[(id * base.v + k) * 2 + 1];
                  }
                tally_le_put64 (p, in);
                tally_le_put64 (p + 8, ex < in ? ex : in); /* racing reads */
              }
        }
    }
  if (x->paths)
    {
      unsigned char *p = buf + x->paths;
      uint64_t lost = tally_le_get64 (p + 8);
      next.lost = lost > base.lost ? lost : base.lost;
      tally_le_put64 (p + 8, next.lost - base.lost);
      uint32_t n = x->npaths;
      p += 20 + (size_t) tally_le_get32 (p + 16) * 4 + 4;
      next.nodes_len = ((size_t) n + 1) * 24;
      next.nodes = (uint64_t *) map (next.nodes_len);
      next.nnodes = next.nodes ? n + 1 : 0;
      for (uint32_t i = 1; i <= n; i++, p += 32)
        {
          uint64_t v[3];
          for (int k = 0; k < 3; k++)
            {
              v[k] = tally_le_get64 (p + 8 + 8 * k);
              uint64_t b = i < base.nnodes ? base.nodes[i * 3 + k] : 0;
              if (v[k] < b)
                v[k] = b;
              if (i < next.nnodes)
                next.nodes[i * 3 + k] = v[k];
              v[k] -= b;
            }
          tally_le_put64 (p + 8, v[0]);
          tally_le_put64 (p + 16, v[1]);
          tally_le_put64 (p + 24, v[2] < v[1] ? v[2] : v[1]);
        }
    }
  if (x->pevt)
    {
      uint32_t e = x->nevents, n = tally_le_get32 (buf + x->pevt + 8);
      unsigned char *p = buf + x->pevt + 12;
      next.nev_len = ((size_t) n + 1) * e * 16;
      next.nev = (uint64_t *) map (next.nev_len);
      next.nev_nodes = next.nev ? n + 1 : 0;
      next.ne = e;
      for (uint32_t i = 1; i <= n; i++)
        for (uint32_t k = 0; k < e; k++, p += 16)
          {
            uint64_t v[2];
            for (int h = 0; h < 2; h++)
              {
                v[h] = tally_le_get64 (p + 8 * h);
                uint64_t b = i < base.nev_nodes && k < base.ne
                                 ? base.nev[((size_t) i * base.ne + k) * 2 + h]
                                 : 0;
                if (v[h] < b)
                  v[h] = b;
                if (i < next.nev_nodes)
                  next.nev[((size_t) i * e + k) * 2 + h] = v[h];
                v[h] -= b;
              }
            tally_le_put64 (p, v[0]);
            tally_le_put64 (p + 8, v[1] < v[0] ? v[1] : v[0]);
          }
    }
}

void
tally_rt_extras_commit (void)
{
  forget (&base);
  base = next;
  memset (&next, 0, sizeof next);
}

void
tally_rt_extras_drop (void)
{
  forget (&base);
  forget (&next);
}

/* The merge proper.  */

struct wr
{
  unsigned char *p; /* NULL: only count */
  size_t n;
};

static void
wbytes (struct wr *w, const void *s, size_t n)
{
  if (w->p && n)
    memcpy (w->p + w->n, s, n);
  w->n += n;
}

static void
w32 (struct wr *w, uint32_t v)
{
  unsigned char b[4];
  tally_le_put32 (b, v);
  wbytes (w, b, 4);
}

struct onode
{
  uint32_t parent, fn;
  uint64_t calls, incl, excl;
};

/* Everything the merge works with; carved from one mapping.  */
struct job
{
  const struct tally_rt_xside *side[2]; /* ours, old */
  uint32_t nout;
  const uint32_t *out_nfns;
  uint32_t *outbase;     /* [nout] */
  uint32_t *inv[2];      /* [nout]: the side's record, or UINT32_MAX */
  size_t *meas_off[2];   /* [side n]: offset of each record's values */
  uint32_t *vmap[2];     /* [16]: output value of each side value */
  const unsigned char *names; /* the MEAS record whose names are written */
  uint32_t v;
  /* frames */
  uint32_t *fids[2];     /* [side frames]: the side's ids */
  size_t *foff[2];       /* [side frames]: offset of each entry */
  uint32_t *fout[2];     /* [side frames]: output frame index */
  uint64_t *fsrc;        /* [frames out]: side << 63 | entry offset */
  uint32_t nf;
  /* tree */
  struct tally_id_range *rg[2];
  uint32_t nrg[2];
  uint32_t *nmap;        /* node map of the side being folded */
  struct onode *nodes;
  uint64_t *nev;         /* [cap][v - 1] event pairs, NULL without */
  uint32_t ne;           /* events per node: v - 1 */
  uint32_t nn, cap;
  uint32_t *slots;
  uint32_t nslots;
};

static int
frame_same (const unsigned char *a, const unsigned char *b)
{
  uint32_t la = tally_le_get32 (a + 12), lb = tally_le_get32 (b + 12);
  if (la != lb)
    return 0;
  if (la == 0)
    return tally_le_get64 (a + 4) == tally_le_get64 (b + 4);
  return memcmp (a + 16, b + 16, la) == 0;
}

static uint32_t
node_find (struct job *j, uint32_t parent, uint32_t fn)
{
  /* murmur3's finaliser: nodes differ in few bits (siblings' functions
     are neighbours), so mix them all before probing linearly.  */
  uint32_t h = parent * 0x9e3779b1u + fn;
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  for (;; h++)
    {
      uint32_t *s = &j->slots[h & (j->nslots - 1)];
      if (*s == 0)
        {
          uint32_t k = j->nn++;
          j->nodes[k] = (struct onode){ parent, fn, 0, 0, 0 };
          *s = k;
          return k;
        }
      if (j->nodes[*s].parent == parent && j->nodes[*s].fn == fn)
        return *s;
    }
}

/* Fold side S's tree into the output tree.  */
static void
fold (struct job *j, int s)
{
  const struct tally_rt_xside *sd = j->side[s];
  const unsigned char *p = sd->buf + sd->x->paths;
  uint32_t nrec = tally_le_get32 (p + 16);
  p += 20 + (size_t) nrec * 4 + 4;
  uint32_t *m = j->nmap;
  m[0] = 0;
  for (uint32_t i = 1; i <= sd->x->npaths; i++, p += 32)
    {
      uint32_t parent = m[tally_le_get32 (p)], id = tally_le_get32 (p + 4), out;
      m[i] = parent;
      if (id == UINT32_MAX)
        continue;
      if (id >= TALLY_FRAME_ID_BASE)
        {
          uint32_t f = tally_rt_frame_index (j->fids[s], sd->x->nframes, id);
          if (f == UINT32_MAX)
            continue;
          out = TALLY_FRAME_ID_BASE + j->fout[s][f];
        }
      else
        {
          uint32_t r = tally_id_range_find (j->rg[s], j->nrg[s], id);
          if (r == UINT32_MAX)
            continue;
          const struct tally_id_range *g = &j->rg[s][r];
          if (sd->out[g->rec] >= j->nout)
            continue;
          out = j->outbase[sd->out[g->rec]] + (id - g->base);
        }
      uint32_t k = node_find (j, parent, out);
      struct onode *o = &j->nodes[k];
      o->calls = add_sat (o->calls, tally_le_get64 (p + 8));
      o->incl = add_sat (o->incl, tally_le_get64 (p + 16));
      o->excl = add_sat (o->excl, tally_le_get64 (p + 24));
      if (o->excl > o->incl)
        o->excl = o->incl;
      m[i] = k;
      if (j->nev && sd->x->pevt)
        {
          /* Event e of this side is value e + 1 of its MEAS record.  */
          const unsigned char *q = sd->buf + sd->x->pevt + 12
                                   + ((size_t) i - 1) * sd->x->nevents * 16;
          for (uint32_t e = 0; e < sd->x->nevents; e++, q += 16)
            {
              if (j->vmap[s][e + 1] == 0)
                continue; /* only a foreign file names "cycles" later */
              uint32_t oe = j->vmap[s][e + 1] - 1;
              uint64_t *t = j->nev + ((size_t) k * j->ne + oe) * 2;
              t[0] = add_sat (t[0], tally_le_get64 (q));
              t[1] = add_sat (t[1], tally_le_get64 (q + 8));
            }
        }
    }
}

/* Emit the merged records (or only count their bytes if W->p is NULL).  */
static void
emit (struct job *j, struct wr *w)
{
  const struct tally_rt_xside *a = j->side[0], *b = j->side[1];
  unsigned char f[TALLY_PATH_NODE]; /* the largest fixed part */
  if (j->names)
    {
      struct tally_meashdr mh = { j->v };
      tally_meashdr_put (f, &mh);
      wbytes (w, f, TALLY_MEAS_HEAD);
      const unsigned char *p = j->names + 8;
      for (uint32_t i = 0; i < j->v; i++, p = tally_rt_skip_str (p))
        wbytes (w, p, 4 + tally_le_get32 (p));
      w32 (w, j->nout);
      for (uint32_t r = 0; r < j->nout; r++)
        {
          w32 (w, j->out_nfns[r]);
          if (!w->p)
            {
              w->n += (size_t) j->out_nfns[r] * j->v * 16;
              continue;
            }
          for (uint32_t i = 0; i < j->out_nfns[r]; i++)
            {
              uint64_t v[2 * TALLY_MAX_MEAS];
              memset (v, 0, sizeof v);
              for (int s = 0; s < 2; s++)
                {
                  const struct tally_rt_xside *sd = j->side[s];
                  uint32_t rec = j->inv[s][r];
                  if (!sd->x->meas || rec == UINT32_MAX)
                    continue;
                  uint32_t sv = sd->x->nmeas;
                  const unsigned char *q = sd->buf + j->meas_off[s][rec]
                                           + (size_t) i * sv * 16;
                  for (uint32_t k = 0; k < sv; k++, q += 16)
                    {
                      uint32_t o = j->vmap[s][k];
                      v[2 * o] = add_sat (v[2 * o], tally_le_get64 (q));
                      v[2 * o + 1] = add_sat (v[2 * o + 1], tally_le_get64 (q + 8));
                    }
                }
              for (uint32_t k = 0; k < j->v; k++)
                {
                  struct tally_measpair pair = {
                    v[2 * k], v[2 * k + 1] < v[2 * k] ? v[2 * k + 1] : v[2 * k] };
                  tally_measpair_put (f, &pair);
                  wbytes (w, f, TALLY_MEAS_PAIR);
                }
            }
        }
    }
  if (j->nf)
    {
      struct tally_frmshdr fh = { j->nf };
      tally_frmshdr_put (f, &fh);
      wbytes (w, f, TALLY_FRAMES_FIXED);
      for (uint32_t i = 0; i < j->nf; i++)
        {
          const unsigned char *e = j->side[j->fsrc[i] >> 63]->buf
                                   + (j->fsrc[i] & ~((uint64_t) 1 << 63));
          /* The frame's address and name as read, under its new id.  */
          struct tally_frmsent fe;
          tally_frmsent_get (e, &fe);
          fe.id = TALLY_FRAME_ID_BASE + i;
          tally_frmsent_put (f, &fe);
          wbytes (w, f, TALLY_FRAME_FIXED);
          wbytes (w, e + TALLY_FRAME_FIXED,
                  TALLY_STR_FIXED + tally_le_get32 (e + TALLY_FRAME_FIXED));
        }
    }
  if (a->x->paths || b->x->paths)
    {
      uint32_t depth = 0;
      uint64_t lost = 0;
      for (int s = 0; s < 2; s++)
        if (j->side[s]->x->paths)
          {
            const unsigned char *p = j->side[s]->buf + j->side[s]->x->paths;
            depth = tally_le_get32 (p + 4) > depth ? tally_le_get32 (p + 4) : depth;
            lost = add_sat (lost, tally_le_get64 (p + 8));
          }
      struct tally_pathhdr ph = { depth, lost, j->nout };
      tally_pathhdr_put (f, &ph);
      wbytes (w, f, TALLY_PATH_HEAD);
      for (uint32_t r = 0; r < j->nout; r++)
        w32 (w, j->outbase[r]);
      w32 (w, j->nn - 1);
      if (!w->p)
        w->n += ((size_t) j->nn - 1) * TALLY_PATH_NODE; /* only counting */
      for (uint32_t i = 1; i < j->nn && w->p; i++)
        {
          const struct onode *o = &j->nodes[i];
          struct tally_pnode node = { o->parent, o->fn, o->calls, o->incl,
                                      o->excl };
          tally_pnode_put (f, &node);
          wbytes (w, f, TALLY_PATH_NODE);
        }
      if (j->nev)
        {
          struct tally_pevthdr eh = { j->ne, j->nn - 1 };
          tally_pevthdr_put (f, &eh);
          wbytes (w, f, TALLY_PEVT_FIXED);
          if (!w->p)
            w->n += ((size_t) j->nn - 1) * j->ne * TALLY_MEAS_PAIR;
          for (uint32_t i = 1; i < j->nn && w->p; i++)
            for (uint32_t e = 0; e < j->ne; e++)
              {
                const uint64_t *t = j->nev + ((size_t) i * j->ne + e) * 2;
                struct tally_measpair pair = { t[0], t[1] < t[0] ? t[1] : t[0] };
                tally_measpair_put (f, &pair);
                wbytes (w, f, TALLY_MEAS_PAIR);
              }
        }
    }
}

/* Carve N bytes (8-aligned) from the scratch at *P.  */
static void *
carve (unsigned char **p, size_t n)
{
  void *r = *p;
  *p += (n + 7) & ~(size_t) 7;
  return r;
}

size_t
tally_rt_merge_extras (const struct tally_rt_xside *ours,
                       const struct tally_rt_xside *old, uint32_t nout,
                       const uint32_t *out_nfns, unsigned char **result)
{
  *result = NULL;
  const struct tally_rt_xside *sd[2] = { ours, old };
  if (!ours->x->meas && !ours->x->paths && !old->x->meas && !old->x->paths)
    return 0;
  /* 0. Scratch.  */
  uint32_t cap = 1 + ours->x->npaths + old->x->npaths;
  uint32_t nslots = 32;
  while (nslots < 2 * (uint64_t) cap && nslots < (1u << 31))
    nslots *= 2;
  uint32_t maxn = ours->x->npaths > old->x->npaths ? ours->x->npaths
                                                    : old->x->npaths;
  size_t need = 64 * 16 + (size_t) nout * 12;
  for (int s = 0; s < 2; s++)
    need += (size_t) sd[s]->n * (8 + sizeof (struct tally_id_range))
            + (size_t) sd[s]->x->nframes * (4 + 8 + 4 + 8) + 16 * 4;
  need += ((size_t) maxn + 1) * 4 + (size_t) cap * sizeof (struct onode)
          + (size_t) nslots * 4 + 64;
  /* Events per node when a tree and events exist (v - 1 of them).  */
  const struct tally_rt_extras *mx = ours->x->meas ? ours->x : old->x;
  uint32_t ne = mx->meas && mx->nmeas > 1 ? mx->nmeas - 1 : 0;
  need += (size_t) cap * ne * 16;
  unsigned char *scratch = (unsigned char *) map (need), *sp = scratch;
  if (!scratch)
    return (size_t) -1;
  struct job j;
  memset (&j, 0, sizeof j);
  j.side[0] = ours;
  j.side[1] = old;
  j.nout = nout;
  j.out_nfns = out_nfns;
  j.outbase = (uint32_t *) carve (&sp, (size_t) nout * 4);
  uint32_t sum = 0;
  for (uint32_t r = 0; r < nout; r++)
    {
      j.outbase[r] = sum;
      sum = sum + out_nfns[r] < TALLY_FRAME_ID_BASE ? sum + out_nfns[r]
                                                     : TALLY_FRAME_ID_BASE - 1;
    }
  for (int s = 0; s < 2; s++)
    {
      j.inv[s] = (uint32_t *) carve (&sp, (size_t) nout * 4);
      memset (j.inv[s], 0xff, (size_t) nout * 4);
      for (uint32_t r = 0; r < sd[s]->n; r++)
        if (sd[s]->out[r] < nout)
          j.inv[s][sd[s]->out[r]] = r;
    }
  /* 1. MEAS: where each record's values are, and the names' order.  */
  j.names = ours->x->meas ? ours->buf + ours->x->meas
            : old->x->meas ? old->buf + old->x->meas
                           : NULL;
  j.v = j.names ? tally_le_get32 (j.names + 4) : 0;
  for (int s = 0; s < 2; s++)
    {
      j.meas_off[s] = (size_t *) carve (&sp, (size_t) sd[s]->n * 8);
      j.vmap[s] = (uint32_t *) carve (&sp, 16 * 4);
      if (!sd[s]->x->meas)
        continue;
      const unsigned char *m = sd[s]->buf + sd[s]->x->meas;
      for (uint32_t k = 0; k < sd[s]->x->nmeas; k++)
        {
          uint32_t o = meas_find (j.names, j.v, meas_name (m, k));
          j.vmap[s][k] = o == UINT32_MAX ? 0 : o; /* checked before */
        }
      size_t off = sd[s]->x->meas_values;
      for (uint32_t r = 0; r < sd[s]->n; r++)
        {
          j.meas_off[s][r] = off + 4;
          off += 4 + (size_t) tally_le_get32 (sd[s]->buf + off) * sd[s]->x->nmeas * 16;
        }
    }
  /* 2. FRMS: the old frames, then ours that are new.  */
  j.fsrc = (uint64_t *) carve (&sp, ((size_t) ours->x->nframes
                                     + old->x->nframes) * 8);
  for (int s = 1; s >= 0; s--)
    {
      uint32_t n = sd[s]->x->nframes;
      j.fids[s] = (uint32_t *) carve (&sp, (size_t) n * 4);
      j.foff[s] = (size_t *) carve (&sp, (size_t) n * 8);
      j.fout[s] = (uint32_t *) carve (&sp, (size_t) n * 4);
      const unsigned char *p = sd[s]->buf + sd[s]->x->frames + 8;
      for (uint32_t f = 0; f < n; f++)
        {
          j.fids[s][f] = tally_le_get32 (p);
          j.foff[s][f] = (size_t) (p - sd[s]->buf);
          uint32_t o = UINT32_MAX;
          /* Outside frames are few (a table of 4096 per process).  */
          for (uint32_t g = 0; s == 0 && g < old->x->nframes && o == UINT32_MAX;
               g++)
            if (frame_same (p, old->buf + j.foff[1][g]))
              o = j.fout[1][g];
          if (o == UINT32_MAX)
            {
              o = j.nf++;
              j.fsrc[o] = (uint64_t) s << 63 | j.foff[s][f];
            }
          j.fout[s][f] = o;
          p = tally_rt_skip_str (p + 12);
        }
    }
  /* 3. PATH.  */
  j.nodes = (struct onode *) carve (&sp, (size_t) cap * sizeof (struct onode));
  j.slots = (uint32_t *) carve (&sp, (size_t) nslots * 4);
  j.nslots = nslots;
  j.cap = cap;
  j.nmap = (uint32_t *) carve (&sp, ((size_t) maxn + 1) * 4);
  j.nodes[0] = (struct onode){ 0, UINT32_MAX, 0, 0, 0 };
  j.nn = 1;
  j.ne = ne;
  if (ne && (ours->x->paths || old->x->paths))
    j.nev = (uint64_t *) carve (&sp, (size_t) cap * ne * 16);
  for (int s = 1; s >= 0; s--)
    {
      j.rg[s] = (struct tally_id_range *) carve (
          &sp, (size_t) sd[s]->n * sizeof (struct tally_id_range));
      if (!sd[s]->x->paths)
        continue;
      const unsigned char *b = sd[s]->buf + sd[s]->x->paths + 20;
      for (uint32_t r = 0; r < sd[s]->n; r++)
        j.rg[s][r] = (struct tally_id_range){ tally_le_get32 (b + 4 * (size_t) r),
                                              sd[s]->nfns[r], r };
      j.nrg[s] = sd[s]->n;
      tally_rt_ranges (j.rg[s], &j.nrg[s]);
      fold (&j, s);
    }
  /* 4. Write: count, map, write.  */
  struct wr w = { NULL, 0 };
  emit (&j, &w);
  size_t len = w.n;
  unsigned char *out = (unsigned char *) map (len);
  if (out)
    {
      w = (struct wr){ out, 0 };
      emit (&j, &w);
    }
  unmap (scratch, need);
  if (!out)
    return (size_t) -1;
  *result = out;
  return len;
}
