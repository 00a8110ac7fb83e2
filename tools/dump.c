/* dump.c - `tally dump`: every record as stored; cmd_dump and the header,
 * modules and block maps below, and first the MEAS, FRMS, PATH and PEVT
 * records (dump.h).
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
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "blockmap.h"
#include "cli.h"
#include "dump.h"
#include "print.h"
#include "ranks.h"
#include "tally/abi.h"
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

/* The name dump gives one flag bit.  */
struct flag_name
{
  uint32_t bit;
  const char *name;
};

/* Write FLAGS in hex, then the names of its bits listed in NAMES and any
   unknown bits, e.g. "0x0000000a (hooks-call,at-late)".  */
static void
put_flags (uint32_t flags, const struct flag_name *names, size_t n)
{
  printf ("0x%08lx", (unsigned long) flags);
  if (!flags)
    return;
  const char *sep = " (";
  for (size_t i = 0; i < n; i++)
    if (flags & names[i].bit)
      {
        printf ("%s%s", sep, names[i].name);
        sep = ",";
        flags &= ~names[i].bit;
      }
  if (flags)
    printf ("%s0x%lx", sep, (unsigned long) flags);
  putchar (')');
}

/* Names of the header flags, for dump.  */
static const struct flag_name file_flags[] = {
  { TALLY_FILE_AT_EXIT, "at-exit" },
  { TALLY_FILE_CONTINUOUS, "continuous" },
  { TALLY_DATA_UNFINISHED, "unfinished" },
  { TALLY_DATA_CUT, "cut" },
};

/* Names of the module flags, for dump.  */
static const struct flag_name module_flags[] = {
  { TALLY_MOD_HOOKS_INLINE, "hooks-inline" },
  { TALLY_MOD_HOOKS_CALL, "hooks-call" },
  { TALLY_MOD_AT_EARLY, "at-early" },
  { TALLY_MOD_AT_LATE, "at-late" },
  { TALLY_MOD_UPDATE_ATOMIC, "update-atomic" },
  { TALLY_MOD_HOOKS_USER, "hooks-user" },
  { TALLY_MOD_MEASURE_CYCLES, "measure-cycles" },
  { TALLY_MOD_BLOCKS_COUNT, "blocks-count" },
  { TALLY_MOD_BLOCKS_VISITED, "blocks-visited" },
  { TALLY_MOD_UPDATE_TLS, "update-tls" },
  { TALLY_MOD_HOOKS_NONE, "hooks-none" },
  { TALLY_MOD_BLOCKS_TREE, "placement-tree" },
  { TALLY_MOD_COUNTERS_MAPPED, "counters-mapped" },
  { TALLY_MOD_PATHS, "paths-on" },
  { TALLY_MOD_MEASURE_PAPI, "measure-papi" },
  { TALLY_MOD_EXIT_FRAMES, "exit-frames" },
  { TALLY_MOD_SYSTEM_MARKED, "system-marked" },
};

/* Names of the function flags, for dump.  */
static const struct flag_name fn_flags[] = {
  { TALLY_FN_CLONE, "clone" },
  { TALLY_FN_CALLS_DERIVED, "calls-derived" },
  { TALLY_FN_SYSTEM, "system" },
  { TALLY_FN_ARTIFICIAL, "artificial" },
};

#define COUNT(a) (sizeof (a) / sizeof (a)[0])

/* The block map of F as stored: one line per block and per edge.  */
static void
dump_map (const struct tally_data_fn *f)
{
  struct tally_blockmap m;
  char err[256];
  if (tally_fn_map_decode (f, &m, err, sizeof err) != 0)
    {
      printf ("    map %lu bytes: bad: ", (unsigned long) f->map_size);
      put_text (err);
      putchar ('\n');
      return;
    }
  printf ("    map %lu bytes kind=%s blocks=%lu edges=%lu files:",
          (unsigned long) f->map_size, kind_name (m.kind),
          (unsigned long) m.nblocks, (unsigned long) m.nedges);
  for (uint32_t i = 0; i < m.nfiles; i++)
    {
      putchar (' ');
      put_quoted (m.files[i]);
    }
  putchar ('\n');
  for (uint32_t b = 0; b < m.nblocks; b++)
    {
      const struct tally_map_block *mb = &m.blocks[b];
      printf ("    block %lu value=", (unsigned long) b);
      if (mb->value == TALLY_MAP_NONE)
        putchar ('-');
      else
        printf ("%lu", (unsigned long) mb->value);
      printf (" flags=0x%lx locations:", (unsigned long) mb->flags);
      for (uint32_t l = 0; l < mb->nlocs; l++)
        printf (" %lu:%lu", (unsigned long) mb->locs[l].file,
                (unsigned long) mb->locs[l].line);
      putchar ('\n');
    }
  for (uint32_t e = 0; e < m.nedges; e++)
    {
      const struct tally_map_edge *me = &m.edges[e];
      printf ("    edge %lu %lu->%lu flags=0x%lx value=", (unsigned long) e,
              (unsigned long) me->src, (unsigned long) me->dst,
              (unsigned long) me->flags);
      if (me->value == TALLY_MAP_NONE)
        puts ("-");
      else
        printf ("%lu\n", (unsigned long) me->value);
    }
  if (m.kind == TALLY_MAP_TREE_CALLERS)
    {
      printf ("    callers complete=%lu sites:", (unsigned long) m.complete);
      for (uint32_t k = 0; k < m.nsites; k++)
        printf (" %lu:%lu", (unsigned long) m.sites[2 * k],
                (unsigned long) m.sites[2 * k + 1]);
      putchar ('\n');
    }
  tally_map_free (&m);
}

