/* hit counts every early and late call of ctor-first.c and ctor-obj.cc;
   main calls it once and prints the event log (ctor-log.c).  */
void note (const char *event);
void print_log (void);

__attribute__ ((noipa)) int
hit (int x)
{
  return x + 1;
}

int
main (void)
{
  note ("main");
  hit (0);
  print_log ();
  return 0;
}
