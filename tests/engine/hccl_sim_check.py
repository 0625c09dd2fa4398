#!/usr/bin/env python3
"""Runs hccl_sim on a few configurations and checks its exit status and its table.

Usage: hccl_sim_check.py PATH_TO_HCCL_SIM

The expectations come from outside the tool: the reference cost formulas of issue 2 (Ring
AllReduce takes 2(p-1) steps and moves 2(p-1)/p n bytes, RHD 2 log2 p steps for p = 2^k) and the
set of generators any build must list; every row must say "ok" and "verified"; a corrupted result
must make the row and the exit status fail; bad options must exit 2 naming the bad value.
"""
import subprocess
import sys

SIM = sys.argv[1]
failures = []


def run(*args):
    proc = subprocess.run([SIM, *args], capture_output=True, text=True, timeout=240)
    return proc.returncode, proc.stdout, proc.stderr


def check(cond, what):
    if not cond:
        failures.append(what)
    return cond


def table(out):
    """Header columns and rows (lists of cells) of the first table in `out`."""
    lines = out.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("algorithm"))
    header = lines[start]
    rows = []
    for line in lines[start + 1:]:
        if not line.strip():
            break
        if line.startswith("  "):  # a printed schedule
            continue
        rows.append(line.split())
    return header, rows


def row_map(rows):
    """(algorithm, collective, p) -> row cells; flat collective names only."""
    return {(r[0], r[1], int(r[2])): r for r in rows}


def all_pass(rows, what):
    bad = [r for r in rows if r[-2] != "ok" or r[-1] != "verified"]
    check(not bad, f"{what}: rows not ok/verified: {bad[:3]}")


