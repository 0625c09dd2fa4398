#!/usr/bin/env python3
"""Engine timelines end to end (MCA coll_hccl_trace): real jobs of np 4 on one server and on an
emulated 2x2 cluster run MPI_Allreduce and MPI_Allgather (tests/mpi/trace.c) with ring forced at
every level and the trace on; the per-rank files are read back and checked:
  - valid JSON with what Perfetto needs: ph, pid, tid, name on every event, ts and dur >= 0 on
    "X" events, every "b" closed by one "e" of its id no earlier;
  - each rank's steps of a call numbered 0.. in order, never overlapping, and every transfer
    posted and completed inside its step;
  - the transfers equal the schedule's: on one server the ring's hand counts (AllReduce 2(p-1)
    steps of one send and one receive of n/p bytes, AllGather p-1 steps of n bytes), and on both
    shapes exactly the flows `hccl_info predict --trace` simulates for the same shape and size
    (sender, receiver, step on each side, bytes);
  - with coll_hccl_trace_events=5 every file keeps 5 records and counts the rest as dropped;
  - tools' hccl_trace_merge.py joins the files and the predicted timeline, the predicted one as
    "predicted server N" processes of its own.
Usage: trace_test.py RUN_MPI COMPONENT_DIR MPI_TRACE HCCL_INFO MERGE_TOOL"""
import collections
import glob
import json
import os
import subprocess
import sys
import tempfile

run_mpi, component_dir, program, hccl_info, merge_tool = sys.argv[1:6]
COUNT = 16384  # ints per rank: 64 KiB, past what the slots serve even if they were on
BYTES = 4 * COUNT
ITERS = 2
EPS = 0.002  # us: the files round to nanoseconds
clean_env = {k: v for k, v in os.environ.items() if not k.startswith(("HCCL_", "COLL_HCCL_"))}


def check(cond, what):
    if not cond:
        sys.exit("FAIL: " + what)


def job(prefix, np, emulate, algo, extra=(), pattern=None):
    args = [sys.executable, run_mpi, "--component-dir", component_dir, "--np", str(np),
            "--timeout", "150", "--expect-enabled", "--expect-taken",
            "--mca", "coll_hccl_trace", pattern or prefix, "--mca", "coll_hccl_slots", "0",
            "--env", "HCCL_ALGO=" + algo, *extra]
    if emulate:
        args += ["--env", "HCCL_TOPO_EMULATE=" + emulate]
    args += ["--", program, "--count", str(COUNT), "--iters", str(ITERS)]
    p = subprocess.run(args, capture_output=True, text=True, timeout=200)
    if p.returncode != 0:
        sys.exit(f"job failed ({p.returncode}): {' '.join(args)}\n{p.stdout}\n{p.stderr}")
    files = sorted(glob.glob(prefix + ".*"))
    check([f.rsplit(".", 1)[1] for f in files] == [str(r) for r in range(np)],
          f"one file per world rank {prefix}.<rank> ({pattern or prefix}), got {files}")
    docs = []
    for f in files:
        with open(f) as fh:
            docs.append(json.load(fh))  # raises (and fails the test) on invalid JSON
    return docs


def perfetto_fields(events, where):
    opened = {}
    for e in events:
        for k in ("ph", "pid", "tid", "name"):
            check(k in e, f"{where}: event without {k}: {e}")
        if e["ph"] == "X":
            check(e["ts"] >= 0 and e["dur"] >= 0, f"{where}: bad X event {e}")
        elif e["ph"] == "b":
            check(e["id"] not in opened and "cat" in e, f"{where}: bad b event {e}")
            opened[e["id"]] = e
        elif e["ph"] == "e":
            b = opened.pop(e.get("id"), None)
            check(b is not None and e["ts"] >= b["ts"] and e["name"] == b["name"],
                  f"{where}: e event without its b: {e}")
        else:
            check(e["ph"] == "M", f"{where}: unexpected phase {e}")
    check(not opened, f"{where}: b events never closed: {list(opened.values())[:2]}")


