/* plugin/filter.cc - which functions to instrument: -fplugin-arg-tally-filter=FILE.
 *
 * The file holds one rule a line ('#' starts a comment):
 *
 *   include function GLOB   exclude function GLOB
 *   include file GLOB       exclude file GLOB
 *   min-statements N
 *
 * A function GLOB is matched (fnmatch) against the function's plain name
 * ("f", "ns::C::f"), its printable name with parameters ("ns::C::f(int)")
 * and its assembler name ("_ZN2ns1C1fEi"); a file GLOB against the source
 * file as the compiler names it.  The last rule that matches decides; a
 * function no rule matches is instrumented unless the file has an include
 * rule of that kind (then only what is included is).  min-statements N
 * skips functions of fewer than N GIMPLE statements that have no loop (the
 * idea of XRay's instruction threshold).  select=PROFILE (select.cc) is
 * asked after the rules: a function must pass both.
 *
 *   include file lib*.c
 *   exclude function *_debug*
 *   min-statements 5
 */
#include "tally-plugin.h"
#include "cfganal.h"

#include <fnmatch.h>
#include <sys/stat.h>

enum rule_kind { RULE_FUNCTION, RULE_FILE };

/* One include/exclude line.  */
struct rule
{
  enum rule_kind kind;
  bool include;
  char *glob;
};

/* The rules in file order, and which kinds have an include rule.  */
static vec<rule> rules;
static bool has_include[2];

/* min-statements (0: no size limit).  */
static unsigned min_statements;

/* Whether -fplugin-arg-tally-verbose was given.  */
bool tally_verbose;

static char *
next_word (char **p)
{
  char *s = *p;
  while (*s == ' ' || *s == '\t')
    s++;
  if (!*s)
    return NULL;
  char *w = s;
  while (*s && *s != ' ' && *s != '\t')
    s++;
  if (*s)
    *s++ = 0;
  *p = s;
  return w;
}

/* Read the rules of the filter file PATH (OPTION names it in messages).
   Lines are read whole, however long; a directory, a read error or a NUL
   byte in a line is an error, never a silently shorter rule list.  A
   pipe works (-fplugin-arg-tally-filter=<(tally select --filter ...)).  */
bool
tally_filter_load (const char *option, const char *path)
{
  FILE *f = fopen (path, "r");
  if (!f)
    {
      error ("%<%s=%s%>: cannot read the filter file: %m", option, path);
      return false;
    }
  struct stat st;
  if (fstat (fileno (f), &st) == 0 && S_ISDIR (st.st_mode))
    {
      error ("%<%s=%s%>: cannot read the filter file: it is a directory",
             option, path);
      fclose (f);
      return false;
    }
  bool ok = true;
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  unsigned lineno = 0;
  while ((len = getline (&line, &cap, f)) >= 0)
    {
      lineno++;
      if (strlen (line) != (size_t) len)
        {
          error ("%s:%u: a NUL byte in the line; a filter file is text",
                 path, lineno);
          ok = false;
          continue;
        }
      line[strcspn (line, "#\r\n")] = 0;
      char *p = line;
      char *verb = next_word (&p);
      if (!verb)
        continue;
      char *what = next_word (&p);
      char *arg = what ? next_word (&p) : NULL;
      char *extra = arg ? next_word (&p) : NULL;
      if (strcmp (verb, "min-statements") == 0 && what && !arg)
        {
          char *end;
          unsigned long n = strtoul (what, &end, 10);
          if (*end || n > 1000000)
            {
              error ("%s:%u: %<min-statements%> needs a number, not %qs",
                     path, lineno, what);
              ok = false;
            }
          min_statements = (unsigned) n;
          continue;
        }
      bool include = strcmp (verb, "include") == 0;
      if ((include || strcmp (verb, "exclude") == 0) && what && arg && !extra
          && (strcmp (what, "function") == 0 || strcmp (what, "file") == 0))
        {
          rule r;
          r.kind = strcmp (what, "function") == 0 ? RULE_FUNCTION : RULE_FILE;
          r.include = include;
          r.glob = xstrdup (arg);
          rules.safe_push (r);
          has_include[r.kind] |= include;
          continue;
        }
      error ("%s:%u: cannot read this rule; the accepted lines are "
             "%<include function GLOB%>, %<exclude function GLOB%>, "
             "%<include file GLOB%>, %<exclude file GLOB%> and "
             "%<min-statements N%>", path, lineno);
      ok = false;
    }
  if (ferror (f))
    {
      error ("%<%s=%s%>: cannot read the filter file: %m", option, path);
      ok = false;
    }
  free (line);
  fclose (f);
  return ok;
}

static bool
name_matches (const char *glob, tree fndecl)
{
  tree origin = DECL_ORIGIN (fndecl);
  const char *names[3]
      = { lang_hooks.decl_printable_name (origin, 1),
          lang_hooks.decl_printable_name (origin, 2),
          targetm.strip_name_encoding (
              IDENTIFIER_POINTER (DECL_ASSEMBLER_NAME (origin))) };
  for (const char *name : names)
    if (name && fnmatch (glob, name, 0) == 0)
      return true;
  return false;
}

/* Whether the rules instrument FNDECL: the last matching rule of each kind
   decides, both kinds must agree.  */
static const char *
rules_reason (tree fndecl)
{
  const char *file = DECL_SOURCE_FILE (DECL_ORIGIN (fndecl));
  int decided[2] = { -1, -1 }; /* -1 no rule matched, 0 excluded, 1 included */
  for (const rule &r : rules)
    {
      bool match = r.kind == RULE_FUNCTION ? name_matches (r.glob, fndecl)
                                           : file && fnmatch (r.glob, file, 0) == 0;
      if (match)
        decided[r.kind] = r.include;
    }
  for (int k = 0; k < 2; k++)
    {
      bool in = decided[k] == 1 || (decided[k] == -1 && !has_include[k]);
      if (!in)
        return k == RULE_FUNCTION ? "excluded by a function rule of the filter"
                                  : "excluded by a file rule of the filter";
    }
  return NULL;
}

/* Whether FUN is below min-statements and has no loop.  */
static bool
too_small (function *fun)
{
  unsigned n = 0;
  basic_block bb;
  TALLY_FOR_EACH_NONDEBUG_STMT (fun, bb, gsi)
      n++;
  if (n >= min_statements)
    return false;
  return !mark_dfs_back_edges ();
}

const char *
tally_filter_reason (tree fndecl, function *fun)
{
  if (!rules.is_empty ())
    if (const char *why = rules_reason (fndecl))
      return why;
  if (const char *why = tally_select_reason (fndecl))
    return why;
  if (min_statements && fun && too_small (fun))
    return "smaller than min-statements and without a loop";
  return NULL;
}

bool
tally_filter_by_size (void)
{
  return min_statements != 0;
}

void
tally_verbose_note (tree fndecl, const char *why)
{
  if (!tally_verbose)
    return;
  if (why)
    inform (DECL_SOURCE_LOCATION (fndecl), "tally: %qD not instrumented: %s",
            fndecl, why);
  else if (const char *share = tally_select_note (fndecl))
    inform (DECL_SOURCE_LOCATION (fndecl), "tally: %qD instrumented: %s",
            fndecl, share);
  else
    inform (DECL_SOURCE_LOCATION (fndecl), "tally: %qD instrumented", fndecl);
}
