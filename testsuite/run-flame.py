#!/usr/bin/env python3
"""`tally flame`'s SVG (tools/paths.c, doc/cli.md "tally flame"): in a real
browser, a click zooms to a frame, "Reset Zoom" and Escape go back, and
typing in the search field highlights the frames whose name holds the
text, with their count and share; names from a hostile data file cannot
inject markup or script, and the file stays valid, self-contained XML.

The browser is Debian's chromium, driven by playwright-core from the npm
registry (testsuite/flame/browser.js), which ./dev installs outside the
tree, into ${XDG_CACHE_HOME:-~/.cache}/tally-npm (TALLY_PLAYWRIGHT names
another playwright-core directory).  Without them the browser checks skip
and say why.

Usage: run-flame.py CHECK --plugin P --runtime RT --tally T --srcdir DIR
                          [--cc CC] (checklib.py's options)
Exit status: 0 pass, 1 fail, 77 skip.
"""
import json
import os
import platform
import re
import shutil
import struct
import sys
import xml.etree.ElementTree as ET
import zlib

from checklib import Failure, Skip, case, expect, main, run

SVG = "{http://www.w3.org/2000/svg}"
XHTML = "{http://www.w3.org/1999/xhtml}"
CHROMIUM = "/usr/bin/chromium"
FULL = 1180.0  # the frames' width: 1200 less 10 each side
PAD = 10.0


def playwright_dir():
    d = os.environ.get("TALLY_PLAYWRIGHT")
    if not d:
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
        d = os.path.join(cache, "tally-npm", "node_modules", "playwright-core")
    return d


def need_browser():
    """Skip unless chromium, node and playwright-core are there."""
    if not os.path.exists(CHROMIUM):
        raise Skip("(no %s: Debian's chromium package; ./dev test installs it)" % CHROMIUM)
    if not shutil.which("node"):
        raise Skip("(no node: Debian's nodejs package; ./dev test installs it)")
    d = playwright_dir()
    if not os.path.exists(os.path.join(d, "package.json")):
        raise Skip("(no playwright-core in %s: ./dev test installs it with npm "
                   "install --prefix ${XDG_CACHE_HOME:-~/.cache}/tally-npm "
                   "playwright-core)" % d)
    with open(os.path.join(d, "package.json")) as f:
        need = json.load(f).get("engines", {}).get("node", "")
    have = run(["node", "--version"]).stdout.strip()
    m, n = re.match(r">=\s*(\d+)", need), re.match(r"v(\d+)", have)
    if m and n and int(n.group(1)) < int(m.group(1)):
        raise Skip("(node %s is older than playwright-core's %s)" % (have, need))
    return d


def browse(a, work, svg, steps, tag):
    """Run STEPS (testsuite/flame/browser.js) on SVG in a fresh Chromium
    profile; returns what the script reports."""
    pw = need_browser()
    spec = os.path.join(work, tag + "-spec.json")
    with open(spec, "w") as f:
        json.dump({"svg": os.path.abspath(svg), "profile": os.path.join(work, tag + "-profile"),
                   "steps": steps}, f)
    p = run(["node", os.path.join(a.srcdir, "flame", "browser.js"), pw, spec], timeout=240)
    out = json.loads(p.stdout)
    expect(not out["dialogs"], "%s: dialogs opened: %s" % (tag, out["dialogs"]))
    expect(not out["errors"], "%s: errors in the page: %s" % (tag, out["errors"]))
    expect(not out["requests"], "%s: the SVG asked for %s" % (tag, out["requests"]))
    expect(out["injected"] is None, "%s: markup from a name ran: %r" % (tag, out["injected"]))
    return out


