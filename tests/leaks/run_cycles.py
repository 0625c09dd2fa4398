#!/usr/bin/env python3
"""Heap growth per communicator cycle, with coll_hccl and without it, in one run.

Runs comm_cycles.c under mpirun twice: with coll_hccl (it takes every MPI_Comm_dup and the
allreduce on it) and with `--mca coll ^hccl` (stock Open MPI), and prints every rank's growth.
Each rank measures several windows of cycles; a leak grows the heap in every window, a pool that
grows once (Open MPI's free lists grow in chunks) in one, so a rank's growth is its smallest
window's. Fails when any rank with coll_hccl grows by more than --max-per-cycle bytes per cycle
(stock Open MPI is flat too; a leak of one small object per cycle exceeds the bound), when its
resident set (VmRSS, which also sees mmap'd pools the heap count misses) grows after the first
window by more than --max-rss-growth-kb beyond stock Open MPI's growth, or when a result was wrong. Exit codes follow `meson test`.
"""
import argparse
import os
import re
import subprocess
import sys


def run(args, extra):
    cmd = ["timeout", "-k", "5", str(args.job_timeout), "mpirun", "--allow-run-as-root",
           "--oversubscribe", "-np", str(args.np),
           "--mca", "mca_base_component_path", "SYS_DEFAULT:" + args.component_dir,
           "--mca", "pml", "ob1"] + extra + [os.path.abspath(args.program), "--cycles",
                                             str(args.cycles), "--warmup", str(args.warmup),
                                             "--windows", str(args.windows)]
    print("$ " + " ".join(cmd), flush=True)
    out = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    text = out.stdout + out.stderr
    print(text, end="")
    windows = {}  # rank -> [(growth, per cycle, wrong)] per window
    rss = {}  # rank -> [resident KiB after each window]
    for m in re.finditer(r"CYCLES rank (\d+) window \d+ cycles \d+ growth_bytes (-?\d+) "
                         r"per_cycle (-?[\d.]+) wrong (\d+) rss_kb (-?\d+)", text):
        windows.setdefault(int(m.group(1)), []).append(
            (int(m.group(2)), float(m.group(3)), int(m.group(4))))
        rss.setdefault(int(m.group(1)), []).append(int(m.group(5)))
    rows = []
    for r, ws in windows.items():
        g, p, _ = min(ws, key=lambda w: w[1])
        # Resident growth from the end of the first window to the end of the last: a one-time
        # growth (a pool, a cache filling to its bound) shows here even when the heap is flat.
        rows.append((r, g, p, max(w[2] for w in ws), rss[r][-1] - rss[r][0]))
    return out.returncode, rows


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--component-dir", required=True)
    ap.add_argument("--program", required=True)
    ap.add_argument("--np", type=int, default=4)
    ap.add_argument("--cycles", type=int, default=700, help="cycles per window")
    ap.add_argument("--windows", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=300)
    ap.add_argument("--max-per-cycle", type=float, default=1.0)
    ap.add_argument("--max-rss-growth-kb", type=int, default=64,
                    help="resident KiB coll_hccl may grow after the first window beyond stock")
    ap.add_argument("--job-timeout", type=int, default=200)
    args = ap.parse_args()
    failures = []
    results = {}
    for label, extra in (("coll_hccl", ["--mca", "coll_hccl_verbose", "1"]),
                         ("stock", ["--mca", "coll", "^hccl"])):
        rc, rows = run(args, extra)
        results[label] = rows
        if rc != 0:
            failures.append(f"{label}: mpirun exited {rc}")
        if len(rows) != args.np:
            failures.append(f"{label}: {len(rows)} of {args.np} ranks reported")
        if any(w for _, _, _, w, _ in rows):
            failures.append(f"{label}: wrong results")
        print(f"{label}: bytes per cycle by rank: "
              + ", ".join(f"{r}: {p:.2f}" for r, _, p, _, _ in sorted(rows)))
        print(f"{label}: resident KiB grown after window 0 by rank: "
              + ", ".join(f"{r}: {k}" for r, _, _, _, k in sorted(rows)))
    worst = max((p for _, _, p, _, _ in results.get("coll_hccl", [])), default=0.0)
    if worst > args.max_per_cycle:
        failures.append(f"coll_hccl grows {worst:.2f} bytes per cycle (limit "
                        f"{args.max_per_cycle})")
    rss_worst = max((k for _, _, _, _, k in results.get("coll_hccl", [])), default=0)
    rss_stock = max((k for _, _, _, _, k in results.get("stock", [])), default=0)
    if rss_worst > max(rss_stock, 0) + args.max_rss_growth_kb:
        failures.append(f"coll_hccl's resident set grows {rss_worst} KiB after the first window "
                        f"(stock Open MPI {rss_stock} KiB, allowed {args.max_rss_growth_kb} KiB "
                        f"more)")
    for f in failures:
        print("FAIL: " + f)
    if not failures:
        print(f"PASS: at most {worst:.2f} bytes per cycle with coll_hccl (smallest of "
              f"{args.windows} windows of {args.cycles} cycles) at np={args.np}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
