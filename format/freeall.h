/* freeall.h - free_all (P, ...): free each of the pointers named, in the
 * functions that release what a structure owns (one line, not one free
 * call a line).  */
#ifndef TALLY_FORMAT_FREEALL_H
#define TALLY_FORMAT_FREEALL_H

#include <stddef.h>
#include <stdlib.h>

static inline void
free_each (void *const *p, size_t n)
{
  for (size_t i = 0; i < n; i++)
    free (p[i]);
}

#define free_all(...) \
  free_each ((void *const[]) { __VA_ARGS__ }, \
             sizeof ((void *const[]) { __VA_ARGS__ }) / sizeof (void *))

#endif /* TALLY_FORMAT_FREEALL_H */
