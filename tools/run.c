/* tools/run.c - `tally run [OPTION]... [--] COMMAND [ARG]...`: run a build
 * that was not written for tally with the plugin and the runtime added.
 *
 * The flags go into CC and CXX, not CFLAGS and LDFLAGS:
 *
 *   CC=gcc  ->  CC='gcc -fplugin=/P/tally.so -fplugin-arg-tally-at=early
 *                   -Wl,--push-state,--no-as-needed,/L/libtally-rt.so,--pop-state,-rpath,/L'
 *
 * Every compile and every link of make, autoconf's configure, libtool, CMake
 * and Meson goes through $CC, so this reaches the link tests of configure
 * scripts that ignore LDFLAGS, libtool links (which drop unknown flags given
 * in LDFLAGS) and shared libraries, and it leaves CFLAGS to the project: an
 * unset CFLAGS keeps meaning the project's default (autoconf's "-g -O2"),
 * where an injected CFLAGS would silently replace it.  GCC ignores -Wl
 * options when it does not link.  The shared runtime is given by path
 * between --push-state,--no-as-needed and --pop-state, so it is linked
 * wherever the link line puts $CC's own words and whatever --as-needed state
 * the build uses; --runtime=static links libtally-rt.a --whole-archive
 * instead (for -static links).
 *
 * Steps: 1. options; 2. where the plugin and runtime are (the build tree
 * this tally was built in, or the installed tree, relocated if the whole
 * install moved, e.g. by DESTDIR; installed in place in GCC's plugin
 * directory, the plugin by name, -fplugin=tally, which each GCC looks for
 * in its own: several GCCs can each have their own tally); 3. the new CC and CXX; 4. one compile of
 * an empty unit with them, so a bad plugin option or a plugin built for
 * another GCC is reported before a long build starts; 5. `make CC=X`
 * arguments get the flags too (a command-line CC beats the environment's),
 * and with --override CC= and CXX= are added to a make command line; 6. exec
 * the command.  doc/drop-in.md is the user's guide.  */
#define _GNU_SOURCE /* realpath, setenv, readlink, PATH_MAX */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

#ifndef TALLY_BINDIR
#error "meson defines TALLY_BINDIR, TALLY_LIBDIR, TALLY_PLUGINDIR, TALLY_PLUGIN_IN_GCC, TALLY_CC and TALLY_CXX"
#endif

/* Characters that would be split or interpreted on their way through CC:
   make and configure hand CC to sh, and CMake splits it at spaces.  (-Wl
   splits at commas: the runtime's directory must have none.)  */
static const char unsafe_chars[] = " \t\n'\"\\$`;&|<>(){}*?[]#~!";

static void
run_error (const char *fmt, const char *a, const char *b)
{
  fputs ("tally: run: ", stderr);
  fprintf (stderr, fmt, a, b);
  fputc ('\n', stderr);
}

/* A growing string.  */
struct buf
{
  char *s;
  size_t len, cap;
};

static void
buf_add (struct buf *b, const char *s)
{
  size_t n = strlen (s);
  if (b->len + n + 1 > b->cap)
    {
      size_t cap = (b->len + n + 1) * 2;
      char *p = realloc (b->s, cap);
      if (!p)
        {
          fputs ("tally: out of memory\n", stderr);
          exit (1);
        }
      b->s = p;
      b->cap = cap;
    }
  memcpy (b->s + b->len, s, n + 1);
  b->len += n;
}

static int
is_file (const char *path)
{
  struct stat st;
  return stat (path, &st) == 0 && S_ISREG (st.st_mode);
}

/* 2. Where the plugin and the runtime are.  In the build tree: tally is
   build/tools/tally, beside build/plugin/tally.so and build/rt.  Installed:
   tally is in TALLY_BINDIR; if the directory it is in only ends with
   TALLY_BINDIR, the whole tree moved (DESTDIR) and the plugin and the
   runtime are looked for under the same root.  */
