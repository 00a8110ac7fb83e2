/* libtally-mpi: the counts of every rank of an MPI job in one data file.
 *
 * A PMPI interposition library (doc/mpi.md): linked with -ltally-mpi, or
 * preloaded, into an instrumented MPI program.  Its MPI_Finalize, before
 * the MPI library's, reduces every rank's counters onto rank 0 with MPI's
 * own collectives, and rank 0 writes one data file: the sums in ordinary
 * module records (every `tally` command reads them as one process's), and
 * an RNKS record with, per value, the smallest and largest rank's value
 * and the rank holding the largest (include/tally/format.h).  TALLY_MPI
 * says what is written:
 *   reduce (default)  the reduced file only; no rank writes its own
 *   files             each rank its own file at exit, nothing reduced
 *                     (as without this library)
 *   both              the reduced file and every rank's own (the
 *                     reduced one TALLY_MPI_OUTPUT, or TALLY_OUTPUT's
 *                     path with ".reduced" added)
 *
 * The steps, all on a duplicate of MPI_COMM_WORLD, all non-blocking with
 * one deadline (TALLY_MPI_TIMEOUT seconds, default 60):
 *  1. Each rank takes its data file in memory from the runtime
 *     (tally_image) and lists its module records by key: compile checksum
 *     and occurrence (a unit linked twice has two records of one checksum).
 *  2. The union of the keys, in rounds of MPI_Iallreduce with an operation
 *     that merges two sorted lists and keeps the smallest KEYS_PER_ROUND
 *     (the owner, the lowest rank holding a key, and the number of ranks
 *     holding it go along).  Records are aligned by key, never by
 *     position: ranks may have loaded other modules (dlopen) or run
 *     other programs (MPMD).
 *  3. MEAS (measure=cycles): the value count and names must agree between
 *     the ranks that have one; one MPI_Iallreduce checks it.
 *  4. The values, in the order of the union, counters and then measured
 *     pairs per record, are reduced onto rank 0 by MPI_Ireduce in chunks
 *     of CHUNK values: one {sum, min, max, rank of max} per value with a
 *     user operation (MPI_MAXLOC's tie rule, the lowest rank).  A rank
 *     without a record contributes a neutral element, so min and max are
 *     over the ranks that hold the record.
 *  5. The call paths (paths=on: PATH, FRMS, PEVT), if any rank has them:
 *     each rank's tree, its functions named by their place in the union,
 *     is merged up a binomial tree of point-to-point messages onto rank 0
 *     (paths.c).
 *  6. The owners send rank 0 the records it lacks (point to point).
 *  7. Rank 0 writes the file through the runtime (tally_write_image:
 *     temporary file, rename).
 * Memory per rank: its own image, its values (8 bytes each) and a chunk;
 * rank 0 also the result (32 bytes a value).  Time: a log2(P) tree per
 * chunk, as the MPI library's reduction is.
 *
 * Failure: if any step fails or the deadline passes (a rank died before
 * MPI_Finalize, or never reaches it), each rank that notices writes its
 * own file at exit as with TALLY_MPI=files and says so; the library never
 * waits past the deadline itself.  */
#define _GNU_SOURCE
#include <errno.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "tally/format.h"
#include "tally/image.h"
#include "paths.h"
#include "routines.h"

/* From the runtime, which the program links (shared or static): weak, so
   that a program without it still runs and is told.  */
#pragma weak tally_image
#pragma weak tally_write_image
#pragma weak tally_exit_dump_off

#define KEYS_PER_ROUND 256
#define CHUNK 32768 /* values per reduction step: 1 MiB of stats */

#define TAG_LEN 7301
#define TAG_BODY 7302
#define TAG_NAMES 7303
#define TAG_PLEN 7304
#define TAG_PBODY 7305
#define PATH_PIECE ((size_t) 1 << 30) /* bytes a message of a tree */

struct key
{
  uint64_t checksum;
  uint32_t occ;
  uint32_t owner;  /* lowest rank holding it */
  uint32_t nranks; /* ranks holding it */
  uint32_t nfns;
  uint64_t ncounters;
};
#define KEY_NONE UINT64_MAX /* checksum of an empty slot, occ UINT32_MAX */

struct stat4
{
  uint64_t sum, min, max;
  uint32_t rank, pad;
};

/* One module record of this rank's image.  */
struct rec
{
  uint64_t checksum;
  uint32_t occ;
  uint32_t nfns;
  uint64_t ncounters;
  const unsigned char *at; /* the record in the image */
  size_t len;
  const unsigned char *meas; /* its MEAS part (u32 nfns, pairs), or NULL */
  uint32_t fileidx;          /* its place in the image */
  uint32_t u;                /* its key's place in the union, if reduced */
};

static int mode_reduce = 1, mode_files; /* TALLY_MPI */
static double deadline_s = 60;

