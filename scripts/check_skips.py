#!/usr/bin/env python3
"""Fail a test run that skipped a test nobody allowed to skip.

    scripts/check_skips.py TESTS_JSON JUNIT_XML

ctest counts a skipped test as passed (its exit status stays 0), so
scripts/test.sh and scripts/tsan.sh run this after ctest. TESTS_JSON is
`ctest --show-only=json-v1` (taken before the run: it rewrites ctest's
Testing/Temporary/LastTest.log), for each test's labels; JUNIT_XML is what
`ctest --output-junit` wrote, for the tests that did not run because they
skipped (status "notrun" with a <skipped> element: SKIP_RETURN_CODE, see
tests/CMakeLists.txt) and their output, whose "SKIPPED: ..." lines
(harness.main() prints one per skipped test) say why. One line per skip:

    skipped: integration.test_tls (labels: integration): allowed by TRAINYARD_TEST_ALLOW_SKIP
    skipped: integration.test_tls (labels: integration): NOT allowed (...)

then its reasons, then a count. TRAINYARD_TEST_ALLOW_SKIP lists labels and
test names (commas or spaces), e.g. "packages,integration.test_isolate_network";
a skipped test is allowed when one of its labels or its name is listed.

Exit status: 0 when every skip is allowed (or none happened), 1 when one is
not or JUNIT_XML cannot be read, 2 on bad usage.
"""
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

def skipped_tests(junit_xml):
    """[(name, [reason lines])] of the tests the JUnit record says skipped."""
    out = []
    for case in ET.parse(junit_xml).getroot().iter("testcase"):
        skipped = case.find("skipped")
        if skipped is None:
            continue
        text = case.findtext("system-out") or ""
        reasons = [line for line in text.splitlines() if line.startswith("SKIPPED: ")]
        if not reasons:
            reasons = [skipped.get("message") or "no reason given"]
        out.append((case.get("name"), reasons))
    return out


def labels_of(tests_json):
    """{test name: [labels]} from `ctest --show-only=json-v1`."""
    with open(tests_json, encoding="utf-8") as f:
        doc = json.load(f)
    labels = {}
    for t in doc.get("tests", []):
        labels[t["name"]] = []
        for p in t.get("properties", []):
            if p.get("name") == "LABELS":
                labels[t["name"]] = list(p.get("value", []))
    return labels


def main(argv):
    if len(argv) != 3:
        print("usage: check_skips.py TESTS_JSON JUNIT_XML", file=sys.stderr)
        return 2
    try:
        skipped = skipped_tests(argv[2])
    except (OSError, ET.ParseError) as e:
        print("check_skips: cannot read ctest's JUnit record %s: %s" % (argv[2], e))
        return 1
    if not skipped:
        return 0
    try:
        labels = labels_of(argv[1])
    except (OSError, ValueError) as e:
        print("check_skips: cannot read the list of tests %s: %s" % (argv[1], e))
        labels = {}
    allow = [a for a in re.split(r"[,\s]+", os.environ.get("TRAINYARD_TEST_ALLOW_SKIP", "")) if a]
    refused = 0
    for name, reasons in skipped:
        own = labels.get(name, [])
        if name in allow or any(label in allow for label in own):
            verdict = "allowed by TRAINYARD_TEST_ALLOW_SKIP"
        else:
            verdict = ("NOT allowed (a skip fails the run; to accept it, name its label or the "
                       "test in TRAINYARD_TEST_ALLOW_SKIP)")
            refused += 1
        print("skipped: %s (labels: %s): %s" % (name, ",".join(own) or "none", verdict))
        for r in reasons:
            print("    " + r)
    print("%d test(s) skipped, %d of them not allowed" % (len(skipped), refused))
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
