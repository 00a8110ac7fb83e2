/* tally/image.h - the data file in memory, for libtally-mpi (mpi/) and
 * other code inside an instrumented process that sends its counts
 * elsewhere than the runtime's own file.  Not needed by programs.  */
#ifndef TALLY_IMAGE_H
#define TALLY_IMAGE_H

#include <stddef.h>

#include "tally/public.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The data file a dump would write now (version 2, header flag at-exit,
   module records and MEAS; no PATH, FRMS or PEVT), complete with its
   trailer, in memory from mmap: release it with munmap (image, *len).
   NULL with errno set (EBUSY: another dump runs, ENOMEM).  */
TALLY_PUBLIC void *tally_image (size_t *len);

/* Write IMAGE (LEN bytes, a whole data file whose trailer is recomputed)
   to PATTERN expanded as TALLY_OUTPUT is (NULL: TALLY_OUTPUT itself, or
   its default), through a temporary file renamed over it.  %m only names
   (no merge), %c expands to nothing.  Returns 0, or -1 (reported, errno
   set).  */
TALLY_PUBLIC int tally_write_image (const void *image, size_t len,
                                    const char *pattern);

/* Write no file at exit (nor later, for late counts): the counts went
   elsewhere.  tally_dump () still writes.  */
TALLY_PUBLIC void tally_exit_dump_off (void);

#ifdef __cplusplus
}
#endif

#endif /* TALLY_IMAGE_H */
