/* TALLY_DUMP_ON.  Usage: signal MODE
     wait   f 5 times, print "ready", read one byte from stdin (the test
            sends a signal meanwhile), then f 2 more times; exit 3 if the
            read failed (SA_RESTART should resume it)
     raise  f 3 times, then raise SIGTERM
     abort  f 2 times, then abort ()
     segv   f 4 times, then write through a null pointer
     overflow   f 4 times, then recurse without end (stack overflow)
     own-stack  the same, with an alternate signal stack the program set
                up before tally's registration; exit 4 if it is replaced
     pipe   for ever: f once, its count written to the file named by
            SIGNAL_TEST_COUNT (at offset 0), a line to stdout; ends when
            stdout's reader is gone (SIGPIPE)
   With SIGNAL_TEST_OWN_TERM set, a SIGTERM handler of the program's own,
   installed before tally's registration, ends the process with _exit (7).  */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__ ((noipa)) int
f (int x)
{
  return x + 1;
}

__attribute__ ((noipa)) int
deep (volatile char *p)
{
  volatile char buf[256];
  buf[0] = *p;
  return deep (buf) + buf[1]; /* not a tail call */
}

/* The program's own alternate stack, set before tally registers (priority
   100 runs before the modules' 101).  */
static char own_stack[1 << 16];

#pragma GCC diagnostic ignored "-Wprio-ctor-dtor"
__attribute__ ((constructor (100))) static void
own_alt_stack (void)
{
  const char *mode = getenv ("SIGNAL_TEST_OWN_STACK");
  if (!mode)
    return;
  stack_t ss = { .ss_sp = own_stack, .ss_size = sizeof own_stack };
  sigaltstack (&ss, NULL);
}

static void
own_term (int sig)
{
  (void) sig;
  _exit (7);
}

__attribute__ ((constructor (100))) static void
own_term_handler (void)
{
  if (getenv ("SIGNAL_TEST_OWN_TERM"))
    signal (SIGTERM, own_term);
}

int
main (int argc, char **argv)
{
  int s = 0;
  if (argc != 2)
    return 2;
  if (strcmp (argv[1], "wait") == 0)
    {
      for (int i = 0; i < 5; i++)
        s = f (s);
      printf ("ready\n");
      fflush (stdout);
      char c;
      if (read (0, &c, 1) != 1)
        {
          perror ("read");
          return 3;
        }
      for (int i = 0; i < 2; i++)
        s = f (s);
      printf ("%d\n", s);
      return 0;
    }
  if (strcmp (argv[1], "raise") == 0)
    {
      for (int i = 0; i < 3; i++)
        s = f (s);
      raise (SIGTERM);
      return 1;
    }
  if (strcmp (argv[1], "abort") == 0)
    {
      for (int i = 0; i < 2; i++)
        s = f (s);
      abort ();
    }
  if (strcmp (argv[1], "segv") == 0)
    {
      for (int i = 0; i < 4; i++)
        s = f (s);
      *(volatile int *) (long) (s - 4) = s;
      return 1;
    }
  if (strcmp (argv[1], "overflow") == 0 || strcmp (argv[1], "own-stack") == 0)
    {
      stack_t ss;
      if (argv[1][0] == 'o' && argv[1][1] == 'w'
          && (sigaltstack (NULL, &ss) != 0 || ss.ss_sp != own_stack))
        return 4;
      for (int i = 0; i < 4; i++)
        s = f (s);
      char c = (char) s;
      return deep (&c);
    }
  if (strcmp (argv[1], "pipe") == 0)
    {
      const char *name = getenv ("SIGNAL_TEST_COUNT");
      int fd = name ? open (name, O_WRONLY | O_CREAT | O_TRUNC, 0644) : -1;
      if (fd < 0)
        return 5;
      for (;;)
        {
          char num[24];
          s = f (s);
          int n = snprintf (num, sizeof num, "%20d\n", s);
          if (pwrite (fd, num, (size_t) n, 0) != n)
            return 6;
          printf ("line %d\n", s);
          fflush (stdout);
        }
    }
  return 2;
}