def frames_of(svg):
    """The frames of SVG as the file has them: (name, total, x, w, y,
    label) in document order (the name and total from the title)."""
    try:
        with open(svg, "rb") as f:
            root = ET.fromstring(f.read().decode("utf-8"))
    except (ET.ParseError, UnicodeDecodeError) as e:
        raise Failure("%s is not UTF-8 XML: %s" % (svg, e))
    box = [g for g in root.iter(SVG + "g") if g.get("id") == "frames"]
    expect(len(box) == 1, "%s: %d frame groups" % (svg, len(box)))
    event = root.get("data-event")
    tail = re.compile(r" \((\d+) %s, \d+\.\d\d%%; self \d+, calls \d+\)$" % re.escape(event))
    out = []
    for g in box[0]:
        title = g.find(SVG + "title").text
        m = tail.search(title)
        expect(m, "%s: a title without its values: %r" % (svg, title))
        r = g.find(SVG + "rect")
        t = g.find(SVG + "text")
        out.append((title[:m.start()], int(m.group(1)), float(r.get("x")),
                    float(r.get("width")), float(r.get("y")),
                    t.text if t is not None else ""))
    return root, out


def label(name, w):
    chars = int(w // 7)
    if chars < 3:
        return ""
    return name if len(name) <= chars - 2 else name[:chars - 2] + ".."


def inside(f, z):
    """Frame F is drawn within Z's span, above it (a callee of it)."""
    return f[4] < z[4] and z[2] - 0.02 <= f[2] and f[2] + f[3] <= z[2] + z[3] + 0.02


def share(frames, total, term):
    """The count of frames whose name holds TERM (any case), and their
    share of TOTAL: each match counted once with everything above it."""
    hits = [f for f in frames if term.lower() in f[0].lower()]
    top = [f for f in hits if not any(inside(f, g) for g in hits if g is not f)]
    return len(hits), "%.2f" % (100.0 * sum(f[1] for f in top) / total)


def same_as_file(frames, snap, what):
    for f, s in zip(frames, snap["frames"]):
        expect(s["shown"] and abs(s["x"] - f[2]) < 0.006 and abs(s["w"] - f[3]) < 0.006
               and s["label"] == f[5] and "parent" not in s["cls"],
               "%s: %s shows at x %.2f width %.2f %r (%s), the file has %.2f %.2f %r"
               % (what, f[0], s["x"], s["w"], s["label"], s["cls"], f[2], f[3], f[5]))
    expect(not snap["unzoom"], "%s: Reset Zoom shows" % what)


def check_zoomed(frames, snap, k, what):
    """Frame K fills the width, its callees scale with it, its callers
    stay at full width (faded), and every other frame is hidden."""
    z = frames[k]
    ratio = FULL / z[3]
    expect(snap["unzoom"], "%s: no Reset Zoom" % what)
    kinds = {"callee": 0, "caller": 0, "hidden": 0}
    for i, (f, s) in enumerate(zip(frames, snap["frames"])):
        if i == k or inside(f, z):
            x, w = (PAD, FULL) if i == k else (PAD + (f[2] - z[2]) * ratio, f[3] * ratio)
            expect(s["shown"] and abs(s["x"] - x) < 0.05 and abs(s["w"] - w) < 0.05
                   and "parent" not in s["cls"],
                   "%s: %s at x %.2f width %.2f (%s), want %.2f %.2f"
                   % (what, f[0], s["x"], s["w"], s["cls"], x, w))
            expect(s["label"] == label(f[0], s["w"]), "%s: %s labelled %r at width %.2f"
                   % (what, f[0], s["label"], s["w"]))
            kinds["callee"] += i != k
        elif z[4] < f[4] and f[2] - 0.02 <= z[2] and z[2] + z[3] <= f[2] + f[3] + 0.02:
            expect(s["shown"] and abs(s["x"] - PAD) < 0.01 and abs(s["w"] - FULL) < 0.01
                   and "parent" in s["cls"],
                   "%s: the caller %s at x %.2f width %.2f (%s), want full width, faded"
                   % (what, f[0], s["x"], s["w"], s["cls"]))
            kinds["caller"] += 1
        else:
            expect(not s["shown"], "%s: %s (at x %.2f width %.2f) still shows"
                   % (what, f[0], f[2], f[3]))
            kinds["hidden"] += 1
    return kinds


def check_search(frames, total, snap, term, what):
    n, pct = share(frames, total, term)
    got = sum("match" in s["cls"].split() for s in snap["frames"])
    want = "Matched: %d frame%s, %s%%" % (n, "" if n == 1 else "s", pct)
    expect(got == n and snap["matched"] == want,
           "%s: %d frames highlighted, %r; want %d, %r" % (what, got, snap["matched"], n, want))
    return n


@case("browser")
def check_browser(a, work):
    """The flame graph of doc/demo/sample.c (quicksort) built with
    paths=on, in Chromium: it shows the frames the file has; a click on a
    frame with callers and callees zooms to it (the callees' widths scaled
    to the full width, the callers full width and faded, the rest hidden);
    typing "sort" highlights every quicksort frame and shows their count
    and share (the nested ones counted once); Escape clears the search,
    "Reset Zoom" restores the file's frames; a second zoom is undone by
    Escape.  No dialog, error or request.  Screenshots in the work
    directory."""
    if platform.machine() not in ("x86_64", "AMD64"):
        raise Skip("(measure=cycles is x86-64 only)")
    need_browser()
    exe = os.path.join(work, "sample")
    run([a.cc, "-O2", "-fplugin=" + a.plugin, "-fplugin-arg-tally-hooks=call",
         "-fplugin-arg-tally-measure=cycles", "-fplugin-arg-tally-paths=on",
         "-fplugin-arg-tally-at=early",
         os.path.join(os.path.dirname(a.srcdir), "doc", "demo", "sample.c"), "-o", exe,
         a.runtime, "-lpthread"])
    data = exe + ".data"
    run([exe], env={"TALLY_OUTPUT": data})
    svg = os.path.join(work, "sample.svg")
    run([a.tally, "flame", "-o", svg, data])
    root, frames = frames_of(svg)
    total = int(root.get("data-total"))
    names = {f[0] for f in frames}
    expect({"main", "quicksort", "partition"} <= names, "frames of %s" % sorted(names))
    # A partition frame with callers and callees: the widest.
    k = max((i for i, f in enumerate(frames) if f[0] == "partition"
             and any(inside(g, f) for g in frames)), key=lambda i: frames[i][3])
    shots = [os.path.join(work, n + ".png") for n in ("zoomed", "search", "reset")]
    out = browse(a, work, svg, [
        {"snap": "before"}, {"click": k}, {"snap": "zoomed"},
        {"screenshot": shots[0]}, {"type": "sort"}, {"snap": "search"},
        {"screenshot": shots[1]}, {"key": "Escape"}, {"snap": "cleared"},
        {"unzoom": True}, {"snap": "reset"}, {"screenshot": shots[2]},
        {"click": 1}, {"snap": "zoomed2"}, {"key": "Escape"}, {"snap": "escaped"}], "sample")
    s = out["snaps"]
    same_as_file(frames, s["before"], "before a click")
    kinds = check_zoomed(frames, s["zoomed"], k, "after a click on partition")
    expect(kinds["callee"] and kinds["caller"] and kinds["hidden"],
           "zoomed to partition: %s (want callees, callers and hidden frames)" % kinds)
    n = check_search(frames, total, s["search"], "sort", "search 'sort'")
    expect(n > 1, "search 'sort': %d frames (quicksort is recursive)" % n)
    expect(s["search"]["focused"] == "search", "'/' did not focus the search field")
    # The search does not change the zoom.
    check_zoomed(frames, s["search"], k, "zoomed, searching")
    expect(not any("match" in f["cls"] for f in s["cleared"]["frames"])
           and s["cleared"]["matched"] == "",
           "Escape left the search: %r" % s["cleared"]["matched"])
    same_as_file(frames, s["reset"], "after Reset Zoom")
    check_zoomed(frames, s["zoomed2"], 1, "after a click on the first quicksort")
    same_as_file(frames, s["escaped"], "after Escape")
    for shot in shots:
        with open(shot, "rb") as f:
            expect(f.read(8) == b"\x89PNG\r\n\x1a\n", "%s is not a PNG" % shot)
    print("%d frames; zoomed to partition: %s; 'sort': %s; screenshots %s"
          % (len(frames), kinds, s["search"]["matched"], ", ".join(shots)))


# Names no data file should have, and what the SVG must show of them:
# markup, an entity, a CDATA end, quotes, control characters, bytes that
# are no UTF-8 or no character XML allows, an overlong '<'.
HOSTILE = [
    (b"</title><script>window.tallyInjected=1</script>", None),
    (b"]]><script>window.tallyInjected=2</script><![CDATA[", None),
    (b"x\" onmouseover=\"window.tallyInjected=3", None),
    (b"<g onload=\"window.tallyInjected=4\"/><image href=\"http://127.0.0.1/\"/>", None),
    (b"&amp;&lt;&#0;&#x1;", None),
    (b"ctl\x01\x1b[31m\x7f", "ctl??[31m?"),
    (b"bad\xff\xfeutf8", "bad??utf8"),
    (b"surrogate\xed\xa0\x80", "surrogate???"),
    (b"nonchar\xef\xbf\xbe", "nonchar???"),
    (b"c1\xc2\x85", "c1??"),
    (b"overlong\xc0\xbc\xe0\x80\xbc", "overlong?????"),
    (b"cut\xe2\x82", "cut??"),
    ("café € \U0001f525 fine".encode(), "café € \U0001f525 fine"),
    (b"y" * 5000, "y" * 1000 + ".."),
]


def hostile_file(names, event):
    """A valid data file (version 2, size and CRC right) of one module with
    a function of each name of NAMES (bytes), each a child of the root of
    the PATH record with 100 exclusive cycles and 7 of EVENT (bytes: its
    name in MEAS, its values in PEVT)."""
    def s(b):
        return struct.pack("<I", len(b)) + b
    body = [struct.pack("<IIQII", 0x4c444f4d, 3, 0x1234, 0x2 | 0x8, len(names)),
            s(b"t.c"), s(b"/tmp")]
    for i, name in enumerate(names):
        body.append(s(name) + s(name) + s(name) + s(b"t.c")
                    + struct.pack("<IIIIQQI", i + 1, 0, 2, 0, 0, 0, 0))
    body.append(struct.pack("<II", 0x5341454d, 2) + s(b"cycles") + s(event)
                + struct.pack("<II", 1, len(names)) + struct.pack("<4Q", 0, 0, 0, 0) * len(names))
    body.append(struct.pack("<IIQIII", 0x48544150, 64, 0, 1, 0, len(names)))
    body.append(b"".join(struct.pack("<IIQQQ", 0, i, 1, 100, 100) for i in range(len(names))))
    body.append(struct.pack("<III", 0x54564550, 1, len(names))
                + struct.pack("<QQ", 7, 7) * len(names))
    body = b"".join(body)
    program = s(b"/tmp/hostile")
    size = 48 + len(program) + len(body) + 16
    data = b"TALLYDAT" + struct.pack("<IIQQQII", 2, 0x01020304, size, 1, 0, 1, 1) + program + body
    return data + struct.pack("<IIQ", 0x444e4554, zlib.crc32(data), size)


ELEMENTS = {SVG + "svg": {"version", "width", "height", "viewBox", "data-total", "data-event"},
            SVG + "style": set(), SVG + "rect": {"x", "y", "width", "height", "fill", "rx"},
            SVG + "text": {"x", "y", "style", "id", "class", "text-anchor"},
            SVG + "g": {"id"}, SVG + "title": set(),
            SVG + "foreignObject": {"x", "y", "width", "height"},
            XHTML + "input": {"id", "type", "placeholder", "style"},
            SVG + "script": {"type"}}


def hostile_svg(a, work, event=()):
    """The SVG of a data file with the HOSTILE names and EVENT, in a
    directory and under a file name with markup (EVENT: `tally flame`'s
    --event); (its path, the data file's path)."""
    d = os.path.join(work, 'a<b>&"c')
    os.mkdir(d)
    data = os.path.join(d, "x<y>.data")
    with open(data, "wb") as f:
        f.write(hostile_file([n for n, _ in HOSTILE], EVENT.encode()))
    svg = os.path.join(work, "hostile.svg")
    run([a.tally, "flame", *event, "-o", svg, data])
    return svg, data


# An event name with markup, quotes and what a regular expression takes
# for operators, in the root's data-event.
EVENT = 'e" onload="window.tallyInjected=5" x="<&> (a+[b*)?\\'



@case("hostile-names")
def check_hostile_names(a, work):
    """Function names of a hostile data file (markup, a script, a CDATA
    end, quotes, entities, control characters, invalid UTF-8, characters
    XML forbids, a 5000-byte name) and a file name with markup: the SVG is
    valid UTF-8 and XML with only the elements and attributes tally writes
    (one script, none of a name's markup), each title shows its name as
    text (control characters and bytes that are no character as '?', cut
    after 1000 characters), and neither the style nor the script refers
    to anything outside the file."""
    svg, data = hostile_svg(a, work)
    root, frames = frames_of(svg)  # UTF-8 and XML
    with open(svg, "rb") as f:
        text = f.read().decode("utf-8")
    for el in root.iter():
        expect(el.tag in ELEMENTS, "an element %s in the SVG" % el.tag)
        extra = set(el.keys()) - ELEMENTS[el.tag]
        expect(not extra, "attributes %s on %s" % (extra, el.tag))
    scripts = list(root.iter(SVG + "script"))
    expect(len(scripts) == 1 and text.count("<script") == 1 and text.count("]]>") == 1,
           "script or CDATA markup from a name in the file")
    for el in scripts + list(root.iter(SVG + "style")):
        expect(not re.search(r"(?i)url\(|@import|https?:|fetch|XMLHttpRequest|import\(|src",
                             el.text), "%s refers to a resource" % el.tag)
    want = sorted(shown if shown is not None else name.decode() for name, shown in HOSTILE)
    got = sorted(f[0] for f in frames)
    expect(got == want, "titles' names:\n%s\nwant:\n%s"
           % ("\n".join(map(repr, got)), "\n".join(map(repr, want))))
    heading = [t for t in root.iter(SVG + "text") if t.get("style")][0].text
    expect(heading.startswith(data + " — "), "heading %r" % heading)
    # --event with the file's hostile event name: an attribute's value.
    svg2 = os.path.join(work, "event.svg")
    run([a.tally, "flame", "--event", EVENT, "-o", svg2, data])
    root, frames = frames_of(svg2)
    expect(root.get("data-event") == EVENT and set(root.keys()) == ELEMENTS[SVG + "svg"],
           "the root's attributes with --event %r: %s" % (EVENT, dict(root.items())))
    expect(sorted(f[0] for f in frames) == want and all(f[1] == 7 for f in frames),
           "--event %r: frames %s" % (EVENT, [(f[0], f[1]) for f in frames]))


@case("hostile-browser")
def check_hostile_browser(a, work):
    """The SVG of hostile-names (--event with the hostile event name) in
    Chromium: no name's markup runs (it would set window.tallyInjected or
    open a dialog), nothing is asked for, a search for "script" highlights
    the frames whose name holds it and a click zooms to the first name."""
    need_browser()
    svg, _ = hostile_svg(a, work, ["--event", EVENT])
    root, frames = frames_of(svg)
    out = browse(a, work, svg, [{"type": "script"}, {"snap": "search"},
                                {"click": 0}, {"snap": "zoomed"}], "hostile")
    n = check_search(frames, int(root.get("data-total")), out["snaps"]["search"],
                     "script", "search 'script'")
    expect(n >= 2, "search 'script': %d frames" % n)
    check_zoomed(frames, out["snaps"]["zoomed"], 0, "zoomed to a hostile name")


if __name__ == "__main__":
    sys.exit(main("tally-flame-"))
