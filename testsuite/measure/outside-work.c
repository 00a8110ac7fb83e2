/* Instrumented with paths=on; called from uninstrumented code only
   (outside-main.c).  */
static volatile unsigned long sink;

__attribute__ ((noinline)) void leaf (void) { sink++; }

void
work (int n)
{
  for (int i = 0; i < n; i++)
    sink += i;
  leaf ();
}
