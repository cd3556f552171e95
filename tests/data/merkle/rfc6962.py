#!/usr/bin/env python3
"""Writes tests/data/merkle/rfc6962.txt: RFC 6962 tree heads and audit paths
for tests/unit/test_common_merkle.c, computed here straight from the RFC's
recursive definitions (section 2.1, 2.1.1), apart from common/merkle.c.

Value j (0-based) is SHA-256 of the ASCII text "trainyard merkle test <j>".
Each line: n i root path (path: the hex hashes joined by ',', '-' if empty).
"""
import hashlib
import sys


def value(j):
    return hashlib.sha256(b"trainyard merkle test %d" % j).digest()


def mth(d):
    if len(d) == 1:
        return hashlib.sha256(b"\x00" + d[0]).digest()
    k = 1
    while k * 2 < len(d):
        k *= 2
    return hashlib.sha256(b"\x01" + mth(d[:k]) + mth(d[k:])).digest()


def path(m, d):
    if len(d) == 1:
        return []
    k = 1
    while k * 2 < len(d):
        k *= 2
    if m < k:
        return path(m, d[:k]) + [mth(d[k:])]
    return path(m - k, d[k:]) + [mth(d[:k])]


def main():
    out = sys.stdout
    for n in range(1, 18):
        d = [value(j) for j in range(n)]
        root = mth(d).hex()
        for i in range(n):
            p = ",".join(h.hex() for h in path(i, d)) or "-"
            out.write("%d %d %s %s\n" % (n, i, root, p))


if __name__ == "__main__":
    main()
