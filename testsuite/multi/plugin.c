/* Loaded with dlopen and unloaded with dlclose before the program ends.  */
int
plugin_fn (int x)
{
  return x - 1;
}
