/* Test hooks: count entries and exits per function id and print them at
   exit, so a test can compare them with tally's own count mode.  */
#include <tally/hooks.h>

__attribute__ ((weak)) unsigned long cnt_in[4096], cnt_out[4096];
__attribute__ ((weak)) const struct tally_fn *cnt_fn[4096];

static inline void
cnt_enter (const struct tally_fn *fn, struct tally_frame *fr)
{
  (void) fr;
  cnt_in[fn->id & 4095]++;
  cnt_fn[fn->id & 4095] = fn;
}

static inline void
cnt_exit (const struct tally_fn *fn, struct tally_frame *fr)
{
  (void) fr;
  cnt_out[fn->id & 4095]++;
}

__attribute__ ((destructor (101), no_instrument_function, unused)) static void
cnt_report (void)
{
  for (int i = 0; i < 4096; i++)
    if (cnt_in[i])
      __builtin_printf ("CNT %lu %lu %s\n", cnt_in[i], cnt_out[i], cnt_fn[i]->names->name);
}
