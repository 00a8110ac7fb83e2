/* dump.c - `tally dump` of the MEAS, FRMS, PATH and PEVT records (dump.h).
 *
 *   meas values=2: "cycles" "perf::PAGE-FAULTS"
 *     module 0 fn 0 incl/excl: 8123/2040 3/1
 *   frames count=1
 *     frame 0 id=0xf0000000 address=0x7f31c2a4b0c0 name="start_thread"
 *   path depth=64 lost=0 nodes=3
 *     node 1 parent=0 function=0:0 calls=1 incl=8123 excl=2040
 *     node 2 parent=1 frame=0 calls=0 incl=0 excl=0
 *   path-events events=1 nodes=3
 *     node 1 incl/excl: 3/1
 *
 * One line per function, frame or node: the output grows with the file,
 * and every string goes through the caller's quoting.  */
#include <inttypes.h>
#include <stdio.h>

#include "dump.h"
#include "tally/format.h"

static void
dump_meas (const struct tally_data *d, void (*quote) (const char *))
{
  printf ("meas values=%lu:", (unsigned long) d->nmeas);
  for (uint32_t k = 0; k < d->nmeas; k++)
    {
      putchar (' ');
      quote (d->meas_names[k]);
    }
  putchar ('\n');
  for (uint32_t m = 0; m < d->nmodules; m++)
    for (uint32_t j = 0; j < d->modules[m].nfns; j++)
      {
        const uint64_t *v = d->modules[m].fns[j].meas;
        printf ("  module %lu fn %lu incl/excl:", (unsigned long) m,
                (unsigned long) j);
        for (uint32_t k = 0; k < d->nmeas; k++)
          printf (" %" PRIu64 "/%" PRIu64, v ? v[2 * k] : 0,
                  v ? v[2 * k + 1] : 0);
        putchar ('\n');
      }
}

static void
dump_frames (const struct tally_data *d, void (*quote) (const char *))
{
  printf ("frames count=%lu\n", (unsigned long) d->nframes);
  for (uint32_t f = 0; f < d->nframes; f++)
    {
      printf ("  frame %lu id=0x%08lx address=0x%" PRIx64 " name=",
              (unsigned long) f, (unsigned long) d->frames[f].id,
              d->frames[f].addr);
      quote (d->frames[f].name);
      putchar ('\n');
    }
}

static void
dump_path (const struct tally_data *d)
{
  printf ("path depth=%lu lost=%" PRIu64 " nodes=%lu\n",
          (unsigned long) d->path_depth, d->path_lost,
          (unsigned long) (d->npaths - 1));
  for (uint32_t i = 1; i < d->npaths; i++)
    {
      const struct tally_data_path *p = &d->paths[i];
      printf ("  node %lu parent=%lu ", (unsigned long) i,
              (unsigned long) p->parent);
      if (p->module == UINT32_MAX)
        fputs ("function=none", stdout); /* being made during the dump */
      else if (p->module == TALLY_DATA_FRAME)
        printf ("frame=%lu", (unsigned long) p->fn);
      else
        printf ("function=%lu:%lu", (unsigned long) p->module,
                (unsigned long) p->fn);
      printf (" calls=%" PRIu64 " incl=%" PRIu64 " excl=%" PRIu64 "\n",
              p->calls, p->incl, p->excl);
    }
}

static void
dump_path_events (const struct tally_data *d)
{
  printf ("path-events events=%lu nodes=%lu\n",
          (unsigned long) d->path_nevents, (unsigned long) (d->npaths - 1));
  for (uint32_t i = 1; i < d->npaths; i++)
    {
      printf ("  node %lu incl/excl:", (unsigned long) i);
      for (uint32_t e = 0; e < d->path_nevents; e++)
        {
          const uint64_t *v = d->path_events
                              + ((size_t) i * d->path_nevents + e) * 2;
          printf (" %" PRIu64 "/%" PRIu64, v[0], v[1]);
        }
      putchar ('\n');
    }
}

void
tally_dump_records (const struct tally_data *d, void (*quote) (const char *))
{
  if (d->nmeas)
    dump_meas (d, quote);
  if (d->nframes)
    dump_frames (d, quote);
  if (d->npaths)
    dump_path (d);
  if (d->npaths && d->path_nevents)
    dump_path_events (d);
}
