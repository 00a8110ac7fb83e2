/* The calling-context tree of several data files, and its outputs: the
 * indented tree, collapsed stacks and an SVG flame graph (paths.h).
 *
 * Nodes of different files (and of different modules or builds) that name
 * the same chain of functions (source name and file) from the root become
 * one node; their calls and cycles add up.  Children are kept in a list
 * per parent, and found through a hash table of (parent, name, file), so a
 * node with many children costs no more than many nodes.
 *
 * Every walk is a loop with its own stack, never a recursion as deep as
 * the tree: the reader bounds the depth (TALLY_PATH_DEPTH_MAX), but the
 * tools should not rely on the stack for it.  Printing is linear in the
 * tree: the indentation of --tree stops growing at INDENT_LEVELS.  */
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
  size_t *slots;   /* node indexes by (parent, name, file); 0: empty */
  size_t nslots;   /* a power of two, at least twice len */
  char *event; /* the values shown: a PAPI event, or NULL for cycles */
  int frames;  /* show the frames below the instrumented code */
};

/* --tree indents a path by two spaces a level up to this depth; deeper
   ones are indented as this deep and show their depth, "[70] name".  */
#define INDENT_LEVELS 64

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

static size_t
node_hash (size_t parent, const char *name, const char *file)
{
  uint64_t h = 14695981039346656037u ^ (uint64_t) parent;
  for (const char *p = name; *p; p++)
    h = (h ^ (unsigned char) *p) * 1099511628211u;
  h = (h ^ 0xff) * 1099511628211u;
  for (const char *p = file; *p; p++)
    h = (h ^ (unsigned char) *p) * 1099511628211u;
  return (size_t) (h ^ h >> 29);
}

/* The slot of the child of PARENT named NAME in FILE, or of the empty
   slot where it belongs.  */
static size_t *
find_slot (struct tally_tree *t, size_t parent, const char *name,
           const char *file)
{
  size_t mask = t->nslots - 1;
  for (size_t i = node_hash (parent, name, file) & mask;; i = (i + 1) & mask)
    {
      size_t c = t->slots[i];
      if (!c || (t->n[c].parent == parent && strcmp (t->n[c].name, name) == 0
                 && strcmp (t->n[c].file, file) == 0))
        return &t->slots[i];
    }
}

static void
grow_slots (struct tally_tree *t)
{
  free (t->slots);
  t->nslots = t->nslots ? 2 * t->nslots : 256;
  t->slots = xrealloc (NULL, t->nslots * sizeof *t->slots);
  memset (t->slots, 0, t->nslots * sizeof *t->slots);
  for (size_t c = 1; c < t->len; c++)
    *find_slot (t, t->n[c].parent, t->n[c].name, t->n[c].file) = c;
}

