/* tools/run.h - `tally run`, the build wrapper (run.c).  */
#ifndef TALLY_TOOLS_RUN_H
#define TALLY_TOOLS_RUN_H

/* ARGV[0] is "run"; returns the exit status on error (the command itself
   replaces the process when it can be started).  */
int cmd_run (int argc, char **argv);

#endif
