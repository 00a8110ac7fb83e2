/* Instrumented code that runs before its module is registered, and after
   the exit dump.  Linked before ctor-main.c, so that its priority-101
   constructor runs before the registration of ctor-main.c (registrations
   are priority-101 constructors too, and equal priorities run in link
   order); the priority-100 constructor and the .preinit_array entry run
   before every registration.  Each of them, and the ELF destructor (which
   runs after the exit dump), calls first_fn once and hit (ctor-main.c)
   once.  */
void note (const char *event);
void note_late (const char *event);
int hit (int x);

__attribute__ ((noipa)) int
first_fn (int x)
{
  return x + 1;
}

static void
preinit (void)
{
  note ("preinit");
  hit (first_fn (0));
}
__attribute__ ((section (".preinit_array"), used)) static void (*preinit_entry) (void)
    = preinit;

__attribute__ ((constructor (100))) static void
ctor100 (void)
{
  note ("ctor100");
  hit (first_fn (0));
}

__attribute__ ((constructor (101))) static void
ctor101 (void)
{
  note ("ctor101");
  hit (first_fn (0));
}

__attribute__ ((destructor)) static void
dtor (void)
{
  note_late ("dtor");
  hit (first_fn (0));
}