static void
dump_data (const char *path, const struct tally_data *d)
{
  fputs ("file ", stdout);
  put_quoted (path);
  printf ("\nheader magic=%s version=%lu byte_order=0x%08lx size=%" PRIu64
          " pid=%" PRIu64 " time=%" PRIu64, TALLY_FILE_MAGIC,
          (unsigned long) d->version, (unsigned long) d->byte_order,
          d->file_size, d->pid, d->time);
  /* Up to the year 9999; anything later is not a real time stamp.  */
  if (d->time <= UINT64_C (253402300799))
    {
      time_t t = (time_t) d->time;
      struct tm *tm = gmtime (&t);
      char buf[32];
      if (tm && strftime (buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", tm))
        printf (" (%s)", buf);
    }
  printf (" modules=%lu flags=", (unsigned long) d->nmodules);
  put_flags (d->flags, file_flags, COUNT (file_flags));
  fputs ("\nprogram ", stdout);
  put_quoted (d->program);
  putchar ('\n');
  for (uint32_t i = 0; i < d->nmodules; i++)
    {
      const struct tally_data_module *mod = &d->modules[i];
      printf ("module %lu abi=%lu checksum=0x%016" PRIx64 " flags=",
              (unsigned long) i, (unsigned long) mod->abi_version,
              mod->checksum);
      put_flags (mod->flags, module_flags, COUNT (module_flags));
      printf (" functions=%lu source=", (unsigned long) mod->nfns);
      put_quoted (mod->source);
      fputs (" directory=", stdout);
      put_quoted (mod->directory);
      putchar ('\n');
      for (uint32_t j = 0; j < mod->nfns; j++)
        {
          const struct tally_data_fn *f = &mod->fns[j];
          printf ("  fn %lu", (unsigned long) j);
          put_fn_names (" %s=", " %s=", ESCAPE_C, f->name, f->symbol,
                        f->origin, f->file);
          printf (" line=%lu flags=", (unsigned long) f->line);
          put_flags (f->flags, fn_flags, COUNT (fn_flags));
          printf (" reserved=%lu counters=%lu:", (unsigned long) f->reserved,
                  (unsigned long) f->ncounters);
          for (uint32_t k = 0; k < f->ncounters; k++)
            printf (" %" PRIu64, f->counters[k]);
          putchar ('\n');
          if (f->map_size)
            dump_map (f);
        }
    }
  tally_dump_records (d, put_quoted);
  tally_ranks_dump (d); /* RNKS, ranks.c */
  /* A continuous file has no trailer: its chunks were checked one by one.  */
  if (d->flags & TALLY_FILE_CONTINUOUS)
    printf ("end (continuous file, no trailer) size=%" PRIu64 "\n", d->file_size);
  else
    printf ("trailer tag=0x%08lx crc=0x%08lx size=%" PRIu64 "\n",
            (unsigned long) TALLY_TAG_END, (unsigned long) d->crc,
            d->file_size);
}

int
cmd_dump (int argc, char **argv)
{
  struct cli_parsed a;
  int go = cli_parse (argc, argv, &a, NULL), status = 0;
  for (size_t i = 0; go == CLI_GO && i < a.nfiles; i++)
    {
      struct tally_data d;
      char err[256];
      if (tally_read_file (a.files[i], &d, err, sizeof err) != 0)
        {
          error_msg ("%s: %s", a.files[i], err);
          status = EXIT_BAD_DATA;
          continue;
        }
      note_unfinished (a.files[i], &d);
      dump_data (a.files[i], &d);
      tally_data_free (&d);
    }
  cli_parsed_free (&a);
  return go == CLI_GO ? status : go;
}

