#!/usr/bin/env python3
"""hccl_info predict end to end: the simulated time of a call whose cost is known in closed form
(the shared-memory link's step cost included), NIC sharing never making a call faster, the
timeline as Chrome trace-event JSON, 65536 ranks simulated on one server's ranks, and the errors
for layouts too large to simulate."""
import json
import os
import subprocess
import sys
import tempfile

exe = sys.argv[1]
env = {k: v for k, v in os.environ.items() if not k.startswith(("HCCL_", "COLL_HCCL_"))}


def run(*args, ok=True):
    p = subprocess.run([exe, *args], capture_output=True, text=True, env=env, timeout=300)
    if ok and p.returncode != 0:
        sys.exit(f"hccl_info {' '.join(args)} failed ({p.returncode}):\n{p.stderr}")
    return p


def check(cond, what):
    if not cond:
        sys.exit("FAIL: " + what)


tuning = json.loads(run("tuning").stdout)
l1 = tuning["levels"]["level1"]
alpha, beta = l1["alpha_us"] * 1e-6, 1 / (l1["bandwidth_GBps"] * 1e9)

# Two servers of one rank, AllGather of 1 MiB per rank over a forced ring: one step that moves
# 1 MiB each way, alpha + n beta, whatever the NIC sharing.
for extra in ([], ["--own-nic"], ["--half-duplex"]):
    rows = json.loads(run("predict", "--shape", "2x1", "--coll", "allgather", "--min", "1M",
                          "--max", "1M", "--mca", "coll_hccl_algorithm=level1:ring", "--json",
                          *extra).stdout)
    check(len(rows) == 1 and rows[0]["error"] == "", f"one row: {rows}")
    want = alpha + (1 << 20) * beta * (2 if extra == ["--half-duplex"] else 1)
    got = rows[0]["simulated_s"]
    check(abs(got - want) <= want * 1e-9, f"{extra}: simulated {got} s, expected {want} s")

# The shared-memory link's step cost (step_us above step_from_bytes) is the simulator's as much
# as the formula's: one server of two ranks, AllGather of 1 MiB per rank over a forced level0
# ring, one step of 1 MiB each way: alpha + n beta + step (2 n beta on a half-duplex link), and
# the formula says the same.
shm = tuning["link_classes"]["shm"]
for n, stepped in ((1 << 20, True), (shm["step_from_bytes"] // 4 * 4, False)):
    rows = json.loads(run("predict", "--shape", "1x2", "--coll", "allgather", "--min", str(n),
                          "--max", str(n), "--mca", "coll_hccl_algorithm=level0:ring",
                          "--json").stdout)
    check(len(rows) == 1 and rows[0]["error"] == "", f"one row: {rows}")
    # Half duplex (the shipped shm link): the step's send and receive share the rank's link.
    ways = 2 if shm.get("half_duplex", False) else 1
    want = (shm["alpha_us"] + (shm["step_us"] if stepped else 0)) * 1e-6 + ways * n / (
        shm["bandwidth_GBps"] * 1e9)
    for k in ("simulated_s", "formula_s"):
        check(abs(rows[0][k] - want) <= want * 1e-9, f"{n} bytes: {k} {rows[0][k]}, expected {want}")

# Sharing a server's NIC between its ranks never makes a call faster.
rows = json.loads(run("predict", "--shape", "2x4", "--coll", "allreduce,allgather,reducescatter",
                      "--min", "1K", "--max", "16M", "--factor", "16", "--json").stdout)
check(len(rows) == 3 * 4, f"12 rows, got {len(rows)}")
for r in rows:
    check(r["error"] == "", f"declined or failed: {r}")
    check(r["simulated_s"] >= r["own_nic_s"] * (1 - 1e-9) > 0, f"sharing made it faster: {r}")
check(any(r["simulated_s"] > 1.5 * r["own_nic_s"] for r in rows),
      f"four ranks on one NIC must show somewhere: {rows}")

# The timeline: Chrome trace-event JSON, one slice per step and a begin/end per flow, ending when
# the predicted call does.
with tempfile.TemporaryDirectory() as d:
    trace = os.path.join(d, "t.json")
    text = run("predict", "--shape", "2x2", "--coll", "allreduce", "--min", "64K", "--max", "64K",
               "--trace", trace).stdout
    check(trace in text, f"the output names the trace file:\n{text}")
    doc = json.load(open(trace))
    ev = doc["traceEvents"]
    steps = [e for e in ev if e["ph"] == "X"]
    begins = [e for e in ev if e["ph"] == "b"]
    check(steps and begins and len(begins) == len([e for e in ev if e["ph"] == "e"]),
          "steps and paired flow events")
    end = max(e["ts"] + e["dur"] for e in steps)
    check(abs(end - doc["otherData"]["predicted_us"]) < 1e-3, "the last step ends the call")
    check({e["pid"] for e in steps} == {0, 1}, "a process per server")
    check({e["tid"] for e in steps} == {0, 1, 2, 3}, "a thread per rank")

# 65536 ranks where every server is alike: one server's 8 ranks are simulated, and a ring's
# 8191 steps between servers over its own NIC take at least 8191 alpha.
rows = json.loads(run("predict", "--shape", "8192x8", "--coll", "allgather", "--min", "1K",
                      "--max", "1K", "--mca", "coll_hccl_algorithm=level1:ring", "--json").stdout)
check(len(rows) == 1 and rows[0]["error"] == "" and rows[0]["simulated_ranks"] == 8,
      f"8192x8 ring on one server's ranks: {rows}")
check(rows[0]["simulated_s"] >= rows[0]["own_nic_s"] >= 8191 * alpha, f"8191 ring steps: {rows}")

# Not alike and above the whole simulation's limit: refused, naming the algorithm and the limit.
p = run("predict", "--shape", "513x8", "--coll", "allreduce", "--min", "1K", "--max", "1K",
        "--mca", "coll_hccl_algorithm=level1:H-D_R", ok=False)
check(p.returncode == 1 and "4104 ranks" in p.stdout and "H-D_R" in p.stdout
      and "at most 4096" in p.stdout, f"whole-simulation limit: {p.returncode} {p.stdout}")

# Too large to simulate at all: exit 2 and a message saying why and the limit.
p = run("predict", "--shape", "8193x8", "--coll", "allreduce", "--min", "1K", "--max", "1K",
        ok=False)
check(p.returncode == 2 and "65544 ranks" in p.stderr and "at most 65536" in p.stderr,
      f"size limit: {p.returncode} {p.stderr}")
print("hccl_info predict: ok")
