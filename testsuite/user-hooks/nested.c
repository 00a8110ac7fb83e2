/* GNU C nested functions get the hooks like any other function.  */
int
main (void)
{
  int base = 1;
  int inner (int y) { return y + base; }
  int s = 0;
  for (int i = 0; i < 4; i++)
    s += inner (i);
  return s != 10;
}
