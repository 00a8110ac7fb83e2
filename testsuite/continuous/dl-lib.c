/* The library cont-dl.c loads, unloads and loads again.  */
__attribute__ ((noipa)) int
lib_f (int x)
{
  return x + 1;
}
