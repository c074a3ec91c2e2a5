#!/usr/bin/env python3
"""scripts/course.py - the tables of docs/course/*.md, generated from the committed CSVs.

A course doc (docs/course/*.md) never holds a hand-typed figure, nor does the
docs/results.md. Each table sits between two
marker comments, and this script writes what is between them:

    <!-- table: bench/results/h200-x2/allreduce.csv cols=metric,value,ratio -->
    ...generated: a Markdown table and one line naming the CSV, GPU and date...
    <!-- end -->

Options after the CSV path (shell-quoted where they hold spaces):
    cols=a,b,c            columns to show, in this order [all]
    where=COL=v1|v2       keep rows whose COL is one of the values (repeatable;
    where=COL~REGEX       all must hold); ~ keeps rows where REGEX matches,
    where=COL!=v1|v2      != drops the listed values
    pivot=ROW,COL,VAL     one row per ROW value, one column per COL value
                          (cols= then lists the COL values to show, in order)
    as="H1|H2|..."        column headings [the CSV's names]
    fmt=COL:SPEC,...      Python format spec for a numeric column (.3g, .1f, ,.0f);
                          COL * applies to every numeric cell without its own
    scale=COL:X,...       multiply a numeric column by X before formatting

A doc's question count sits between <!-- counts --> and <!-- end -->, made
from the <!-- status: run|fewer|explained|missing --> marker each question carries.
A table under a question marked missing may name a CSV that is not committed
yet (the run that writes it is still to come): it is left as it is, and --check
says so, until the CSV is there.

    scripts/course.py            regenerate every doc and the README's tables (make course);
                                 exit 1 if a CSV is missing
    scripts/course.py --check    compare every doc with what the CSVs give (make test);
                                 prints "N passed, N failed, N skipped", exit 1 on a difference
    scripts/course.py --show DOC ID   print the commands of one question
                                 (e.g. --show ece-gy9143-hw5 A-Q3.2)

The date in each table's note is the (author) date of the last commit that touched the
CSV (today's date, UTC, while the CSV has uncommitted changes). In a shallow
clone that date is unknown, so --check then compares the tables without it.
Python 3 standard library only.
"""
import csv
import datetime
import difflib
import glob
import math
import os
import re
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs", "course")
TABLE_RE = re.compile(r"^<!-- table: (.*?) -->\s*$")
END = "<!-- end -->"
COUNTS = "<!-- counts -->"
STATUS_RE = re.compile(r"<!-- status: (run|fewer|explained|missing) -->")
STATUS_TEXT = [
    ("run", "answered by an hpdl command, with its committed result"),
    ("fewer", "answered with the closest hpdl measurement (fewer GPUs, another model or data set than asked)"),
    ("explained", "conceptual: answered in writing (with an hpdl figure where one illustrates it)"),
    ("missing", "not answered by a measurement yet: what is missing is said"),
]

# Folder slug under bench/results -> the machine in words.
GPU_NAMES = {
    "h100-80gb-hbm3": "NVIDIA H100 80GB HBM3",
    "h200": "NVIDIA H200",
    "h200-x2": "2 × NVIDIA H200 (NVLink)",
    "cpu": "the host CPU (no GPU)",
}


class DocError(Exception):
    pass


