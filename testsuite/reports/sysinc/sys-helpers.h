/* Included with -isystem: GCC treats it as a system header.  */
inline int
sys_helper_used (int x)
{
  return x + 1;
}

inline int
sys_helper_unused (int x)
{
  return x - 1;
}