static void
say (const char *fmt, ...)
{
  char buf[512];
  va_list ap;
  va_start (ap, fmt);
  int n = snprintf (buf, sizeof buf, "tally: libtally-mpi: ");
  vsnprintf (buf + n, sizeof buf - (size_t) n, fmt, ap);
  va_end (ap);
  size_t len = strlen (buf);
  if (len + 1 < sizeof buf)
    buf[len++] = '\n';
  ssize_t w = write (2, buf, len);
  (void) w;
}

static void
cstr (struct cur *c)
{
  cskip (c, c32 (c));
}

/* Walk the module record at C: its value count, and with VALS its values
   copied out (OUT set) or written in (OUT clear).  */
static uint64_t
walk_record (struct cur *c, uint32_t *nfns, uint64_t *vals, int out,
             unsigned char *wr)
{
  const unsigned char *start = c->p;
  c32 (c);       /* tag */
  c32 (c);       /* abi */
  cskip (c, 8);  /* checksum */
  c32 (c);       /* flags */
  uint32_t n = c32 (c);
  cstr (c);
  cstr (c);
  uint64_t k = 0;
  for (uint32_t i = 0; i < n && !c->bad; i++)
    {
      cstr (c), cstr (c), cstr (c), cstr (c);
      c32 (c), c32 (c);
      uint32_t nv = c32 (c);
      c32 (c);
      const unsigned char *v = c->p;
      cskip (c, (uint64_t) nv * 8);
      if (c->bad)
        break;
      for (uint32_t j = 0; j < nv && vals; j++, k++)
        {
          if (out)
            vals[k] = tally_le_get64 (v + 8 * j);
          else
            tally_le_put64 (wr + (v - start) + 8 * j, vals[k]);
        }
      if (!vals)
        k += nv;
      cskip (c, c32 (c)); /* block map */
    }
  *nfns = n;
  return k;
}

/* The records of IMAGE; NULL on a malformed image.  Also the MEAS value
   count and the start of its names.  */
static struct rec *
index_image (const unsigned char *image, size_t len, uint32_t *nrec,
             uint32_t *nmeas, const unsigned char **names, size_t *names_len,
             const unsigned char **extras)
{
  struct cur c = { image + TALLY_HEADER_FIXED, image + len - TALLY_TRAILER_SIZE, 0 };
  uint32_t n = tally_le_get32 (image + TALLY_HDR_NMODULES);
  cstr (&c);
  struct rec *r = calloc (n ? n : 1, sizeof *r);
  if (!r)
    return NULL;
  for (uint32_t i = 0; i < n && !c.bad; i++)
    {
      r[i].at = c.p;
      r[i].fileidx = i;
      if (c.end - c.p >= 16)
        r[i].checksum = tally_le_get64 (c.p + 8);
      r[i].ncounters = walk_record (&c, &r[i].nfns, NULL, 0, NULL);
      r[i].len = (size_t) (c.p - r[i].at);
      for (uint32_t j = 0; j < i; j++)
        if (r[j].checksum == r[i].checksum)
          r[i].occ++;
    }
  *nmeas = 0;
  *names = NULL;
  *names_len = 0;
  if (!c.bad && c.end - c.p >= 4 && tally_le_get32 (c.p) == TALLY_TAG_MEAS)
    {
      c32 (&c);
      uint32_t v = c32 (&c);
      *names = c.p;
      for (uint32_t k = 0; k < v; k++)
        cstr (&c);
      *names_len = (size_t) (c.p - *names);
      if (c32 (&c) != n)
        c.bad = 1;
      for (uint32_t i = 0; i < n && !c.bad; i++)
        {
          r[i].meas = c.p;
          if (c32 (&c) != r[i].nfns)
            c.bad = 1;
          cskip (&c, (uint64_t) r[i].nfns * v * 16);
        }
      *nmeas = v;
    }
  if (c.bad)
    {
      free (r);
      return NULL;
    }
  *extras = c.p; /* FRMS, PATH, PEVT, if any */
  *nrec = n;
  return r;
}

static int
key_cmp (const struct key *a, const struct key *b)
{
  if (a->checksum != b->checksum)
    return a->checksum < b->checksum ? -1 : 1;
  return a->occ < b->occ ? -1 : a->occ > b->occ;
}

/* MPI operation: merge two sorted key lists of KEYS_PER_ROUND slots into
   the smallest KEYS_PER_ROUND keys of their union.  */
static void
keys_op (void *in, void *inout, int *len, MPI_Datatype *dt)
{
  (void) dt;
  for (int e = 0; e < *len; e++)
    {
      struct key *a = (struct key *) in + (size_t) e * KEYS_PER_ROUND;
      struct key *b = (struct key *) inout + (size_t) e * KEYS_PER_ROUND;
      struct key out[KEYS_PER_ROUND];
      int i = 0, j = 0, k = 0;
      while (k < KEYS_PER_ROUND)
        {
          int ai = i < KEYS_PER_ROUND && a[i].checksum != KEY_NONE;
          int bj = j < KEYS_PER_ROUND && b[j].checksum != KEY_NONE;
          if (!ai && !bj)
            break;
          int d = !ai ? 1 : !bj ? -1 : key_cmp (&a[i], &b[j]);
          if (d < 0)
            out[k++] = a[i++];
          else if (d > 0)
            out[k++] = b[j++];
          else
            {
              out[k] = a[i];
              out[k].owner = a[i].owner < b[j].owner ? a[i].owner : b[j].owner;
              out[k].nranks = a[i].nranks + b[j].nranks;
              k++, i++, j++;
            }
        }
      for (; k < KEYS_PER_ROUND; k++)
        out[k] = (struct key){ KEY_NONE, UINT32_MAX, 0, 0, 0, 0 };
      memcpy (b, out, sizeof out);
    }
}

