#!/usr/bin/env python3
"""Runs hccl_bench with --plot and --json and checks the picture it writes.

Usage: check_plot.py PNG JSON -- COMMAND...

The command must pass `--plot PNG --json JSON` (and may pass --memcpy). Checks: exit status 0; the run says the plot was
written; PNG is a PNG image; the gnuplot script beside it (NAME.gp) holds, for every collective in
the JSON, one data row per measured size whose times and bus bandwidths per side (A, B, then
every --also) are the JSON's medians, and one titled line per side. Without gnuplot the run must
say so and still write the script; the test is then reported as skipped (exit 77).
"""
import json
import os
import re
import shutil
import subprocess
import sys

png, js = sys.argv[1], sys.argv[2]
cmd = sys.argv[sys.argv.index("--") + 1:]
gp = png[:-4] + ".gp"
for path in (png, gp, js):
    if os.path.exists(path):
        os.remove(path)
proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
out = proc.stdout
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
    return cond


check(proc.returncode == 0, f"exit status {proc.returncode}\n{proc.stderr[-2000:]}")
check(os.path.exists(gp), f"no gnuplot script {gp}")
if shutil.which("gnuplot") is None:
    check("# plot: not drawn: gnuplot is not installed" in out, "no note that gnuplot is missing")
    for f in failures:
        print("FAIL:", f)
    print("gnuplot is not installed: the plot itself was not checked")
    sys.exit(1 if failures else 77)

check(f"# plot: written to {png}" in out, "the run does not say the plot was written")
if check(os.path.exists(png), f"no {png}"):
    with open(png, "rb") as f:
        head = f.read(8)
    check(head == b"\x89PNG\r\n\x1a\n", f"{png} is not a PNG")
    check(os.path.getsize(png) > 10000, f"{png} is suspiciously small")

data = json.load(open(js))
script = open(gp).read() if os.path.exists(gp) else ""
labels = [data["a"]["label"], data["b"]["label"]] + [o["label"] for o in data["others"]]
for letter, label in zip("ABCDEFG", labels):
    check(f"title '{letter}: {label}'" in script, f"no line titled {letter}: {label}")
blocks = {name: [[float(x) for x in line.split()] for line in rows.splitlines()
                 if line and not line.startswith("#")]
          for name, rows in re.findall(r"^\$(\w+) << EOD\n(.*?)^EOD$", script, re.M | re.S)}
for coll in data["settings"]["collectives"]:
    rows = [r for r in data["results"] if r["collective"] == coll]
    got = blocks.get(coll)
    if not check(got is not None and len(got) == len(rows),
                 f"{coll}: {len(got or [])} plotted rows, {len(rows)} measured"):
        continue
    for r, g in zip(rows, got):
        want = [r["bytes"]]
        for side in [r["a"], r["b"]] + r["others"]:
            want += [side["time_us"], side["busbw_GBps"]]
        check(len(g) == len(want) and all(abs(x - y) <= 1e-4 * max(abs(y), 1e-9) for x, y in zip(g, want)),
              f"{coll} {r['bytes']} B: plotted {g}, measured {want}")
# With --memcpy every row has its copy time and a line giving A's and B's busbw as a share of it.
if "--memcpy" in cmd:
    shares = {(int(b), float(a_), float(b_)) for b, a_, b_ in re.findall(
        r"^#   memcpy of (\d+) B on one core: [\d.]+ us, [\d.]+ GB/s; busbw A ([\d.]+)%, B ([\d.]+)% of it$",
        out, re.M)}
    for r in data["results"]:
        us = r.get("memcpy_us")
        if not check(isinstance(us, (int, float)) and us > 0, f"{r['bytes']} B: memcpy_us {us}"):
            continue
        gbps = r["bytes"] / us * 1e-3
        want_a = 100 * r["a"]["busbw_GBps"] / gbps
        check(any(b == r["bytes"] and abs(a_ - want_a) <= 0.051 + 1e-3 * want_a for b, a_, _ in shares),
              f"{r['bytes']} B: no memcpy line with A's share {want_a:.1f}%")
for f in failures:
    print("FAIL:", f)
print(out[-3000:])
sys.exit(1 if failures else 0)