def git(*args):
    try:
        out = subprocess.run(["git", "-C", ROOT] + list(args), capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


_shallow = None


def dates_known():
    """False in a shallow clone or outside git: commit dates would be wrong."""
    global _shallow
    if _shallow is None:
        _shallow = git("rev-parse", "--is-shallow-repository") != "false"
    return not _shallow


_dates = {}


def csv_date(path):
    """Date of the last commit touching path, or today (UTC) if it has changes."""
    if path not in _dates:
        _dates[path] = _csv_date(path)
    return _dates[path]


def _csv_date(path):
    if not dates_known():
        return None
    dirty = git("status", "--porcelain", "--", path)
    if dirty is None:
        return None
    if dirty == "":
        d = git("log", "-1", "--format=%as", "--", path)
        if d:
            return d
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")


def parse_spec(spec):
    words = shlex.split(spec)
    if not words:
        raise DocError("table marker without a CSV path")
    opts = {"path": words[0], "where": []}
    for w in words[1:]:
        if "=" not in w:
            raise DocError("option without '=': %r" % w)
        key, val = w.split("=", 1)
        if key == "where":
            m = re.match(r"^([^=!~]+)(!=|=|~)(.*)$", val)
            if not m:
                raise DocError("bad where=%r" % val)
            opts["where"].append((m.group(1), m.group(2), m.group(3)))
        elif key in ("cols", "pivot", "as", "fmt", "scale"):
            opts[key] = val
        else:
            raise DocError("unknown option %r" % key)
    return opts


def keyed(text, what):
    out = {}
    if not text:
        return out
    for item in re.split(r",(?=[A-Za-z_*][A-Za-z0-9_]*:)", text):
        if ":" not in item:
            raise DocError("%s item without ':': %r" % (what, item))
        col, val = item.split(":", 1)
        out[col] = val
    return out


def number(text):
    try:
        v = float(text)
    except (TypeError, ValueError):
        return None
    return v


def render_cell(col, text, fmts, scales):
    if text is None or text == "":
        return "—"
    v = number(text)
    if v is None:
        return text.replace("|", "\\|")
    if math.isnan(v):
        return "—"
    if col in scales:
        v *= float(scales[col])
    spec = fmts.get(col, fmts.get("*"))
    if spec is None:
        return text if col not in scales else repr(v)
    return format(v, spec)


def load_csv(path):
    full = os.path.join(ROOT, path)
    if not os.path.isfile(full):
        raise DocError("missing CSV %s" % path)
    with open(full, newline="") as f:
        rows = list(csv.reader(f))
    if not rows:
        raise DocError("empty CSV %s" % path)
    return rows[0], rows[1:]


def keep(row, header, where):
    for col, op, val in where:
        if col not in header:
            raise DocError("where: no column %r" % col)
        cell = row[header.index(col)]
        if op == "~":
            if not re.search(val, cell):
                return False
        elif op == "=":
            if cell not in val.split("|"):
                return False
        elif cell in val.split("|"):
            return False
    return True


def build_table(opts):
    header, rows = load_csv(opts["path"])
    rows = [r for r in rows if r and keep(r, header, opts["where"])]
    if not rows:
        raise DocError("%s: no row matches %s" % (opts["path"], opts["where"]))
    fmts, scales = keyed(opts.get("fmt"), "fmt"), keyed(opts.get("scale"), "scale")
    if "pivot" in opts:
        parts = opts["pivot"].split(",")
        if len(parts) != 3 or any(p not in header for p in parts):
            raise DocError("pivot=%s: needs ROW,COL,VAL of %s" % (opts["pivot"], ",".join(header)))
        ri, ci, vi = (header.index(p) for p in parts)
        order_r, order_c, cell = [], [], {}
        for r in rows:
            if r[ri] not in order_r:
                order_r.append(r[ri])
            if r[ci] not in order_c:
                order_c.append(r[ci])
            cell[(r[ri], r[ci])] = r[vi]
        cols = opts["cols"].split(",") if "cols" in opts else order_c
        for c in cols:
            if c not in order_c:
                raise DocError("pivot: no %s = %r" % (parts[1], c))
        head = [parts[0]] + cols
        body = [[rk] + [render_cell(parts[2], cell.get((rk, c)), fmts, scales) for c in cols] for rk in order_r]
    else:
        cols = opts["cols"].split(",") if "cols" in opts else header
        for c in cols:
            if c not in header:
                raise DocError("%s: no column %r (has %s)" % (opts["path"], c, ",".join(header)))
        idx = [header.index(c) for c in cols]
        head = cols
        body = [[render_cell(c, r[i] if i < len(r) else "", fmts, scales) for c, i in zip(cols, idx)] for r in rows]
    if "as" in opts:
        names = opts["as"].split("|")
        if len(names) != len(head):
            raise DocError("as= gives %d headings for %d columns" % (len(names), len(head)))
        head = names
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    return lines


def caption(path, doc_dir):
    parts = path.split("/")
    slug = parts[2] if len(parts) > 3 and parts[0] == "bench" and parts[1] == "results" else None
    where = GPU_NAMES.get(slug, slug or "?")
    date = csv_date(path)
    when = ", committed %s" % date if date else ""
    link = os.path.relpath(os.path.join(ROOT, path), doc_dir).replace(os.sep, "/")
    return "<sub>From [`%s`](%s): %s%s.</sub>" % (path, link, where, when)


def counts_block(text):
    found = STATUS_RE.findall(text)
    n = {k: found.count(k) for k, _ in STATUS_TEXT}
    lines = ["| questions and deliverables | count |", "|---|---|"]
    lines += ["| %s | %d |" % (desc, n[k]) for k, desc in STATUS_TEXT]
    lines.append("| **all** | **%d** |" % len(found))
    return lines


def regenerate(text, name, doc_dir):
    """Returns (new text, [(block label, old lines, new lines or None when skipped)])."""
    lines = text.split("\n")
    out, blocks, i, status = [], [], 0, None
    while i < len(lines):
        line = lines[i]
        m = TABLE_RE.match(line)
        is_counts = line.strip() == COUNTS
        if re.match(r"^#+ ", line):
            status = None  # a heading starts the next question
        found = STATUS_RE.search(line)
        if found:
            status = found.group(1)
        out.append(line)
        i += 1
        if not m and not is_counts:
            continue
        j = i
        while j < len(lines) and lines[j].strip() != END:
            if TABLE_RE.match(lines[j]) or lines[j].strip() == COUNTS:
                raise DocError("%s:%d: marker not closed by %s" % (name, i, END))
            j += 1
        if j == len(lines):
            raise DocError("%s:%d: marker not closed by %s" % (name, i, END))
        old = lines[i:j]
        if is_counts:
            new, label = counts_block(text), "%s: question counts" % name
        else:
            opts = parse_spec(m.group(1))
            label = "%s:%d: %s" % (name, i, opts["path"])
            awaited = status == "missing" and not os.path.isfile(os.path.join(ROOT, opts["path"]))
            new = None if awaited else build_table(opts) + ["", caption(opts["path"], doc_dir)]
        blocks.append((label, old, new))
        out.extend(old if new is None else new)
        out.append(lines[j])
        i = j + 1
    return "\n".join(out), blocks


def strip_caption(block):
    return [re.sub(r", committed \d{4}-\d{2}-\d{2}\.</sub>$", ".</sub>", l) for l in block]


def docs():
    """The course docs, and docs/results.md, whose tables are generated the same way."""
    return sorted(glob.glob(os.path.join(DOCS, "*.md"))) + [os.path.join(ROOT, "docs", "results.md")]


def run(check):
    passed = failed = skipped = 0
    for path in docs():
        name = os.path.relpath(path, ROOT)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        try:
            new, blocks = regenerate(text, name, os.path.dirname(path))
        except DocError as e:
            print("FAIL %s: %s" % (name, e))
            failed += 1
            continue
        if not check:
            if new != text:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(new)
                print("wrote %s (%d tables)" % (name, len(blocks)))
            else:
                print("ok   %s (%d tables, unchanged)" % (name, len(blocks)))
            passed += 1
            continue
        for label, old, fresh in blocks:
            if fresh is None:
                print("skip %s: not committed yet (the question is marked missing)" % label)
                skipped += 1
                continue
            a, b = old, fresh
            if not dates_known():
                a, b = strip_caption(old), strip_caption(fresh)
            if a == b:
                print("ok   %s" % label)
                passed += 1
            else:
                print("FAIL %s: differs from the CSV (make course regenerates it)" % label)
                for d in list(difflib.unified_diff(old, fresh, "doc", "csv", lineterm="", n=0))[:12]:
                    print("    " + d)
                failed += 1
        if not blocks:
            print("skip %s: no generated tables" % name)
            skipped += 1
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 1 if failed else 0


def show(doc, qid):
    path = os.path.join(DOCS, doc if doc.endswith(".md") else doc + ".md")
    if not os.path.isfile(path):
        print("no doc %s; docs: %s" % (doc, " ".join(os.path.basename(p)[:-3] for p in docs())), file=sys.stderr)
        return 2
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    start = level = None
    end = len(lines)
    for i, l in enumerate(lines):
        m = re.match(r"^(#+) (.*)$", l)
        if not m:
            continue
        if start is None:
            title = m.group(2)
            if title.startswith(qid) and (len(title) == len(qid) or not title[len(qid)].isalnum()):
                start, level = i, len(m.group(1))
        elif len(m.group(1)) <= level:
            end = i
            break
    if start is None:
        print("no heading starting with %r in %s" % (qid, os.path.relpath(path, ROOT)), file=sys.stderr)
        return 2
    before, lines = lines[:start], lines[start:end]
    print(lines[0])
    inside, shown = False, 0
    for l in lines[1:]:
        if l.startswith("```"):
            if not inside and l.strip() in ("```sh", "```bash"):
                inside = True
                continue
            if inside:
                inside = False
                print()
                continue
        if inside:
            print(l)
            shown += 1
    if not shown:
        status = STATUS_RE.search("\n".join(lines))
        shared = last_commands(before)
        if status and status.group(1) in ("run", "fewer") and shared:
            print("(the commands this part of the doc shares, given above the question:)")
            print("\n".join(shared))
        else:
            print("(no command: a written answer, see the doc)")
    return 0


def last_commands(lines):
    """The last ```sh block in lines, as a list of lines (empty if none)."""
    block, inside, last = [], False, []
    for l in lines:
        if not inside and l.strip() in ("```sh", "```bash"):
            inside, block = True, []
        elif inside and l.startswith("```"):
            inside, last = False, block
        elif inside:
            block.append(l)
    return last


def main(argv):
    if len(argv) == 1:
        return run(check=False)
    if argv[1:] == ["--check"]:
        return run(check=True)
    if len(argv) == 4 and argv[1] == "--show":
        return show(argv[2], argv[3])
    if argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0
    print("usage: scripts/course.py [--check | --show DOC ID]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
