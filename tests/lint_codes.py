#!/usr/bin/env python3
"""Lint: the codes the dashboard translates are listed where it looks.

- Job event and failure reason codes: every RSN_* code of
  common/reason_codes.h is in the tables of docs/job-reasons.md and of
  docs/job-reasons.zh-CN.md, and nothing else is; reason_codes.c's list
  holds every one; every job_reason_init()/job_reason_wrap() call in
  server/ names its code by an RSN_* macro (so no code escapes the header),
  and every RSN_* name used in server/ or worker/ is defined.
- API error codes: the codes the server can put in {"error": {"code"}} (the
  rc -> code map of common/err.c rc_api_code(), the rc -> status map of
  server/http/http.c srv_http_status(), and every code set by err_code() or
  into req->err.code in server/ and common/) are exactly the keys of
  docs/error-codes.json, each with the status the server sends, and each
  entry has its field hint and both texts.
"""
import json
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
    for path in glob.glob(os.path.join(SRC, "server", "**", "*.[ch]"), recursive=True) + \
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


def switch_map(text, func, value_re):
    """RC_* -> value of the switch in the body of func (case labels fall through)."""
    start = text.index(func)
    body = text[start:text.index("\n}\n", start)]
    out, pending = {}, []
    for line in body.splitlines():
        m = re.match(r"\s*case (RC_[A-Z]+):", line)
        if m:
            pending.append(m.group(1))
            continue
        m = re.match(r"\s*return " + value_re + ";", line)
        if m and pending:
            for rc in pending:
                out[rc] = m.group(1)
            pending = []
    return out


def check_errors():
    codes_of = switch_map(read("common/err.c"), "const char *rc_api_code(", r'"([a-z_]+)"')
    status_of = switch_map(read("server/http/http.c"), "int srv_http_status(", r"(\d+)")
    want = {}
    for rc, code in codes_of.items():
        if rc == "RC_OK":
            continue
        if rc not in status_of:
            problems.append("server/http/http.c: srv_http_status() has no case for %s" % rc)
            continue
        want.setdefault(code, set()).add(int(status_of[rc]))
    explicit = set()
    for path in glob.glob(os.path.join(SRC, "server", "**", "*.c"), recursive=True) + \
            glob.glob(os.path.join(SRC, "common", "*.c")):
        text = open(path, encoding="utf-8").read()
        macros = dict(re.findall(r'^#define ([A-Z_]+) "([a-z_]+)"', text, re.M))
        explicit |= set(re.findall(r"err\.code, sizeof\([^)]*\), \"([a-z_]+)\"", text))
        for arg in re.findall(r"\berr_code\((?!struct)[^,]+,\s*([^)]+)\)", text):
            arg = arg.strip()
            if arg.startswith('"'):
                explicit.add(arg.strip('"'))
            elif arg in macros:
                explicit.add(macros[arg])
            elif arg != "code":
                problems.append("%s: err_code() with %s, not a literal or a local macro"
                                % (os.path.relpath(path, SRC), arg))
    doc = json.loads(read("docs/error-codes.json"))["codes"]
    for code in sorted(set(want) | explicit):
        if code not in doc:
            problems.append("docs/error-codes.json: the server returns %s, which is missing"
                            % code)
    for code, entry in sorted(doc.items()):
        if code not in want and code not in explicit:
            problems.append("docs/error-codes.json: %s is never returned by the server" % code)
            continue
        if code in want and entry.get("status") not in want[code]:
            problems.append("docs/error-codes.json: %s has status %s, the server sends %s"
                            % (code, entry.get("status"), sorted(want[code])))
        if entry.get("field") not in ("always", "often", "sometimes", "never"):
            problems.append("docs/error-codes.json: %s needs field: always/often/sometimes/never"
                            % code)
        for k in ("en", "zh-CN"):
            if not entry.get(k):
                problems.append("docs/error-codes.json: %s has no %s text" % (code, k))


check_reasons()
check_errors()
if problems:
    print("\n".join(problems))
    sys.exit(1)
print("lint_codes: ok")
