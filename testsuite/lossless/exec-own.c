/* Functions named like the exec family but not libc's: a definition in
   this unit, and declarations with other signatures.  None is redirected.  */
int execv (const char *path, char *const argv[]);
int execve (const char *path);
long execl (const char *path, ...);

int
execv (const char *path, char *const argv[])
{
  return path[0] + (argv != 0);
}

int
use (char *const argv[])
{
  return execv ("x", argv) + execve ("y") + (int) execl ("z", (char *) 0);
}
