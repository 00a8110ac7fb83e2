/* Flow solver of the block map (blockmap.h): a decoded map (blockmap.c)
 * and its values made the count of every block and edge, and the entry
 * counts of a module's kind 6 functions from their callers' blocks.
 *
 * Solving (doc/data-format.md "Solving"):
 *   1. Each block B >= 2 is two nodes, B.in = 2B-2 and B.out = 2B-1, joined
 *      by B's block edge; ENTRY is node 0, EXIT node 1; a map edge S -> D
 *      runs from S.out (ENTRY) to D.in (EXIT); an edge EXIT -> ENTRY closes
 *      the flow.
 *   2. Edges with a value are known; the others unknown.
 *   3. A node with exactly one unknown edge determines it: the counts in
 *      equal the counts out.  Repeat until no node has a single unknown.
 *      With kind TREE the unknown edges form a spanning forest, so this
 *      determines all of them; with kind BLOCK whatever is determined.
 *      The sums are taken modulo 2^64: the equations are linear, so every
 *      count comes out exact however the others came out.
 *   4. A negative count is legitimate on a fake edge into EXIT only: flow
 *      that arrived there by a call returning in a process that did not
 *      make the call (a forked child, or after tally_reset, resumes in the
 *      middle of its active functions).  Anywhere else the counts are not
 *      one consistent run (racy update=single counts, a dump taken while
 *      other threads counted): shown as 0 and counted in NEGATIVE.  */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blockmap.h"
#include "blockmap-int.h"
#include "datafile.h"
#include "freeall.h"
#include "tally/format.h"
#include "tally/mapcode.h"

/* 1. The graph of the solver.  */
struct gedge
{
  uint32_t from, to; /* nodes */
  uint64_t count;
  int known;
};

struct gnode
{
  uint64_t in, out; /* sums of the known edges */
  uint32_t unknown; /* edges not yet known */
  uint32_t *edges;  /* incident edges */
  uint32_t nedges;
};

static uint32_t
in_node (uint32_t b)
{
  return b == TALLY_MAP_EXIT ? 1 : b == TALLY_MAP_ENTRY ? 0 : 2 * b - 2;
}

static uint32_t
out_node (uint32_t b)
{
  return b == TALLY_MAP_ENTRY ? 0 : b == TALLY_MAP_EXIT ? 1 : 2 * b - 1;
}

