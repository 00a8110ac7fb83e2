/* plugin/loader.cc - the `tally.so` GCC loads: a version check, then the
 * real plugin.
 *
 * GCC loads plugins with RTLD_NOW, so a plugin built against another GCC's
 * headers usually fails to load with an "undefined symbol" error from the
 * dynamic linker, before its plugin_init could say what is wrong.  This
 * loader uses no GCC function at all: it compares the running compiler's
 * version with the one the plugin was built for, says so plainly when they
 * differ, and otherwise loads tally-impl.so from its own directory and hands
 * over to its plugin_init.  */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "gcc-plugin.h"
#include "plugin-version.h"

#ifndef TALLY_IMPL
#define TALLY_IMPL "tally-impl.so"
#endif

int plugin_is_GPL_compatible;

static bool
same (const char *a, const char *b)
{
  return strcmp (a ? a : "", b ? b : "") == 0;
}

int
plugin_init (struct plugin_name_args *info, struct plugin_gcc_version *version)
{
  /* 1. The same checks as GCC's plugin_default_version_check.  */
  const struct plugin_gcc_version *built = &gcc_version;
  if (!same (built->basever, version->basever)
      || !same (built->datestamp, version->datestamp)
      || !same (built->devphase, version->devphase)
      || !same (built->revision, version->revision)
      || !same (built->configuration_arguments, version->configuration_arguments))
    {
      fprintf (stderr,
               "tally: error: -fplugin=tally was built for GCC %s (%s) but is "
               "loaded into GCC %s (%s); rebuild tally with this compiler's "
               "plugin headers (gcc-%.*s-plugin-dev), or load it with the "
               "compiler it was built for\n",
               built->basever, built->datestamp, version->basever,
               version->datestamp, (int) strcspn (version->basever, "."),
               version->basever);
      return 1;
    }

  /* 2. The real plugin, from the directory this file was loaded from.  */
  char path[4096];
  const char *slash = strrchr (info->full_name, '/');
  int dir = slash ? (int) (slash - info->full_name + 1) : 0;
  if (snprintf (path, sizeof path, "%.*s%s", dir, info->full_name, TALLY_IMPL)
      >= (int) sizeof path)
    {
      fprintf (stderr, "tally: error: plugin path too long: %s\n", info->full_name);
      return 1;
    }
  void *impl = dlopen (path, RTLD_NOW | RTLD_GLOBAL);
  if (!impl)
    {
      fprintf (stderr, "tally: error: cannot load %s: %s\n", path, dlerror ());
      return 1;
    }
  typedef int init_fn (struct plugin_name_args *, struct plugin_gcc_version *);
  init_fn *init = (init_fn *) dlsym (impl, "plugin_init");
  if (!init)
    {
      fprintf (stderr, "tally: error: %s has no plugin_init\n", path);
      return 1;
    }
  return init (info, version);
}
