/* Linked into the program as a shared library.  */
int
lib_fn (int x)
{
  return x * 3 + 1;
}
