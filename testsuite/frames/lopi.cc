// The program of issue 29, for exit=frames against exit=returns: every way
// a C++ program leaves its frames.  Each function's calls and exits follow
// from the constants below (run-frames.py works them out the same way), and
// the output depends on nothing tally changes, so it must be the
// uninstrumented build's.
//
//   throw8     an exception thrown 8 frames down, each with a destructor
//   rethrow    throw; in a catch (...), and std::rethrow_exception
//   dtor       a destructor that throws and catches while an exception
//              unwinds its frame
//   foreign    catch (...) of an exception raised with _Unwind_RaiseException
//   longjmp    6 frames left by longjmp
//   recursion  100,001 deep (in a thread with a large stack)
//   virtual    calls through a base class pointer
//   threads    4 threads throwing through the 8 frames at the same time
//   cancel     pthread_cancel and pthread_exit through frames with
//              destructors and a catch (...) that rethrows
//   inlined    an always_inline function (so inlined at every -O level)
//              that throws, and its out-of-line copy called by pointer
//
// With an argument: "terminate" (a noexcept function that throws) or
// "terminate2" (a destructor that throws while an exception unwinds) end in
// std::terminate, whose handler prints a line and exits with status 3.
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <pthread.h>
#include <semaphore.h>
#include <unistd.h>
#include <unwind.h>

#define NOIPA __attribute__ ((noipa))

enum
{
  N = 300,        // rounds of each scenario in main
  M = 200,        // rounds of throw8 in each of the threads
  THREADS = 4,
  DEPTH = 100001, // recursion
  PTR_CALLS = 7   // calls of the inlined function's own copy
};

static volatile long sink;
static thread_local long guards; // per thread: threads throw at once
static long total; // what the program prints: sums of what it computed

struct Err
{
  int v;
};

// A destructor in every frame of throw8: cleanups the unwinder runs.
struct Guard
{
  int k;
  NOIPA Guard (int k);
  NOIPA ~Guard ();
};
Guard::Guard (int k) : k (k) { guards += k; }
Guard::~Guard () { guards -= k; }

// ---- throw8: d8 throws on even i; catcher8 catches.
NOIPA int d8 (int i) { Guard g (8); if (i % 2 == 0) throw Err{ i }; return i; }
NOIPA int d7 (int i) { Guard g (7); return d8 (i) + 1; }
NOIPA int d6 (int i) { Guard g (6); return d7 (i) + 1; }
NOIPA int d5 (int i) { Guard g (5); return d6 (i) + 1; }
NOIPA int d4 (int i) { Guard g (4); return d5 (i) + 1; }
NOIPA int d3 (int i) { Guard g (3); return d4 (i) + 1; }
NOIPA int d2 (int i) { Guard g (2); return d3 (i) + 1; }
NOIPA int d1 (int i) { Guard g (1); return d2 (i) + 1; }

NOIPA long
catcher8 (int i)
{
  try
    {
      return d1 (i);
    }
  catch (const Err &e)
    {
      return -e.v;
    }
}

// ---- rethrow.
NOIPA void r_leaf (int i) { throw Err{ i }; }
NOIPA void
r_mid (int i)
{
  try
    {
      r_leaf (i);
    }
  catch (...)
    {
      sink++;
      throw;
    }
}
NOIPA void r_again (std::exception_ptr p) { std::rethrow_exception (p); }
NOIPA long
r_outer (int i)
{
  long got = 0;
  std::exception_ptr p;
  try
    {
      r_mid (i);
    }
  catch (const Err &e)
    {
      got += e.v;
      p = std::current_exception ();
    }
  try
    {
      r_again (p);
    }
  catch (const Err &e)
    {
      got += e.v;
    }
  return got;
}

// ---- dtor: ~Cleaner throws and catches inside, while Err unwinds.
NOIPA void x_inner2 (int i) { throw Err{ i + 1 }; }
NOIPA void x_inner1 (int i) { x_inner2 (i); }
struct Cleaner
{
  int i;
  NOIPA ~Cleaner () noexcept (false);
};
Cleaner::~Cleaner () noexcept (false)
{
  try
    {
      x_inner1 (i);
    }
  catch (const Err &e)
    {
      total += e.v;
    }
}
NOIPA void x_leaf (int i) { throw Err{ i }; }
NOIPA void x_mid (int i) { Cleaner c{ i }; x_leaf (i); }
NOIPA long
x_outer (int i)
{
  try
    {
      x_mid (i);
    }
  catch (const Err &e)
    {
      return e.v;
    }
  return 0;
}

// ---- foreign: an exception of another language.
static void
foreign_cleanup (_Unwind_Reason_Code, struct _Unwind_Exception *)
{
}
static struct _Unwind_Exception foreign_exc;
NOIPA void
f_raise (int)
{
  std::memset (&foreign_exc, 0, sizeof foreign_exc);
  foreign_exc.exception_class = 0x544c59464f524e00ull; // "TLYFORN"
  foreign_exc.exception_cleanup = foreign_cleanup;
  _Unwind_RaiseException (&foreign_exc);
  std::abort (); // no handler: not in this program
}
NOIPA void f2 (int i) { Guard g (2); f_raise (i); }
NOIPA void f1 (int i) { f2 (i); }
NOIPA long
f_catch (int i)
{
  try
    {
      f1 (i);
    }
  catch (...)
    {
      return 1;
    }
  return 0;
}

