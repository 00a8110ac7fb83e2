/* tally/public.h - what every public tally header shares: the mark of a
 * function the runtime exports even when it is built with hidden
 * visibility.  Includes no system header (tally/hooks.h promises that).  */
#ifndef TALLY_PUBLIC_H
#define TALLY_PUBLIC_H

#ifndef TALLY_PUBLIC
#define TALLY_PUBLIC __attribute__ ((visibility ("default")))
#endif

#endif
