/* A library loaded and unloaded by dl-main.c.  */
__attribute__ ((noipa)) int
lib_f (int x)
{
  return x + 1;
}
