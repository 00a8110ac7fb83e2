/* cyg-table.h - the per-function table of the -finstrument-functions
 * runtimes (support/cyg-count.c, lopi-cyg.c).  Nothing identifies a
 * function but its address, so each hook finds its slot in an
 * open-addressing hash table (multiplicative hash, linear probing).
 *
 * The includer defines NOINSTR and struct slot, whose first member is
 * `void *fn` (0: a free slot); this header defines the table `slots` and
 * lookup ().  */
#include <stdint.h>

/* Table size, a power of two, at least twice the number of functions.  */
#define SLOTS_LOG2 15
#define SLOTS (1u << SLOTS_LOG2)

/* The open-addressing table.  */
static struct slot slots[SLOTS];

/* FN's slot, taken if FN is new; 0 when the table is full.  */
NOINSTR static struct slot *
lookup (void *fn)
{
  uint32_t i = (uint32_t) (((uintptr_t) fn * 0x9e3779b97f4a7c15ull)
                           >> (64 - SLOTS_LOG2));
  for (uint32_t n = 0; n < SLOTS; n++, i = (i + 1) & (SLOTS - 1))
    {
      if (slots[i].fn == fn)
        return &slots[i];
      if (!slots[i].fn)
        {
          slots[i].fn = fn;
          return &slots[i];
        }
    }
  return 0;
}
