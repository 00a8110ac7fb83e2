/* The calling-context tree of several data files, and its outputs: the
 * indented tree, collapsed stacks and an SVG flame graph (paths.h).
 *
 * Nodes of different files (and of different modules or builds) that name
 * the same chain of functions (source name and file) from the root become
 * one node; their calls and cycles add up.  Children are kept in a list
 * per parent: trees are wide at a few nodes only, and each file's nodes
 * arrive parent first.  */
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "paths.h"

struct tnode
{
  size_t parent;
  const char *name; /* owned copies */
  const char *file;
  uint64_t calls, incl, excl;
  uint64_t total;   /* exclusive cycles of the subtree (the flame width) */
  size_t first_child, next_sibling; /* 0: none (the root is never a child) */
  unsigned depth;
};

struct tally_tree
{
  struct tnode *n;
  size_t len, cap;
  char *event; /* the values shown: a PAPI event, or NULL for cycles */
  int frames;  /* show the frames below the instrumented code */
};

static void *
xrealloc (void *p, size_t n)
{
  void *q = realloc (p, n ? n : 1);
  if (!q)
    {
      fputs ("tally: out of memory\n", stderr);
      exit (1);
    }
  return q;
}

static char *
xstrdup_ (const char *s)
{
  size_t n = strlen (s) + 1;
  return memcpy (xrealloc (NULL, n), s, n);
}

static uint64_t
add_sat (uint64_t a, uint64_t b)
{
  return a + b < a ? UINT64_MAX : a + b;
}

struct tally_tree *
tally_tree_new (const char *event)
{
  struct tally_tree *t = xrealloc (NULL, sizeof *t);
  memset (t, 0, sizeof *t);
  t->event = event ? xstrdup_ (event) : NULL;
  t->cap = 64;
  t->n = xrealloc (NULL, t->cap * sizeof *t->n);
  memset (&t->n[0], 0, sizeof t->n[0]);
  t->n[0].name = xstrdup_ ("(root)");
  t->n[0].file = xstrdup_ ("");
  t->len = 1;
  return t;
}

/* The child of PARENT named NAME in FILE, made if new.  */
static size_t
child (struct tally_tree *t, size_t parent, const char *name, const char *file)
{
  for (size_t c = t->n[parent].first_child; c; c = t->n[c].next_sibling)
    if (strcmp (t->n[c].name, name) == 0 && strcmp (t->n[c].file, file) == 0)
      return c;
  if (t->len == t->cap)
    {
      t->cap *= 2;
      t->n = xrealloc (t->n, t->cap * sizeof *t->n);
    }
  size_t c = t->len++;
  struct tnode *n = &t->n[c];
  memset (n, 0, sizeof *n);
  n->parent = parent;
  n->name = xstrdup_ (name);
  n->file = xstrdup_ (file);
  n->depth = t->n[parent].depth + 1;
  n->next_sibling = t->n[parent].first_child;
  t->n[parent].first_child = c;
  return c;
}

int
tally_tree_add (struct tally_tree *t, const struct tally_data *d)
{
  if (!d->npaths)
    return 0;
  uint32_t ev = UINT32_MAX; /* cycles */
  if (t->event)
    {
      for (uint32_t k = 1; k < d->nmeas && d->path_nevents; k++)
        if (strcmp (d->meas_names[k], t->event) == 0)
          ev = k - 1;
      if (ev == UINT32_MAX)
        return -1;
    }
  size_t *map = xrealloc (NULL, d->npaths * sizeof *map);
  map[0] = 0;
  for (uint32_t i = 1; i < d->npaths; i++)
    {
      const struct tally_data_path *p = &d->paths[i];
      size_t parent = map[p->parent]; /* the reader checked parent < i */
      if (p->module == UINT32_MAX)
        {
          map[i] = parent; /* a node the writer had not finished */
          continue;
        }
      size_t c;
      if (p->module == TALLY_DATA_FRAME && !t->frames)
        {
          /* Hidden: its callees hang from its parent (frames are only
             found below a thread's first instrumented call, and have no
             values of their own).  */
          map[i] = parent;
          continue;
        }
      if (p->module == TALLY_DATA_FRAME)
        {
          /* A frame below the thread's first instrumented call.  */
          const struct tally_data_frame *fr = &d->frames[p->fn];
          char name[300];
          if (*fr->name)
            snprintf (name, sizeof name, "[uninstrumented] %.255s", fr->name);
          else
            snprintf (name, sizeof name, "[uninstrumented] %#" PRIx64,
                      fr->addr);
          c = child (t, parent, name, "");
        }
      else
        {
          const struct tally_data_fn *f = &d->modules[p->module].fns[p->fn];
          c = child (t, parent, f->name, f->file);
        }
      map[i] = c;
      struct tnode *n = &t->n[c];
      uint64_t incl = p->incl, excl = p->excl;
      if (ev != UINT32_MAX)
        {
          incl = d->path_events[((size_t) i * d->path_nevents + ev) * 2];
          excl = d->path_events[((size_t) i * d->path_nevents + ev) * 2 + 1];
        }
      n->calls = add_sat (n->calls, p->calls);
      n->incl = add_sat (n->incl, incl);
      n->excl = add_sat (n->excl, excl);
    }
  free (map);
  return 0;
}

