/* dump.h - `tally dump` of the records after the modules: MEAS, FRMS, PATH
 * and PEVT (doc/cli.md, "tally dump").  */
#ifndef TALLY_TOOLS_DUMP_H
#define TALLY_TOOLS_DUMP_H

#include "datafile.h"

/* Print the measurement, frames, path and path-event records of D on
   standard output, one line per record and one per function, frame or
   node, in file order; nothing for a record the file lacks.  QUOTE
   prints a string quoted and escaped, as dump prints every string.  */
void tally_dump_records (const struct tally_data *d,
                         void (*quote) (const char *));

#endif /* TALLY_TOOLS_DUMP_H */