/* The child of PARENT named NAME in FILE, made if new.  */
static size_t
child (struct tally_tree *t, size_t parent, const char *name, const char *file)
{
  if (2 * (t->len + 1) > t->nslots)
    grow_slots (t);
  size_t *slot = find_slot (t, parent, name, file);
  if (*slot)
    return *slot;
  if (t->len == t->cap)
    {
      t->cap *= 2;
      t->n = xrealloc (t->n, t->cap * sizeof *t->n);
    }
  size_t c = t->len++;
  *slot = c;
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

/* The width of --tree's two value columns: 16, or as wide as their
   headings "incl-EVENT" and "excl-EVENT" (a PAPI event name such as
   perf::TASK-CLOCK is longer than 11), up to a bound a name from a
   damaged file cannot stretch.  */
static int
value_width (const struct tally_tree *t)
{
  size_t w = t->event ? 5 + strlen (t->event) : 16;
  return w < 16 ? 16 : w > 132 ? 132 : (int) w;
}

/* One line of --tree for node I (not the root), its values in columns of
   width W.  */
static void
print_line (const struct tally_tree *t, size_t i, int w, FILE *out)
{
  const struct tnode *n = &t->n[i];
  unsigned level = n->depth - 1;
  fprintf (out, "%12" PRIu64 " %*" PRIu64 " %*" PRIu64 "  %*s", n->calls,
           w, n->incl, w, n->excl,
           (int) (2 * (level < INDENT_LEVELS ? level : INDENT_LEVELS)), "");
  if (level > INDENT_LEVELS)
    fprintf (out, "[%u] ", n->depth);
  put_name (out, n->name);
  if (*n->file)
    {
      fputs ("  ", out);
      put_name (out, n->file);
    }
  fputc ('\n', out);
}

/* A depth-first walk in children's order: one frame per node on the
   current path, with its sorted children and the next one to visit.  */
struct walk_frame
{
  size_t node;
  size_t *kids, nkids, next;
  double cx;    /* svg: the left edge of the next child */
};

struct walk
{
  struct walk_frame *f;
  size_t len, cap;
};

static void
walk_push (const struct tally_tree *t, struct walk *w, size_t node)
{
  if (w->len == w->cap)
    {
      w->cap = w->cap ? 2 * w->cap : 64;
      w->f = xrealloc (w->f, w->cap * sizeof *w->f);
    }
  struct walk_frame *f = &w->f[w->len++];
  memset (f, 0, sizeof *f);
  f->node = node;
  f->nkids = children (t, node, &f->kids);
}

static void
walk_pop (struct walk *w)
{
  free (w->f[--w->len].kids);
}

/* The next node of walk W: the next child of its deepest frame (w->f[w->len
   - 1] after the call), the frames with none left popped; SIZE_MAX at the
   end.  The caller pushes it to walk its children too.  */
static size_t
walk_next (struct walk *w)
{
  while (w->len)
    {
      struct walk_frame *f = &w->f[w->len - 1];
      if (f->next < f->nkids)
        return f->kids[f->next++];
      walk_pop (w);
    }
  return SIZE_MAX;
}

void
tally_tree_print (const struct tally_tree *t, FILE *out)
{
  totals ((struct tally_tree *) t);
  /* The headings as wide as the values under them, so that a reader can
     find the call path at the column of its heading.  */
  int vw = value_width (t);
  fprintf (out, "%12s ", "calls");
  for (int k = 0; k < 2; k++)
    {
      const char *ev = t->event ? t->event : "cyc";
      size_t len = 5 + strlen (ev);
      fprintf (out, "%*s%s-", len < (size_t) vw ? vw - (int) len : 0, "",
               k ? "excl" : "incl");
      put_name (out, ev);
      fputc (' ', out);
    }
  fprintf (out, " %s\n", "call path");
  struct walk w = { NULL, 0, 0 };
  walk_push (t, &w, 0);
  for (size_t c; (c = walk_next (&w)) != SIZE_MAX;)
    {
      print_line (t, c, vw, out);
      walk_push (t, &w, c);
    }
  free (w.f);
}

/* A frame name for collapsed stacks: ';' separates frames there.  */
static void
put_frame (FILE *out, const char *s)
{
  for (; *s; s++)
    fputc (*s == ';' ? ':' : (unsigned char) *s < 0x20 ? '?' : *s, out);
}

void
tally_tree_folded (const struct tally_tree *t, FILE *out)
{
  /* The ancestors of a node, found going up and printed going down.  */
  size_t *up = NULL, cap = 0;
  for (size_t i = 1; i < t->len; i++)
    if (t->n[i].excl)
      {
        size_t k = 0;
        for (size_t a = i; a; a = t->n[a].parent)
          {
            if (k == cap)
              {
                cap = cap ? 2 * cap : 64;
                up = xrealloc (up, cap * sizeof *up);
              }
            up[k++] = a;
          }
        while (k--)
          {
            put_frame (out, t->n[up[k]].name);
            if (k)
              fputc (';', out);
          }
        fprintf (out, " %" PRIu64 "\n", t->n[i].excl);
      }
  free (up);
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

/* Draw node I (not the root) at X, of width W pixels.  */
static void
svg_rect (const struct tally_tree *t, size_t i, double x, double w,
          unsigned maxdepth, uint64_t grand, FILE *out)
{
  const struct tnode *n = &t->n[i];
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

/* Draw the tree from the root at X, W pixels wide: each node, then its
   children left to right after its self cycles, widest first; a child
   narrower than 0.1 pixel is left out with its subtree.  */
static void
svg_tree (const struct tally_tree *t, double x, double scale,
          unsigned maxdepth, uint64_t grand, FILE *out)
{
  struct walk w = { NULL, 0, 0 };
  walk_push (t, &w, 0);
  w.f[0].cx = x + (double) t->n[0].excl * scale;
  for (size_t c; (c = walk_next (&w)) != SIZE_MAX;)
    {
      struct walk_frame *f = &w.f[w.len - 1];
      double cx = f->cx, cw = (double) t->n[c].total * scale;
      f->cx += cw;
      if (cw < 0.1)
        continue;
      svg_rect (t, c, cx, cw, maxdepth, grand, out);
      walk_push (t, &w, c);
      w.f[w.len - 1].cx = cx + (double) t->n[c].excl * scale;
    }
  free (w.f);
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
  svg_tree (t, SVG_PAD, scale, maxdepth, grand, out);
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
  free (t->slots);
  free (t->event);
  free (t);
}
