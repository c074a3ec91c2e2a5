#!/usr/bin/env python3
"""The public functions of hpdl's headers, read from the preprocessed headers.

    scripts/api_map.py list HEADER     pseudo-signatures of HEADER's public
                                       functions, <t> for the type suffix
                                       (what the MAP at the top of each header
                                       shows)
    scripts/api_map.py check           every public function is named in the
                                       MAP of the header that defines it, and
                                       every name made by a macro is spelled
                                       out somewhere in its header (so grep
                                       finds it); prints "N passed, N failed,
                                       N skipped"

Public means a function hpdl_<name> (one underscore) defined static inline,
directly or through a macro. The headers are preprocessed together, as a
CUDA + MPI + NCCL program includes them, so macro-made names are found too;
line markers tell which header a definition came from.
"""
import os
import re
import shutil
import subprocess
import sys

HEADERS = ["hpdl.h", "hpdl_cuda.cuh", "hpdl_mpi.h"]
TYPES = ("f32", "f64", "f16", "bf16")
DEFINITION = re.compile(
    r"(?:template\s*<[^>]*>\s*)?static\s+inline\s+([A-Za-z_][\w\s\*]*?)\b(hpdl_[a-z0-9][a-z0-9_]*)\s*\(")
MARKER = re.compile(r'^#\s*\d+\s+"([^"]+)"', re.M)


def preprocess():
    """The three headers as one CUDA + MPI program sees them (C only when
    there is no nvcc: then the CUDA parts are not checked)."""
    src = '#include "hpdl_mpi.h"\n'
    nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else None)
    flags = ["-DHPDL_USE_NCCL"]
    if shutil.which("mpicc"):
        flags += ["-DHPDL_HAVE_MPI"] + subprocess.run(["mpicc", "--showme:compile"], capture_output=True,
                                                       text=True).stdout.split()
    if nvcc:
        cmd = [nvcc, "-E", "-x", "cu", "-std=c++17", "-I.", *flags, "-"]
    else:
        cmd = ["cc", "-E", "-std=c99", "-I.", "-x", "c", "-"]
    return subprocess.run(cmd, input=src, capture_output=True, text=True, check=True).stdout, bool(nvcc)


def parameters(text, start):
    """The text between the parenthesis at text[start - 1] and its match."""
    depth, i = 1, start
    while depth:
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        i += 1
    return text[start:i - 1]


MARKER_LINE = re.compile(r'^#\s*(\d+)\s+"([^"]+)"', re.M)


def source_line(pp, marks, pos):
    """(header, line) that the preprocessed text at pos came from."""
    i = max((k for k, (mpos, _, _) in enumerate(marks) if mpos < pos), default=-1)
    if i < 0:
        return "", 0
    mpos, line, header = marks[i]
    return header, line + pp.count("\n", pp.index("\n", mpos) + 1, pos)


def definitions(pp):
    """(header, return type, name, parameter names, source line) of each public definition."""
    marks = [(m.start(), int(m.group(1)), os.path.basename(m.group(2))) for m in MARKER_LINE.finditer(pp)]
    out = []
    for m in DEFINITION.finditer(pp):
        header, line = source_line(pp, marks, m.start())
        if header not in HEADERS:
            continue
        params = " ".join(parameters(pp, m.end()).split())
        names = [re.findall(r"\w+", p.split("=")[0])[-1] for p in params.split(",") if re.search(r"\w", p)]
        if names == ["void"]:
            names = []
        out.append((header, " ".join(m.group(1).split()), m.group(2), names, line))
    return out


def generic_name(name, variants):
    """hpdl_gemm_f32 -> hpdl_gemm_<t> where the name comes in several types."""
    m = re.match(r"(.*)_(%s)$" % "|".join(TYPES), name)
    if m and sum(1 for t in TYPES if m.group(1) + "_" + t in variants) >= 2:
        return m.group(1) + "_<t>"
    return name


def public_api(pp):
    """{header: {generic name: (return type, parameter names)}}, first variant wins."""
    defs = definitions(pp)
    names = {d[2] for d in defs}
    api = {h: {} for h in HEADERS}
    for header, ret, name, params, _ in defs:
        generic = generic_name(name, names)
        if generic.endswith("_<t>"):  # hpdl_mat_f32 hpdl_mat_view_f32(...) -> hpdl_mat_<t> ...
            ret = re.sub(r"_(%s)\b" % "|".join(TYPES), "_<t>", ret)
        api[header].setdefault(generic, (ret, params))
    return api


def map_block(header):
    """The MAP part of the header's opening comment."""
    text = open(header).read()
    top = text[:text.index("*/")]
    return top[top.index("MAP"):] if "MAP" in top else ""


def cmd_list(header):
    pp, _ = preprocess()
    for name, (ret, params) in sorted(public_api(pp)[header].items()):
        print("       %s %s(%s)" % (ret.replace("template <int hpdl__lazy = 0> ", ""), name, ", ".join(params)))


def cmd_check():
    pp, with_cuda = preprocess()
    passed = failed = 0
    defs = definitions(pp)
    for header, funcs in public_api(pp).items():
        block, text = map_block(header), open(header).read()
        missing = [n for n in sorted(funcs) if not re.search(r"\b%s\(" % re.escape(n), block)]
        for n in missing:
            print("%s: %s is not in the MAP at the top" % (header, n))
        print("%s: %d public functions, %d missing from its MAP" % (header, len(funcs), len(missing)))
        # a name made by ## is found by grep only where a comment spells it out
        unnamed = sorted({d[2] for d in defs if d[0] == header and not re.search(r"\b%s\b" % d[2], text)})
        for n in unnamed:
            print("%s: %s is made by a macro and named nowhere (list it above the macro's use)" % (header, n))
        passed, failed = passed + (not missing and not unnamed), failed + bool(missing or unnamed)
    skipped = 0 if with_cuda else 1
    if not with_cuda:
        print("no nvcc: hpdl_cuda.cuh and the CUDA parts of hpdl_mpi.h were not read")
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 1 if failed else 0


if __name__ == "__main__":
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    if len(sys.argv) == 3 and sys.argv[1] == "list":
        cmd_list(sys.argv[2])
    elif sys.argv[1:] == ["check"]:
        sys.exit(cmd_check())
    else:
        print("usage: scripts/api_map.py list HEADER | check")
        sys.exit(2)
