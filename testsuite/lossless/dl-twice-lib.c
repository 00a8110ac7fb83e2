/* A library dl-twice.c loads twice, and as two copies under two paths.
   lib_f is called from outside; lib_g twice per lib_f, so a count that
   moved from one module record to another would show.  */
__attribute__ ((noipa)) static int
lib_g (int x)
{
  return x + 1;
}

__attribute__ ((noipa)) int
lib_f (int x)
{
  return lib_g (lib_g (x)) - 1;
}
