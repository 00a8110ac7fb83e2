/* Built without the plugin: main calls the instrumented work () twice
   itself and three times through outside (), so work's path parents are
   the uninstrumented main and outside (outside-work.c).  */
void work (int n);

static volatile int sink;

__attribute__ ((noinline)) void
outside (void)
{
  for (int i = 0; i < 3; i++)
    work (100);
  sink++;
}

int
main (void)
{
  work (10);
  work (10);
  outside ();
  sink++;
  return 0;
}