def calls(doc, rank, where):
    """{(coll, seq): {"steps": [X...], "xfers": [(b, e)...]}} of one rank's file."""
    ev = doc["traceEvents"]
    perfetto_fields(ev, where)
    ends = {e["id"]: e for e in ev if e["ph"] == "e"}
    out = collections.defaultdict(lambda: {"steps": [], "xfers": []})
    for e in ev:
        if e["ph"] == "M":
            continue
        check(e["tid"] == rank, f"{where}: tid {e['tid']}, expected the world rank {rank}")
        if e["ph"] == "X":
            out[(e["args"]["coll"], e["args"]["seq"])]["steps"].append(e)
        elif e["ph"] == "b":
            out[(e["args"]["coll"], e["args"]["seq"])]["xfers"].append((e, ends[e["id"]]))
    for (coll, seq), c in out.items():
        steps = sorted(c["steps"], key=lambda s: s["ts"])
        check([s["name"] for s in steps] == [f"step {i}" for i in range(len(steps))],
              f"{where} {coll} call {seq}: steps out of order: {[s['name'] for s in steps]}")
        for a, b in zip(steps, steps[1:]):
            check(b["ts"] >= a["ts"] + a["dur"] - EPS, f"{where}: steps overlap: {a} {b}")
        for b, e in c["xfers"]:
            s = steps[b["args"]["step"]]
            check(s["ts"] - EPS <= b["ts"] and e["ts"] <= s["ts"] + s["dur"] + EPS,
                  f"{where} {coll} call {seq}: transfer {b} ({e['ts']}) outside its step {s}")
        c["steps"] = steps
    return out


def flows_of(doc_calls, coll):
    """Sends and receives of the first call of `coll`, as (src, dst, src step or dst step, bytes)."""
    sends, recvs, steps = collections.Counter(), collections.Counter(), collections.Counter()
    for rank, cs in enumerate(doc_calls):
        seq = min(s for c, s in cs if c == coll)
        steps[rank] = len(cs[(coll, seq)]["steps"])
        for b, _ in cs[(coll, seq)]["xfers"]:
            src, dst = (int(x) for x in b["name"].split(" -> "))
            key = (src, dst, b["args"]["step"], b["args"]["bytes"])
            (sends if b["args"]["dir"] == "send" else recvs)[key] += 1
            check((src if b["args"]["dir"] == "recv" else dst) == b["args"]["peer"],
                  f"peer {b['args']['peer']} is not the other end of {b['name']}")
    return sends, recvs, steps


def predicted(shape, coll, algo, path):
    size = f"{BYTES // 1024}K"
    p = subprocess.run([hccl_info, "predict", "--shape", shape, "--coll", coll, "--dtype", "int32",
                        "--min", size, "--max", size, "--mca", "coll_hccl_algorithm=" + algo,
                        "--trace", path], capture_output=True, text=True, env=clean_env,
                       timeout=120)
    check(p.returncode == 0, f"hccl_info predict failed: {p.stderr}")
    with open(path) as f:
        ev = json.load(f)["traceEvents"]
    sends, recvs, steps = collections.Counter(), collections.Counter(), collections.Counter()
    servers = {}
    for e in ev:
        if e["ph"] == "X":
            steps[e["tid"]] += 1
            servers[e["tid"]] = e["pid"]
        elif e["ph"] == "b":
            src, dst = (int(x) for x in e["name"].split(" -> "))
            sends[(src, dst, e["args"]["step"], e["args"]["bytes"])] += 1
            recvs[(src, dst, e["args"]["peer_step"], e["args"]["bytes"])] += 1
    return sends, recvs, steps, servers


