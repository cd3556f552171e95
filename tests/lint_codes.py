#!/usr/bin/env python3
"""Lint: the codes the dashboard translates are listed where it looks.

- Job event and failure reason codes: every RSN_* code of
  common/reason_codes.h is in the tables of docs/job-reasons.md and of
  docs/job-reasons.zh-CN.md, and nothing else is; reason_codes.c's list
  holds every one; every job_reason_init()/job_reason_wrap() call in
  server/ names its code by an RSN_* macro (so no code escapes the header),
  and every RSN_* name used in server/ or worker/ is defined.
"""
import glob
import os
import re
import sys

SRC = os.environ.get("TRAINYARD_SOURCE_DIR", os.path.join(os.path.dirname(__file__), ".."))
problems = []


def read(rel):
    with open(os.path.join(SRC, rel), encoding="utf-8") as f:
        return f.read()


def table_codes(text, heads=("code", "代码")):
    """First-column `code` cells of the markdown tables whose first header
    cell is one of heads."""
    out, head = set(), None
    for line in text.splitlines():
        if not line.startswith("|"):
            head = None
            continue
        first = line.split("|")[1].strip()
        if head is None:
            head = first
            continue
        m = re.fullmatch(r"`([a-z0-9_.]+)`", first)
        if m and head in heads:
            out.add(m.group(1))
    return out


def check_reasons():
    header = read("common/reason_codes.h")
    defined = dict(re.findall(r'^#define (RSN_[A-Z0-9_]+) "([a-z0-9_]+)"$', header, re.M))
    codes = set(defined.values())
    if len(codes) != len(defined):
        problems.append("common/reason_codes.h: two macros share a code")
    listed = set(re.findall(r"\bRSN_[A-Z0-9_]+\b", read("common/reason_codes.c")))
    for m in sorted(set(defined) - listed - {"RSN_CODE_MAX"}):
        problems.append("common/reason_codes.c: %s is missing from the list" % m)
    for doc in ("docs/job-reasons.md", "docs/job-reasons.zh-CN.md"):
        got = table_codes(read(doc))
        for c in sorted(codes - got):
            problems.append("%s: code %s (common/reason_codes.h) is not in the tables" % (doc, c))
        for c in sorted(got - codes):
            problems.append("%s: code %s is not in common/reason_codes.h" % (doc, c))
    used = set()
    for path in glob.glob(os.path.join(SRC, "server", "*.[ch]")) + \
            glob.glob(os.path.join(SRC, "worker", "*.[ch]")):
        if path.endswith(".h"):
            used |= set(re.findall(r"\bRSN_[A-Z0-9_]+\b", open(path, encoding="utf-8").read()))
            continue
        text = open(path, encoding="utf-8").read()
        rel = os.path.relpath(path, SRC)
        used |= set(re.findall(r"\bRSN_[A-Z0-9_]+\b", text))
        for m in re.finditer(r"\bjob_reason_(?:init|wrap)\(\s*[^,]+,\s*([^,\s]+)", text):
            arg = m.group(1)
            if not re.fullmatch(r"RSN_[A-Z0-9_]+|code", arg) and "job_reason.c" not in rel:
                line = text.count("\n", 0, m.start()) + 1
                problems.append("%s:%d: a reason code must be an RSN_* macro, not %s"
                                % (rel, line, arg))
    for m in sorted(used - set(defined) - {"RSN_CODE_MAX"}):
        problems.append("%s is used but not defined in common/reason_codes.h" % m)


check_reasons()
if problems:
    print("\n".join(problems))
    sys.exit(1)
print("lint_codes: ok")
