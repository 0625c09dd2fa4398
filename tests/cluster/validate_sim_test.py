#!/usr/bin/env python3
"""The logic of validate_sim.py, untimed and without the rig (meson test validate_sim_report).

Rebuilds the report of a saved sample (tests/cluster/data/sim_validation_sample: raw logs of a
2x2 run at 1 MiB, ring and AHC, at load 15-25) with --report-only, and checks it against what this test computes
itself from the same logs and from its own `hccl_info predict` runs:
  - every (collective, algorithm) of the sample has a row; measured = the median of the sample's
    times; predicted = hccl_info predict's simulated time over the nominal link (1 Gbit/s less
    framing); tuning-fit.json holds the link fit recomputed here (least squares of the relative
    error); ratio = predicted / measured;
    within = |ratio - 1| <= tolerance; the plan agrees with the engine's verbose lines;
  - the unshaped control's median per row, and the row link-bound iff unshaping at least
    halved its time; the wire bytes over the model's level1 busy time at the nominal rate;
  - report.md has the table header, one line per row with the same numbers, and the count line;
  - the fit recovers a known line, and holds alpha at 0 when the line would go negative;
  - a sample with a wrong element, a missing sample, or a plan the engine did not run is reported
    as a problem and exits 1.
  validate_sim_test.py --build-dir BUILD
"""
import argparse
import importlib.util
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "validate_sim.py")
SAMPLE = os.path.join(HERE, "data", "sim_validation_sample")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}")


def close(a, b, rel=1e-6):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-30)


def run_report(build, d):
    return subprocess.run([sys.executable, TOOL, "--report-only", d, "--build-dir", build],
                          capture_output=True, text=True)


def own_samples(path, field="time_per_call_s"):
    out = {}
    with open(path) as f:
        for line in f:
            m = re.match(rf"sample coll=(\S+) algo=(\S+) bytes=(\d+) .*{field}=([0-9.]+)", line)
            if m:
                out.setdefault((m.group(1), m.group(2), int(m.group(3))), []).append(
                    float(m.group(4)))
    return out


def own_fit(points):
    # Weighted least squares, weights 1/t^2, solved by Cramer's rule on the normal equations.
    w = [1 / (t * t) for _, t in points]
    a11, a12 = sum(w), sum(wi * m for wi, (m, _) in zip(w, points))
    a22 = sum(wi * m * m for wi, (m, _) in zip(w, points))
    b1 = sum(wi * t for wi, (_, t) in zip(w, points))
    b2 = sum(wi * m * t for wi, (m, t) in zip(w, points))
    det = a11 * a22 - a12 * a12
    alpha, beta = (a22 * b1 - a12 * b2) / det, (a11 * b2 - a12 * b1) / det
    if alpha >= 0:
        return alpha, beta
    # Held at alpha = 0: minimise sum (beta m / t - 1)^2, so beta = sum(x) / sum(x^2), x = m / t.
    x = [m / t for m, t in points]
    return 0.0, sum(x) / sum(v * v for v in x)


