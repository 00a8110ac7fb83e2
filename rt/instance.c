/* One runtime per process, however many copies of it are linked in.
 *
 * The static runtime can end up in a process more than once: linked into
 * the executable and into an instrumented shared library, say.  Each copy
 * has its own module list and would write its own data file under the same
 * name, the last writer erasing the others.  So every copy carries an ELF
 * note (in a PT_NOTE segment, which dl_iterate_phdr shows for every loaded
 * object, even an executable that exports nothing) pointing at a table of
 * its entry points.  The first copy in load order is the primary: the others
 * forward registrations, dumps and resets to it, so one list and one file
 * hold everything.
 *
 * A primary that lives in a dlopen'ed library must outlive the copies that
 * forward to it: the first forwarder pins it (RTLD_NODELETE), so dlclose
 * leaves it mapped and its list is written at exit.  */

#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "rt.h"

#define NOTE_NAME "tally"
#define NOTE_TYPE 0x7452u /* "Rt" */

const struct tally_rt_instance tally_rt_self = {
  TALLY_RT_INSTANCE_MAGIC, TALLY_RT_INSTANCE_VERSION,
  tally_rt_register_local, tally_rt_unregister_local, tally_rt_dump,
  tally_rt_reset_local, tally_rt_pin_local, tally_rt_tls_attach_local,
  tally_rt_exec_dump,
};

/* The note: name "tally", type NOTE_TYPE, and as descriptor the distance
   from the descriptor to tally_rt_self (a link-time constant, so the note
   needs no run-time relocation).  "R" keeps it under --gc-sections.  */
__asm__ (".pushsection .note.tally,\"aR\",@note\n"
         "  .balign 4\n"
         "  .long 6\n"          /* namesz: "tally" and its NUL */
         "  .long 8\n"          /* descsz */
         "  .long 0x7452\n"     /* type, NOTE_TYPE */
         "  .asciz \"tally\"\n"
         "  .balign 4\n"
         "0:\n"
         "  .quad tally_rt_self - 0b\n"
         "  .popsection\n");

/* The primary instance once found; never changes after that.  */
static const struct tally_rt_instance *primary;

static size_t
align4 (size_t n)
{
  return (n + 3) & ~(size_t) 3;
}

/* What find_first found: the first runtime copy, and whether it is in the
   main program (which is never unloaded, so needs no pinning).  */
struct first_copy
{
  const struct tally_rt_instance *inst;
  int in_main;
};

static int
find_first (struct dl_phdr_info *info, size_t size, void *out)
{
  (void) size;
  struct first_copy *first = (struct first_copy *) out;
  for (int i = 0; i < info->dlpi_phnum; i++)
    {
      const ElfW (Phdr) *ph = &info->dlpi_phdr[i];
      if (ph->p_type != PT_NOTE)
        continue;
      const unsigned char *p
          = (const unsigned char *) (info->dlpi_addr + ph->p_vaddr);
      const unsigned char *end = p + ph->p_memsz;
      while ((size_t) (end - p) >= sizeof (ElfW (Nhdr)))
        {
          const ElfW (Nhdr) *nh = (const ElfW (Nhdr) *) p;
          const unsigned char *name = p + sizeof *nh;
          const unsigned char *desc = name + align4 (nh->n_namesz);
          const unsigned char *next = desc + align4 (nh->n_descsz);
          if (next > end || next < p)
            break;
          if (nh->n_type == NOTE_TYPE && nh->n_namesz == sizeof NOTE_NAME
              && memcmp (name, NOTE_NAME, sizeof NOTE_NAME) == 0
              && nh->n_descsz == 8)
            {
              int64_t off;
              memcpy (&off, desc, sizeof off);
              const struct tally_rt_instance *inst
                  = (const struct tally_rt_instance *) (desc + off);
              if (inst->magic == TALLY_RT_INSTANCE_MAGIC)
                {
                  first->inst = inst;
                  first->in_main = !info->dlpi_name || !*info->dlpi_name;
                  return 1;
                }
            }
          p = next;
        }
    }
  return 0;
}

const struct tally_rt_instance *
tally_rt_primary (void)
{
  const struct tally_rt_instance *p = __atomic_load_n (&primary, __ATOMIC_ACQUIRE);
  if (p)
    return p;
  struct first_copy first = { NULL, 0 };
  dl_iterate_phdr (find_first, &first);
  p = first.inst;
  if (!p)
    p = &tally_rt_self; /* the note was stripped: act alone */
  else if (p->version != TALLY_RT_INSTANCE_VERSION)
    {
      tally_rt_error ("another copy of the tally runtime in this process "
                      "has interface version %u, this one %u; they cannot "
                      "share one data file, and may overwrite each other's "
                      "(link every part with the same libtally-rt)",
                      p->version, TALLY_RT_INSTANCE_VERSION);
      p = &tally_rt_self;
    }
  if (p != &tally_rt_self && !first.in_main)
    p->pin ();
  __atomic_store_n (&primary, p, __ATOMIC_RELEASE);
  return p;
}

void
tally_rt_pin_local (void)
{
  Dl_info info;
  if (dladdr (&tally_rt_self, &info) == 0 || !info.dli_fname)
    return;
  if (!dlopen (info.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE))
    tally_rt_error ("cannot pin %s (%s); dlclose of it would lose the "
                    "counts of other instrumented libraries",
                    info.dli_fname, dlerror ());
}

void
tally_rt_pin_without_dso_handle (void)
{
  /* Without __dso_handle (a link without start files, sys.h), nothing
     drops or runs this copy's exit and fork handlers at a dlclose
     (crtbegin's __cxa_finalize call does that): the object holding them
     stays mapped.  */
  if (!tally_rt_sys_have_dso_handle ())
    tally_rt_pin_local ();
}
