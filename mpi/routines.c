/* libtally-mpi: MPI routines counted as functions, as mpiP does
 * (TALLY_MPI_ROUTINES=1, off by default; doc/mpi.md).
 *
 * The common point-to-point, completion and collective routines are
 * interposed here (MPI_Send ... calling PMPI_Send ...).  With the variable
 * set, each call is counted and, on x86-64, timed in TSC cycles (the unit
 * of measure=cycles); otherwise the wrapper only calls through.  At
 * MPI_Finalize the counts become one more module record of each rank's
 * image, a unit "libtally-mpi (MPI routines)" of one function per routine
 * (calls and returns both the count; artificial, so line coverage leaves
 * it out), and when the ranks measure cycles its MEAS values are the
 * cycles spent in each routine (inclusive = exclusive; other values 0).
 * Being a record like the others, it is reduced like them: sums, and
 * min / max / rank of the max per routine for `tally report --ranks`.
 * It is in the reduced file only: a rank's own file is the runtime's.  */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tally/abi.h"
#include "tally/format.h"
#include "routines.h"
#include "wbytes.h"

#define ROUTINES(X)                                                           \
  X (Send) X (Recv) X (Isend) X (Irecv) X (Ssend) X (Sendrecv) X (Wait)       \
  X (Waitall) X (Waitany) X (Test) X (Testall) X (Probe) X (Iprobe)           \
  X (Barrier) X (Bcast) X (Reduce) X (Allreduce) X (Gather) X (Gatherv)       \
  X (Scatter) X (Scatterv) X (Allgather) X (Allgatherv) X (Alltoall)          \
  X (Alltoallv)

enum
{
#define ENUM(n) R_##n,
  ROUTINES (ENUM) R_COUNT
#undef ENUM
};

static const char *const names[] = {
#define NAME(n) "MPI_" #n,
  ROUTINES (NAME)
#undef NAME
};

int tally_mpi_routines_on;
static uint64_t calls[R_COUNT], cycles[R_COUNT];

__attribute__ ((constructor)) static void
routines_env (void)
{
  const char *v = secure_getenv ("TALLY_MPI_ROUTINES");
  tally_mpi_routines_on = v && *v && strcmp (v, "0") != 0;
}

static inline uint64_t
tsc (void)
{
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_ia32_rdtsc ();
#else
  return 0;
#endif
}

#define TIMED(idx, call)                                                      \
  do                                                                          \
    {                                                                         \
      if (!tally_mpi_routines_on)                                             \
        return call;                                                          \
      uint64_t t0_ = tsc ();                                                  \
      int rc_ = call;                                                         \
      uint64_t t1_ = tsc ();                                                  \
      __atomic_fetch_add (&calls[idx], 1, __ATOMIC_RELAXED);                  \
      __atomic_fetch_add (&cycles[idx], t1_ - t0_, __ATOMIC_RELAXED);         \
      return rc_;                                                             \
    }                                                                         \
  while (0)

#define API __attribute__ ((visibility ("default"))) int