def test_sample(build, tmp):
    d = os.path.join(tmp, "sample")
    shutil.copytree(SAMPLE, d)
    res = run_report(build, d)
    check(res.returncode == 0, f"report of the sample exits 0 (got {res.returncode}: "
          f"{res.stderr.strip()} {res.stdout[-300:]})")
    with open(os.path.join(d, "results.json")) as f:
        doc = json.load(f)
    with open(os.path.join(d, "params.json")) as f:
        params = json.load(f)
    samples = own_samples(os.path.join(d, "probe-2x2.log"))
    tx_samples = own_samples(os.path.join(d, "probe-2x2.log"), "tx_max_per_call")
    unshaped = own_samples(os.path.join(d, "probe-2x2-unshaped.log"))
    bounds = {}
    link = own_samples(os.path.join(d, "link.log"))
    points = sorted((b, statistics.median(v)) for (_, _, b), v in link.items())
    alpha, beta = own_fit(points)
    check(alpha >= 0 and beta > 0, "the sample's link fit is a line with alpha >= 0")
    check(close(doc["link_fit"]["alpha_s"], alpha, 1e-9) or alpha == doc["link_fit"]["alpha_s"],
          "link alpha = own fit")
    check(close(doc["link_fit"]["beta_s_per_B"], beta, 1e-9), "link beta = own fit")
    with open(os.path.join(d, "tuning-fit.json")) as f:
        tuning = json.load(f)
    check(close(tuning["levels"]["level1"]["bandwidth_GBps"], 1e-9 / beta, 1e-9),
          "tuning-fit.json level1 bandwidth = the fitted link")
    # The nominal link: 1 Gbit/s less Ethernet/IP/TCP framing (1448 payload bytes per 1514).
    with open(os.path.join(d, "tuning-rate.json")) as f:
        tuning = json.load(f)
    for lvl in ("level1", "level2"):
        check(close(tuning["levels"][lvl]["bandwidth_GBps"], 0.125 * 1448 / 1514, 1e-9),
              f"tuning-rate.json {lvl} bandwidth = the nominal payload rate")
    check(doc["model"] == "rate", "the ratio is taken against the nominal link by default")
    rows = {(r["collective"], r["algorithm"], r["bytes"]): r for r in doc["rows"]}
    expect = [(c, a, b) for c in params["colls"].split(",") for a in params["algos"].split(",")
              for b in [1 << 20]]
    check(sorted(rows) == sorted(expect), f"one row per collective and algorithm: {sorted(rows)}")
    info = os.path.join(build, "coll_hccl", "tools", "hccl_info")
    coll_name = {"allreduce": "allreduce", "allgather": "allgather",
                 "reduce_scatter": "reducescatter"}
    with open(os.path.join(d, "report.md")) as f:
        report = f.read()
    check("| shape | collective | size | level1 | plan | measured ms | predicted ms | ratio | "
          "within | fitted link ms | link use | wire/model bytes | unshaped ms | bound |" in report, "report.md has the table header")
    for key, r in rows.items():
        coll, algo, size = key
        check(close(r["measured_s"], statistics.median(samples[key])), f"{key}: measured median")
        pred = subprocess.run(
            [info, "predict", "--shape", "2x2", "--coll", coll_name[coll], "--min", str(size),
             "--max", str(size), "--json", "--tuning", os.path.join(d, "tuning-rate.json"),
             "--mca", f"coll_hccl_algorithm=level0:NA;level1:{algo}"],
            capture_output=True, text=True)
        p = json.loads(pred.stdout)[0]
        check(close(r["predicted_s"], p["simulated_s"]), f"{key}: predicted = hccl_info predict")
        check(r["plan"] == p["plan"] and r["plan_matches"], f"{key}: plan {r['plan']} ran")
        tx = statistics.median(tx_samples[key])
        check(close(r["tx_ratio"], tx / (p["busy_s"][1] * 125e6 * 1448 / 1514)),
              f"{key}: wire bytes over the model's level1 busy time at the nominal rate")
        free = statistics.median(unshaped[key])
        check(close(r["unshaped_s"], free), f"{key}: unshaped median")
        bound = "link" if free <= 0.5 * statistics.median(samples[key]) else "CPU"
        check(r["bound"] == bound, f"{key}: bound {r['bound']}, expected {bound}")
        bounds[bound] = bounds.get(bound, 0) + 1
        ratio = p["simulated_s"] / statistics.median(samples[key])
        check(close(r["ratio"], ratio), f"{key}: ratio = predicted / measured")
        check(r["within"] == (abs(ratio - 1) <= doc["tolerance"]), f"{key}: within")
        line = (f"| 2x2 | {coll} | 1 MiB | {algo} | {p['plan']} | "
                f"{r['measured_s'] * 1e3:.1f} (")
        check(line in report, f"{key}: report line starts '{line}'")
        check(f"| {ratio:.2f} | {'yes' if r['within'] else 'NO'} |" in report,
              f"{key}: report line has ratio {ratio:.2f} and within")
    # The sample (measured at load 15-25) holds both kinds, so the test sees each decision.
    check(bounds.get("link", 0) >= 1 and bounds.get("CPU", 0) >= 1, f"both bounds: {bounds}")
    link = [r for r in rows.values() if r["bound"] == "link"]
    check(f"link-bound rows (the only ones that test the link model): {len(link)} of "
          f"{len(rows)}, within {sum(r['within'] for r in link)}" in report,
          "report's link-bound count")
    n_in = sum(r["within"] for r in rows.values())
    check(f"Within 30%: {n_in} of {len(rows)} rows." in report, "report's count line")


def test_problems(build, tmp):
    # A wrong element, a missing sample and a level0 the engine did not run: problems, exit 1.
    d = os.path.join(tmp, "spoiled")
    shutil.copytree(SAMPLE, d)
    log = os.path.join(d, "probe-2x2.log")
    with open(log) as f:
        text = f.read()
    text = re.sub(r"check coll=allgather algo=ring bytes=1048576 wrong=0",
                  "check coll=allgather algo=ring bytes=1048576 wrong=3", text)
    text = "\n".join(line for line in text.split("\n")
                     if not line.startswith("sample coll=reduce_scatter algo=AHC"))
    text = re.sub(r"(MPI_Allreduce on MPI COMMUNICATOR.*?level0 )ring( \(.*level1 ring \(forced)",
                  r"\1fullmesh\2", text)
    with open(log, "w") as f:
        f.write(text)
    res = run_report(build, d)
    check(res.returncode == 1, f"a spoiled sample exits 1 (got {res.returncode})")
    for what in ("allgather ring 1 MiB: 3 wrong elements", "reduce_scatter AHC 1 MiB: no sample",
                 "allreduce ring 1 MiB: engine level0 ['fullmesh'], predicted plan"):
        check(what in res.stdout, f"spoiled sample reports '{what}'")


def test_fit():
    spec = importlib.util.spec_from_file_location("validate_sim", TOOL)
    vs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(vs)
    pts = [(m, 1e-4 + m * 1e-8) for m in (1 << 20, 4 << 20, 16 << 20)]
    a, b = vs.fit_line(pts)
    check(close(a, 1e-4, 1e-6) and close(b, 1e-8, 1e-6), f"fit recovers a known line ({a}, {b})")
    # A line that would cross zero below the smallest size: alpha held at 0.
    a, b = vs.fit_line([(1 << 20, 0.004), (4 << 20, 0.040)])
    check(a == 0 and b > 0, f"fit holds alpha at 0 ({a}, {b})")
    check(vs.size_text(1 << 20) == "1 MiB" and vs.parse_size("16M") == 16 << 20, "sizes")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    args = ap.parse_args()
    build = os.path.abspath(args.build_dir)
    with tempfile.TemporaryDirectory() as tmp:
        test_fit()
        test_sample(build, tmp)
        test_problems(build, tmp)
    print("PASS" if not failures else f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
