/* Included with -I: the user's own header.  */
inline int
user_helper_unused (int x)
{
  return x * 3;
}