void
tally_tree_show_frames (struct tally_tree *t, int show)
{
  t->frames = show;
}

size_t
tally_tree_paths (const struct tally_tree *t)
{
  return t->len - 1;
}

/* Subtree totals of exclusive cycles: nodes come after their parents, so
   one backward pass adds every node into its parent.  */
static void
totals (struct tally_tree *t)
{
  for (size_t i = 0; i < t->len; i++)
    t->n[i].total = t->n[i].excl;
  for (size_t i = t->len; i-- > 1;)
    t->n[t->n[i].parent].total = add_sat (t->n[t->n[i].parent].total,
                                          t->n[i].total);
}

/* The children of node P, most inclusive first (then by name).  */
static const struct tally_tree *sort_tree;

static int
by_incl (const void *a, const void *b)
{
  const struct tnode *x = &sort_tree->n[*(const size_t *) a];
  const struct tnode *y = &sort_tree->n[*(const size_t *) b];
  if (x->total != y->total)
    return x->total > y->total ? -1 : 1;
  return strcmp (x->name, y->name);
}

static size_t
children (const struct tally_tree *t, size_t p, size_t **out)
{
  size_t k = 0;
  for (size_t c = t->n[p].first_child; c; c = t->n[c].next_sibling)
    k++;
  size_t *v = xrealloc (NULL, (k ? k : 1) * sizeof *v);
  k = 0;
  for (size_t c = t->n[p].first_child; c; c = t->n[c].next_sibling)
    v[k++] = c;
  sort_tree = t;
  qsort (v, k, sizeof *v, by_incl);
  *out = v;
  return k;
}

/* Names are printed as they are, with control characters as '?'.  */
static void
put_name (FILE *out, const char *s)
{
  for (; *s; s++)
    fputc ((unsigned char) *s < 0x20 || *s == 0x7f ? '?' : *s, out);
}

static void
print_node (const struct tally_tree *t, size_t i, FILE *out)
{
  const struct tnode *n = &t->n[i];
  if (i)
    {
      fprintf (out, "%12" PRIu64 " %16" PRIu64 " %16" PRIu64 "  %*s", n->calls,
               n->incl, n->excl, (int) (2 * (n->depth - 1)), "");
      put_name (out, n->name);
      if (*n->file)
        {
          fputs ("  ", out);
          put_name (out, n->file);
        }
      fputc ('\n', out);
    }
  size_t *kids;
  size_t k = children (t, i, &kids);
  for (size_t c = 0; c < k; c++)
    print_node (t, kids[c], out);
  free (kids);
}

void
tally_tree_print (const struct tally_tree *t, FILE *out)
{
  totals ((struct tally_tree *) t);
  if (t->event)
    fprintf (out, "%12s incl-%-11s excl-%-11s  %s\n", "calls", t->event,
             t->event, "call path");
  else
    fprintf (out, "%12s %16s %16s  %s\n", "calls", "incl-cyc", "excl-cyc",
             "call path");
  print_node (t, 0, out);
}

/* A frame name for collapsed stacks: ';' separates frames there.  */
static void
put_frame (FILE *out, const char *s)
{
  for (; *s; s++)
    fputc (*s == ';' ? ':' : (unsigned char) *s < 0x20 ? '?' : *s, out);
}

static void
put_path (const struct tally_tree *t, size_t i, FILE *out)
{
  if (t->n[i].parent)
    {
      put_path (t, t->n[i].parent, out);
      fputc (';', out);
    }
  put_frame (out, t->n[i].name);
}

void
tally_tree_folded (const struct tally_tree *t, FILE *out)
{
  for (size_t i = 1; i < t->len; i++)
    if (t->n[i].excl)
      {
        put_path (t, i, out);
        fprintf (out, " %" PRIu64 "\n", t->n[i].excl);
      }
}

