/* An independent oracle for at=early call counts: link a program built with
   GCC's own -finstrument-functions against this file, and at exit it writes
   one line per function, "OFFSET ENTRIES EXITS", OFFSET being the function's
   address relative to the executable's load address (what `nm` prints for a
   PIE).  It shares no code with tally.  */
#define _GNU_SOURCE
#include <link.h>
#include <stdio.h>
#include <stdlib.h>

#define SLOTS 4096

struct slot
{
  void *fn;
  unsigned long entries, exits;
};

/* Open-addressing table keyed by function address.  */
static struct slot table[SLOTS];

__attribute__ ((no_instrument_function)) static struct slot *
find (void *fn)
{
  unsigned long h = ((unsigned long) fn >> 4) % SLOTS;
  for (unsigned n = 0; n < SLOTS; n++, h = (h + 1) % SLOTS)
    {
      void *cur = __atomic_load_n (&table[h].fn, __ATOMIC_ACQUIRE);
      if (cur == fn)
        return &table[h];
      if (!cur)
        {
          void *expected = NULL;
          if (__atomic_compare_exchange_n (&table[h].fn, &expected, fn, 0,
                                           __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)
              || expected == fn)
            return &table[h];
        }
    }
  abort ();
}

__attribute__ ((no_instrument_function)) void
__cyg_profile_func_enter (void *fn, void *site)
{
  (void) site;
  __atomic_fetch_add (&find (fn)->entries, 1, __ATOMIC_RELAXED);
}

__attribute__ ((no_instrument_function)) void
__cyg_profile_func_exit (void *fn, void *site)
{
  (void) site;
  __atomic_fetch_add (&find (fn)->exits, 1, __ATOMIC_RELAXED);
}

__attribute__ ((no_instrument_function)) static int
first_object (struct dl_phdr_info *info, size_t size, void *base)
{
  (void) size;
  *(ElfW (Addr) *) base = info->dlpi_addr;
  return 1;
}

__attribute__ ((no_instrument_function, destructor)) static void
write_counts (void)
{
  const char *path = getenv ("CYG_COUNT_OUTPUT");
  FILE *f = path ? fopen (path, "w") : NULL;
  if (!f)
    return;
  ElfW (Addr) base = 0;
  dl_iterate_phdr (first_object, &base);
  for (unsigned i = 0; i < SLOTS; i++)
    if (table[i].fn)
      fprintf (f, "%lx %lu %lu\n", (unsigned long) table[i].fn - base,
               table[i].entries, table[i].exits);
  fclose (f);
}