with tempfile.TemporaryDirectory() as d:
    cases = [("1x4", None, "level0:ring"), ("2x2", "2x2", "level0:ring;level1:ring")]
    unbounded = {}
    for shape, emulate, algo in cases:
        prefix = os.path.join(d, "t" + shape)
        docs = job(prefix, 4, emulate, algo)
        got = [calls(doc, r, f"{shape} rank {r}") for r, doc in enumerate(docs)]
        unbounded[shape] = [doc["otherData"]["events"] for doc in docs]
        for r, doc in enumerate(docs):
            check(doc["otherData"]["dropped"] == 0, f"{shape} rank {r} dropped events")
            check(sorted(got[r]) == sorted([("allreduce", s) for s in range(ITERS)] +
                                           [("allgather", ITERS + s) for s in range(ITERS)]),
                  f"{shape} rank {r}: calls {sorted(got[r])}")
        for coll in ("allreduce", "allgather"):
            sends, recvs, steps = flows_of(got, coll)
            if shape == "1x4":  # the ring by hand: p - 1 steps per phase, one pair per step
                p = 4
                n_steps, each = (2 * (p - 1), BYTES // p) if coll == "allreduce" else (p - 1, BYTES)
                for r in range(p):
                    check(steps[r] == n_steps, f"ring {coll} rank {r}: {steps[r]} steps, "
                                               f"expected {n_steps}")
                    mine = [k for k in sends if k[0] == r]
                    check(sorted(k[2] for k in mine) == list(range(n_steps)) and
                          all(k[1] == (r + 1) % p and k[3] == each for k in mine),
                          f"ring {coll} rank {r}: sends {sorted(mine)}")
            psends, precvs, psteps, pservers = predicted(shape, coll, algo,
                                               os.path.join(d, f"p{shape}_{coll}.json"))
            for r, cs in enumerate(got):
                pids = {s["pid"] for c in cs.values() for s in c["steps"]}
                check(pids == {pservers[r]}, f"{shape} rank {r}: pid {pids}, the simulator puts "
                                             f"it on server {pservers[r]}")
            check(steps == psteps, f"{shape} {coll}: steps per rank {dict(steps)}, "
                                   f"predicted {dict(psteps)}")
            check(sends == psends, f"{shape} {coll}: sends differ from the prediction: "
                                   f"{sorted((sends - psends).items())[:4]} / "
                                   f"{sorted((psends - sends).items())[:4]}")
            check(recvs == precvs, f"{shape} {coll}: receives differ from the prediction")
            print(f"{shape} {coll}: {sum(steps.values())} steps, {sum(sends.values())} sends, "
                  f"as predicted")

    # A low bound: 5 records kept per process, the rest counted; the file named by a pattern.
    prefix = os.path.join(d, "bounded")
    docs = job(prefix, 4, None, "level0:ring", ["--mca", "coll_hccl_trace_events", "5"],
               pattern=os.path.join(d, "bounded.%r"))
    for r, doc in enumerate(docs):
        ev = doc["traceEvents"]
        perfetto_fields(ev, f"bounded rank {r}")
        kept = sum(1 for e in ev if e["ph"] in ("X", "b"))
        check(kept == 5 and doc["otherData"]["events"] == 5, f"bounded rank {r}: {kept} records")
        check(doc["otherData"]["dropped"] == unbounded["1x4"][r] - 5,
              f"bounded rank {r}: dropped {doc['otherData']['dropped']}, expected "
              f"{unbounded['1x4'][r] - 5}")
        size = os.path.getsize(f"{prefix}.{r}")
        check(size < 5 * 600 + 1000, f"bounded rank {r}: {size} bytes for 5 records")
    print(f"bounded: 5 records per rank, {unbounded['1x4'][0] - 5} dropped on rank 0")

    # The merge: the four files and the predicted AllReduce, one call.
    out = os.path.join(d, "merged.json")
    files = sorted(glob.glob(os.path.join(d, "t1x4.*")))
    p = subprocess.run([sys.executable, merge_tool, *files, "--predicted",
                        os.path.join(d, "p1x4_allreduce.json"), "--coll", "allreduce", "--seq",
                        "0", "-o", out], capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, f"merge failed: {p.stderr}")
    with open(out) as f:
        ev = json.load(f)["traceEvents"]
    perfetto_fields(ev, "merged")
    measured = [e for e in ev if e["pid"] < 1_000_000]
    pred = [e for e in ev if e["pid"] >= 1_000_000]
    check(sum(e["ph"] == "X" for e in measured) == 4 * 6 == sum(e["ph"] == "X" for e in pred),
          "merged: 24 measured and 24 predicted steps")
    check(min(e["ts"] for e in measured if "ts" in e) == 0, "merged: measured starts at 0")
    names = {e["args"]["name"] for e in pred if e["name"] == "process_name"}
    check(names == {"predicted server 0"}, f"merged: predicted processes {names}")
    p = subprocess.run([sys.executable, merge_tool, os.path.join(d, "p1x4_allreduce.json")],
                       capture_output=True, text=True, timeout=60)
    check(p.returncode == 2 and "not a coll_hccl engine timeline" in p.stderr,
          f"a predicted file as a measured one must be refused: {p.returncode} {p.stderr}")
    print("merged: 24 measured and 24 predicted steps side by side")
    # A bad bound is refused with the value and what is valid (the engine stays off).
    args = [sys.executable, run_mpi, "--component-dir", component_dir, "--np", "2",
            "--timeout", "100", "--expect-not-enabled", "--expect-line",
            'trace_events: invalid value "0x10" \\(from MCA coll_hccl_trace_events.*\\); valid: '
            "an integer >= 1", "--mca", "coll_hccl_trace", os.path.join(d, "bad"),
            "--mca", "coll_hccl_trace_events", "0x10", "--", program, "--count", "4"]
    p = subprocess.run(args, capture_output=True, text=True, timeout=150)
    check(p.returncode == 0, f"bad trace_events: {p.stdout}\n{p.stderr}")
    check(not glob.glob(os.path.join(d, "bad.*")), "a refused setting wrote a trace")
    print("bad coll_hccl_trace_events refused")
print("PASS")
