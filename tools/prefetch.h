/* prefetch.h - read data files ahead on worker threads, handed out in
   order (tally merge -j N).  */
#ifndef TALLY_TOOLS_PREFETCH_H
#define TALLY_TOOLS_PREFETCH_H

#include <stddef.h>

#include "datafile.h"

struct tally_prefetch;

/* Start JOBS - 1 threads (none for JOBS 1) reading PATHS[0..N) ahead, at
   most 2 x JOBS files parsed and not yet taken.  NULL on no memory.  */
struct tally_prefetch *tally_prefetch_start (const char *const *paths,
                                             size_t n, int jobs);

/* The next file, in PATHS order, as tally_read_file gives it (0, or -1
   with ERR).  */
int tally_prefetch_next (struct tally_prefetch *p, struct tally_data *d,
                         char *err, size_t errlen);

/* Stop the threads (after any number of next calls) and free P.  */
void tally_prefetch_end (struct tally_prefetch *p);

#endif /* TALLY_TOOLS_PREFETCH_H */