static uint64_t
add_sat (uint64_t a, uint64_t b)
{
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Sums modulo 2^64 (3.): unsigned arithmetic wraps, exactly.  */
static void
set_known (struct gnode *nodes, struct gedge *e, uint64_t count)
{
  e->count = count;
  e->known = 1;
  nodes[e->from].out += count;
  nodes[e->from].unknown--;
  nodes[e->to].in += count;
  nodes[e->to].unknown--;
}

/* 4. A negative count of edge E (a map edge when K is below the map's
   edge count) becomes 0; it is counted in NEGATIVE unless it is
   legitimate.  */
static void
check_sign (const struct tally_blockmap *m, struct gedge *e, size_t k,
            struct tally_flow *out)
{
  if (!e->known || e->count <= (uint64_t) INT64_MAX)
    return;
  if (!(k < m->nedges && (m->edges[k].flags & TALLY_EDGE_FAKE)
        && m->edges[k].dst == TALLY_MAP_EXIT))
    out->negative++;
  e->count = 0;
}

/* Kinds 4 and 5: the derived blocks' values, in derive_order's order: 1
   if a block (kind 5: or an edge's value) derived from is known to have
   run, 0 if all are known not to, unknown otherwise.  */
static void
solve_derived (const struct tally_blockmap *m, const uint64_t *values,
               uint32_t nvalues, struct tally_flow *out)
{
  uint32_t nb = m->nblocks;
  uint32_t *order = alloc_array (nb, sizeof *order);
  uint32_t *start = alloc_array ((size_t) nb + 1, sizeof *start);
  /* An edge gives a value to each end at most (kind 5: an edge with a
     value of its own may give it to both).  */
  uint64_t *list = alloc_array ((size_t) m->nedges * 2, sizeof *list);
  uint32_t *fill = alloc_array (nb, sizeof *fill);
  struct tally_derive_map v;
  uint32_t *flat = NULL, n = 0, at, from;
  int r = !order || !start || !list || !fill
              ? -2
              : derive_order (m, order, &n, &v, &flat, &at, &from);
  if (r == -2)
    {
      fputs ("tally: out of memory\n", stderr);
      exit (1);
    }
  if (r == TALLY_DERIVE_OK) /* always: the decoder checked */
    {
      /* The blocks each derived block is derived from (CSR).  */
      for (int pass = 0; pass < 2; pass++)
        {
          uint32_t pos = 0, a;
          while ((from = tally_derive_next (&v, &pos, &a)) != TALLY_MAP_NONE)
            if (pass == 0)
              start[a + 1]++;
            else
              /* A block, or (bit 32) the edge's own value.  */
              list[start[a] + fill[a]++]
                  = from == TALLY_DERIVE_FROM_EDGE
                        ? (uint64_t) 1 << 32 | (pos - 1) / 2
                        : from;
          if (pass == 0)
            for (uint32_t b = 0; b < nb; b++)
              start[b + 1] += start[b];
        }
      for (uint32_t i = 0; i < m->derived; i++)
        {
          uint32_t b = order[i];
          int ran = 0, all_known = 1;
          for (uint32_t k = start[b]; k < start[b + 1]; k++)
            {
              if (list[k] >> 32)
                {
                  uint32_t val = m->edges[(uint32_t) list[k]].value;
                  if (val >= nvalues)
                    all_known = 0;
                  else if (values[val])
                    ran = 1;
                  continue;
                }
              uint32_t src = (uint32_t) list[k];
              if (!out->block_known[src])
                all_known = 0;
              else if (out->block[src])
                ran = 1;
            }
          if (ran || all_known)
            {
              out->block[b] = (uint64_t) ran;
              out->block_known[b] = 1;
            }
        }
    }
  free_all (order, start, list, fill, flat);
}

void
tally_flow_solve (const struct tally_blockmap *m, const uint64_t *values,
                  uint32_t nvalues, struct tally_flow *out)
{
  tally_flow_solve_entry (m, values, nvalues, 0, 0, out);
}

void
tally_flow_solve_entry (const struct tally_blockmap *m,
                        const uint64_t *values, uint32_t nvalues,
                        uint64_t entry, int entry_known,
                        struct tally_flow *out)
{
  memset (out, 0, sizeof *out);
  uint32_t nb = m->nblocks;
  out->block = alloc_array (nb, sizeof *out->block);
  out->block_known = alloc_array (nb, 1);
  out->edge = alloc_array (m->nedges, sizeof *out->edge);
  out->edge_known = alloc_array (m->nedges, 1);
  if (!out->block || !out->block_known || !out->edge || !out->edge_known)
    {
      fputs ("tally: out of memory\n", stderr);
      exit (1);
    }

  if (m->kind == TALLY_MAP_VISITED)
    {
      for (uint32_t b = 2; b < nb; b++)
        if (m->blocks[b].value != TALLY_MAP_NONE
            && m->blocks[b].value < nvalues)
          {
            out->block[b] = values[m->blocks[b].value] != 0;
            out->block_known[b] = 1;
          }
      if (m->derived)
        solve_derived (m, values, nvalues, out);
      for (uint32_t b = 2; b < nb; b++)
        out->unknown_blocks += !out->block_known[b];
      return;
    }

  /* 1, 2. Nodes 0 .. 2 nb - 3; edges: the map's, the block edges, and
     EXIT -> ENTRY last.  */
  uint32_t nnodes = 2 * nb - 2;
  size_t ne = (size_t) m->nedges + (nb - 2) + 1;
  struct gnode *nodes = alloc_array (nnodes, sizeof *nodes);
  struct gedge *edges = alloc_array (ne, sizeof *edges);
  uint32_t *incidence = alloc_array (2 * ne, sizeof *incidence);
  uint32_t *work = alloc_array (nnodes, sizeof *work);
  if (!nodes || !edges || !incidence || !work)
    {
      fputs ("tally: out of memory\n", stderr);
      exit (1);
    }
  size_t k = 0;
  for (uint32_t e = 0; e < m->nedges; e++, k++)
    {
      edges[k].from = out_node (m->edges[e].src);
      edges[k].to = in_node (m->edges[e].dst);
    }
  for (uint32_t b = 2; b < nb; b++, k++)
    {
      edges[k].from = in_node (b);
      edges[k].to = out_node (b);
    }
  edges[k].from = 1;
  edges[k].to = 0;
  for (k = 0; k < ne; k++)
    {
      nodes[edges[k].from].nedges++;
      nodes[edges[k].to].nedges++;
      nodes[edges[k].from].unknown++;
      nodes[edges[k].to].unknown++;
    }
  uint32_t *p = incidence;
  for (uint32_t n = 0; n < nnodes; n++)
    {
      nodes[n].edges = p;
      p += nodes[n].nedges;
      nodes[n].nedges = 0;
    }
  for (k = 0; k < ne; k++)
    {
      struct gnode *a = &nodes[edges[k].from], *b = &nodes[edges[k].to];
      a->edges[a->nedges++] = (uint32_t) k;
      b->edges[b->nedges++] = (uint32_t) k;
    }
  for (uint32_t e = 0; e < m->nedges; e++)
    if (m->edges[e].value != TALLY_MAP_NONE)
      set_known (nodes, &edges[e], values[m->edges[e].value]);
  for (uint32_t b = 2; b < nb; b++)
    if (m->blocks[b].value != TALLY_MAP_NONE)
      set_known (nodes, &edges[m->nedges + b - 2], values[m->blocks[b].value]);
  /* Kind 6: the one normal edge out of ENTRY (map_finish checked it has no
     value) takes its callers' count.  */
  for (uint32_t e = 0; m->kind == TALLY_MAP_TREE_CALLERS && entry_known
                       && e < m->nedges; e++)
    if (m->edges[e].src == TALLY_MAP_ENTRY
        && !(m->edges[e].flags & TALLY_EDGE_FAKE) && !edges[e].known)
      set_known (nodes, &edges[e], entry);

  /* 3. */
  uint32_t nwork = 0;
  for (uint32_t n = 0; n < nnodes; n++)
    if (nodes[n].unknown == 1)
      work[nwork++] = n;
  while (nwork)
    {
      uint32_t n = work[--nwork];
      struct gnode *nd = &nodes[n];
      if (nd->unknown != 1)
        continue;
      struct gedge *e = NULL;
      for (uint32_t i = 0; i < nd->nedges && !e; i++)
        if (!edges[nd->edges[i]].known)
          e = &edges[nd->edges[i]];
      /* An unknown edge from N to N would count twice; the graph has none
         (no map edge leaves EXIT or enters ENTRY).  */
      uint64_t have = e->to == n ? nd->out : nd->in;
      uint64_t other = e->to == n ? nd->in : nd->out;
      set_known (nodes, e, have - other);
      if (nodes[e->from].unknown == 1)
        work[nwork++] = e->from;
      if (nodes[e->to].unknown == 1)
        work[nwork++] = e->to;
    }

  /* 4.  Every count above INT64_MAX is taken as negative, a given one
     too (no run counts that far).  */
  for (k = 0; k < ne; k++)
    check_sign (m, &edges[k], k, out);
  for (uint32_t e = 0; e < m->nedges; e++)
    {
      out->edge[e] = edges[e].count;
      out->edge_known[e] = (unsigned char) edges[e].known;
    }
  for (uint32_t b = 2; b < nb; b++)
    {
      struct gedge *e = &edges[m->nedges + b - 2];
      out->block[b] = e->count;
      out->block_known[b] = (unsigned char) e->known;
      out->unknown_blocks += !e->known;
    }
  /* ENTRY and EXIT: the flow around EXIT -> ENTRY.  */
  struct gedge *back = &edges[ne - 1];
  out->block[TALLY_MAP_ENTRY] = out->block[TALLY_MAP_EXIT] = back->count;
  out->block_known[TALLY_MAP_ENTRY] = out->block_known[TALLY_MAP_EXIT]
    = (unsigned char) back->known;
  out->entries_known = out->exits_known = 1;
  for (uint32_t e = 0; e < m->nedges; e++)
    {
      const struct tally_map_edge *ed = &m->edges[e];
      if (ed->flags & TALLY_EDGE_FAKE)
        continue;
      if (ed->src == TALLY_MAP_ENTRY)
        {
          out->entries = add_sat (out->entries, edges[e].count);
          out->entries_known &= edges[e].known;
        }
      if (ed->dst == TALLY_MAP_EXIT)
        {
          out->exits = add_sat (out->exits, edges[e].count);
          out->exits_known &= edges[e].known;
        }
    }
  free (nodes);
  free (edges);
  free (incidence);
  free (work);
}

void
tally_flow_free (struct tally_flow *f)
{
  free (f->block);
  free (f->edge);
  free (f->block_known);
  free (f->edge_known);
  memset (f, 0, sizeof *f);
}

/* The entry count of kind 6 function F of a module (tally_module_solve's
   arguments) from the solved FLOWS of its sites' functions into *ENTRY:
   1, or 0 when it is not determined.  */
static int
callers_entry (uint32_t nfns, const struct tally_blockmap *const *maps,
               const struct tally_flow *flows, uint32_t f, uint64_t *entry)
{
  const struct tally_blockmap *m = maps[f];
  uint64_t sum = 0;
  if (!m->complete)
    return 0;
  for (uint32_t k = 0; k < m->nsites; k++)
    {
      uint32_t g = m->sites[2 * k], blk = m->sites[2 * k + 1];
      /* Checked by tally_data_check_maps; a file that skipped it still
         reads no memory but solved counts.  */
      if (g >= nfns || !maps[g] || !counts_blocks (maps[g]->kind) || blk < 2
          || blk >= maps[g]->nblocks || !flows[g].block_known
          || !flows[g].block_known[blk])
        return 0;
      sum += flows[g].block[blk]; /* modulo 2^64, as all solving */
    }
  *entry = sum;
  return 1;
}

void
tally_module_solve (uint32_t nfns, const struct tally_blockmap *const *maps,
                    const uint64_t *const *values, const uint32_t *nvalues,
                    struct tally_flow *flows)
{
  struct callers_fn *fns = alloc_array (nfns, sizeof *fns);
  uint32_t *order = alloc_array (nfns, sizeof *order);
  uint32_t *deps = alloc_array (nfns, sizeof *deps);
  if (!fns || !order || !deps)
    out_of_memory ();
  memset (flows, 0, nfns * sizeof *flows);
  /* Every function but kind 6 first: those are what kind 6 sites read.  */
  for (uint32_t i = 0; i < nfns; i++)
    if (maps[i])
      {
        fns[i] = (struct callers_fn){ maps[i]->kind, maps[i]->nblocks,
                                      maps[i]->nsites, maps[i]->sites };
        if (maps[i]->kind != TALLY_MAP_TREE_CALLERS)
          tally_flow_solve (maps[i], values[i], nvalues[i], &flows[i]);
      }
  uint32_t n = callers_order (nfns, fns, order, deps);
  for (uint32_t k = 0; k < n; k++)
    {
      uint32_t f = order[k];
      uint64_t entry = 0;
      int known = callers_entry (nfns, maps, flows, f, &entry);
      tally_flow_solve_entry (maps[f], values[f], nvalues[f], entry, known,
                              &flows[f]);
    }
  /* Those on or after a cycle: their entries are unknown.  */
  for (uint32_t i = 0; i < nfns; i++)
    if (fns[i].kind == TALLY_MAP_TREE_CALLERS && deps[i])
      tally_flow_solve (maps[i], values[i], nvalues[i], &flows[i]);
  free_all (fns, order, deps);
}

int
tally_data_module_solve (const struct tally_data_module *m,
                         struct tally_blockmap *bm, struct tally_flow *flows,
                         char *err, size_t errlen)
{
  size_t n = m->nfns ? m->nfns : 1;
  const struct tally_blockmap **maps = alloc_array (n, sizeof *maps);
  const uint64_t **values = alloc_array (n, sizeof *values);
  uint32_t *nvalues = alloc_array (n, sizeof *nvalues);
  if (!maps || !values || !nvalues)
    out_of_memory ();
  int rc = 0;
  char later[256]; /* the messages after the first */
  for (uint32_t j = 0; j < m->nfns; j++)
    {
      const struct tally_data_fn *f = &m->fns[j];
      memset (&bm[j], 0, sizeof bm[j]);
      if (!f->map_size)
        continue;
      if (tally_fn_map_decode (f, &bm[j], rc ? later : err,
                               rc ? sizeof later : errlen) != 0)
        {
          rc = -1;
          continue;
        }
      maps[j] = &bm[j];
      values[j] = f->counters;
      nvalues[j] = f->ncounters;
    }
  tally_module_solve (m->nfns, maps, values, nvalues, flows);
  free_all (maps, values, nvalues);
  return rc;
}
