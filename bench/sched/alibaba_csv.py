#!/usr/bin/env python3
"""alibaba_csv.py POD_LIST OUT.csv - the Alibaba openb pod list as a trainyard-sim csv trace.

A pod is a job: submit = creation_time, run time = deletion_time - creation_time
(the trace's own reading, ../shared/traces/README.md), GPUs = num_gpu (a
fraction of a GPU counts as one), team = the QoS class. Pods without GPUs, never
scheduled (Pending) or with no lifetime are left out. Prints the job count and
the 8-GPU node count that gives an offered load of about 1.0 (the rule the
Philly replay uses), so the cluster size is not tuned on the results.
"""
import csv
import sys

rows = []
with open(sys.argv[1], newline="") as f:
    for r in csv.DictReader(f):
        g = int(r["num_gpu"])
        if g < 1 or not r["scheduled_time"]:
            continue
        c, d = int(r["creation_time"]), int(r["deletion_time"])
        if d <= c:
            continue
        rows.append((c, d - c, g, r["qos"]))
rows.sort()
with open(sys.argv[2], "w") as f:
    f.write("submit_s,duration_s,num_gpus,team\n")
    for c, dur, g, q in rows:
        f.write("%d,%d,%d,%s\n" % (c, dur, g, q))
span = rows[-1][0] - rows[0][0]
work = sum(dur * g for _, dur, g, _ in rows)
print(len(rows), max(1, round(work / span / 8)))