# 1. Flat, three rank counts: every generator, metrics equal the reference formulas.
rc, out, err = run("--ranks", "4,8,13", "--count", "1024")
if check(rc == 0, f"flat 4,8,13 exit {rc}: {err}{out[-2000:]}"):
    header, rows = table(out)
    all_pass(rows, "flat")
    m = row_map(rows)
    for p in (4, 8, 13):
        listed = {(a, c) for (a, c, q) in m if q == p}
        for pair in [("ring", "allreduce"), ("ring", "reduce"), ("H-D_R", "allreduce"),
                     ("H-D_R", "reducescatter"), ("fullmesh", "allgather"), ("NHR", "scatter"),
                     ("NB", "broadcast"), ("pairwise", "alltoall")]:
            check(pair in listed, f"flat p={p}: no row for {pair}")
    n = 1024 * 4  # bytes of the vector
    for p in (4, 8):
        ring = m[("ring", "allreduce", p)]
        check(int(ring[3]) == 2 * (p - 1), f"ring allreduce p={p} steps {ring[3]}")
        check(int(ring[4]) == 2 * (p - 1) * n // p, f"ring allreduce p={p} bytes {ring[4]}")
        check(int(ring[5]) == (p - 1) * n // p, f"ring allreduce p={p} reduced {ring[5]}")
        log2p = p.bit_length() - 1
        rhd = m[("H-D_R", "allreduce", p)]
        check(int(rhd[3]) == 2 * log2p, f"H-D_R allreduce p={p} steps {rhd[3]}")
        check(int(rhd[4]) == 2 * (p - 1) * n // p, f"H-D_R allreduce p={p} bytes {rhd[4]}")
    check("failed: 0 (" in out, "flat: summary line")

# 2. Hierarchical over 2 servers of 4: per-level columns, the Pipeline row, fp16 max.
rc, out, err = run("--shape", "2x4", "--dtype", "fp16", "--op", "max", "--count", "128",
                   "-c", "allreduce")
if check(rc == 0, f"shape 2x4 allreduce exit {rc}: {err}{out[-2000:]}"):
    header, rows = table(out)
    all_pass(rows, "shape 2x4 allreduce")
    check("L0 steps" in header and "L1 bytes" in header, f"shape 2x4 header: {header}")
    labels = {r[0] for r in rows}
    for alg in ["ring", "H-D_R", "fullmesh", "NHR", "NB", "fullmesh/pipeline/ring"]:
        check(alg in labels, f"shape 2x4: no allreduce row for {alg}")
    # Ring everywhere, AllReduce of n = 256 bytes: level0 RS + AG over 4 ranks (2*3 steps,
    # 2*3/4 n bytes), level1 AllReduce of n/4 over 2 servers (2 steps, 2*1/2 * n/4 bytes).
    ring = next(r for r in rows if r[0] == "ring")
    check(ring[5:9] == ["6", "384", "2", "64"], f"shape 2x4 ring allreduce levels {ring}")
rc, out, err = run("--shape", "2x4", "-a", "NHR", "--count", "50")
if check(rc == 0, f"shape 2x4 NHR exit {rc}: {err}{out[-2000:]}"):
    _, rows = table(out)
    all_pass(rows, "shape 2x4 NHR")
    colls = {r[1] for r in rows}
    check({"allreduce", "reducescatter", "allgather", "broadcast", "scatter"} <= colls,
          f"shape 2x4 NHR collectives: {colls}")

# 3. More layouts: interleaved in place, asymmetric, pods; a composition given per level.
for args in (["--shape", "rr:2x3", "--in-place", "--dtype", "bf16"],
             ["--shape", "3+5", "--dtype", "int64", "--op", "prod"],
             ["--shape", "2x2x2", "--dtype", "fp64", "-a", "NB"],
             ["--shape", "2x4", "-a", "fullmesh/NHR", "--dtype", "complex64", "--op", "prod"]):
    rc, out, err = run(*args, "--count", "37")
    if check(rc == 0, f"{args} exit {rc}: {err}{out[-2000:]}"):
        all_pass(table(out)[1], str(args))

# 4. 64 ranks, one algorithm, a bitwise op on bytes of int8.
rc, out, err = run("--ranks", "64", "-a", "H-D_R", "--dtype", "int8", "--op", "bxor",
                   "--count", "200")
if check(rc == 0, f"64 ranks exit {rc}: {err}{out[-2000:]}"):
    _, rows = table(out)
    all_pass(rows, "64 ranks")
    # H-D_R's collectives: allreduce, reducescatter, allgather, broadcast, reduce, scan, exscan.
    check(len(rows) == 7 and all(r[2] == "64" for r in rows), f"64 ranks rows: {rows}")

# 5. A corrupted result fails its row and the exit status.
rc, out, err = run("--ranks", "4", "-a", "ring", "-c", "allreduce", "--corrupt")
check(rc == 1, f"--corrupt exit {rc} (want 1)")
if "algorithm" in out:
    _, rows = table(out)
    check(rows and rows[0][-1] == "failed", f"--corrupt row: {rows}")
check("Failures:" in out and "same-order reference" in out and "rank-order value" in out,
      f"--corrupt report: {out}")

# 6. Bad options exit 2, naming the bad value and what is valid.
for args, words in ((["--dtype", "fp33"], ["fp33", "fp32"]),
                    (["--op", "bxor"], ["bxor is not defined on fp32", "sum"]),
                    (["--ranks", "4,0"], ["\"0\"", "1..1024"]),
                    (["--shape", "2y4"], ["--shape"]),
                    (["-a", "rign"], ["rign"]),
                    (["--shape", "2x4", "--ranks", "8"], ["either"])):
    rc, out, err = run(*args)
    check(rc == 2, f"{args}: exit {rc} (want 2)")
    for w in words:
        check(w in err, f"{args}: stderr lacks {w!r}: {err}")

# 7. One rank's schedule.
rc, out, err = run("--ranks", "3", "-a", "ring", "-c", "allreduce", "--print-schedule",
                   "--schedule-rank", "1")
check(rc == 0 and "rank 1 of allreduce p=3" in out and "step 0:" in out,
      f"--print-schedule: {rc} {out}")

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("hccl_sim: all checks passed")