static void
put_xml (FILE *out, const char *s, size_t max)
{
  size_t n = 0;
  for (; *s && n < max; s++, n++)
    switch (*s)
      {
      case '<': fputs ("&lt;", out); break;
      case '>': fputs ("&gt;", out); break;
      case '&': fputs ("&amp;", out); break;
      case '"': fputs ("&quot;", out); break;
      default:
        fputc ((unsigned char) *s < 0x20 ? '?' : *s, out);
      }
  if (*s)
    fputs ("..", out);
}

#define SVG_WIDTH 1200.0
#define SVG_PAD 10.0
#define FRAME_H 16

/* Draw node I (not the root) at X, of width W pixels, then its children
   left to right.  */
static void
svg_node (const struct tally_tree *t, size_t i, double x, double w,
          double scale, unsigned maxdepth, uint64_t grand, FILE *out)
{
  const struct tnode *n = &t->n[i];
  if (i)
    {
      double y = 40 + (double) (maxdepth - n->depth) * FRAME_H;
      /* A warm colour from the name, so one function has one colour.  */
      uint32_t h = 2166136261u;
      for (const char *p = n->name; *p; p++)
        h = (h ^ (unsigned char) *p) * 16777619u;
      double pct = grand ? 100.0 * (double) n->total / (double) grand : 0;
      fputs ("<g><title>", out);
      put_xml (out, n->name, 1000);
      fputs (" (", out);
      fprintf (out, "%" PRIu64 " ", n->total);
      put_xml (out, t->event ? t->event : "cycles", 200);
      fprintf (out, ", %.2f%%; self %" PRIu64 ", calls %" PRIu64 ")</title>",
               pct, n->excl, n->calls);
      fprintf (out, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" "
               "fill=\"rgb(%u,%u,%u)\" rx=\"2\"/>", x, y, w, FRAME_H - 1,
               205 + (h % 50), 80 + ((h >> 8) % 130), 40 + ((h >> 16) % 50));
      size_t chars = (size_t) (w / 7);
      if (chars >= 3)
        {
          fprintf (out, "<text x=\"%.2f\" y=\"%.1f\">", x + 3, y + 11.5);
          put_xml (out, n->name, chars - 2);
          fputs ("</text>", out);
        }
      fputs ("</g>\n", out);
    }
  size_t *kids;
  size_t k = children (t, i, &kids);
  /* Self cycles first (left), then the callees, widest first.  */
  double cx = x + (double) n->excl * scale;
  for (size_t c = 0; c < k; c++)
    {
      double cw = (double) t->n[kids[c]].total * scale;
      if (cw >= 0.1)
        svg_node (t, kids[c], cx, cw, scale, maxdepth, grand, out);
      cx += cw;
    }
  free (kids);
}

void
tally_tree_svg (const struct tally_tree *t, FILE *out, const char *title)
{
  totals ((struct tally_tree *) t);
  unsigned maxdepth = 1;
  for (size_t i = 0; i < t->len; i++)
    if (t->n[i].depth > maxdepth)
      maxdepth = t->n[i].depth;
  uint64_t grand = t->n[0].total;
  double scale = grand ? (SVG_WIDTH - 2 * SVG_PAD) / (double) grand : 0;
  int height = 40 + (int) maxdepth * FRAME_H + 30;
  fprintf (out, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
           "<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
           "xmlns=\"http://www.w3.org/2000/svg\">\n"
           "<style>text { font-family: monospace; font-size: 12px; "
           "fill: #000; pointer-events: none; } rect:hover { stroke: #000; "
           "stroke-width: 0.5; }</style>\n"
           "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" "
           "fill=\"#f8f8f0\"/>\n<text x=\"%d\" y=\"24\" "
           "style=\"font-size: 16px\">",
           (int) SVG_WIDTH, height, (int) SVG_WIDTH, height,
           (int) SVG_PAD);
  put_xml (out, title, 200);
  fputs (" — exclusive ", out);
  put_xml (out, t->event ? t->event : "cycles", 200);
  fprintf (out, ", %" PRIu64 " in all (width: inclusive)</text>\n", grand);
  svg_node (t, 0, SVG_PAD, SVG_WIDTH - 2 * SVG_PAD, scale, maxdepth, grand,
            out);
  fputs ("</svg>\n", out);
}

void
tally_tree_free (struct tally_tree *t)
{
  if (!t)
    return;
  for (size_t i = 0; i < t->len; i++)
    {
      free ((char *) t->n[i].name);
      free ((char *) t->n[i].file);
    }
  free (t->n);
  free (t->event);
  free (t);
}
