#!/usr/bin/env python3
"""Validation of the simulator (`hccl_info predict`) on the emulated cluster (issue 14 item 5).

One command, as root (the shaped rounds' wire minimum is about 2.2 minutes; 16.5 minutes in all
at load 20-28, where the shared CPUs, not the links, set most times: see the "bound" column):

  tests/cluster/validate_sim.py [--build-dir build] [--out build/sim-validation]
  tests/cluster/validate_sim.py --rate 100mbit --sizes 1M,4M    # link-bound even under load

  1. brings up a rig of 4 servers x 2 slots at --rate (cluster.sh session, id "simval"; torn down
     whatever happens);
  2. times the link the way hccl_calibrate times a link class, through coll_hccl itself: one rank
     on each of 2 servers, a ring AllGather (one step: each rank sends m and receives m bytes
     over tcp/eth0) at --link-sizes, median of 5, fitted t = alpha + beta m by least squares of
     the relative error (hccl_calibrate's fit);
  3. per shape (--shapes, default 2x2 and 4x2: ranks fill servers in order), runs time_probe:
     allreduce, allgather, reduce_scatter at --sizes with every level-1 algorithm forced
     (hccl_algo=level0:NA;level1:ALGO), --reps timed rounds after one warm-up, algorithms rotated
     per round; the time of a sample is the slowest rank's;
  4. the same runs with the links unshaped (--control-reps rounds, default 1): the control that
     tells whether the shaped link set a call's time at all (all "servers" share this machine's
     CPUs; where unshaping does not at least halve the time, the row is CPU-bound and cannot test
     the link model);
  5. writes the cluster model: --tuning FILE (e.g. one hccl_calibrate wrote on a quiet machine)
     or the built-in defaults (level0, the shared-memory link, gamma), with level1 and level2
     replaced by the link: tuning-rate.json at the nominal rate (the tc rate less TCP/IP/Ethernet
     framing, 1448 payload bytes per 1514-byte frame; alpha 25 us), tuning-fit.json as fitted in
     step 2 (sensitive to the machine's load, as the fit runs on the same shared CPUs). The engine
     ran with tuning-engine.json (= tuning-rate.json) so that its automatic level0 choice is the
     model's; each row's plan is checked against the engine's verbose line;
  6. predicts every (shape, collective, size, algorithm) with `hccl_info predict --json` over
     tuning-rate.json (--model fit: tuning-fit.json) and over the other one, and writes the table
     (report.md): measured median (min..max), predicted (the simulated time), predicted /
     measured, within --tolerance (default 30%) or not, the other model's prediction, the link
     use (bytes the busiest server's eth0 sent per second over the nominal payload rate), the
     unshaped time and whether the row was link- or CPU-bound.

Raw outputs stay in --out: machine.txt (load, git), params.json, link.log, probe-SHAPE.log and
probe-SHAPE-unshaped.log (time_probe's lines and coll_hccl's verbose decisions), predict-*.json,
tuning-*.json, results.json, report.md.
`--report-only DIR` rebuilds the report from a directory's raw logs (no root, no rig): what the
CI test runs on a saved sample. Exit status: 0 when the run completed (whatever the ratios; the
table says which rows are outside the tolerance), 1 when something failed (a probe's check, a
missing sample, a predict error), 2 for a usage error, 77 when not root or no namespaces.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CLUSTER = os.path.join(HERE, "cluster.sh")
RIG_ID = "simval"
ALGOS = ["ring", "H-D_R", "NHR", "NB", "pipeline", "AHC"]
COLLS = ["allreduce", "allgather", "reduce_scatter"]
PREDICT_COLL = {"allreduce": "allreduce", "allgather": "allgather",
                "reduce_scatter": "reducescatter"}
# TCP over Ethernet with timestamps: 1448 payload bytes per 1514-byte frame as tbf counts it.
PAYLOAD_PER_FRAME = 1448 / 1514
# The nominal link's latency: the built-in level1 alpha (a veth's TCP latency is of that order;
# the shaped link at >= 1 MiB makes it a fraction of a percent).
RATE_ALPHA = 25e-6
SAMPLE_RE = re.compile(r"^sample coll=(\S+) algo=(\S+) bytes=(\d+) round=(\d+) calls=(\d+) "
                       r"time_per_call_s=([0-9.]+) tx_max_per_call=(-?[0-9.]+)")
CHECK_RE = re.compile(r"^check coll=(\S+) algo=(\S+) bytes=(\d+) wrong=(\d+)")
# coll_hccl_verbose 1: "MPI_Allreduce on MPI COMMUNICATOR 4 DUP FROM 0 (cid 4, rank 0 of 4):
# 262144 x MPI_FLOAT, ... -> hccl: level0 ring (...), level1 NB (forced: by info key hccl_algo)";
# Reduce_scatter_block says "N x MPI_FLOAT per rank", Allgather "MPI_FLOAT, B bytes gathered".
VERBOSE_RE = re.compile(r"(MPI_Allreduce|MPI_Allgather|MPI_Reduce_scatter_block) on MPI "
                        r"COMMUNICATOR.*? of (\d+)\): (?:(\d+) x MPI_FLOAT|MPI_FLOAT, (\d+) "
                        r"bytes gathered).*?-> hccl: level0 (\S+) \(.*?level1 (\S+) \(forced")
VERBOSE_COLL = {"MPI_Allreduce": "allreduce", "MPI_Allgather": "allgather",
                "MPI_Reduce_scatter_block": "reduce_scatter"}


def die(msg, status=2):
    print(f"validate_sim.py: {msg}", file=sys.stderr)
    sys.exit(status)


def parse_size(text):
    m = re.fullmatch(r"(\d+)([KMG]?)", text)
    if not m or int(m.group(1)) == 0:
        die(f"bad size '{text}' (a positive whole number with an optional K, M or G)")
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)]


def size_text(n):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


def rate_bytes_per_s(rate):
    m = re.fullmatch(r"([1-9][0-9]*)([kmgt]?)bit", rate)
    if not m:
        die(f"bad rate '{rate}' (tc syntax, e.g. 1gbit or 100mbit)")
    scale = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}[m.group(2)]
    return int(m.group(1)) * scale / 8


def parse_shape(text):
    m = re.fullmatch(r"([1-9][0-9]*)x([1-9][0-9]*)", text)
    if not m:
        die(f"bad shape '{text}' (SERVERSxRANKS, e.g. 2x2)")
    return int(m.group(1)), int(m.group(2))


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


# ---- measurement (inside the rig) -------------------------------------------------------------

def mpirun(args, hosts, np, log_path, timeout, extra=()):
    """time_probe under mpirun inside the rig; stdout and stderr to log_path."""
    cmd = [CLUSTER, "run", "--timeout", str(timeout), "--", "-np", str(np), "--host", hosts,
           "--mca", "mpi_yield_when_idle", "1", "--mca", "pml", "ob1",
           "--mca", "mca_base_component_path", f"SYS_DEFAULT:{args.component_dir}",
           "--mca", "coll_hccl_verbose", "1", "--mca", "coll_hccl_tuning_file",
           os.path.join(args.out, "tuning-engine.json"), *extra]
    with open(log_path, "w") as log:
        log.write(f"# load {load()} at {time.strftime('%H:%M:%S')}: {' '.join(cmd)}\n")
        log.flush()
        status = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT).returncode
        log.write(f"# exit {status}, load {load()} at {time.strftime('%H:%M:%S')}\n")
    return status


def probe_shapes(args, probe, reps, suffix=""):
    """time_probe on every shape, `reps` timed rounds each, logs probe-SxR{suffix}.log; 0 if all
    runs exited 0."""
    failed = 0
    for servers, ranks in args.shapes:
        hosts = ",".join(f"ns{k}:{ranks}" for k in range(servers))
        log = os.path.join(args.out, f"probe-{servers}x{ranks}{suffix}.log")
        what = f"{servers}x{ranks}" + (f" {suffix.lstrip('-')}" if suffix else "")
        print(f"validate_sim.py: {what} (load {load()})", flush=True)
        status = mpirun(args, hosts, servers * ranks, log, args.timeout,
                        [probe, "--sizes", ",".join(str(s) for s in args.sizes), "--algos",
                         ",".join(args.algos), "--reps", str(reps), "--warmup", "1",
                         *args.colls])
        failed |= status != 0
    return failed


def body(args):
    if not os.environ.get("HCCL_CLUSTER_ID"):
        die("--body runs inside cluster.sh session")
    probe = os.path.join(args.build_dir, "tests", "cluster", "time_probe")
    failed = 0
    sizes = ",".join(str(s) for s in args.link_sizes)
    status = mpirun(args, "ns0:1,ns1:1", 2, os.path.join(args.out, "link.log"), args.timeout,
                    [probe, "--sizes", sizes, "--algos", "ring", "--reps", "5", "allgather"])
    failed |= status != 0
    failed |= probe_shapes(args, probe, args.reps)
    if args.control_reps:
        # The control: the same runs with the links unshaped. Where a call takes about as long
        # without the shaping, the link was not what limited it (the CPUs were: every "server"
        # shares this machine's), and the row cannot test the link model.
        subprocess.run([CLUSTER, "shape", "none"], check=True)
        failed |= probe_shapes(args, probe, args.control_reps, "-unshaped")
    return 1 if failed else 0


# ---- the model and the predictions ------------------------------------------------------------

def fit_line(points):
    """t = alpha + beta m minimising the relative error (hccl_calibrate's fit), alpha >= 0."""
    sw = swm = swmm = swt = swmt = 0.0
    for m, t in points:
        w = 1.0 / (t * t)
        sw += w
        swm += w * m
        swmm += w * m * m
        swt += w * t
        swmt += w * m * t
    det = sw * swmm - swm * swm
    if len(points) >= 2 and det > 0:
        alpha = (swmm * swt - swm * swmt) / det
        beta = (sw * swmt - swm * swt) / det
        if alpha >= 0 and beta > 0:
            return alpha, beta
    # Through the origin (alpha held at 0): minimise sum ((beta m - t) / t)^2.
    beta = sum(m / t for m, t in points) / sum((m / t) ** 2 for m, t in points)
    return 0.0, beta


def read_samples(path):
    samples, checks = {}, []
    with open(path, errors="replace") as f:
        for line in f:
            m = SAMPLE_RE.match(line)
            if m:
                key = (m.group(1), m.group(2), int(m.group(3)))
                samples.setdefault(key, []).append((float(m.group(6)), float(m.group(7))))
            m = CHECK_RE.match(line)
            if m:
                checks.append((m.group(1), m.group(2), int(m.group(3)), int(m.group(4))))
    return samples, checks


def read_engine_plans(path):
    """(coll, bytes, level1 algorithm) -> the set of level0 algorithms the engine named."""
    plans = {}
    with open(path, errors="replace") as f:
        for line in f:
            m = VERBOSE_RE.search(line)
            if m:
                size = int(m.group(3)) * 4 if m.group(3) else int(m.group(4)) // int(m.group(2))
                key = (VERBOSE_COLL[m.group(1)], size, m.group(6))
                plans.setdefault(key, set()).add(m.group(5))
    return plans


def link_model(out):
    """The link's alpha (s) and beta (s/B) fitted from link.log, and the points used."""
    samples, _ = read_samples(os.path.join(out, "link.log"))
    points = [(b, statistics.median(t for t, _ in v)) for (c, a, b), v in sorted(samples.items())
              if c == "allgather" and a == "ring" and v]
    if not points:
        return None, []
    alpha, beta = fit_line(points)
    return (alpha, beta), points


def tuning_document(base_path, alpha, beta, description):
    doc = {"version": 1}
    if base_path:
        with open(base_path) as f:
            doc = json.load(f)
    doc["description"] = description
    levels = doc.setdefault("levels", {})
    for lvl in ("level1", "level2"):
        levels[lvl] = {"alpha_us": round(alpha * 1e6, 3), "bandwidth_GBps": 1e-9 / beta,
                       "links": 1}
    return doc


def write_json(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")


def predict(args, tuning, shape, algo, size, tag):
    """hccl_info predict --json for one shape, algorithm and size, all collectives at once."""
    servers, ranks = shape
    cmd = [os.path.join(args.build_dir, "coll_hccl", "tools", "hccl_info"), "predict", "--shape",
           f"{servers}x{ranks}", "--coll", ",".join(PREDICT_COLL[c] for c in args.colls),
           "--min", str(size), "--max", str(size), "--json", "--tuning", tuning,
           "--level0-link", "auto", "--mca", f"coll_hccl_algorithm=level0:NA;level1:{algo}"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    with open(os.path.join(args.out, f"predict-{tag}-{servers}x{ranks}-{algo}-{size}.json"),
              "w") as f:
        f.write(res.stdout)
    if res.returncode != 0:
        return None, f"hccl_info predict failed ({res.returncode}): {res.stderr.strip()}"
    rows = {r["collective"]: r for r in json.loads(res.stdout)}
    return rows, ""


def report(args):
    """Reads the raw logs in args.out, predicts, writes results.json and report.md."""
    rate = rate_bytes_per_s(args.rate) * PAYLOAD_PER_FRAME
    problems = []
    fitted, points = link_model(args.out)
    if fitted is None:
        problems.append("no link samples in link.log")
        fitted = (25e-6, 1 / rate)
    alpha, beta = fitted
    base = args.tuning or "built-in defaults"
    write_json(os.path.join(args.out, "tuning-fit.json"), tuning_document(
        args.tuning, alpha, beta, f"validate_sim.py: {base} with level1/2 fitted on the rig's "
        f"link ({args.rate})"))
    write_json(os.path.join(args.out, "tuning-rate.json"), tuning_document(
        args.tuning, RATE_ALPHA, 1 / rate, f"validate_sim.py: {base} with level1/2 at the "
        f"nominal {args.rate}"))
    # The model the ratio is taken against (--model): the nominal link (default) or the fit.
    primary, other = ("rate", "fit") if args.model == "rate" else ("fit", "rate")
    rows = []
    for shape in args.shapes:
        tag = f"{shape[0]}x{shape[1]}"
        log = os.path.join(args.out, f"probe-{tag}.log")
        if not os.path.exists(log):
            problems.append(f"no {os.path.basename(log)}")
            continue
        samples, checks = read_samples(log)
        plans = read_engine_plans(log)
        unshaped = {}
        control = os.path.join(args.out, f"probe-{tag}-unshaped.log")
        if os.path.exists(control):
            unshaped, more = read_samples(control)
            checks += more
        for c, a, b, wrong in checks:
            if wrong:
                problems.append(f"{tag} {c} {a} {size_text(b)}: {wrong} wrong elements")
        for algo in args.algos:
            for size in args.sizes:
                fit_rows, err = predict(args, os.path.join(args.out, f"tuning-{primary}.json"),
                                        shape, algo, size, primary)
                rate_rows, err2 = predict(args, os.path.join(args.out, f"tuning-{other}.json"),
                                          shape, algo, size, other)
                for coll in args.colls:
                    row = {"shape": tag, "collective": coll, "bytes": size, "algorithm": algo}
                    times = [t for t, _ in samples.get((coll, algo, size), [])]
                    tx = [x for _, x in samples.get((coll, algo, size), []) if x >= 0]
                    if not times:
                        problems.append(f"{tag} {coll} {algo} {size_text(size)}: no sample")
                        continue
                    row["measured_s"] = statistics.median(times)
                    row["measured_min_s"], row["measured_max_s"] = min(times), max(times)
                    row["samples"] = len(times)
                    row["tx_max_per_call"] = statistics.median(tx) if tx else None
                    row["link_use"] = (row["tx_max_per_call"] / row["measured_s"] / rate
                                       if tx else None)
                    free = [t for t, _ in unshaped.get((coll, algo, size), [])]
                    row["unshaped_s"] = statistics.median(free) if free else None
                    # Link-bound when removing the shaping at least halves the time.
                    row["bound"] = (None if not free else
                                    "link" if row["unshaped_s"] <= 0.5 * row["measured_s"]
                                    else "CPU")
                    if fit_rows is None or rate_rows is None:
                        problems.append(f"{tag} {algo} {size_text(size)}: {err or err2}")
                        continue
                    p = fit_rows[PREDICT_COLL[coll]]
                    if p["error"]:
                        problems.append(f"{tag} {coll} {algo} {size_text(size)}: {p['error']}")
                        continue
                    row["plan"] = p["plan"]
                    row["predicted_s"] = p["simulated_s"]
                    row["formula_s"] = p["formula_s"]
                    row["own_nic_s"] = p["own_nic_s"]
                    row["other_model_s"] = rate_rows[PREDICT_COLL[coll]]["simulated_s"]
                    # The bytes the model puts on the busiest server's NIC: its level1 busy time
                    # at the nominal rate, times that rate (alpha adds a few us per step).
                    nominal = (fit_rows if primary == "rate" else rate_rows)[PREDICT_COLL[coll]]
                    row["model_tx"] = nominal["busy_s"][1] * rate
                    row["tx_ratio"] = (row["tx_max_per_call"] / row["model_tx"]
                                       if tx and row["model_tx"] > 0 else None)
                    row["ratio"] = row["predicted_s"] / row["measured_s"]
                    row["within"] = abs(row["ratio"] - 1) <= args.tolerance
                    level0 = re.match(r"[^\[]*\[([^,\]]+)", p["plan"])
                    engine = plans.get((coll, size, algo), set())
                    row["engine_level0"] = sorted(engine)
                    row["plan_matches"] = bool(level0) and engine == {level0.group(1)}
                    if not row["plan_matches"]:
                        problems.append(f"{tag} {coll} {algo} {size_text(size)}: engine level0 "
                                        f"{sorted(engine) or 'not seen'}, predicted plan "
                                        f"{p['plan']}")
                    rows.append(row)
    doc = {"rate": args.rate, "payload_Bps": rate, "tolerance": args.tolerance,
           "model": primary,
           "link_fit": {"alpha_s": alpha, "beta_s_per_B": beta, "bandwidth_Bps": 1 / beta,
                        "points": points}, "rows": rows, "problems": problems}
    write_json(os.path.join(args.out, "results.json"), doc)
    with open(os.path.join(args.out, "report.md"), "w") as f:
        f.write(report_text(args, doc))
    return doc


def ms(t):
    return f"{t * 1e3:.1f}" if t >= 0.01 else f"{t * 1e3:.2f}"


def report_text(args, doc):
    machine = ""
    path = os.path.join(args.out, "machine.txt")
    if os.path.exists(path):
        with open(path) as f:
            machine = "".join(f"    {line}" for line in f)
    fit = doc["link_fit"]
    lines = [
        "# Simulator validation on the emulated cluster", "",
        f"Links shaped at {doc['rate']} (nominal payload {doc['payload_Bps'] / 1e6:.1f} MB/s); "
        f"the link fitted through coll_hccl (2 servers x 1 rank, ring AllGather): alpha "
        f"{fit['alpha_s'] * 1e6:.1f} us, {fit['bandwidth_Bps'] / 1e6:.1f} MB/s "
        f"({fit['bandwidth_Bps'] / doc['payload_Bps']:.0%} of nominal) from "
        + ", ".join(f"{size_text(int(m))} {ms(t)} ms" for m, t in fit["points"]) + ".",
        "", "Machine:", "", machine, "",
        "Sizes as `hccl_info predict` counts them: allreduce the vector, allgather and "
        "reduce_scatter the per-rank block. measured: median (min..max) over the rounds of the "
        "slowest rank's time; predicted: `hccl_info predict` (simulated) over "
        f"tuning-{doc['model']}.json, " + ("the link at its nominal rate"
        if doc["model"] == "rate" else "the fitted link") + "; ratio = "
        f"predicted / measured; within: |ratio - 1| <= {doc['tolerance']:.0%}; "
        + ("fitted link: the prediction over the fitted link (tuning-fit.json)"
           if doc["model"] == "rate" else "at rate: the prediction at the nominal rate")
        + "; link use: the busiest server's eth0 bytes "
        "per second over the nominal payload rate; wire/model bytes: those bytes over the bytes "
        "the model puts on that NIC (its level1 busy time at the nominal rate times the rate); "
        "unshaped: the same call with the links "
        "unshaped (median of the control rounds); bound: link where that at least halves the "
        "time, else CPU (the emulation's shared CPUs, not the link, set the time: such a row "
        "cannot test the link model).", "",
        "| shape | collective | size | level1 | plan | measured ms | predicted ms | ratio | "
        f"within | {'fitted link' if doc['model'] == 'rate' else 'at rate'} ms | link use | "
        "wire/model bytes | unshaped ms | bound |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in doc["rows"]:
        if "predicted_s" not in r:
            continue
        use = f"{r['link_use']:.0%}" if r.get("link_use") is not None else "-"
        wire = f"{r['tx_ratio']:.3f}" if r.get("tx_ratio") is not None else "-"
        free = ms(r["unshaped_s"]) if r.get("unshaped_s") is not None else "-"
        lines.append(
            f"| {r['shape']} | {r['collective']} | {size_text(r['bytes'])} | {r['algorithm']} | "
            f"{r['plan']} | {ms(r['measured_s'])} ({ms(r['measured_min_s'])}.."
            f"{ms(r['measured_max_s'])}) | {ms(r['predicted_s'])} | {r['ratio']:.2f} | "
            f"{'yes' if r['within'] else 'NO'} | {ms(r['other_model_s'])} | {use} | {wire} | "
            f"{free} | {r.get('bound') or '-'} |")
    done = [r for r in doc["rows"] if "within" in r]
    lines += ["", f"Within {doc['tolerance']:.0%}: {sum(r['within'] for r in done)} of "
              f"{len(done)} rows."]
    for shape in sorted({r["shape"] for r in done}):
        sel = [r for r in done if r["shape"] == shape]
        lines.append(f"- {shape}: {sum(r['within'] for r in sel)} of {len(sel)}; ratio median "
                     f"{statistics.median(r['ratio'] for r in sel):.2f}, range "
                     f"{min(r['ratio'] for r in sel):.2f}..{max(r['ratio'] for r in sel):.2f}")
        link = [r for r in sel if r.get("bound") == "link"]
        if any(r.get("bound") for r in sel):
            lines.append(f"  - link-bound rows (the only ones that test the link model): "
                         f"{len(link)} of {len(sel)}, within {sum(r['within'] for r in link)}")
    if doc["problems"]:
        lines += ["", "Problems:", ""] + [f"- {p}" for p in doc["problems"]]
    return "\n".join(lines) + "\n"


# ---- the command ------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", default=os.path.join(REPO, "build"))
    ap.add_argument("--component-dir", help="default: BUILD/coll_hccl/private")
    ap.add_argument("--out", help="default: BUILD/sim-validation")
    ap.add_argument("--shapes", default="2x2,4x2", help="SERVERSxRANKS,... (default 2x2,4x2)")
    ap.add_argument("--sizes", default="1M,4M,16M", help="default 1M,4M,16M")
    ap.add_argument("--colls", default=",".join(COLLS))
    ap.add_argument("--algos", default=",".join(ALGOS))
    ap.add_argument("--reps", type=int, default=3, help="timed rounds (default 3)")
    ap.add_argument("--rate", default="1gbit", help="link rate, tc syntax (default 1gbit)")
    ap.add_argument("--link-sizes", default="1M,4M,16M", help="link fit sizes (default 1M,4M,16M)")
    ap.add_argument("--control-reps", type=int, default=1,
                    help="timed rounds of the unshaped control (default 1; 0: no control)")
    ap.add_argument("--tuning", help="base cost model (default: the built-in defaults)")
    ap.add_argument("--tolerance", type=float, default=0.30)
    ap.add_argument("--model", choices=["rate", "fit"], default="rate",
                    help="link model the ratio is taken against: rate (the nominal tc rate less "
                    "framing, default) or fit (fitted on the rig, load-sensitive)")
    ap.add_argument("--timeout", type=int, default=900, help="bound per mpirun, s")
    ap.add_argument("--report-only", metavar="DIR", help="rebuild the report from DIR's logs")
    ap.add_argument("--body", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.build_dir = os.path.abspath(args.build_dir)
    args.component_dir = os.path.abspath(args.component_dir or
                                          os.path.join(args.build_dir, "coll_hccl", "private"))
    args.tuning = os.path.abspath(args.tuning) if args.tuning else None
    args.out = os.path.abspath(args.report_only or args.out or
                               os.path.join(args.build_dir, "sim-validation"))
    shapes_text = args.shapes
    args.shapes = [parse_shape(s) for s in args.shapes.split(",")]
    sizes_text, link_sizes_text = args.sizes, args.link_sizes
    args.sizes = [parse_size(s) for s in args.sizes.split(",")]
    args.link_sizes = [parse_size(s) for s in args.link_sizes.split(",")]
    args.colls = args.colls.split(",")
    args.algos = args.algos.split(",")
    for c in args.colls:
        if c not in COLLS:
            die(f"unknown collective '{c}' (valid: {', '.join(COLLS)})")
    for a in args.algos:
        if a not in ALGOS + ["auto"]:
            die(f"unknown algorithm '{a}' (valid: {', '.join(ALGOS)}, auto)")
    if args.reps < 1 or args.control_reps < 0 or not 0 < args.tolerance < 1:
        die("--reps must be >= 1, --control-reps >= 0 and --tolerance in (0, 1)")
    rate_bytes_per_s(args.rate)
    if args.body:
        return body(args)
    info = os.path.join(args.build_dir, "coll_hccl", "tools", "hccl_info")
    if not os.access(info, os.X_OK):
        die(f"no hccl_info in {args.build_dir}: build first")
    if args.report_only:
        path = os.path.join(args.out, "params.json")
        if not os.path.exists(path):
            die(f"no params.json in {args.out} (not a directory validate_sim.py wrote)")
        with open(path) as f:
            saved = json.load(f)
        args.shapes = [parse_shape(s) for s in saved["shapes"].split(",")]
        args.sizes = [parse_size(s) for s in saved["sizes"].split(",")]
        args.colls, args.algos = saved["colls"].split(","), saved["algos"].split(",")
        args.rate, args.tuning = saved["rate"], saved.get("tuning")
        args.model = saved.get("model", args.model)
        doc = report(args)
        print(report_text(args, doc), end="")
        return 1 if doc["problems"] else 0
    if os.geteuid() != 0:
        print("validate_sim.py: skipped: needs root (network namespaces)")
        return SKIP
    probe = os.path.join(args.build_dir, "tests", "cluster", "time_probe")
    if not os.access(probe, os.X_OK):
        die(f"no time_probe in {args.build_dir}: build first")
    if not os.path.exists(os.path.join(args.component_dir, "mca_coll_hccl.so")):
        die(f"no mca_coll_hccl.so in {args.component_dir}")
    os.makedirs(args.out, exist_ok=True)
    for name in os.listdir(args.out):
        if re.fullmatch(r"(probe-.*\.log|link\.log|predict-.*\.json|results\.json|report\.md)",
                        name):
            os.remove(os.path.join(args.out, name))
    # The engine's model during the measurement: the base with the link at the nominal rate (the
    # fit replaces level1/2 afterwards; level0's choice under level0:NA does not depend on them).
    rate = rate_bytes_per_s(args.rate) * PAYLOAD_PER_FRAME
    write_json(os.path.join(args.out, "tuning-engine.json"), tuning_document(
        args.tuning, RATE_ALPHA, 1 / rate, f"validate_sim.py: the engine's model, {args.rate}"))
    write_json(os.path.join(args.out, "params.json"), {
        "shapes": shapes_text, "sizes": sizes_text, "colls": ",".join(args.colls),
        "algos": ",".join(args.algos), "rate": args.rate, "reps": args.reps,
        "link_sizes": link_sizes_text, "tuning": args.tuning,
        "model": args.model})
    git = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True).stdout.strip() or "unknown"
    t0 = time.time()
    with open(os.path.join(args.out, "machine.txt"), "w") as f:
        f.write(f"started {time.strftime('%Y-%m-%d %H:%M:%S %Z')}, host {os.uname().nodename}, "
                f"{os.cpu_count()} CPUs, load {load()}, git {git}\n")
    servers = max(max(s for s, _ in args.shapes), 2)
    slots = max(r for _, r in args.shapes)
    cmd = [CLUSTER, "--id", RIG_ID, "session", str(servers), "--slots", str(slots), "--rate",
           args.rate, "--", sys.executable, os.path.abspath(__file__), "--body", "--build-dir",
           args.build_dir, "--component-dir", args.component_dir, "--out", args.out, "--shapes",
           shapes_text, "--sizes", sizes_text, "--link-sizes", link_sizes_text, "--colls",
           ",".join(args.colls), "--algos", ",".join(args.algos), "--reps", str(args.reps),
           "--control-reps", str(args.control_reps), "--rate", args.rate, "--timeout", str(args.timeout)]
    status = subprocess.run(cmd).returncode
    if status in (2, SKIP) and not os.path.exists(os.path.join(args.out, "link.log")):
        print(f"validate_sim.py: the rig did not come up (cluster.sh exit {status})")
        return SKIP if status == SKIP else 1
    with open(os.path.join(args.out, "machine.txt"), "a") as f:
        f.write(f"ended {time.strftime('%H:%M:%S')}, load {load()}, "
                f"{(time.time() - t0) / 60:.1f} min measuring\n")
    doc = report(args)
    print(report_text(args, doc), end="")
    print(f"report: {os.path.join(args.out, 'report.md')}")
    return 1 if status != 0 or doc["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