// ---- longjmp through 6 frames.
static jmp_buf jb;
NOIPA void j6 (int i) { longjmp (jb, i + 1); }
NOIPA void j5 (int i) { j6 (i); sink++; }
NOIPA void j4 (int i) { j5 (i); sink++; }
NOIPA void j3 (int i) { j4 (i); sink++; }
NOIPA void j2 (int i) { j3 (i); sink++; }
NOIPA void j1 (int i) { j2 (i); sink++; }
NOIPA long
j_top (int i)
{
  int r = setjmp (jb);
  if (r)
    return r;
  j1 (i);
  return 0;
}

// ---- recursion.
NOIPA long
rec (long n)
{
  if (n == 0)
    return 0;
  long r = rec (n - 1);
  sink = r; // no tail recursion GCC could make a loop of
  return r + 1;
}
NOIPA void *
rec_thread (void *arg)
{
  *(long *) arg = rec (DEPTH - 1);
  return nullptr;
}

// ---- virtual calls.
struct Shape
{
  virtual long area (int) const = 0;
};
struct Square : Shape
{
  NOIPA long area (int i) const override { return (long) i * i; }
};
struct Line : Shape
{
  NOIPA long area (int i) const override { return i; }
};

// ---- an inlined function that throws, and its copy by pointer.
static inline __attribute__ ((always_inline)) int
checked (int i)
{
  if (i % 3 == 0)
    throw Err{ i };
  return i;
}
NOIPA long
inl_user (int i)
{
  try
    {
      return checked (i);
    }
  catch (const Err &e)
    {
      return -e.v;
    }
}
static int (*volatile checked_ptr) (int) = checked;

// ---- threads throwing at once.
NOIPA void *
thrower (void *arg)
{
  long s = 0;
  for (int i = 0; i < M; i++)
    s += catcher8 (i);
  *(long *) arg = s;
  return nullptr;
}

// ---- pthread_cancel and pthread_exit.
static sem_t ready;
NOIPA void
c2 ()
{
  Guard g (20);
  sem_post (&ready);
  for (;;)
    pause (); // a cancellation point
}
NOIPA void
c1 ()
{
  Guard g (10);
  try
    {
      c2 ();
    }
  catch (...)
    {
      sink++; // abi::__forced_unwind: must go on
      throw;
    }
}
NOIPA void *cancel_me (void *) { c1 (); return nullptr; }
NOIPA void e2 () { Guard g (2); pthread_exit (nullptr); }
NOIPA void e1 () { Guard g (1); e2 (); }
NOIPA void *exit_me (void *) { e1 (); return nullptr; }

// ---- std::terminate.
NOIPA void
on_terminate ()
{
  std::printf ("terminate handler, total %ld\n", total);
  std::fflush (stdout);
  std::exit (3);
}
NOIPA void t_throw () { throw Err{ 1 }; }
NOIPA void t_noexcept () noexcept { t_throw (); }
struct Bad
{
  NOIPA ~Bad () noexcept (false) { throw Err{ 2 }; }
};
NOIPA void t_twice () { Bad b; t_throw (); }

int
main (int argc, char **argv)
{
  std::set_terminate (on_terminate);
  if (argc > 1 && std::strcmp (argv[1], "terminate") == 0)
    t_noexcept ();
  if (argc > 1 && std::strcmp (argv[1], "terminate2") == 0)
    try
      {
        t_twice (); // unwound (a handler exists), so ~Bad runs and throws
      }
    catch (const Err &)
      {
        std::printf ("not reached\n");
      }

  for (int i = 0; i < N; i++)
    {
      total += catcher8 (i);
      total += r_outer (i);
      total += x_outer (i);
      total += f_catch (i);
      total += j_top (i);
      total += inl_user (i);
    }
  for (int i = 0; i < PTR_CALLS; i++)
    try
      {
        total += checked_ptr (i + 1);
      }
    catch (const Err &e)
      {
        total += 1000;
      }

  static Square sq; // constant-initialized: no constructor runs
  static Line ln;
  const Shape *shapes[2] = { &sq, &ln };
  for (int i = 0; i < N; i++)
    total += shapes[i % 2]->area (i);

  pthread_attr_t big;
  pthread_attr_init (&big);
  pthread_attr_setstacksize (&big, 256u << 20);
  pthread_t t;
  long depth = 0;
  pthread_create (&t, &big, rec_thread, &depth);
  pthread_join (t, nullptr);
  total += depth;

  pthread_t ts[THREADS];
  long sums[THREADS];
  for (int k = 0; k < THREADS; k++)
    pthread_create (&ts[k], nullptr, thrower, &sums[k]);
  for (int k = 0; k < THREADS; k++)
    {
      pthread_join (ts[k], nullptr);
      total += sums[k];
    }

  sem_init (&ready, 0, 0);
  pthread_create (&t, nullptr, cancel_me, nullptr);
  sem_wait (&ready);
  pthread_cancel (t);
  void *res;
  pthread_join (t, &res);
  total += res == PTHREAD_CANCELED;
  pthread_create (&t, nullptr, exit_me, nullptr);
  pthread_join (t, nullptr);

  std::printf ("total %ld sink %ld guards %ld\n", total, (long) sink, guards);
  return 0;
}