static void
stat_op (void *in, void *inout, int *len, MPI_Datatype *dt)
{
  (void) dt;
  const struct stat4 *a = (const struct stat4 *) in;
  struct stat4 *b = (struct stat4 *) inout;
  for (int i = 0; i < *len; i++)
    {
      b[i].sum += a[i].sum;
      if (a[i].min < b[i].min)
        b[i].min = a[i].min;
      if (a[i].max > b[i].max
          || (a[i].max == b[i].max && a[i].rank < b[i].rank))
        {
          b[i].max = a[i].max;
          b[i].rank = a[i].rank;
        }
    }
}

static double
now (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static double t_end;

/* Wait for N requests until the deadline; 0, or -1 (timed out: they are
   left pending, the job is broken anyway).  */
static int
wait_all (int n, MPI_Request *req)
{
  for (;;)
    {
      int done = 0;
      if (PMPI_Testall (n, req, &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS)
        return -1;
      if (done)
        return 0;
      if (now () > t_end)
        return -1;
      struct timespec ts = { 0, 20000 };
      nanosleep (&ts, NULL);
    }
}

static int
cmp_rec (const void *x, const void *y)
{
  const struct rec *a = x, *b = y;
  struct key ka = { a->checksum, a->occ, 0, 0, 0, 0 };
  struct key kb = { b->checksum, b->occ, 0, 0, 0, 0 };
  return key_cmp (&ka, &kb);
}

static uint64_t
fnv (const unsigned char *p, size_t n)
{
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

/* Send tree T to rank TO, or receive one from FROM into T: its length,
   then pieces of PATH_PIECE bytes.  0, or -1.  */
static int
send_tree (const struct ptree *t, int to, MPI_Comm comm)
{
  uint64_t l = t->len;
  MPI_Request rq;
  if (PMPI_Isend (&l, 1, MPI_UINT64_T, to, TAG_PLEN, comm, &rq) != MPI_SUCCESS
      || wait_all (1, &rq) != 0)
    return -1;
  for (size_t off = 0; off < t->len; off += PATH_PIECE)
    {
      size_t n = t->len - off < PATH_PIECE ? t->len - off : PATH_PIECE;
      if (PMPI_Isend (t->buf + off, (int) n, MPI_BYTE, to, TAG_PBODY, comm, &rq)
              != MPI_SUCCESS
          || wait_all (1, &rq) != 0)
        return -1;
    }
  return 0;
}

static int
recv_tree (struct ptree *t, int from, MPI_Comm comm)
{
  uint64_t l = 0;
  MPI_Request rq;
  memset (t, 0, sizeof *t);
  if (PMPI_Irecv (&l, 1, MPI_UINT64_T, from, TAG_PLEN, comm, &rq) != MPI_SUCCESS
      || wait_all (1, &rq) != 0 || l > ((uint64_t) 1 << 40)
      || (l && !(t->buf = malloc (l))))
    return -1;
  t->len = t->cap = l;
  for (size_t off = 0; off < l; off += PATH_PIECE)
    {
      size_t n = l - off < PATH_PIECE ? l - off : PATH_PIECE;
      if (PMPI_Irecv (t->buf + off, (int) n, MPI_BYTE, from, TAG_PBODY, comm, &rq)
              != MPI_SUCCESS
          || wait_all (1, &rq) != 0)
        return -1;
    }
  return 0;
}

/* Step 5: the ranks' trees (MINE, in the union's names) summed up a
   binomial tree: in the round of step 2^k a rank with that bit set sends
   its tree to rank - 2^k and is done, the others merge in the tree of
   rank + 2^k.  Rank 0 ends with the sum in MINE.  0, or -1.  */
static int
reduce_paths (MPI_Comm comm, int rank, int size, struct ptree *mine)
{
  for (int step = 1; step < size; step *= 2)
    {
      /* On failure the buffers are left: a request may point at them.  */
      if (rank & step)
        return send_tree (mine, rank - step, comm);
      if (rank + step < size)
        {
          struct ptree got, sum;
          if (recv_tree (&got, rank + step, comm) != 0)
            return -1;
          if (ptree_merge (mine, &got, &sum) != 0)
            {
              say ("rank %d: out of memory to merge the call paths", rank);
              return -1;
            }
          ptree_free (&got);
          ptree_free (mine);
          *mine = sum;
        }
    }
  return 0;
}

/* Whether PATTERN (TALLY_OUTPUT's syntax) holds %m: merge into the file.  */
static int
merges (const char *pattern)
{
  for (const char *p = pattern; p && *p; p++)
    if (*p == '%' && p[1])
      {
        if (p[1] == 'm')
          return 1;
        p++; /* %%, %p, ... */
      }
  return 0;
}

/* The reduction; 0 when done (rank 0 wrote the file), -1 if this rank
   should write its own file.  */
static int
reduce (void)
{
  int rank, size;
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Request rq[2];
  double t0 = now (), t_image = 0, t_union = 0, t_values = 0, t_paths = 0;
  double t_records = 0;
  struct ptree tree = { NULL, 0, 0 };
  uint32_t *gbase = NULL, *own_gbase = NULL, *own_nfns = NULL;
  t_end = t0 + deadline_s;
  PMPI_Comm_rank (MPI_COMM_WORLD, &rank);
  PMPI_Comm_size (MPI_COMM_WORLD, &size);
  if (PMPI_Comm_idup (MPI_COMM_WORLD, &comm, &rq[0]) != MPI_SUCCESS
      || wait_all (1, rq) != 0)
    {
      say ("rank %d: the reduction %s; this rank writes its own file at "
           "exit", rank, now () > t_end ? "timed out (TALLY_MPI_TIMEOUT)"
                                       : "found no communicator");
      return -1;
    }
  PMPI_Comm_set_errhandler (comm, MPI_ERRORS_RETURN);

  size_t ilen = 0;
  unsigned char *image = (unsigned char *) tally_image (&ilen);
  if (!image)
    {
      say ("rank %d: the runtime gave no counts (%s)", rank, strerror (errno));
      /* Go on with no records: the others must not wait for us.  */
    }
  uint32_t nrec = 0, nmeas = 0;
  const unsigned char *names = NULL, *extras = NULL;
  size_t names_len = 0;
  struct rec *recs = image ? index_image (image, ilen, &nrec, &nmeas, &names,
                                          &names_len, &extras)
                           : calloc (1, sizeof (struct rec));
  if (!recs)
    {
      say ("rank %d: malformed image from the runtime", rank);
      recs = calloc (1, sizeof (struct rec));
      nrec = 0;
      extras = NULL;
    }
  /* The MPI routines' counts (TALLY_MPI_ROUTINES, routines.c): one more
     record, after the image's.  */
  uint32_t nrec_img = nrec;
  unsigned char *rout = NULL, *rout_meas = NULL;
  if (tally_mpi_routines_on && image)
    {
      uint64_t ck;
      size_t rl = routines_record (NULL, &ck);
      struct rec *nr = realloc (recs, (nrec + 1) * sizeof *recs);
      if (nr)
        recs = nr;
      uint32_t nf = routines_count ();
      if (nr && (rout = malloc (rl))
          && (!nmeas || (rout_meas = malloc (4 + (size_t) nf * nmeas * 16))))
        {
          routines_record (rout, &ck);
          if (rout_meas)
            routines_meas (rout_meas, nmeas);
          recs[nrec] = (struct rec){ ck, 0, nf, 2 * (uint64_t) nf, rout, rl,
                                     rout_meas, nrec, 0 };
          for (uint32_t j = 0; j < nrec; j++)
            if (recs[j].checksum == ck)
              recs[nrec].occ++;
          nrec++;
        }
      else
        say ("rank %d: no memory for the MPI routines' counts; left out", rank);
    }
  for (uint32_t i = 0; i < nrec; i++)
    recs[i].u = UINT32_MAX;
  /* Call paths (paths=on): FRMS or PATH after the modules and MEAS.  */
  int has_paths = extras && image + ilen - TALLY_TRAILER_SIZE - extras >= 4
                  && (tally_le_get32 (extras) == TALLY_TAG_FRAMES
                      || tally_le_get32 (extras) == TALLY_TAG_PATH);
  qsort (recs, nrec, sizeof *recs, cmp_rec);

  t_image = now ();
  /* 2. The union of the keys.  */
  MPI_Datatype keys_t;
  MPI_Op keys_o, stat_o;
  PMPI_Type_contiguous ((int) (sizeof (struct key) * KEYS_PER_ROUND), MPI_BYTE,
                        &keys_t);
  PMPI_Type_commit (&keys_t);
  PMPI_Op_create (keys_op, 1, &keys_o);
  PMPI_Op_create (stat_op, 1, &stat_o);
  struct key *all = NULL, mine[KEYS_PER_ROUND], got[KEYS_PER_ROUND];
  size_t nall = 0, from = 0;
  int rc = -1;
  for (;;)
    {
      int k = 0;
      for (; k < KEYS_PER_ROUND && from + (size_t) k < nrec; k++)
        {
          const struct rec *r = &recs[from + (size_t) k];
          mine[k] = (struct key){ r->checksum, r->occ, (uint32_t) rank, 1,
                                  r->nfns, r->ncounters };
        }
      for (int j = k; j < KEYS_PER_ROUND; j++)
        mine[j] = (struct key){ KEY_NONE, UINT32_MAX, 0, 0, 0, 0 };
      if (PMPI_Iallreduce (mine, got, 1, keys_t, keys_o, comm, &rq[0])
              != MPI_SUCCESS
          || wait_all (1, rq) != 0)
        goto fail;
      int n = 0;
      while (n < KEYS_PER_ROUND && got[n].checksum != KEY_NONE)
        n++;
      struct key *na = realloc (all, (nall + (size_t) n + 1) * sizeof *all);
      if (!na)
        goto fail; /* the others then time out: rare enough */
      all = na;
      memcpy (all + nall, got, (size_t) n * sizeof *got);
      nall += (size_t) n;
      /* Our keys taken this round: those not above the last key.  */
      while (from < nrec && n
             && cmp_rec (&recs[from], &(struct rec){ .checksum = got[n - 1].checksum,
                                                     .occ = got[n - 1].occ }) <= 0)
        from++;
      if (n < KEYS_PER_ROUND)
        break;
    }

  t_union = now ();
  /* 3. MEAS agreement: value count and names equal among the ranks that
     measured; and whether any rank has call paths.  */
  uint64_t mv[6] = { 0, 0, 0, 0, 0, (uint64_t) has_paths }, mvr[6];
  if (nmeas)
    {
      uint64_t h = fnv (names, names_len);
      mv[0] = nmeas, mv[1] = ~(uint64_t) nmeas, mv[2] = h, mv[3] = ~h;
      mv[4] = ~(uint64_t) rank;
    }
  if (PMPI_Iallreduce (mv, mvr, 6, MPI_UINT64_T, MPI_MAX, comm, &rq[0])
          != MPI_SUCCESS
      || wait_all (1, rq) != 0)
    goto fail;
  uint32_t vg = (uint32_t) mvr[0];
  if (vg && (~mvr[1] != mvr[0] || ~mvr[3] != mvr[2]))
    {
      if (rank == 0)
        say ("the ranks measured different values (measure=cycles, "
             "TALLY_PAPI_EVENTS); measurements are not reduced, only counts");
      vg = 0;
    }
  int names_rank = vg ? (int) ~mvr[4] : -1;

  /* 4. The values.  */
  uint64_t total = 0;
  for (size_t i = 0; i < nall; i++)
    total += all[i].ncounters + (uint64_t) all[i].nfns * vg * 2;
  uint64_t *vals = calloc (total ? total : 1, sizeof *vals);
  unsigned char *have = calloc (nall ? nall : 1, 1);
  struct stat4 *res = NULL;
  struct stat4 *part = malloc (CHUNK * sizeof *part);
  struct stat4 *pres = malloc (CHUNK * sizeof *pres);
  if (rank == 0)
    res = malloc ((total ? total : 1) * sizeof *res);
  if (!vals || !have || !part || !pres || (rank == 0 && !res))
    {
      say ("rank %d: out of memory for %llu values", rank,
           (unsigned long long) total);
      goto fail;
    }
  uint64_t at = 0;
  size_t ri = 0;
  for (size_t i = 0; i < nall; i++)
    {
      struct key *k = &all[i];
      while (ri < nrec && (recs[ri].checksum < k->checksum
                           || (recs[ri].checksum == k->checksum
                               && recs[ri].occ < k->occ)))
        ri++;
      int has = ri < nrec && recs[ri].checksum == k->checksum
                && recs[ri].occ == k->occ;
      if (has && recs[ri].ncounters == k->ncounters && recs[ri].nfns == k->nfns)
        {
          have[i] = 1;
          recs[ri].u = (uint32_t) i;
          struct cur c = { recs[ri].at, recs[ri].at + recs[ri].len, 0 };
          uint32_t nf;
          walk_record (&c, &nf, vals + at, 1, NULL);
          if (vg && nmeas == vg && recs[ri].meas)
            for (uint64_t j = 0; j < (uint64_t) k->nfns * vg * 2; j++)
              vals[at + k->ncounters + j]
                  = tally_le_get64 (recs[ri].meas + 4 + 8 * j);
        }
      else if (has)
        say ("rank %d: module %016llx has another layout here than on rank "
             "%u; left out of the reduction", rank,
             (unsigned long long) k->checksum, k->owner);
      at += k->ncounters + (uint64_t) k->nfns * vg * 2;
    }
  /* Element j of the flat vector belongs to key ki.  */
  size_t ki = 0;
  uint64_t kend = nall ? all[0].ncounters + (uint64_t) all[0].nfns * vg * 2 : 0;
  for (uint64_t base = 0; base < total; base += CHUNK)
    {
      int n = (int) (total - base < CHUNK ? total - base : CHUNK);
      for (int j = 0; j < n; j++)
        {
          while (base + (uint64_t) j >= kend && ki + 1 < nall)
            {
              ki++;
              kend += all[ki].ncounters + (uint64_t) all[ki].nfns * vg * 2;
            }
          uint64_t v = vals[base + (uint64_t) j];
          part[j] = have[ki] ? (struct stat4){ v, v, v, (uint32_t) rank, 0 }
                             : (struct stat4){ 0, UINT64_MAX, 0, UINT32_MAX, 0 };
        }
      MPI_Datatype st;
      PMPI_Type_contiguous ((int) sizeof (struct stat4), MPI_BYTE, &st);
      PMPI_Type_commit (&st);
      int e = PMPI_Ireduce (part, pres, n, st, stat_o, 0, comm, &rq[0]);
      int w = e == MPI_SUCCESS ? wait_all (1, rq) : -1;
      PMPI_Type_free (&st);
      if (w != 0)
        goto fail;
      if (rank == 0)
        memcpy (res + base, pres, (size_t) n * sizeof *pres);
    }

  t_values = now ();
  /* 5. The call paths: function i of union record u is function
     gbase[u] + i of the reduced file, on every rank.  */
  int any_paths = mvr[5] != 0;
  gbase = calloc (nall ? nall : 1, sizeof *gbase);
  own_gbase = calloc (nrec ? nrec : 1, sizeof *own_gbase);
  own_nfns = calloc (nrec ? nrec : 1, sizeof *own_nfns);
  if (!gbase || !own_gbase || !own_nfns)
    goto fail;
  for (size_t i = 0, b = 0; i < nall; b += all[i].nfns, i++)
    gbase[i] = (uint32_t) b;
  if (any_paths)
    {
      for (uint32_t i = 0; i < nrec; i++)
        {
          own_nfns[recs[i].fileidx] = recs[i].nfns;
          own_gbase[recs[i].fileidx] = recs[i].u == UINT32_MAX
                                           ? UINT32_MAX : gbase[recs[i].u];
        }
      struct ptree raw = { NULL, 0, 0 }, none = { NULL, 0, 0 };
      if (has_paths
          && ptree_from_image (extras, image + ilen - TALLY_TRAILER_SIZE, nrec_img,
                               own_nfns, own_gbase, vg ? vg - 1 : 0, &raw) != 0)
        say ("rank %d: its call paths could not be read (malformed, or no "
             "memory); left out", rank);
      /* Folded once so that even rank 0 of a job of one holds a tree
         without duplicate paths or unknown nodes.  */
      int e = ptree_merge (&raw, &none, &tree);
      ptree_free (&raw);
      if (e != 0 || reduce_paths (comm, rank, size, &tree) != 0)
        goto fail;
    }

  t_paths = now ();
  /* 6. Rank 0's missing records, from their owners.  */
  unsigned char **body = calloc (nall ? nall : 1, sizeof *body);
  uint64_t *blen = calloc (nall ? nall : 1, sizeof *blen);
  if (!body || !blen)
    goto fail;
  for (size_t i = 0, r2 = 0; i < nall; i++)
    {
      if (all[i].owner == 0 || (all[i].owner != (uint32_t) rank && rank != 0))
        continue;
      if (rank == 0)
        {
          if (PMPI_Irecv (&blen[i], 1, MPI_UINT64_T, (int) all[i].owner,
                          TAG_LEN, comm, &rq[0]) != MPI_SUCCESS
              || wait_all (1, rq) != 0 || blen[i] > (1u << 30)
              || !(body[i] = malloc (blen[i] ? blen[i] : 1))
              || PMPI_Irecv (body[i], (int) blen[i], MPI_BYTE, (int) all[i].owner,
                             TAG_BODY, comm, &rq[0]) != MPI_SUCCESS
              || wait_all (1, rq) != 0)
            goto fail;
        }
      else
        {
          while (r2 < nrec && (recs[r2].checksum != all[i].checksum
                               || recs[r2].occ != all[i].occ))
            r2++;
          uint64_t l = r2 < nrec ? recs[r2].len : 0;
          const void *p = r2 < nrec ? (const void *) recs[r2].at : (const void *) "";
          if (PMPI_Isend (&l, 1, MPI_UINT64_T, 0, TAG_LEN, comm, &rq[0])
                  != MPI_SUCCESS
              || PMPI_Isend (p, (int) l, MPI_BYTE, 0, TAG_BODY, comm, &rq[1])
                     != MPI_SUCCESS
              || wait_all (2, rq) != 0)
            goto fail;
          r2 = 0;
        }
    }
  /* The MEAS names, if rank 0 measured nothing.  */
  unsigned char *mnames = (unsigned char *) names;
  uint64_t mnames_len = names_len;
  if (vg && names_rank != 0 && (rank == 0 || rank == names_rank))
    {
      if (rank == 0)
        {
          mnames = NULL;
          if (PMPI_Irecv (&mnames_len, 1, MPI_UINT64_T, names_rank, TAG_LEN,
                          comm, &rq[0]) != MPI_SUCCESS
              || wait_all (1, rq) != 0 || mnames_len > (1u << 24)
              || !(mnames = malloc (mnames_len ? mnames_len : 1))
              || PMPI_Irecv (mnames, (int) mnames_len, MPI_BYTE, names_rank,
                             TAG_NAMES, comm, &rq[0]) != MPI_SUCCESS
              || wait_all (1, rq) != 0)
            goto fail;
        }
      else if (PMPI_Isend (&mnames_len, 1, MPI_UINT64_T, 0, TAG_LEN, comm,
                           &rq[0]) != MPI_SUCCESS
               || PMPI_Isend (mnames, (int) mnames_len, MPI_BYTE, 0, TAG_NAMES,
                              comm, &rq[1]) != MPI_SUCCESS
               || wait_all (2, rq) != 0)
        goto fail;
    }

  t_records = now ();
  /* 7. Rank 0 writes, and tells the others whether it did: only then
     do they leave their own file out.  */
  int ok = 0;
  if (rank == 0 && !image)
    say ("rank 0 has no counts to start the file from; nothing reduced");
  else if (rank == 0)
    {
      /* With TALLY_MPI=both and no TALLY_MPI_OUTPUT, rank 0's own file
         would replace the reduced one at exit: that goes to
         TALLY_OUTPUT.reduced.  */
      const char *pattern = secure_getenv ("TALLY_MPI_OUTPUT");
      char both[4096];
      if ((!pattern || !*pattern) && mode_files)
        {
          const char *o = secure_getenv ("TALLY_OUTPUT");
          snprintf (both, sizeof both, "%s.reduced",
                    o && *o ? o : "tally.%p.data");
          pattern = both;
        }
      if (!pattern || !*pattern)
        pattern = secure_getenv ("TALLY_OUTPUT");
      /* %m: the runtime merges the file into the existing one (the sum
         of the jobs): without RNKS, whose per-rank statistics of one job
         do not add up with another's.  */
      int merge = merges (pattern);
      uint64_t out = TALLY_HEADER_FIXED + TALLY_STR_FIXED
                     + tally_le_get32 (image + TALLY_HEADER_FIXED);
      for (size_t i = 0; i < nall; i++)
        {
          size_t r0 = 0;
          while (r0 < nrec && (recs[r0].checksum != all[i].checksum
                               || recs[r0].occ != all[i].occ))
            r0++;
          if (all[i].owner == 0)
            {
              body[i] = (unsigned char *) recs[r0].at; /* not ours to free */
              blen[i] = recs[r0].len;
            }
          out += blen[i];
        }
      if (vg)
        {
          out += TALLY_MEAS_FIXED + mnames_len;
          for (size_t i = 0; i < nall; i++)
            out += 4 + (uint64_t) all[i].nfns * vg * TALLY_MEAS_PAIR;
        }
      out += ptree_write (&tree, (uint32_t) nall, gbase, NULL);
      if (!merge)
        {
          out += TALLY_RANKS_FIXED;
          for (size_t i = 0; i < nall; i++)
            out += TALLY_RANKS_MODULE
                   + (all[i].ncounters + (uint64_t) all[i].nfns * vg * 2)
                         * TALLY_RANKS_VALUE;
        }
      out += TALLY_TRAILER_SIZE;
      unsigned char *f = mmap (NULL, out, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (f == MAP_FAILED)
        {
          say ("no memory for the reduced file (%llu bytes)",
               (unsigned long long) out);
          goto told;
        }
      uint32_t plen = tally_le_get32 (image + TALLY_HEADER_FIXED);
      memcpy (f, image, TALLY_HEADER_FIXED + TALLY_STR_FIXED + plen);
      struct tally_hdr hdr;
      tally_hdr_get (f, &hdr);
      hdr.file_size = out;
      hdr.nmodules = (uint32_t) nall;
      hdr.flags = TALLY_FILE_AT_EXIT;
      tally_hdr_put (f, &hdr);
      unsigned char *w = f + TALLY_HEADER_FIXED + TALLY_STR_FIXED + plen;
      uint64_t vat = 0;
      uint64_t *sums = vals; /* reused: rank 0's own values are done with */
      for (size_t i = 0; i < nall; i++)
        {
          memcpy (w, body[i], blen[i]);
          uint64_t nv = all[i].ncounters;
          for (uint64_t j = 0; j < nv; j++)
            sums[j] = res[vat + j].sum;
          struct cur c = { w, w + blen[i], 0 };
          uint32_t nf;
          walk_record (&c, &nf, sums, 0, w);
          w += blen[i];
          vat += nv + (uint64_t) all[i].nfns * vg * 2;
        }
      if (vg)
        {
          struct tally_meashdr mh = { vg };
          tally_meashdr_put (w, &mh), w += TALLY_MEAS_HEAD;
          memcpy (w, mnames, mnames_len), w += mnames_len;
          tally_le_put32 (w, (uint32_t) nall), w += 4;
          vat = 0;
          for (size_t i = 0; i < nall; i++)
            {
              tally_le_put32 (w, all[i].nfns), w += 4;
              vat += all[i].ncounters;
              for (uint64_t j = 0; j < (uint64_t) all[i].nfns * vg * 2; j += 2)
                {
                  struct tally_measpair pair = { res[vat + j].sum,
                                                 res[vat + j + 1].sum };
                  tally_measpair_put (w, &pair), w += TALLY_MEAS_PAIR;
                }
              vat += (uint64_t) all[i].nfns * vg * 2;
            }
        }
      w += ptree_write (&tree, (uint32_t) nall, gbase, w);
      if (!merge)
        {
          struct tally_rnkshdr rh = { TALLY_RANKS_VERSION, (uint32_t) size,
                                      (uint32_t) nall };
          tally_rnkshdr_put (w, &rh), w += TALLY_RANKS_FIXED;
        }
      vat = 0;
      for (size_t i = 0; i < nall && !merge; i++)
        {
          uint64_t nm = (uint64_t) all[i].nfns * vg * 2;
          struct tally_rnksrec rr = { all[i].nranks, 0, all[i].ncounters + nm };
          tally_rnksrec_put (w, &rr), w += TALLY_RANKS_MODULE;
          for (uint64_t j = 0; j < all[i].ncounters + nm; j++, vat++)
            {
              struct tally_rnksval rv = { res[vat].min, res[vat].max,
                                          res[vat].rank };
              tally_rnksval_put (w, &rv), w += TALLY_RANKS_VALUE;
            }
        }
      memset (w, 0, TALLY_TRAILER_SIZE);
      ok = tally_write_image (f, out, pattern && *pattern ? pattern : NULL) == 0;
      munmap (f, out);
    }
told:
  if (PMPI_Ibcast (&ok, 1, MPI_INT, 0, comm, &rq[0]) != MPI_SUCCESS
      || wait_all (1, rq) != 0)
    goto fail;
  rc = ok ? 0 : -1;
  if (rank == 0 && ok && secure_getenv ("TALLY_VERBOSE"))
    say ("reduced %d ranks: %zu modules, %llu values (%llu bytes a rank) "
         "in %.3f ms: communicator and image %.3f, key union %.3f, values %.3f, "
         "paths %.3f (%zu bytes), records %.3f, write and broadcast %.3f",
         size, nall, (unsigned long long) total, (unsigned long long) total * 32,
         (now () - t0) * 1e3, (t_image - t0) * 1e3, (t_union - t_image) * 1e3,
         (t_values - t_union) * 1e3, (t_paths - t_values) * 1e3, tree.len,
         (t_records - t_paths) * 1e3,
         (now () - t_records) * 1e3);

fail:
  if (rc != 0)
    say ("rank %d: the reduction %s; this rank writes its own file at exit",
         rank, now () > t_end ? "timed out (TALLY_MPI_TIMEOUT)" : "failed");
  if (image)
    munmap (image, ilen);
  if (rc == 0)
    {
      ptree_free (&tree);
      free (rout);
      free (rout_meas);
    }
  free (gbase);
  free (own_gbase);
  free (own_nfns);
  /* The rest is left to the process's end: on failure some requests may
     still point at it.  */
  return rc;
}

static void
read_env (void)
{
  const char *m = secure_getenv ("TALLY_MPI");
  if (!m || !*m || strcmp (m, "reduce") == 0)
    mode_reduce = 1, mode_files = 0;
  else if (strcmp (m, "files") == 0)
    mode_reduce = 0, mode_files = 1;
  else if (strcmp (m, "both") == 0)
    mode_reduce = 1, mode_files = 1;
  else
    {
      say ("TALLY_MPI=%s is not one of reduce, files, both; using reduce", m);
      mode_reduce = 1, mode_files = 0;
    }
  const char *t = secure_getenv ("TALLY_MPI_TIMEOUT");
  if (t && *t)
    {
      char *end;
      double v = strtod (t, &end);
      if (*end || !(v > 0 && v <= 86400))
        say ("TALLY_MPI_TIMEOUT=%s is not a number of seconds from 0 to "
             "86400; using 60", t);
      else
        deadline_s = v;
    }
}

__attribute__ ((visibility ("default"))) int
MPI_Finalize (void)
{
  int init = 0, fin = 0;
  PMPI_Initialized (&init);
  PMPI_Finalized (&fin);
  if (!init || fin)
    return PMPI_Finalize ();
  read_env ();
  if (!tally_image || !tally_write_image || !tally_exit_dump_off)
    {
      int rank = 0;
      PMPI_Comm_rank (MPI_COMM_WORLD, &rank);
      if (rank == 0)
        say ("the program has no tally runtime that libtally-mpi can reach "
             "(link it with the shared runtime, or with -ltally-mpi on the "
             "link line); nothing reduced");
      return PMPI_Finalize ();
    }
  if (mode_reduce && reduce () == 0 && !mode_files)
    tally_exit_dump_off ();
  return PMPI_Finalize ();
}
