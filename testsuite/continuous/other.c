/* The second unit of kill.c -DSPLIT.  */
__attribute__ ((noipa)) int
other_f (int x)
{
  return x ^ 5;
}
