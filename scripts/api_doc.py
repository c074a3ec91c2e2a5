#!/usr/bin/env python3
"""docs/API.md: every public function of hpdl's headers under its own name.

    scripts/api_doc.py          writes docs/API.md; lists the functions and types with no comment above
    scripts/api_doc.py --check  fails with a diff when docs/API.md is not what the headers give; where
                                nvcc exists, also holds the signatures read here to the preprocessed
                                headers (scripts/api_map.py); prints "N passed, N failed, N skipped"

The headers are read as text and their macros expanded here (arguments substituted, ## pasted,
nested uses expanded), so the document is the same with or without nvcc. A macro-made function's
contract is the first sentence of the comment just above it in the macro, else above the #define.
Sections come from each header's MAP, options from its OPTIONS part.
"""
import difflib
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import api_map  # noqa: E402  (HEADERS, TYPES, generic_name, preprocess, definitions)

OUT = "docs/API.md"
LINKAGE = r"(?:\b(?:HPDL_API|HPDL_CUDA_API|HPDL_MPI_API|HPDL_LAZY|HPDL_HD|static|inline)\s+)"
DEF = re.compile(r"(?:\btemplate\s*<(?P<tpl>[^<>{};]*)>\s*)?%s+(?P<ret>[A-Za-z_][\w\s\*#]*?)"
                 r"(?<![\w#])(?P<name>hpdl_[a-z0-9][a-z0-9_]*(?:\s*##\s*\w+)*)\s*\(" % LINKAGE)
TYPEDEF = re.compile(r"\btypedef\s+(struct|enum)\s+(hpdl_[a-z0-9]\w*(?:\s*##\s*\w+)*)\s*\{")
FNTYPE = re.compile(r"\btypedef\s+[\w\s\*]+\(\s*\*\s*(hpdl_[a-z0-9]\w*)\s*\)")
DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)(\([^)]*\))?((?:[^\n]*\\\n)*[^\n]*)", re.M)
USE = re.compile(r"(?<!\w)([A-Z_][A-Z0-9_]*)\s*\(")
IDENT = re.compile(r"(?<![\w.])[A-Za-z_]\w*")
NONE = "(no comment above it in the header)"


