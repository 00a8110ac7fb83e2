/* dlopen'ed by one rank of the dlopen job (mixed.c).  */
static volatile unsigned long plug_sink;

__attribute__ ((noinline)) static void
plug_inner (int k)
{
  plug_sink += (unsigned long) k;
}

void
plug_run (int rank)
{
  for (int i = 0; i < 7 * (rank + 1); i++)
    plug_inner (i);
}