API MPI_Send (const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c)
{ TIMED (R_Send, PMPI_Send (b, n, t, d, tag, c)); }
API MPI_Recv (void *b, int n, MPI_Datatype t, int s, int tag, MPI_Comm c, MPI_Status *st)
{ TIMED (R_Recv, PMPI_Recv (b, n, t, s, tag, c, st)); }
API MPI_Isend (const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c, MPI_Request *r)
{ TIMED (R_Isend, PMPI_Isend (b, n, t, d, tag, c, r)); }
API MPI_Irecv (void *b, int n, MPI_Datatype t, int s, int tag, MPI_Comm c, MPI_Request *r)
{ TIMED (R_Irecv, PMPI_Irecv (b, n, t, s, tag, c, r)); }
API MPI_Ssend (const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c)
{ TIMED (R_Ssend, PMPI_Ssend (b, n, t, d, tag, c)); }
API MPI_Sendrecv (const void *sb, int sn, MPI_Datatype st, int d, int stag, void *rb,
                  int rn, MPI_Datatype rt, int s, int rtag, MPI_Comm c, MPI_Status *status)
{ TIMED (R_Sendrecv, PMPI_Sendrecv (sb, sn, st, d, stag, rb, rn, rt, s, rtag, c, status)); }
API MPI_Wait (MPI_Request *r, MPI_Status *st)
{ TIMED (R_Wait, PMPI_Wait (r, st)); }
API MPI_Waitall (int n, MPI_Request r[], MPI_Status st[])
{ TIMED (R_Waitall, PMPI_Waitall (n, r, st)); }
API MPI_Waitany (int n, MPI_Request r[], int *i, MPI_Status *st)
{ TIMED (R_Waitany, PMPI_Waitany (n, r, i, st)); }
API MPI_Test (MPI_Request *r, int *f, MPI_Status *st)
{ TIMED (R_Test, PMPI_Test (r, f, st)); }
API MPI_Testall (int n, MPI_Request r[], int *f, MPI_Status st[])
{ TIMED (R_Testall, PMPI_Testall (n, r, f, st)); }
API MPI_Probe (int s, int tag, MPI_Comm c, MPI_Status *st)
{ TIMED (R_Probe, PMPI_Probe (s, tag, c, st)); }
API MPI_Iprobe (int s, int tag, MPI_Comm c, int *f, MPI_Status *st)
{ TIMED (R_Iprobe, PMPI_Iprobe (s, tag, c, f, st)); }
API MPI_Barrier (MPI_Comm c)
{ TIMED (R_Barrier, PMPI_Barrier (c)); }
API MPI_Bcast (void *b, int n, MPI_Datatype t, int root, MPI_Comm c)
{ TIMED (R_Bcast, PMPI_Bcast (b, n, t, root, c)); }
API MPI_Reduce (const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c)
{ TIMED (R_Reduce, PMPI_Reduce (sb, rb, n, t, op, root, c)); }
API MPI_Allreduce (const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c)
{ TIMED (R_Allreduce, PMPI_Allreduce (sb, rb, n, t, op, c)); }
API MPI_Gather (const void *sb, int sn, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt,
                int root, MPI_Comm c)
{ TIMED (R_Gather, PMPI_Gather (sb, sn, st, rb, rn, rt, root, c)); }
API MPI_Gatherv (const void *sb, int sn, MPI_Datatype st, void *rb, const int rn[],
                 const int dis[], MPI_Datatype rt, int root, MPI_Comm c)
{ TIMED (R_Gatherv, PMPI_Gatherv (sb, sn, st, rb, rn, dis, rt, root, c)); }
API MPI_Scatter (const void *sb, int sn, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt,
                 int root, MPI_Comm c)
{ TIMED (R_Scatter, PMPI_Scatter (sb, sn, st, rb, rn, rt, root, c)); }
API MPI_Scatterv (const void *sb, const int sn[], const int dis[], MPI_Datatype st, void *rb,
                  int rn, MPI_Datatype rt, int root, MPI_Comm c)
{ TIMED (R_Scatterv, PMPI_Scatterv (sb, sn, dis, st, rb, rn, rt, root, c)); }
API MPI_Allgather (const void *sb, int sn, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt,
                   MPI_Comm c)
{ TIMED (R_Allgather, PMPI_Allgather (sb, sn, st, rb, rn, rt, c)); }
API MPI_Allgatherv (const void *sb, int sn, MPI_Datatype st, void *rb, const int rn[],
                    const int dis[], MPI_Datatype rt, MPI_Comm c)
{ TIMED (R_Allgatherv, PMPI_Allgatherv (sb, sn, st, rb, rn, dis, rt, c)); }
API MPI_Alltoall (const void *sb, int sn, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt,
                  MPI_Comm c)
{ TIMED (R_Alltoall, PMPI_Alltoall (sb, sn, st, rb, rn, rt, c)); }
API MPI_Alltoallv (const void *sb, const int sn[], const int sdis[], MPI_Datatype st, void *rb,
                   const int rn[], const int rdis[], MPI_Datatype rt, MPI_Comm c)
{ TIMED (R_Alltoallv, PMPI_Alltoallv (sb, sn, sdis, st, rb, rn, rdis, rt, c)); }

static void
wstr (unsigned char **w, size_t *n, const char *s)
{
  uint32_t l = (uint32_t) strlen (s);
  w32 (w, n, l);
  wbytes (w, n, s, l);
}

#define SOURCE "libtally-mpi (MPI routines)"

size_t
routines_record (unsigned char *w, uint64_t *checksum)
{
  size_t n = 0;
  /* The checksum names the unit and its routines, in order.  */
  uint64_t h = 1469598103934665603ull;
  for (const char *p = SOURCE; *p; p++)
    h = (h ^ (unsigned char) *p) * 1099511628211ull;
  for (int i = 0; i < R_COUNT; i++)
    for (const char *p = names[i]; *p; p++)
      h = (h ^ (unsigned char) *p) * 1099511628211ull;
  *checksum = h;
  unsigned char b[TALLY_MODREC_FIXED];
  /* hooks=call; function flag bit 2 set */
  struct tally_modrec mr = { TALLY_ABI_VERSION, h, 0x2 | 0x10000, R_COUNT };
  tally_modrec_put (b, &mr);
  wbytes (&w, &n, b, TALLY_MODREC_FIXED);
  wstr (&w, &n, SOURCE);
  wstr (&w, &n, "");
  for (int i = 0; i < R_COUNT; i++)
    {
      uint64_t c = __atomic_load_n (&calls[i], __ATOMIC_RELAXED);
      for (int s = 0; s < 3; s++)
        wstr (&w, &n, names[i]);
      wstr (&w, &n, "mpi.h");
      /* line 0, two counters (entries and exits: both the calls) */
      struct tally_fnrec fr = { 0, TALLY_FN_ARTIFICIAL, 2, 0 };
      tally_fnrec_put (b, &fr);
      wbytes (&w, &n, b, TALLY_FNREC_FIXED);
      for (int k = 0; k < 2; k++)
        {
          tally_le_put64 (b, c);
          wbytes (&w, &n, b, 8);
        }
      w32 (&w, &n, 0); /* no block map */
    }
  return n;
}

uint32_t
routines_count (void)
{
  return R_COUNT;
}

void
routines_meas (unsigned char *w, uint32_t v)
{
  tally_le_put32 (w, R_COUNT);
  w += 4;
  for (int i = 0; i < R_COUNT; i++)
    for (uint32_t k = 0; k < v; k++, w += TALLY_MEAS_PAIR)
      {
        /* The cycles in the routine, inclusive and exclusive alike.  */
        uint64_t c = k ? 0 : __atomic_load_n (&cycles[i], __ATOMIC_RELAXED);
        struct tally_measpair pair = { c, c };
        tally_measpair_put (w, &pair);
      }
}
