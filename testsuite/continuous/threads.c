/* Continuous output under threads: 8 threads call f as fast as they can
   while the parent kills the process.  Each thread notes in a shared file
   (argv[1], 16 u64 per thread: calls started, calls finished) what it did,
   so the checker knows the exact range the file's count must be in: every
   finished call, and at most the calls started (one per thread in
   flight).  With a library path as argv[2], the main thread then loads it
   (a counters=mapped unit registering while the threads count) and calls
   its lib_f 5 times.  Prints "go" once every thread has counted.  */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#define THREADS 8

static volatile uint64_t *shared;

__attribute__ ((noipa)) int
f (int x)
{
  return x + 1;
}

static void *
worker (void *arg)
{
  volatile uint64_t *mine = shared + 2 * (uintptr_t) arg;
  int s = 0;
  for (;;)
    {
      __atomic_store_n (&mine[0], mine[0] + 1, __ATOMIC_SEQ_CST);
      s = f (s);
      __atomic_store_n (&mine[1], mine[1] + 1, __ATOMIC_SEQ_CST);
    }
  return NULL;
}

int
main (int argc, char **argv)
{
  if (argc < 2)
    return 2;
  int fd = open (argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || ftruncate (fd, 4096) != 0)
    return 1;
  void *p = mmap (NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED)
    return 1;
  shared = (volatile uint64_t *) p;
  pthread_t t[THREADS];
  for (uintptr_t i = 0; i < THREADS; i++)
    if (pthread_create (&t[i], NULL, worker, (void *) i) != 0)
      return 1;
  for (int i = 0; i < THREADS; i++)
    while (__atomic_load_n (&shared[2 * i + 1], __ATOMIC_SEQ_CST) < 1000)
      usleep (1000);
  if (argc > 2)
    {
      void *h = dlopen (argv[2], RTLD_NOW);
      int (*lib_f) (int) = h ? (int (*) (int)) dlsym (h, "lib_f") : NULL;
      if (!lib_f)
        return 1;
      for (int i = 0; i < 5; i++)
        lib_f (i);
    }
  printf ("go\n");
  fflush (stdout);
  for (;;)
    pause ();
}
