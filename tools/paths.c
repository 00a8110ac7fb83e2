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

/* The length of the UTF-8 sequence at S if it is one character XML allows
   that is not a control character (U+0020..U+007E, U+00A0..U+D7FF,
   U+E000..U+FFFD, U+10000..U+10FFFF), else 0.  */
static size_t
xml_char (const unsigned char *s)
{
  if (s[0] >= 0x20 && s[0] < 0x7f)
    return 1;
  size_t n = s[0] >= 0xc2 && s[0] <= 0xdf ? 2
             : s[0] >= 0xe0 && s[0] <= 0xef ? 3
             : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : 0;
  uint32_t c = n == 2 ? s[0] & 0x1f : n == 3 ? s[0] & 0x0f : s[0] & 0x07;
  for (size_t k = 1; k < n; k++)
    {
      if ((s[k] & 0xc0) != 0x80) /* the NUL at the end included */
        return 0;
      c = c << 6 | (s[k] & 0x3f);
    }
  /* Overlong forms, surrogates, U+FFFE and U+FFFF, beyond U+10FFFF, the
     C1 controls.  */
  if (!n || (n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff))
      || (c >= 0xd800 && c <= 0xdfff) || c == 0xfffe || c == 0xffff
      || c < 0xa0)
    return 0;
  return n;
}

/* S as XML character data or a double-quoted attribute value: markup
   characters as entities, and every byte that does not start a character
   XML allows (a control character, invalid UTF-8: names come from data
   files, which anyone can write) as '?'.  At most MAX characters, then
   "..".  */
static void
put_xml (FILE *out, const char *s, size_t max)
{
  const unsigned char *p = (const unsigned char *) s;
  size_t n = 0;
  for (; *p && n < max; n++)
    switch (*p)
      {
      case '<': fputs ("&lt;", out); p++; break;
      case '>': fputs ("&gt;", out); p++; break;
      case '&': fputs ("&amp;", out); p++; break;
      case '"': fputs ("&quot;", out); p++; break;
      default:
        {
          size_t k = xml_char (p);
          if (k)
            fwrite (p, 1, k, out);
          else
            fputc ('?', out);
          p += k ? k : 1;
        }
      }
  if (*p)
    fputs ("..", out);
}

#define SVG_WIDTH 1200.0
#define SVG_PAD 10.0
#define FRAME_H 16

/* Draw node I (not the root) at X, of width W pixels.  The script below
   reads the frame back from this markup: keep the two in step.  */
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
   narrower than 0.1 pixel is left out with its subtree.  The frames come
   out depth first, a node before its subtree (the script relies on it).  */
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

/* The flame graph's script (doc/cli.md, "tally flame"): click a frame to
   zoom to it, "Reset Zoom" (or Escape) to go back, type in the search
   field to highlight the frames whose name holds the text, with their
   count and share.  It reads the frames from the markup svg_rect writes
   (the name and total from the title, the place from the rect) only at
   the first click or search, and changes nothing but their place, text
   and classes.  */
