/* Linked into both programs of the MPMD job and into mixed.c: one unit,
   one compile checksum, one record in the reduced file.  */
static volatile unsigned long common_sink;

__attribute__ ((noinline)) void
common_step (int k)
{
  for (int i = 0; i < 50 * (k % 5 + 1); i++)
    common_sink += (unsigned long) i;
}
