/* libtally-mpi: the call paths of every rank (paths=on: PATH, FRMS, PEVT)
 * summed into the reduced file (doc/mpi.md).
 *
 * The ranks' calling-context trees differ (other inputs, other programs,
 * other modules), so they cannot go through MPI_Reduce as fixed vectors.
 * Each rank turns its tree into a tree of names: a node is (parent, key)
 * where the key is a function of the job-wide union of module records
 * (tally-mpi.c's step 2: the same on every rank, so a function's index in
 * the union, the reduced file's own dense function id, names it on every
 * rank), or a frame outside the instrumented code, named by its symbol
 * (its address when it has none).  The trees are then merged up a binomial
 * tree with MPI point-to-point messages: in round k (step 2^k) a rank
 * with bit k set sends its tree to rank - 2^k and is done; the others
 * receive from rank + 2^k (if there is one) and merge.  After log2(P)
 * rounds rank 0 holds the sum.  A merge folds nodes of equal (parent, key)
 * through a hash table; values (calls, inclusive and exclusive cycles, the
 * PAPI events' pairs) add up.  Memory: a rank's own merged tree, the
 * partner's and their merge.
 *
 * A tree in transit ("ptree"), host byte order (the ranks of one job share
 * it; MPI_BYTE):
 *   u32 depth, u32 E (event pairs per node), u64 lost, u32 frames F,
 *   u32 nodes N, u64 0;
 *   F x (u64 address, u32 name length, name);
 *   N x (u32 parent (0: the root, else an earlier node 1..), u32 key,
 *        u64 calls, inclusive, exclusive, 2E x u64).
 * A key is a job-wide function id, TALLY_FRAME_ID_BASE + a frame index,
 * or UINT32_MAX (no function: the node folds into its parent).  */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tally/format.h"
#include "paths.h"
#include "wbytes.h"

#define PT_HEAD 32

static int
grow (struct ptree *t, size_t more)
{
  if (t->len + more <= t->cap)
    return 0;
  size_t cap = t->cap ? t->cap : 4096;
  while (cap < t->len + more)
    cap *= 2;
  unsigned char *b = realloc (t->buf, cap);
  if (!b)
    return -1;
  t->buf = b;
  t->cap = cap;
  return 0;
}

static int
put (struct ptree *t, const void *p, size_t n)
{
  if (grow (t, n))
    return -1;
  memcpy (t->buf + t->len, p, n);
  t->len += n;
  return 0;
}

static uint32_t
g32 (const unsigned char *p)
{
  uint32_t v;
  memcpy (&v, p, 4);
  return v;
}

static uint64_t
g64 (const unsigned char *p)
{
  uint64_t v;
  memcpy (&v, p, 8);
  return v;
}

void
ptree_free (struct ptree *t)
{
  free (t->buf);
  memset (t, 0, sizeof *t);
}

/* The parts of a ptree, checked against its length.  */
struct pview
{
  uint32_t depth, e, nframes, nnodes;
  uint64_t lost;
  const unsigned char *frames, *nodes;
};

static int
view (const struct ptree *t, struct pview *v)
{
  memset (v, 0, sizeof *v);
  if (!t->len)
    return 0; /* an empty tree */
  if (t->len < PT_HEAD)
    return -1;
  const unsigned char *p = t->buf, *end = t->buf + t->len;
  v->depth = g32 (p);
  v->e = g32 (p + 4);
  v->lost = g64 (p + 8);
  v->nframes = g32 (p + 16);
  v->nnodes = g32 (p + 20);
  if (v->e > TALLY_MAX_MEAS)
    return -1;
  p += PT_HEAD;
  v->frames = p;
  for (uint32_t i = 0; i < v->nframes; i++)
    {
      if (end - p < 12 || (uint64_t) (end - p - 12) < g32 (p + 8))
        return -1;
      p += 12 + g32 (p + 8);
    }
  v->nodes = p;
  if ((uint64_t) (end - p) != (uint64_t) v->nnodes * (32 + 16 * v->e))
    return -1;
  return 0;
}

