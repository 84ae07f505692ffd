#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""html-check.py REPORT.html REPORT.json [NAME]: refcnt-run --html in headless
Chromium (Debian's chromium), checked against the JSON report of the same
run. TAP on stdout, each test named after NAME (default "html").

The page must need nothing from outside (no src=, href= or url(), no
address of any host); once Chromium has run its script (--dump-dom), the
objects table must hold every object of the JSON in its order (most remote
references first) with the same name, references, references by node,
lost references, remote references and advice, and, where the counts are
sampled (not feeds.exact), the 95% interval
of the references in a column and each node's as its cell's tooltip; the node x node matrix the
JSON's; each object's bar the references by node; and sorting by a column
(#sort=KEY in the address, as a click on its heading) must order the rows.
"""
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

results = []
name = "html"


def tap(ok, name, diag=""):
    results.append((bool(ok), name, diag))


class Dom(html.parser.HTMLParser):
    """The cells of #objects, #matrix and #bars, and body's attributes."""

    def __init__(self):
        super().__init__()
        self.stack = []          # (tag, attrs)
        self.rows = []           # objects rows: {class: text}
        self.matrix = []         # (home, accessing, value)
        self.bars = []           # [(node, value), ...] per bar-row
        self.body = {}
        self.cell = None
        self.text = ""

    def within(self, key, value):
        return any(a.get(key) == value for _, a in self.stack)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.body = a
        self.stack.append((tag, a))
        if tag == "tr" and self.within("id", "objects") and "data-index" in a:
            self.rows.append({})
        if tag == "td" and self.within("id", "objects") and self.rows:
            self.cell = (a.get("class") or "").split()[0]
            self.text = ""
            if a.get("title") and self.cell.startswith("n"):
                self.rows[-1][self.cell + ".title"] = a["title"]
        if tag == "td" and self.within("id", "matrix"):
            home = [x.get("data-home") for _, x in self.stack if "data-home" in x][-1]
            self.matrix.append((home, a.get("data-accessing"), int(a.get("data-v"))))
        if tag == "div" and "bar-row" in (a.get("class") or ""):
            self.bars.append([])
        if tag == "div" and "seg" in (a.get("class") or "").split() and self.bars:
            self.bars[-1].append((a.get("data-node"), int(a.get("data-v"))))
        if tag in ("br", "meta", "input", "img", "link"):
            self.stack.pop()

    def handle_endtag(self, tag):
        if tag == "td" and self.cell is not None:
            self.rows[-1][self.cell] = self.text
            self.cell = None
        while self.stack:
            t, _ = self.stack.pop()
            if t == tag:
                break

    def handle_data(self, data):
        if self.cell is not None:
            self.text += data


def chromium():
    for c in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(c)
        if p:
            return p
    return None


def dump_dom(browser, path, fragment=""):
    with tempfile.TemporaryDirectory(prefix="refcnt-html-") as prof:
        cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu",
               "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--no-first-run", "--user-data-dir=" + prof,
               "--dump-dom", "file://" + os.path.abspath(path) + fragment]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        return r.stdout


def parse(dom):
    p = Dom()
    p.feed(dom)
    return p


def advice(o):
    a = o["advice"]
    if a["action"] == "move":
        return "move to %d" % a["node"]
    if a["action"] == "first-touch":
        return "first touch %d" % a["node"]
    if a["action"] == "interleave":
        return "interleave " + ",".join(map(str, a["nodes"]))
    return "- " + a["why_not"] if a.get("why_not") else "-"


def check_rows(rows, objs, labels, what, exact):
    tap(len(rows) == len(objs), "%s: one row per object (%d)" % (what, len(objs)),
        "%d rows" % len(rows))
    bad = []
    for i, (row, o) in enumerate(zip(rows, objs)):
        want = {
            "name": o["name"],
            "refs": ("~" if o["few_samples"] else "") + str(o["refs"]),
            "lost": "?" if o["lost"] is None else str(o["lost"]),
            "remote": str(o["remote_refs"]),
            "advice": advice(o),
        }
        # A sampled count's 95% interval: its column, and each node's as
        # its cell's tooltip; exact counts have neither.
        want["interval"] = None if exact else "[%d, %d]" % tuple(o["refs_interval"])
        for c in labels:
            want["n" + c] = str(o["refs_by_node"].get(c, 0))
            iv = (o["refs_by_node_interval"] or {}).get(c)
            want["n" + c + ".title"] = \
                None if exact or not iv else "95%% interval [%d, %d]" % tuple(iv)
        for k, v in want.items():
            if row.get(k) != v:
                bad.append("row %d %s: shown %r, JSON %r" % (i + 1, k, row.get(k), v))
    tap(not bad, "%s: every row shows the JSON's name, references by node, their 95%% intervals "
        "where sampled, lost, remote references and advice" % what,
        "\n".join(bad[:20]))


def main():
    global name
    if len(sys.argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    page, js = sys.argv[1], sys.argv[2]
    name = sys.argv[3] if len(sys.argv) == 4 else name
    with open(js) as f:
        data = json.load(f)
    with open(page) as f:
        text = f.read()
    outside = re.findall(r"""(?:\bsrc\s*=|\bhref\s*=|url\(|https?://|//[a-z0-9.-]+\.[a-z]{2,}/)""", text)
    tap(not outside, "the page loads nothing from outside (no src, href, url() or address)",
        outside[:5])
    browser = chromium()
    if not browser:
        tap(False, "headless Chromium is installed (apt-get install chromium)")
        return finish()
    objs = data["objects"]
    labels = data["counters"]["labels"]
    # Exact counts, or a weight not known: no intervals shown.
    exact = data["feeds"]["exact"] or not data["feeds"].get("weight_known", True)
    d = parse(dump_dom(browser, page))
    tap(d.body.get("data-ready") == "1", "Chromium ran the page's script to the end",
        d.body)
    check_rows(d.rows, objs, labels, "default order (most remote references first)", exact)
    m = data["node_matrix"]
    want = sorted((str(h), a, v) for hi, h in enumerate(m["home_nodes"])
                  for a, v in zip(m["accessing"], m["refs"][hi]))
    tap(sorted(d.matrix) == want, "the node x node matrix shows the JSON's references",
        "shown %s\nJSON  %s" % (sorted(d.matrix)[:12], want[:12]))
    bad = []
    for i, (segs, o) in enumerate(zip(d.bars, objs)):
        got = {n: v for n, v in segs}
        exp = {k: v for k, v in o["refs_by_node"].items() if v}
        if got != exp:
            bad.append("%s: bar %s, JSON %s" % (o["name"], got, exp))
    tap(len(d.bars) == len(objs) and not bad,
        "each object's bar has its references by accessing node", "\n".join(bad[:10]))
    d = parse(dump_dom(browser, page, "#sort=name"))
    order = sorted(range(len(objs)), key=lambda i: (objs[i]["name"], i))
    check_rows(d.rows, [objs[i] for i in order], labels, "sorted by name", exact)
    d = parse(dump_dom(browser, page, "#sort=-refs"))
    order = sorted(range(len(objs)), key=lambda i: (-objs[i]["refs"], i))
    check_rows(d.rows, [objs[i] for i in order], labels, "sorted by references, descending", exact)
    return finish()


def finish():
    print("1..%d" % len(results))
    for i, (ok, what, diag) in enumerate(results, 1):
        print("%s %d %s: %s" % ("ok" if ok else "not ok", i, name, what))
        if diag and not ok:
            for line in str(diag).splitlines():
                print("#   " + line)
    return 0 if all(r[0] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
