#!/usr/bin/env python3
"""Turn Debian's fortunes-zh into a text-lines set and a chat-jsonl set.

fortunes-zh ships three UTF-8 files in /usr/share/games/fortunes (the
.u8 names are links to the same files): chinese (sayings, proverbs and
quotations), tang300 (Tang poems) and song100 (Song ci). Entries are
separated by lines holding "%"; the files carry ANSI colour escapes, which
are removed, and titles, authors and "--" attributions are left out. Each
remaining line of text is one item.

Writes (nothing is downloaded):
  OUT/textcls.tsv   text-lines: "label<TAB>text", the label being the source
                    file's name (chinese, tang300, song100); for
                    examples/review_textcls.py
  OUT/chat.jsonl    chat-jsonl: {"question": line, "answer": the next line
                    of the same entry}; for examples/chat_gpt2.py

  python3 examples/data/fortunes_to_sets.py /tmp/fortunes [--max-per-class N] [--max-pairs N]

--max-per-class and --max-pairs keep a seeded random subset (--seed), in
source order, for quick runs; 0 keeps everything.
"""
import argparse
import json
import os
import random
import re
import sys

SOURCES = ("chinese", "tang300", "song100")
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
SEPARATOR = re.compile(r"^\s*%\s*$")


def read_text(path):
    raw = open(path, "rb").read()
    for enc in ("utf-8", "gb18030"):  # the package's files are UTF-8
        try:
            return raw.decode(enc), enc
        except UnicodeDecodeError:
            pass
    return raw.decode("utf-8", errors="replace"), "utf-8 (with replacements)"


def is_text(line):
    """Not a title, an author, an attribution or a lone bracket line."""
    if line.startswith(("--", "——", "题目", "作者")):
        return False
    if re.fullmatch(r"[《〈].*[》〉]", line):
        return False
    return len(line) >= 2


def entries(text):
    cur = []
    for line in ANSI.sub("", text).splitlines():
        if SEPARATOR.match(line):
            if cur:
                yield cur
            cur = []
            continue
        line = line.strip().replace("\t", " ")
        if line and is_text(line):
            cur.append(line)
    if cur:
        yield cur


def subset(items, n, rng):
    if n <= 0 or len(items) <= n:
        return items
    keep = set(rng.sample(range(len(items)), n))
    return [x for i, x in enumerate(items) if i in keep]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", help="output directory (created)")
    p.add_argument("--source-dir", default="/usr/share/games/fortunes")
    p.add_argument("--max-per-class", type=int, default=0, help="text-lines kept per label (0: all)")
    p.add_argument("--max-pairs", type=int, default=0, help="chat pairs kept (0: all)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    rng = random.Random(args.seed)
    os.makedirs(args.out, exist_ok=True)
    lines_out, pairs = [], []
    for name in SOURCES:
        path = os.path.join(args.source_dir, name)
        if not os.path.isfile(path):
            print("fortunes_to_sets: %s is missing (install fortunes-zh)" % path, file=sys.stderr)
            return 1
        text, enc = read_text(path)
        ents = list(entries(text))
        mine = [line for e in ents for line in e]
        for e in ents:
            pairs += [(e[i], e[i + 1]) for i in range(len(e) - 1)]
        kept = subset(mine, args.max_per_class, rng)
        lines_out += [(name, line) for line in kept]
        print("%s (%s): %d entries, %d lines, %d kept" % (name, enc, len(ents), len(mine), len(kept)))
    pairs = subset(pairs, args.max_pairs, rng)
    with open(os.path.join(args.out, "textcls.tsv"), "w", encoding="utf-8") as f:
        for label, line in lines_out:
            f.write("%s\t%s\n" % (label, line))
    with open(os.path.join(args.out, "chat.jsonl"), "w", encoding="utf-8") as f:
        for q, a in pairs:
            f.write(json.dumps({"question": q, "answer": a}, ensure_ascii=False) + "\n")
    print("wrote %s/textcls.tsv (%d lines) and %s/chat.jsonl (%d pairs)"
          % (args.out, len(lines_out), args.out, len(pairs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
