/* Plain static inline hooks (no always_inline): on cold paths GCC 12 at -O2
   keeps them out of line as IPA clones (lopi_exit.isra.0).  */
#include <tally/hooks.h>
extern volatile unsigned lopi_source;
extern unsigned long lopi_total[64], lopi_calls[64];
static inline void
lopi_enter (const struct tally_fn *fn, struct tally_frame *fr)
{
  (void) fn;
  fr->start = lopi_source;
}
static inline void
lopi_exit (const struct tally_fn *fn, struct tally_frame *fr)
{
  lopi_total[fn->id & 63] += (unsigned) (lopi_source - (unsigned) fr->start);
  lopi_calls[fn->id & 63]++;
}