def blank_comments(raw):
    """raw with comments blanked (newlines and line-end backslashes kept, so
    offsets still match), and {comment end: comment start}. Strings are skipped."""
    out, ends = list(raw), {}
    for m in re.finditer(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|/\*.*?\*/|//[^\n]*', raw, re.S):
        if m.group(0)[0] == "/":
            ends[m.end()] = m.start()
            for k in range(m.start(), m.end()):
                if raw[k] != "\n" and raw[k:k + 2] != "\\\n":
                    out[k] = " "
    return "".join(out), ends


def contract(raw, ends, pos):
    """First sentence (of the first paragraph), on one line, of the comment that
    ends on the line just above pos and has a line of its own; None for none or a banner."""
    start = raw.rfind("\n", 0, pos) + 1
    prev = raw.rfind("\n", 0, max(start - 1, 0)) + 1
    line = re.sub(r"\s*\\?\s*$", "", raw[prev:max(start - 1, 0)])
    first = ends.get(prev + len(line)) if start and line.endswith("*/") else None
    if first is None or raw[raw.rfind("\n", 0, first) + 1:first].strip():
        return None
    paragraph = re.split(r"\n[\s\\]*\n", re.sub(r"^/\*+|\*+/$", "", raw[first:prev + len(line)]))[0]
    lines = paragraph.splitlines()
    text = " ".join(re.sub(r"\\\s*$", "", l).strip() for l in lines).strip()
    if not text or re.match(r"[-=]{3}", text):
        return None
    m = re.search(r"(?<!\be\.g)(?<!\bi\.e)(?<!\betc)(?<!\bvs)(?<!\.)[.!?](?=\s|$)", text)
    return text[:m.end()] if m else text


def call_args(text, i):
    """The arguments of the call whose '(' is at text[i], and the index after ')'."""
    depth, args, cur = 0, [], i + 1
    for j in range(i, len(text)):
        depth += {"(": 1, ")": -1}.get(text[j], 0)
        if text[j] == ")" and depth == 0:
            return args + [text[cur:j]], j + 1
        if text[j] == "," and depth == 1:
            args, cur = args + [text[cur:j]], j + 1
    raise ValueError("unbalanced parentheses at offset %d" % i)


def substitute(params, body, args):
    """A macro's body with its arguments in place and ## pasted."""
    if params and params[-1] == "...":
        params, args = params[:-1] + ["__VA_ARGS__"], args[:len(params) - 1] + [",".join(args[len(params) - 1:])]
    env = dict(zip(params, (a.strip() for a in args)))
    return re.sub(r"\s*##\s*", "", IDENT.sub(lambda m: env.get(m.group(0), m.group(0)), body))


class Header:
    """A header's text, with comments blanked, and its macros."""

    def __init__(self, name):
        self.name, self.raw = name, open(name).read()
        self.code, self.ends = blank_comments(self.raw)
        self.macros, self.objects, self.spans = {}, {}, []
        for m in DEFINE.finditer(self.code):
            self.spans.append((m.start(), m.end()))
            body = m.group(3).replace("\\\n", " \n")  # same offsets
            if m.group(2) and m.group(1) not in self.macros:
                params = [p.strip() for p in m.group(2)[1:-1].split(",") if p.strip()]
                self.macros[m.group(1)] = (params, body, m.start(), m.start(3))
            elif not m.group(2) and m.group(1).startswith("HPDL__"):  # private shorthands in signatures
                self.objects.setdefault(m.group(1), " ".join(body.split()))

    def in_define(self, pos):
        return any(s <= pos < e for s, e in self.spans)

    def where(self, pos, fallback=None):
        """(header, line, contract) of what starts at pos, else of fallback."""
        text = contract(self.raw, self.ends, pos) or (fallback and contract(self.raw, self.ends, fallback))
        return self.name, self.raw.count("\n", 0, pos) + 1, text or None


class Reader:
    """Functions and types of the three headers, macro-made ones expanded.
    funcs: {header: {name: [signature]}}; types: {header: {name: (kind, values)}};
    notes: {name or (name, signature): (header, line, contract)}."""

    def __init__(self):
        headers = [Header(h) for h in api_map.HEADERS]
        self.owner = {k: h for h in headers for k in h.macros}
        self.makers = self.find_makers()
        self.funcs, self.types, self.notes = {}, {}, {}
        for h in headers:
            self.scan(h, h.code, True)
            for m in re.finditer(r"^[ \t]*" + USE.pattern, h.code, re.M):
                if m.group(1) in self.makers and not h.in_define(m.start()):
                    self.scan(h, self.expand(m.group(1), call_args(h.code, m.end() - 1)[0], ()), False)

    def find_makers(self):
        """Macros that make public functions or types: directly, by calling
        one that does, or by calling a parameter (HPDL_FOR_EACH_FLOAT_TYPE)."""
        macros = {k: h.macros[k] for k, h in self.owner.items()}
        calls = lambda body, names: any(re.search(r"\b%s\s*\(" % re.escape(n), body) for n in names)
        found = {k for k, (params, body, _, _) in macros.items()
                 if DEF.search(body) or TYPEDEF.search(body) or calls(body, params)}
        while True:
            more = {k for k, (_, body, _, _) in macros.items() if k not in found and calls(body, found)}
            if not more:
                return found
            found |= more

    def expand(self, name, args, stack):
        """The text a use of macro name makes, nested uses of makers expanded;
        notes where the comment of each name it makes is."""
        h = self.owner[name]
        params, body, define_pos, body_pos = h.macros[name]
        for pattern, group in ((DEF, "name"), (TYPEDEF, 2)):
            for m in pattern.finditer(body):
                made = substitute(params, m.group(group), args)
                self.notes.setdefault(made, h.where(body_pos + m.start(), define_pos))
        text, stack, out, i = substitute(params, body, args), stack + (name,), [], 0
        for m in USE.finditer(text):
            if m.start() >= i and m.group(1) in self.makers and m.group(1) not in stack:
                call, end = call_args(text, m.end() - 1)
                out, i = out + [text[i:m.start()], self.expand(m.group(1), call, stack)], end
        return "".join(out + [text[i:]])

    def scan(self, h, text, top):
        """Records the definitions in text: the header itself (top) or a macro's expansion."""
        tidy = lambda t: " ".join(IDENT.sub(lambda s: h.objects.get(s.group(0), s.group(0)), t).split())
        for m in DEF.finditer(text):
            if "#" in m.group(0) or (top and h.in_define(m.start())):
                continue
            params = re.sub(r"(?<=\() | (?=\))", "", tidy(text[m.end():call_args(text, m.end() - 1)[1] - 1]))
            ret, tpl, name = tidy(m.group("ret")), m.group("tpl"), m.group("name")
            prefix = "template <%s> " % " ".join(tpl.split()) if tpl is not None and "hpdl__lazy" not in tpl else ""
            sig = "%s%s%s%s(%s)" % (prefix, ret, "" if ret.endswith("*") else " ", name, params)
            if top:
                self.notes.setdefault((name, sig), h.where(m.start()))
            sigs = self.funcs.setdefault(h.name, {}).setdefault(name, [])
            sigs += [sig] if sig not in sigs else []
        found = [(m, m.group(1), m.group(2)) for m in TYPEDEF.finditer(text)]
        found += [(m, "function pointer", m.group(1)) for m in FNTYPE.finditer(text)]
        for m, kind, name in found:
            if top and h.in_define(m.start()):
                continue
            if top:
                self.notes.setdefault(name, h.where(m.start()))
            body = text[m.end():text.index("}", m.end())] if kind == "enum" else ""
            values = [v.split("=")[0].strip() for v in body.split(",") if v.strip()]
            self.types.setdefault(h.name, {}).setdefault(name, (kind, values))


def top_part(header, title):
    """The lines of a part (MAP, OPTIONS) of the header's opening comment, up to a blank line."""
    top = open(header).read().split("*/", 1)[0].splitlines()
    start = next((i for i, l in enumerate(top) if re.match(r"\s{3}%s\b" % title, l)), len(top))
    end = next((i for i in range(start + 1, len(top)) if not top[i].strip()), len(top))
    return top[start + 1:end]


def map_sections(header):
    """[(heading, [generic names])] from the header's MAP."""
    sections = []
    for line in top_part(header, "MAP"):
        if re.match(r"\s{7}\S", line):
            sections.append((line.strip(), []))
        elif sections:
            sections[-1][1].extend(re.findall(r"\b(hpdl_\w+(?:<t>)?)\(", line))
    return sections


def escape(text):
    """Markdown for a comment's text: * and < would start emphasis or an HTML tag."""
    return re.sub(r"([\\*<])", r"\\\1", text)


def render(reader):
    """docs/API.md as a string, and {(header, line): names} of those with no contract."""
    lines = ["# hpdl API reference", "", " ".join(
        """Generated from the headers by `python3 scripts/api_doc.py`; `make test` checks that it is current.
        Every public function is listed under its own name, the type substituted where a macro makes it
        (`hpdl_gemm_f32`, `hpdl_gemm_f64`, ...), in the sections of its header's MAP, followed by the first
        sentence of the comment just above it in the header (for a macro-made one: just above it in the
        macro, else above the macro). Each header's part ends with its public types; its options come
        from the header's OPTIONS. The script reads the headers' text and expands their macros itself, so
        this file is the same whether or not nvcc is installed; where nvcc is, `--check` also holds every
        name, return type and parameter name to the preprocessed headers.""".split()), ""]
    all_names = {n for funcs in reader.funcs.values() for n in funcs}
    by_type = lambda n: {t: i for i, t in enumerate(api_map.TYPES)}.get(n.rsplit("_", 1)[-1], -1)  # f32 first
    missing, body = {}, []
    note = lambda name, sig=None: reader.notes.get((name, sig)) or reader.notes.get(name) or ("?", 0, None)

    def entry(code, where):
        if not where[2]:
            missing.setdefault(where[:2], set()).add(re.search(r"hpdl_\w+(?=\(|`)", code).group(0))
        return "- %s — %s" % (code, escape(where[2] or NONE))

    for h in api_map.HEADERS:
        funcs, types, options = reader.funcs.get(h, {}), reader.types.get(h, {}), top_part(h, "OPTIONS")
        lines.append("- [%s](#%s): %d functions, %d types" % (h, h.replace(".", ""), sum(map(len, funcs.values())),
                                                               len(types)))
        body += ["", "## " + h] + (["", "### Options (define before including)", "", "```text"] +
                                   [l.rstrip()[7:] for l in options] + ["```"] if options else [])
        generic = {}
        for name in funcs:
            generic.setdefault(api_map.generic_name(name, all_names), []).append(name)
        sections = map_sections(h)
        sections.append(("not in the MAP yet", sorted(set(generic) - {n for _, ns in sections for n in ns})))
        for heading, names in sections:
            variants = [n for g in names for n in sorted(generic.pop(g, []), key=by_type)]
            entries = [entry("`%s`" % sig, note(name, sig)) for name in variants for sig in funcs[name]]
            body += ["", "### " + escape(heading), ""] + entries if entries else []
        body += ["", "### Types", ""] if types else []
        for name in sorted(types):
            kind, values = types[name]
            kind += ": " + ", ".join("`%s`" % v for v in values) if values else ""
            body.append(entry("`%s` (%s)" % (name, kind), note(name)))
    return "\n".join(lines + body) + "\n", missing


def comparable(h, sig):
    """(header, name, return type, parameter names) as scripts/api_map.py reads them."""
    m = re.match(r"(?:template <[^>]*> )?(.*?)(hpdl_\w+)\((.*)\)$", sig)
    names = [re.findall(r"\w+", p.split("=")[0])[-1] for p in m.group(3).split(",") if re.search(r"\w", p)]
    ret = " ".join(m.group(1).replace("__host__", "").replace("__device__", "").split()).replace(" *", "*")
    return h, m.group(2), ret, tuple(n for n in names if names != ["void"])


def cross_check(reader):
    """The names, return types and parameter names that the preprocessor sees
    (nvcc -E of the three headers, with MPI where mpicc is) against those read here; None without nvcc."""
    pp, with_cuda = api_map.preprocess()
    if not with_cuda:
        return print("no nvcc: the signatures were not compared with the preprocessed headers")
    theirs = {comparable(d[0], "%s %s(%s)" % (d[1], d[2], ", ".join(d[3]))) for d in api_map.definitions(pp)}
    ours = {comparable(h, sig) for h, funcs in reader.funcs.items() for sigs in funcs.values() for sig in sigs}
    for side, diff in (("preprocessed headers", theirs - ours), ("text read by scripts/api_doc.py", ours - theirs)):
        for h, name, ret, params in sorted(diff):
            print("%s: only in the %s: %s %s(%s)" % (h, side, ret, name, ", ".join(params)))
    # without mpicc, the MPI-only parts are not compiled: a name read here may be missing there
    return theirs == ours if shutil.which("mpicc") else theirs <= ours


def main(argv):
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    reader = Reader()
    text, missing = render(reader)
    count = "%d functions or types have no contract comment" % sum(map(len, missing.values()))
    if argv == ["--check"]:
        old = open(OUT).read() if os.path.exists(OUT) else ""
        if old != text:
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), text.splitlines(True), OUT, "regenerated"))
            print("%s is out of date: run python3 scripts/api_doc.py" % OUT)
        results = [old == text, cross_check(reader)]
        print("%s (python3 scripts/api_doc.py lists them)" % count)
        print("%d passed, %d failed, %d skipped" % (results.count(True), results.count(False), results.count(None)))
        return 1 if False in results else 0
    if argv:
        print("usage: scripts/api_doc.py [--check]")
        return 2
    open(OUT, "w").write(text)
    for (h, line), names in sorted(missing.items()):
        print("%s:%d: no comment above %s" % (h, line, " ".join(sorted(names))))
    print("wrote %s (%d bytes); %s" % (OUT, len(text.encode()), count))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