static const char svg_script[] =
  "(function () {\n"
  "  \"use strict\";\n"
  "  var svg = document.documentElement, NS = svg.namespaceURI;\n"
  "  var PAD = 10, FULL = +svg.getAttribute(\"width\") - 2 * PAD;\n"
  "  var box = document.getElementById(\"frames\");\n"
  "  var unzoom = document.getElementById(\"unzoom\");\n"
  "  var matched = document.getElementById(\"matched\");\n"
  "  var input = document.getElementById(\"search\");\n"
  "  var F = null; /* the frames, read at the first click or search */\n"
  "  var zoomed = -1;\n"
  "  function quote(s) { return s.replace(/[.*+?^${}()|[\\]\\\\]/g, \"\\\\$&\"); }\n"
  "  /* A frame's name and total: its title less the values tally wrote\n"
  "     after them, \" (TOTAL EVENT, P%; self S, calls C)\".  */\n"
  "  var tail = new RegExp(\" \\\\((\\\\d+) \" + quote(svg.getAttribute(\"data-event\") || \"\")\n"
  "                        + \", \\\\d+\\\\.\\\\d\\\\d%; self \\\\d+, calls \\\\d+\\\\)$\");\n"
  "  function frames() {\n"
  "    if (F)\n"
  "      return F;\n"
  "    F = [];\n"
  "    var gs = box.children, stack = [];\n"
  "    for (var i = 0; i < gs.length; i++) {\n"
  "      var g = gs[i], r = g.getElementsByTagNameNS(NS, \"rect\")[0];\n"
  "      var t = g.getElementsByTagNameNS(NS, \"title\")[0].textContent;\n"
  "      var m = tail.exec(t), x = g.getElementsByTagNameNS(NS, \"text\")[0];\n"
  "      var f = { g: g, r: r, t: x || null, label: x ? x.textContent : \"\",\n"
  "                name: m ? t.slice(0, m.index) : t, total: m ? +m[1] : 0,\n"
  "                x: +r.getAttribute(\"x\"), w: +r.getAttribute(\"width\"),\n"
  "                y: +r.getAttribute(\"y\"), end: gs.length };\n"
  "      /* Frames come parent first (depth first), a deeper one higher up:\n"
  "         a frame's subtree is the frames after it up to the first one\n"
  "         at its height or below, F[i].end.  */\n"
  "      while (stack.length && F[stack[stack.length - 1]].y <= f.y)\n"
  "        F[stack.pop()].end = i;\n"
  "      stack.push(i);\n"
  "      g.tallyFrame = i;\n"
  "      F.push(f);\n"
  "    }\n"
  "    return F;\n"
  "  }\n"
  "  function place(f, x, w) {\n"
  "    f.r.setAttribute(\"x\", x.toFixed(2));\n"
  "    f.r.setAttribute(\"width\", w.toFixed(2));\n"
  "    var chars = Math.floor(w / 7);\n"
  "    var s = chars < 3 ? \"\" : f.name.length > chars - 2\n"
  "                             ? f.name.slice(0, chars - 2) + \"..\" : f.name;\n"
  "    if (!f.t && s) {\n"
  "      f.t = document.createElementNS(NS, \"text\");\n"
  "      f.g.appendChild(f.t);\n"
  "    }\n"
  "    if (f.t) {\n"
  "      f.t.setAttribute(\"x\", (x + 3).toFixed(2));\n"
  "      f.t.setAttribute(\"y\", (f.y + 11.5).toFixed(1));\n"
  "      f.t.textContent = s;\n"
  "    }\n"
  "  }\n"
  "  function show(f, how) {\n"
  "    f.g.classList.toggle(\"hidden\", how === 0);\n"
  "    f.g.classList.toggle(\"parent\", how === 2);\n"
  "  }\n"
  "  /* Zoom to frame I: it and its subtree fill the width, its callers\n"
  "     stay (full width, faded), every other frame is hidden.  */\n"
  "  function zoom(i) {\n"
  "    var F = frames(), z = F[i], k = FULL / z.w, up = z.y, j;\n"
  "    for (j = 0; j < F.length; j++)\n"
  "      if (j < i || j >= z.end)\n"
  "        show(F[j], 0);\n"
  "    for (j = i - 1; j >= 0; j--)\n"
  "      if (F[j].y > up) {\n"
  "        up = F[j].y;\n"
  "        show(F[j], 2);\n"
  "        place(F[j], PAD, FULL);\n"
  "      }\n"
  "    for (j = i; j < z.end; j++) {\n"
  "      show(F[j], 1);\n"
  "      place(F[j], PAD + (F[j].x - z.x) * k, F[j].w * k);\n"
  "    }\n"
  "    zoomed = i;\n"
  "    unzoom.classList.remove(\"hidden\");\n"
  "  }\n"
  "  function reset() {\n"
  "    if (zoomed < 0)\n"
  "      return;\n"
  "    frames().forEach(function (f) {\n"
  "      show(f, 1);\n"
  "      place(f, f.x, f.w);\n"
  "      if (f.t)\n"
  "        f.t.textContent = f.label;\n"
  "    });\n"
  "    zoomed = -1;\n"
  "    unzoom.classList.add(\"hidden\");\n"
  "  }\n"
  "  /* Highlight the frames whose name holds TERM (any case) and show how\n"
  "     many, and their share of the whole: the totals of the matches that\n"
  "     are not inside another match.  */\n"
  "  function search(term) {\n"
  "    var F = frames(), q = term.toLowerCase(), n = 0, sum = 0, end = 0;\n"
  "    for (var j = 0; j < F.length; j++) {\n"
  "      var m = q !== \"\" && F[j].name.toLowerCase().indexOf(q) >= 0;\n"
  "      F[j].g.classList.toggle(\"match\", m);\n"
  "      if (m) {\n"
  "        n++;\n"
  "        if (j >= end) {\n"
  "          sum += F[j].total;\n"
  "          end = F[j].end;\n"
  "        }\n"
  "      }\n"
  "    }\n"
  "    var all = +svg.getAttribute(\"data-total\");\n"
  "    matched.textContent = q === \"\" ? \"\" : \"Matched: \" + n + (n === 1 ? \" frame, \" : \" frames, \")\n"
  "                          + (all ? (100 * sum / all).toFixed(2) : \"0.00\") + \"%\";\n"
  "  }\n"
  "  box.addEventListener(\"click\", function (e) {\n"
  "    for (var g = e.target; g && g !== box; g = g.parentNode)\n"
  "      if (g.parentNode === box) {\n"
  "        frames();\n"
  "        zoom(g.tallyFrame);\n"
  "        return;\n"
  "      }\n"
  "  });\n"
  "  unzoom.addEventListener(\"click\", reset);\n"
  "  input.addEventListener(\"input\", function () { search(input.value); });\n"
  "  document.addEventListener(\"keydown\", function (e) {\n"
  "    if (e.key === \"Escape\") {\n"
  "      if (input.value) {\n"
  "        input.value = \"\";\n"
  "        search(\"\");\n"
  "      } else\n"
  "        reset();\n"
  "      input.blur();\n"
  "    } else if ((e.key === \"/\" && e.target !== input)\n"
  "               || (e.key === \"f\" && (e.ctrlKey || e.metaKey))) {\n"
  "      e.preventDefault();\n"
  "      input.focus();\n"
  "    }\n"
  "  });\n"
  "})();\n";

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
  const char *event = t->event ? t->event : "cycles";
  fprintf (out, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
           "<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
           "xmlns=\"http://www.w3.org/2000/svg\" data-total=\"%" PRIu64 "\" "
           "data-event=\"", (int) SVG_WIDTH, height, (int) SVG_WIDTH, height,
           grand);
  put_xml (out, event, 200);
  fprintf (out, "\">\n"
           "<style>text { font-family: monospace; font-size: 12px; "
           "fill: #000; pointer-events: none; } #frames > g { cursor: pointer; } "
           "#frames > g:hover > rect { stroke: #000; stroke-width: 0.5; } "
           "#frames > g.match > rect { fill: rgb(230,0,230); } "
           ".parent { opacity: 0.5; } .hidden { display: none; } "
           "#unzoom { fill: #00c; pointer-events: auto; cursor: pointer; } "
           "#unzoom:hover { text-decoration: underline; }</style>\n"
           "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" "
           "fill=\"#f8f8f0\"/>\n<text x=\"%d\" y=\"24\" "
           "style=\"font-size: 16px\">", (int) SVG_PAD);
  put_xml (out, title, 200);
  fputs (" — exclusive ", out);
  put_xml (out, event, 200);
  fprintf (out, ", %" PRIu64 " in all (width: inclusive)</text>\n", grand);
  fputs ("<g id=\"frames\">\n", out);
  svg_tree (t, SVG_PAD, scale, maxdepth, grand, out);
  /* The controls, in the bar under the frames.  */
  fprintf (out, "</g>\n<text id=\"unzoom\" class=\"hidden\" x=\"%d\" "
           "y=\"%d\">Reset Zoom</text>\n<text id=\"matched\" x=\"%d\" "
           "y=\"%d\" text-anchor=\"end\"></text>\n<foreignObject x=\"%d\" "
           "y=\"%d\" width=\"200\" height=\"22\"><input "
           "xmlns=\"http://www.w3.org/1999/xhtml\" id=\"search\" "
           "type=\"text\" placeholder=\"Search (/)\" "
           "style=\"width: 190px; font: 12px monospace\"/></foreignObject>\n",
           (int) SVG_PAD, height - 10, (int) (SVG_WIDTH - SVG_PAD) - 210,
           height - 10, (int) (SVG_WIDTH - SVG_PAD) - 200, height - 26);
  fprintf (out, "<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n"
           "</svg>\n", svg_script);
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