/* The output of a merge: nodes, their values, a hash of (parent, key).  */
struct acc
{
  uint32_t e, depth;
  uint64_t lost;
  uint32_t n, cap;     /* nodes, node 0 the root */
  uint32_t *parent, *key;
  uint64_t *val;       /* (3 + 2e) per node */
  uint32_t *hash;      /* node index + 1, 0 empty; hcap slots */
  uint32_t hcap;
  /* Frames: by name, or by address when unnamed.  */
  uint32_t nf, fcap, fhcap;
  uint64_t *faddr;
  const unsigned char **fname; /* u32 length, bytes (in an input) */
  uint32_t *fhash;
};

static uint64_t
mix (uint64_t h)
{
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

/* Put entry I, of hash HASH, in the table H of CAP slots (a power of two,
   open addressing, 0 a free slot, I + 1 a taken one).  */
static void
hash_put (uint32_t *h, uint32_t cap, uint64_t hash, uint32_t i)
{
  uint32_t s = (uint32_t) hash & (cap - 1);
  while (h[s])
    s = (s + 1) & (cap - 1);
  h[s] = i + 1;
}

static int
acc_rehash (struct acc *a, uint32_t cap)
{
  uint32_t *h = calloc (cap, sizeof *h);
  if (!h)
    return -1;
  for (uint32_t i = 1; i < a->n; i++)
    hash_put (h, cap, mix ((uint64_t) a->parent[i] << 32 | a->key[i]), i);
  free (a->hash);
  a->hash = h;
  a->hcap = cap;
  return 0;
}

/* The node (PARENT, KEY), made if new; UINT32_MAX when out of memory.  */
static uint32_t
acc_node (struct acc *a, uint32_t parent, uint32_t key)
{
  if ((uint64_t) a->n * 2 >= a->hcap
      && acc_rehash (a, a->hcap ? a->hcap * 2 : 1024))
    return UINT32_MAX;
  uint32_t s = (uint32_t) mix ((uint64_t) parent << 32 | key) & (a->hcap - 1);
  while (a->hash[s])
    {
      uint32_t i = a->hash[s] - 1;
      if (a->parent[i] == parent && a->key[i] == key)
        return i;
      s = (s + 1) & (a->hcap - 1);
    }
  if (a->n == a->cap)
    {
      uint32_t cap = a->cap ? a->cap * 2 : 1024;
      size_t w = 3 + 2 * (size_t) a->e;
      uint32_t *p = realloc (a->parent, cap * sizeof *p);
      if (p)
        a->parent = p;
      uint32_t *k = realloc (a->key, cap * sizeof *k);
      if (k)
        a->key = k;
      uint64_t *v = realloc (a->val, cap * w * sizeof *v);
      if (v)
        a->val = v;
      if (!p || !k || !v)
        return UINT32_MAX;
      a->cap = cap;
    }
  uint32_t i = a->n++;
  a->parent[i] = parent;
  a->key[i] = key;
  memset (a->val + i * (3 + 2 * (size_t) a->e), 0,
          (3 + 2 * (size_t) a->e) * sizeof *a->val);
  a->hash[s] = i + 1;
  return i;
}

static uint64_t
frame_hash (uint64_t addr, const unsigned char *name)
{
  uint32_t len = g32 (name);
  if (!len)
    return mix (addr ^ 0x9e3779b97f4a7c15ull);
  uint64_t h = 1469598103934665603ull;
  for (uint32_t i = 0; i < len; i++)
    h = (h ^ name[4 + i]) * 1099511628211ull;
  return mix (h);
}

static int
frame_same (const struct acc *a, uint32_t i, uint64_t addr,
            const unsigned char *name)
{
  uint32_t l = g32 (name);
  if (l != g32 (a->fname[i]))
    return 0;
  return l ? memcmp (name + 4, a->fname[i] + 4, l) == 0 : a->faddr[i] == addr;
}

/* The output frame of (ADDR, NAME), added if new; UINT32_MAX when out of
   memory.  */
static uint32_t
acc_frame (struct acc *a, uint64_t addr, const unsigned char *name)
{
  if ((uint64_t) a->nf * 2 >= a->fhcap)
    {
      uint32_t cap = a->fhcap ? a->fhcap * 2 : 64;
      uint32_t *h = calloc (cap, sizeof *h);
      if (!h)
        return UINT32_MAX;
      for (uint32_t i = 0; i < a->nf; i++)
        hash_put (h, cap, frame_hash (a->faddr[i], a->fname[i]), i);
      free (a->fhash);
      a->fhash = h;
      a->fhcap = cap;
    }
  uint32_t s = (uint32_t) frame_hash (addr, name) & (a->fhcap - 1);
  while (a->fhash[s])
    {
      uint32_t i = a->fhash[s] - 1;
      if (frame_same (a, i, addr, name))
        return i;
      s = (s + 1) & (a->fhcap - 1);
    }
  if (a->nf == a->fcap)
    {
      uint32_t cap = a->fcap ? a->fcap * 2 : 32;
      uint64_t *ad = realloc (a->faddr, cap * sizeof *ad);
      if (ad)
        a->faddr = ad;
      const unsigned char **nm = realloc (a->fname, cap * sizeof *nm);
      if (nm)
        a->fname = nm;
      if (!ad || !nm)
        return UINT32_MAX;
      a->fcap = cap;
    }
  a->faddr[a->nf] = addr;
  a->fname[a->nf] = name;
  a->fhash[s] = a->nf + 1;
  return a->nf++;
}

static void
acc_free (struct acc *a)
{
  free (a->parent);
  free (a->key);
  free (a->val);
  free (a->hash);
  free (a->faddr);
  free (a->fname);
  free (a->fhash);
}

/* Fold tree T into A.  */
static int
acc_add (struct acc *a, const struct ptree *t)
{
  struct pview v;
  if (view (t, &v))
    return -1;
  if (!t->len)
    return 0;
  if (v.depth > a->depth)
    a->depth = v.depth;
  a->lost += v.lost;
  uint32_t *fmap = calloc (v.nframes ? v.nframes : 1, sizeof *fmap);
  uint32_t *map = calloc ((size_t) v.nnodes + 1, sizeof *map);
  if (!fmap || !map)
    goto oom;
  const unsigned char *p = v.frames;
  for (uint32_t i = 0; i < v.nframes; i++)
    {
      if ((fmap[i] = acc_frame (a, g64 (p), p + 8)) == UINT32_MAX)
        goto oom;
      p += 12 + g32 (p + 8);
    }
  size_t w = 32 + 16 * (size_t) v.e, aw = 3 + 2 * (size_t) a->e;
  p = v.nodes;
  map[0] = 0;
  for (uint32_t i = 1; i <= v.nnodes; i++, p += w)
    {
      uint32_t parent = g32 (p), key = g32 (p + 4);
      uint32_t out = parent < i ? map[parent] : 0;
      if (key >= TALLY_FRAME_ID_BASE && key != UINT32_MAX)
        key = key - TALLY_FRAME_ID_BASE < v.nframes
                  ? TALLY_FRAME_ID_BASE + fmap[key - TALLY_FRAME_ID_BASE]
                  : UINT32_MAX;
      if (key != UINT32_MAX)
        {
          out = acc_node (a, out, key);
          if (out == UINT32_MAX)
            goto oom;
          uint64_t *d = a->val + out * aw;
          for (int k = 0; k < 3; k++)
            d[k] += g64 (p + 8 + 8 * k);
          for (uint32_t k = 0; k < 2 * a->e && k < 2 * v.e; k++)
            d[3 + k] += g64 (p + 32 + 8 * k);
        }
      map[i] = out;
    }
  free (fmap);
  free (map);
  return 0;
oom:
  free (fmap);
  free (map);
  return -1;
}

/* A as a ptree in OUT.  */
static int
acc_out (const struct acc *a, struct ptree *out)
{
  memset (out, 0, sizeof *out);
  unsigned char h[PT_HEAD];
  memset (h, 0, sizeof h);
  uint32_t nn = a->n ? a->n - 1 : 0;
  memcpy (h, &a->depth, 4);
  memcpy (h + 4, &a->e, 4);
  memcpy (h + 8, &a->lost, 8);
  memcpy (h + 16, &a->nf, 4);
  memcpy (h + 20, &nn, 4);
  if (put (out, h, sizeof h))
    return -1;
  for (uint32_t i = 0; i < a->nf; i++)
    if (put (out, &a->faddr[i], 8) || put (out, a->fname[i], 4 + g32 (a->fname[i])))
      return -1;
  size_t aw = 3 + 2 * (size_t) a->e;
  for (uint32_t i = 1; i < a->n; i++)
    if (put (out, &a->parent[i], 4) || put (out, &a->key[i], 4)
        || put (out, a->val + i * aw, aw * 8))
      return -1;
  return 0;
}

int
ptree_merge (const struct ptree *x, const struct ptree *y, struct ptree *out)
{
  struct pview vx, vy;
  memset (out, 0, sizeof *out);
  if (view (x, &vx) || view (y, &vy))
    return -1;
  if (!x->len && !y->len)
    return 0;
  struct acc a;
  memset (&a, 0, sizeof a);
  a.e = x->len ? vx.e : vy.e;
  if (y->len && vy.e > a.e)
    a.e = vy.e;
  a.n = 0;
  int rc = -1;
  if (acc_node (&a, UINT32_MAX, UINT32_MAX) != 0) /* the root, node 0 */
    goto done;
  if (acc_add (&a, x) || acc_add (&a, y) || acc_out (&a, out))
    goto done;
  rc = 0;
done:
  acc_free (&a);
  if (rc)
    ptree_free (out);
  return rc;
}

static int
range_cmp (const void *x, const void *y)
{
  const struct tally_id_range *a = x, *b = y;
  return a->base < b->base ? -1 : a->base > b->base;
}

int
ptree_from_image (const unsigned char *at, const unsigned char *end,
                  uint32_t nrec, const uint32_t *nfns, const uint32_t *gbase,
                  uint32_t e, struct ptree *out)
{
  memset (out, 0, sizeof *out);
  struct cur r = { at, end, 0 };
  const unsigned char *frames = NULL;
  uint32_t nframes = 0;
  if (end - at >= 4 && tally_le_get32 (at) == TALLY_TAG_FRAMES)
    {
      c32 (&r);
      nframes = c32 (&r);
      frames = r.p;
      for (uint32_t i = 0; i < nframes && !r.bad; i++)
        {
          c32 (&r), c64 (&r);
          cskip (&r, c32 (&r));
        }
    }
  if (r.bad || r.end - r.p < 4 || tally_le_get32 (r.p) != TALLY_TAG_PATH)
    return r.bad ? -1 : 0; /* no tree */
  c32 (&r);
  uint32_t depth = c32 (&r);
  uint64_t lost = c64 (&r);
  if (c32 (&r) != nrec || r.bad)
    return -1;
  struct tally_id_range *sp = calloc (nrec ? nrec : 1, sizeof *sp);
  uint32_t *fids = calloc (nframes ? nframes : 1, sizeof *fids);
  if (!sp || !fids)
    goto fail;
  uint32_t ns = 0;
  for (uint32_t i = 0; i < nrec; i++)
    {
      uint32_t b = c32 (&r);
      if (b != UINT32_MAX && nfns[i])
        sp[ns++] = (struct tally_id_range){ b, nfns[i], i };
    }
  qsort (sp, ns, sizeof *sp, range_cmp);
  /* The frames' ids, in order.  */
  {
    struct cur f = { frames, end, 0 };
    for (uint32_t i = 0; i < nframes; i++)
      {
        fids[i] = c32 (&f);
        c64 (&f);
        f.p += c32 (&f);
      }
  }
  uint32_t nn = c32 (&r);
  if (r.bad || (uint64_t) (r.end - r.p) < (uint64_t) nn * 32)
    goto fail;
  const unsigned char *nodes = r.p;
  r.p += (size_t) nn * 32;
  const unsigned char *ev = NULL;
  uint32_t ne = 0;
  if (r.end - r.p >= 12 && tally_le_get32 (r.p) == TALLY_TAG_PATH_EVENTS)
    {
      ne = tally_le_get32 (r.p + 4);
      if (tally_le_get32 (r.p + 8) != nn
          || (uint64_t) (r.end - r.p - 12) < (uint64_t) nn * ne * 16)
        goto fail;
      ev = r.p + 12;
      if (ne != e)
        ev = NULL; /* other events than the job's: not summed */
    }
  unsigned char h[PT_HEAD];
  memset (h, 0, sizeof h);
  memcpy (h, &depth, 4);
  memcpy (h + 4, &e, 4);
  memcpy (h + 8, &lost, 8);
  memcpy (h + 16, &nframes, 4);
  memcpy (h + 20, &nn, 4);
  if (put (out, h, sizeof h))
    goto fail;
  struct cur f = { frames, end, 0 };
  for (uint32_t i = 0; i < nframes; i++)
    {
      c32 (&f);
      uint64_t addr = c64 (&f);
      uint32_t l = c32 (&f);
      const unsigned char *name = f.p;
      f.p += l;
      if (put (out, &addr, 8) || put (out, &l, 4) || put (out, name, l))
        goto fail;
    }
  for (uint32_t i = 0; i < nn; i++)
    {
      const unsigned char *q = nodes + (size_t) i * 32;
      uint32_t parent = tally_le_get32 (q), fn = tally_le_get32 (q + 4);
      uint32_t key = UINT32_MAX;
      if (fn >= TALLY_FRAME_ID_BASE && fn != UINT32_MAX)
        {
          uint32_t lo = 0, hi = nframes;
          while (lo < hi)
            {
              uint32_t mid = lo + (hi - lo) / 2;
              if (fids[mid] < fn)
                lo = mid + 1;
              else
                hi = mid;
            }
          if (lo < nframes && fids[lo] == fn)
            key = TALLY_FRAME_ID_BASE + lo;
        }
      else if (fn != UINT32_MAX)
        {
          /* gbase UINT32_MAX: the record is not in the union.  */
          uint32_t s = tally_id_range_find (sp, ns, fn);
          if (s != UINT32_MAX && gbase[sp[s].rec] != UINT32_MAX)
            key = gbase[sp[s].rec] + (fn - sp[s].base);
        }
      uint64_t v[3 + 2 * TALLY_MAX_MEAS];
      for (int k = 0; k < 3; k++)
        v[k] = tally_le_get64 (q + 8 + 8 * k);
      for (uint32_t k = 0; k < 2 * e; k++)
        v[3 + k] = ev ? tally_le_get64 (ev + ((size_t) i * e * 2 + k) * 8) : 0;
      if (put (out, &parent, 4) || put (out, &key, 4)
          || put (out, v, (3 + 2 * (size_t) e) * 8))
        goto fail;
    }
  free (sp);
  free (fids);
  return 0;
fail:
  free (sp);
  free (fids);
  ptree_free (out);
  return -1;
}

size_t
ptree_write (const struct ptree *t, uint32_t nrec, const uint32_t *gbase,
             unsigned char *w)
{
  struct pview v;
  size_t n = 0;
  unsigned char b[TALLY_PATH_NODE];
  if (!t->len || view (t, &v))
    return 0;
  if (v.nframes)
    {
      struct tally_frmshdr fh = { v.nframes };
      tally_frmshdr_put (b, &fh);
      wbytes (&w, &n, b, TALLY_FRAMES_FIXED);
      const unsigned char *p = v.frames;
      for (uint32_t i = 0; i < v.nframes; i++)
        {
          uint32_t l = g32 (p + 8);
          struct tally_frmsent fe = { TALLY_FRAME_ID_BASE + i, g64 (p) };
          tally_frmsent_put (b, &fe);
          wbytes (&w, &n, b, TALLY_FRAME_FIXED);
          w32 (&w, &n, l);
          wbytes (&w, &n, p + 12, l);
          p += 12 + l;
        }
    }
  struct tally_pathhdr ph = { v.depth, v.lost, nrec };
  tally_pathhdr_put (b, &ph);
  wbytes (&w, &n, b, TALLY_PATH_HEAD);
  for (uint32_t i = 0; i < nrec; i++)
    w32 (&w, &n, gbase[i]);
  w32 (&w, &n, v.nnodes);
  size_t nw = 32 + 16 * (size_t) v.e;
  for (uint32_t i = 0; i < v.nnodes; i++)
    {
      const unsigned char *p = v.nodes + i * nw;
      struct tally_pnode node = { g32 (p), g32 (p + 4), g64 (p + 8),
                                  g64 (p + 16), g64 (p + 24) };
      tally_pnode_put (b, &node);
      wbytes (&w, &n, b, TALLY_PATH_NODE);
    }
  if (v.e)
    {
      struct tally_pevthdr eh = { v.e, v.nnodes };
      tally_pevthdr_put (b, &eh);
      wbytes (&w, &n, b, TALLY_PEVT_FIXED);
      for (uint32_t i = 0; i < v.nnodes; i++)
        for (uint32_t k = 0; k < v.e; k++)
          {
            const unsigned char *p = v.nodes + i * nw + 32 + 16 * k;
            struct tally_measpair pair = { g64 (p), g64 (p + 8) };
            tally_measpair_put (b, &pair);
            wbytes (&w, &n, b, TALLY_MEAS_PAIR);
          }
    }
  return n;
}
