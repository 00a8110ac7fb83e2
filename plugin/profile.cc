/* plugin/profile.cc - -fplugin-arg-tally-profile=FILE: blocks=count and
 * blocks=visited place their counters by the counts of an earlier run
 * instead of GCC's guessed profile.
 *
 * FILE is a data file of an earlier run of the same sources built with
 * blocks=count (several runs merged by %m or `tally merge` too).  At
 * plugin_init it is read, checked and solved by format/profile.c; a
 * damaged or foreign file is an error naming the option and the file.
 * Each function planned (blocks.cc) is looked up by its symbol, the base
 * name of its source file and the identity of its flow graph
 * (tally_profile_identity: its blocks, their lines relative to the
 * function's, its normal edges); found, the measured counts of its blocks
 * and edges weigh the spanning tree, so the edges the run took most go
 * uncounted:
 *
 *   $ gcc -O2 -fplugin=tally -fplugin-arg-tally-blocks=count ... && ./app
 *   $ gcc -O2 -fplugin=tally -fplugin-arg-tally-blocks=count \
 *         -fplugin-arg-tally-profile=tally.1234.data ...
 *
 * A function the profile lacks, or whose graph or lines changed since,
 * keeps GCC's guess; -fdump-tree-all's .tally dump says which.  The counts
 * only choose which edges get counters: every block count stays exact
 * whatever the new run does, as with the guess.  */
#include "tally-plugin.h"

#include "blockmap.h"
#include "profile.h"

/* The profile, when profile= was given.  */
static struct tally_profile profile;
static bool have_profile;
/* FILE as given, for the dump.  */
static char *profile_name;

bool
tally_profile_load (const char *option, const char *value)
{
  if (!value || !*value)
    {
      error ("%qs needs a value: the path of a data file written by a "
             "%<-fplugin-arg-tally-blocks=count%> build of these sources",
             option);
      return false;
    }
  char err[768];
  if (tally_profile_read (value, &profile, err, sizeof err) != 0)
    {
      error ("%<%s=%s%>: %s", option, value, err);
      return false;
    }
  profile_name = xstrdup (value);
  have_profile = true;
  return true;
}

bool
tally_profile_given (void)
{
  return have_profile;
}

/* The name and line the data file gives FUN's record (descriptor.cc):
   its source function's.  */
static tree
origin_of (tree fndecl)
{
  tree origin = DECL_ORIGIN (fndecl);
  return origin && TREE_CODE (origin) == FUNCTION_DECL ? origin : fndecl;
}

bool
tally_profile_counts (function *fun, const vec<unsigned char> &map,
                      const uint64_t **blocks, const uint64_t **edges)
{
  if (!have_profile)
    return false;
  const char *symbol = targetm.strip_name_encoding (
      IDENTIFIER_POINTER (DECL_ASSEMBLER_NAME (fun->decl)));
  expanded_location loc
      = expand_location (DECL_SOURCE_LOCATION (origin_of (fun->decl)));
  const char *file = loc.file ? loc.file : "";
  struct tally_blockmap bm;
  char err[256];
  /* The plan's own map, before any value is given: values NONE.  */
  if (tally_map_decode (map.address (), map.length (), TALLY_C_CORE, &bm, err,
                        sizeof err)
      != 0)
    {
      if (dump_file)
        fprintf (dump_file, "tally: profile: own map unreadable (%s): "
                 "GCC's guess\n", err);
      return false;
    }
  const struct tally_profile_fn *fn = NULL;
  enum tally_profile_match r = tally_profile_find (
      &profile, symbol, file, (uint32_t) loc.line, &bm, &fn);
  tally_map_free (&bm);
  if (r != TALLY_PROFILE_FOUND)
    {
      if (dump_file)
        fprintf (dump_file, "tally: profile: %s %s: GCC's guess\n", symbol,
                 r == TALLY_PROFILE_CHANGED
                     ? "changed since the profile (another flow graph or "
                       "other lines)"
                     : "not in the profile");
      return false;
    }
  if (dump_file)
    fprintf (dump_file, "tally: profile: %s weighed by %s (%u blocks, %u "
             "edges, %u record%s, entered %" PRIu64 " times)\n", symbol,
             profile_name, fn->nblocks - 2, fn->nedges, fn->records,
             fn->records == 1 ? "" : "s", (uint64_t) fn->block[0]);
  *blocks = fn->block;
  *edges = fn->edge;
  return true;
}
