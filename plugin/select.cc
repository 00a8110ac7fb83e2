/* plugin/select.cc - -fplugin-arg-tally-select=PROFILE[:P%]: instrument
 * only the functions that made up P% (default 80%) of the measured time in
 * an earlier profile, the LOPI paper's way of choosing functions.
 *
 * PROFILE is a data file written by a build with measure=cycles.  At
 * plugin_init it is read and ranked by format/select.c, the code behind
 * `tally select`, so that command shows what this file will admit: the
 * fewest functions, by exclusive cycles, whose time reaches P% of the
 * total.  A function is then instrumented when its source function (origin
 * symbol and source file, so clones and at=early/late builds map back to
 * it) is one of them:
 *
 *   $ tally select --percent=80 prof.data
 *   2 of 5 functions make up 98.94% of 28171182 cycles (asked: 80%)
 *   ...  hot1 ... hot2
 *   $ gcc -O2 -fplugin=tally -fplugin-arg-tally-select=prof.data:80% ...
 *
 * instruments hot1 and hot2 (and their clones) and leaves main, cold1 and
 * cold2 as they are; with -fplugin-arg-tally-verbose each gets a note
 * saying so.  With filter=FILE too, a function must pass both.  */
#include "tally-plugin.h"

#include "select.h"

/* The ranked profile, when select= was given.  */
static struct tally_selection selection;
static bool selecting;

/* "PROFILE's time" for the notes, and the note for those left out.  */
static char *profile_time;
static char *not_selected;

/* Split VALUE into its path and percentage and read the profile.  */
bool
tally_select_load (const char *option, const char *value)
{
  if (selecting)
    {
      error ("%qs given twice; give one profile (merge several with "
             "%<tally merge%>)", option);
      return false;
    }
  if (!value || !*value)
    {
      error ("%qs needs a value: %<PROFILE%> or %<PROFILE:P%%%>, a data "
             "file written with %<-fplugin-arg-tally-measure=cycles%> and "
             "the share of its time to cover (P above 0 and at most 100, "
             "default 80)", option);
      return false;
    }
  /* 1. The percentage follows the last ':'; without one, 80%.  */
  char *path = xstrdup (value);
  double percent = 80;
  const char *percent_text = "80%";
  if (char *colon = strrchr (path, ':'))
    {
      *colon = 0;
      percent_text = colon + 1;
      if (tally_parse_percent (percent_text, &percent) != 0 || !*path)
        {
          if (!*path)
            error ("%<%s=%s%>: no profile before the %<:%>; give "
                   "%<PROFILE:P%%%>", option, value);
          else
            error ("%<%s=%s%>: bad percentage %qs; give a number above 0 "
                   "and at most 100, as in %<PROFILE:80%%%> (a profile "
                   "whose name has a %<:%> needs the percentage)",
                   option, value, percent_text);
          free (path);
          return false;
        }
    }
  /* 2. Read and rank.  */
  const char *paths[1] = { path };
  char err[512];
  if (tally_select (paths, 1, percent, &selection, err, sizeof err) != 0)
    {
      error ("%<%s=%s%>: %s", option, value, err);
      free (path);
      return false;
    }
  const char *base = lbasename (path);
  profile_time = xasprintf ("%s's time", base);
  not_selected = xasprintf ("not among the functions making up %s%s of %s",
                            percent_text,
                            strchr (percent_text, '%') ? "" : "%",
                            profile_time);
  free (path);
  selecting = true;
  return true;
}

/* The index of FNDECL's source function in the selection, or -1.  */
static long
find (tree fndecl)
{
  tree origin = DECL_ORIGIN (fndecl);
  if (!origin || TREE_CODE (origin) != FUNCTION_DECL)
    origin = fndecl;
  const char *symbol = targetm.strip_name_encoding (
      IDENTIFIER_POINTER (DECL_ASSEMBLER_NAME (origin)));
  expanded_location loc = expand_location (DECL_SOURCE_LOCATION (origin));
  return tally_selection_find (&selection, symbol, loc.file ? loc.file : "",
                               getpwd ());
}

const char *
tally_select_reason (tree fndecl)
{
  if (!selecting || find (fndecl) >= 0)
    return NULL;
  return not_selected;
}

const char *
tally_select_note (tree fndecl)
{
  static char note[256];
  long i;
  if (!selecting || (i = find (fndecl)) < 0)
    return NULL;
  snprintf (note, sizeof note, "%.2f%% of %s",
            100.0 * (double) selection.fns[i].excl / (double) selection.total,
            profile_time);
  return note;
}