static int
locate (char *plugin, char *libdir)
{
  char self[PATH_MAX], dir[PATH_MAX], try_[PATH_MAX + 64];
  ssize_t n = readlink ("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0)
    {
      run_error ("cannot find where tally itself is (/proc/self/exe: %s)%s",
                 strerror (errno), "");
      return -1;
    }
  self[n] = 0;
  strcpy (dir, self);
  char *slash = strrchr (dir, '/');
  *slash = 0;

  snprintf (try_, sizeof try_, "%s/../plugin/tally.so", dir);
  if (is_file (try_))
    {
      char rt[PATH_MAX + 64];
      snprintf (rt, sizeof rt, "%s/../rt/libtally-rt.so", dir);
      if (is_file (rt) && realpath (try_, plugin))
        {
          snprintf (rt, sizeof rt, "%s/../rt", dir);
          if (realpath (rt, libdir))
            return 0;
        }
    }
  size_t dl = strlen (dir), bl = strlen (TALLY_BINDIR);
  if (dl >= bl && strcmp (dir + dl - bl, TALLY_BINDIR) == 0)
    {
      int root = (int) (dl - bl);
      snprintf (plugin, PATH_MAX, "%.*s%s/tally.so", root, dir, TALLY_PLUGINDIR);
      snprintf (libdir, PATH_MAX, "%.*s%s", root, dir, TALLY_LIBDIR);
      /* In place and in GCC's own plugin directory: by name, so that the
         compiler used loads the tally installed for it (each GCC has its
         own directory; step 4 says so when it has none).  */
      if (root == 0 && TALLY_PLUGIN_IN_GCC)
        {
          strcpy (plugin, "tally");
          return 0;
        }
      if (is_file (plugin))
        return 0;
      run_error ("the plugin is not installed: %s is missing%s", plugin, "");
      return -1;
    }
  run_error ("cannot find the plugin: tally (%s) is neither in its build "
             "tree nor installed in " TALLY_BINDIR "%s", self, "");
  return -1;
}

/* Append " WORD" to B, refusing words CC cannot carry.  */
static int
add_word (struct buf *b, const char *word)
{
  if (word[strcspn (word, unsafe_chars)])
    {
      run_error ("'%s' contains a space, quote or shell character, "
                 "which cannot be passed through CC%s", word, "");
      return -1;
    }
  buf_add (b, " ");
  buf_add (b, word);
  return 0;
}

/* Is ARG0 a make program?  */
static int
is_make (const char *arg0)
{
  const char *base = strrchr (arg0, '/');
  base = base ? base + 1 : arg0;
  return strcmp (base, "make") == 0 || strcmp (base, "gmake") == 0;
}

static char *
concat (const char *a, const char *b)
{
  struct buf r = { NULL, 0, 0 };
  buf_add (&r, a);
  buf_add (&r, b);
  return r.s;
}

/* Print NAME='VALUE' for sh.  */
static void
print_assignment (const char *name, const char *value)
{
  printf ("%s='", name);
  for (const char *c = value; *c; c++)
    if (*c == '\'')
      fputs ("'\\''", stdout);
    else
      putchar (*c);
  printf ("'\n");
}

int
cmd_run (int argc, char **argv)
{
  /* 1. Options, up to "--" or the first word that is not one.  Plugin
     options go to C and C++ (FLAGS[0] and FLAGS[1]), or with --c- or
     --cxx- to one of them.  */
  struct buf flags[2] = { { NULL, 0, 0 }, { NULL, 0, 0 } };
  const char *runtime = "shared", *output = NULL;
  int override = 0, print_env = 0, cxx_own = 0, i, r;
  buf_add (&flags[0], "");
  buf_add (&flags[1], "");
  struct cli_args p;
  cli_start (&p, argc, argv);
  while ((r = cli_next (&p)) != CLI_END)
    {
      const char *a = p.arg;
      if (r == CLI_HELP)
        return 0;
      if (r == CLI_ERROR)
        return EXIT_USAGE;
      if (r == OPT_RUNTIME)
        {
          runtime = p.value;
          if (strcmp (runtime, "shared") != 0 && strcmp (runtime, "static") != 0)
            {
              run_error ("invalid value '%s' for --runtime; accepted values: "
                         "shared, static%s", runtime, "");
              return EXIT_USAGE;
            }
        }
      else if (r == OPT_OUTPUT)
        output = p.value;
      else if (r == OPT_OVERRIDE)
        override = 1;
      else if (r == OPT_PRINT_ENV)
        print_env = 1;
      else if (strncmp (a, "--", 2) == 0 || strncmp (a, "-fplugin-arg-tally-", 19) == 0)
        {
          /* A plugin option: the plugin itself checks it in step 4.  */
          const char *kv = a[1] == '-' ? a + 2 : a + 19;
          int lang = -1; /* both */
          if (a[1] == '-' && strncmp (kv, "c-", 2) == 0)
            lang = 0, kv += 2;
          else if (a[1] == '-' && strncmp (kv, "cxx-", 4) == 0)
            lang = 1, kv += 4, cxx_own = 1;
          char *word = concat ("-fplugin-arg-tally-", kv);
          int filter = strncmp (kv, "filter=", 7) == 0 && kv[7];
          if (filter || (strncmp (kv, "profile=", 8) == 0 && kv[8]))
            {
              /* The compiles run in other directories.  */
              const char *path = strchr (kv, '=') + 1;
              char abs[PATH_MAX];
              if (!realpath (path, abs))
                {
                  run_error (filter ? "filter file '%s': %s" : "profile '%s': %s",
                             path, strerror (errno));
                  free (word);
                  return EXIT_USAGE;
                }
              free (word);
              word = concat (filter ? "-fplugin-arg-tally-filter="
                                    : "-fplugin-arg-tally-profile=", abs);
            }
          else if (strncmp (kv, "select=", 7) == 0 && kv[7])
            {
              /* The profile too; the percentage after the last ':' stays
                 as it is (the plugin checks it).  */
              char *path = concat (kv + 7, "");
              char *colon = strrchr (path, ':');
              const char *percent = "";
              if (colon)
                {
                  *colon = 0;
                  percent = kv + 7 + (colon - path);
                }
              char abs[PATH_MAX];
              if (!realpath (path, abs))
                {
                  run_error ("profile '%s': %s", path, strerror (errno));
                  free (path);
                  free (word);
                  return EXIT_USAGE;
                }
              free (path);
              free (word);
              char *tmp = concat ("-fplugin-arg-tally-select=", abs);
              word = concat (tmp, percent);
              free (tmp);
            }
          int bad = 0;
          for (int l = 0; l < 2; l++)
            if (lang < 0 || lang == l)
              bad |= add_word (&flags[l], word);
          free (word);
          if (bad)
            return EXIT_USAGE;
        }
      else
        return cli_usage ("run", "unknown option '%s'", a);
    }
  i = p.i;
  if (i >= argc && !print_env)
    {
      run_error ("no command given; try 'tally run --help'%s%s", "", "");
      return EXIT_USAGE;
    }
  if (i < argc && print_env)
    {
      run_error ("--print-env takes no command (got '%s')%s", argv[i], "");
      return EXIT_USAGE;
    }
  if (override && !print_env && !is_make (argv[i]))
    {
      run_error ("--override changes a make command line, and '%s' is not "
                 "make%s", argv[i], "");
      return EXIT_USAGE;
    }

  /* 2. The plugin and the runtime.  */
  char plugin[PATH_MAX], libdir[PATH_MAX];
  if (locate (plugin, libdir) != 0)
    return 1;

  /* 3. The words added to CC and CXX: the plugin, its options for the
     language, the runtime.  */
  struct buf add = { NULL, 0, 0 };
  buf_add (&add, "");
  char *word = concat ("-fplugin=", plugin);
  int bad = add_word (&add, word);
  free (word);
  if (strchr (libdir, ','))
    {
      run_error ("the runtime's directory '%s' contains a comma, which "
                 "cannot be passed through -Wl%s", libdir, "");
      return 1;
    }
  struct buf link = { NULL, 0, 0 };
  if (strcmp (runtime, "shared") == 0)
    {
      buf_add (&link, "-Wl,--push-state,--no-as-needed,");
      buf_add (&link, libdir);
      buf_add (&link, "/libtally-rt.so,--pop-state,-rpath,");
      buf_add (&link, libdir);
    }
  else
    {
      buf_add (&link, "-Wl,--push-state,--whole-archive,");
      buf_add (&link, libdir);
      buf_add (&link, "/libtally-rt.a,--pop-state");
    }
  struct buf tail = { NULL, 0, 0 };
  buf_add (&tail, "");
  bad |= add_word (&tail, link.s);
  if (bad)
    return 1;
  char *add_c = concat (add.s, flags[0].s), *add_cxx = concat (add.s, flags[1].s);
  char *tmp = add_c;
  add_c = concat (add_c, tail.s);
  free (tmp);
  tmp = add_cxx;
  add_cxx = concat (add_cxx, tail.s);
  free (tmp);
  const char *cc = getenv ("CC"), *cxx = getenv ("CXX");
  char *new_cc = concat (cc && *cc ? cc : TALLY_CC, add_c);
  char *new_cxx = concat (cxx && *cxx ? cxx : TALLY_CXX, add_cxx);

  /* 4. One empty compile: the plugin loads into this compiler and accepts
     the options, or says why not (on stderr) before COMMAND starts.  The
     C++ compiler too when it has options of its own.  */
  for (int l = 0; l < 1 + cxx_own; l++)
    {
      char *check = concat (l ? new_cxx : new_cc,
                            l ? " -x c++ -c -o /dev/null /dev/null"
                              : " -x c -c -o /dev/null /dev/null");
      int status = system (check);
      free (check);
      if (status != 0)
        {
          const char *which = l ? (cxx && *cxx ? cxx : TALLY_CXX)
                                : (cc && *cc ? cc : TALLY_CC);
          run_error ("'%s' cannot compile with the plugin and these options "
                     "(see above); nothing was run%s", which,
                     strcmp (plugin, "tally") == 0
                         ? " (the plugin is the one installed for that "
                           "compiler, in its own plugin directory: "
                           "CC=that-gcc meson setup B && meson install -C B)"
                         : "");
          return 1;
        }
    }

  if (print_env)
    {
      print_assignment ("CC", new_cc);
      print_assignment ("CXX", new_cxx);
      if (output)
        print_assignment ("TALLY_OUTPUT", output);
      printf ("export CC CXX%s\n", output ? " TALLY_OUTPUT" : "");
      return 0;
    }
  if (setenv ("CC", new_cc, 1) != 0 || setenv ("CXX", new_cxx, 1) != 0
      || (output && setenv ("TALLY_OUTPUT", output, 1) != 0))
    {
      run_error ("cannot set the environment: %s%s", strerror (errno), "");
      return 1;
    }

  /* 5. make's command line: CC=X and CXX=X beat the environment, so they
     get the flags too; --override adds them.  */
  char **cmd = calloc ((size_t) (argc - i + 3), sizeof *cmd);
  if (!cmd)
    return 1;
  int n = 0, have_cc = 0, have_cxx = 0, make = is_make (argv[i]);
  for (int j = i; j < argc; j++)
    {
      const char *a = argv[j];
      if (make && j > i && strncmp (a, "CC=", 3) == 0)
        {
          cmd[n++] = concat (a, add_c);
          have_cc = 1;
        }
      else if (make && j > i && strncmp (a, "CXX=", 4) == 0)
        {
          cmd[n++] = concat (a, add_cxx);
          have_cxx = 1;
        }
      else
        cmd[n++] = argv[j];
    }
  if (make && override && !have_cc)
    cmd[n++] = concat ("CC=", new_cc);
  if (make && override && !have_cxx)
    cmd[n++] = concat ("CXX=", new_cxx);
  cmd[n] = NULL;

  /* 6. The command replaces tally; its exit status is the result.  */
  fflush (stdout);
  execvp (cmd[0], cmd);
  run_error ("cannot run '%s': %s", cmd[0], strerror (errno));
  return errno == ENOENT ? 127 : 126;
}
