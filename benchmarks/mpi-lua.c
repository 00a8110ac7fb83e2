/* benchmarks/mpi-lua.c - an MPI program of a real program's size for
   benchmarks/mpi-reduce.sh: every rank runs Debian's Lua 5.4 (built with
   -fplugin=tally -fplugin-arg-tally-blocks=count) on a short script whose
   work grows with its rank, then MPI_Finalize, where libtally-mpi reduces
   the counters of all ranks.  */
#include <mpi.h>
#include <stdio.h>

#include "lauxlib.h"
#include "lua.h"
#include "lualib.h"

int
main (int argc, char **argv)
{
  MPI_Init (&argc, &argv);
  int rank;
  MPI_Comm_rank (MPI_COMM_WORLD, &rank);
  lua_State *L = luaL_newstate ();
  luaL_openlibs (L);
  char chunk[256];
  snprintf (chunk, sizeof chunk,
            "local t = {} for i = 1, %d do t[i] = tostring(i) .. 'x' end "
            "table.sort(t) return #t", 1000 * (rank + 1));
  if (luaL_dostring (L, chunk) != 0)
    fprintf (stderr, "lua: %s\n", lua_tostring (L, -1));
  lua_close (L);
  MPI_Finalize ();
  return 0;
}
