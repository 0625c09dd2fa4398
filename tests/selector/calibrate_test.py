#!/usr/bin/env python3
"""hccl_calibrate end to end: it measures this machine over UCX, writes a tuning file that loads
cleanly with plausible numbers, and the selector's decision table then runs on that file. Speed
itself is never asserted: only signs and orders of magnitude. Whether level0 came out faster than
level1 is reported, not asserted: on a loaded machine either measurement can be spoiled, and a
timing relation is a benchmark's finding, not a test's."""
import json
import os
import subprocess
import sys
import tempfile
import time

calibrate, info = sys.argv[1], sys.argv[2]
env = {k: v for k, v in os.environ.items() if not k.startswith(("HCCL_", "COLL_HCCL_", "UCX_"))}


def run(exe, *args, ok=True, timeout=50):
    p = subprocess.run([exe, *args], capture_output=True, text=True, env=env, timeout=timeout)
    if ok and p.returncode != 0:
        sys.exit(f"{os.path.basename(exe)} {' '.join(args)} failed ({p.returncode}):\n{p.stderr}")
    return p


def check(cond, what):
    if not cond:
        sys.exit("FAIL: " + what)


def step_time(level, nbytes):
    return level["alpha_us"] * 1e-6 + nbytes / (level["bandwidth_GBps"] * 1e9)


def faster(l0, l1):
    """level0 beats level1 on latency and on a 64 KiB step, or why not."""
    if not l0["alpha_us"] < l1["alpha_us"]:
        return f"level0 alpha {l0['alpha_us']} us vs level1 {l1['alpha_us']} us"
    if not step_time(l0, 65536) < step_time(l1, 65536):
        return f"64 KiB step: level0 {step_time(l0, 65536)} s vs level1 {step_time(l1, 65536)} s"
    return ""


with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "tuning.json")
    # Shared memory should come out faster than the network. Other processes on a shared 2-core
    # machine can spoil one measurement, so a second run is tried; everything else is checked on
    # every run.
    start = time.monotonic()
    for attempt in (1, 2):
        p = run(calibrate, "--quick", "--timeout", "30", "--output", path, timeout=40)
        print(p.stderr)
        with open(path) as f:
            doc = json.load(f)

        # Every level measured over UCX, numbers positive and within sane bounds.
        check(doc["version"] == 1, "version")
        check("UCX" in doc["description"], "measured over UCX: " + doc["description"])
        levels = doc["levels"]
        check(set(levels) == {"level0", "level1", "level2"}, f"levels: {sorted(levels)}")
        for name, lv in levels.items():
            # 0 is a fit held at zero (hccl_calibrate never writes a negative latency): on a
            # loaded machine the small sizes can come out slower than the line through the
            # large ones (seen in the whole suite with eight helpers running: level0 alpha 0.0).
            check(0 <= lv["alpha_us"] < 1e5, f"{name} alpha_us {lv['alpha_us']}")
            check(1e-3 < lv["bandwidth_GBps"] < 1e4, f"{name} bandwidth_GBps {lv['bandwidth_GBps']}")
        check(1 <= levels["level0"]["links"] <= 2, f"level0 links {levels['level0'].get('links')}")
        check(levels["level1"] == levels["level2"], "level2 is the RoCE class, like level1")
        # The shared-memory link, with its block round measured through the executor (two
        # ranks' Reduce by one round and by two) when it could be.
        shm = doc.get("link_classes", {}).get("shm")
        if shm is not None and "step_us" in shm:
            check(0 <= shm["step_us"] < 1e5, f"shm step_us {shm['step_us']}")
            check(1024 <= shm["step_from_bytes"] <= 1 << 20,
                  f"shm step_from_bytes {shm['step_from_bytes']}")
            check("rounds:" in p.stderr and "-> step_us" in p.stderr,
                  "the report shows the rounds behind step_us:\n" + p.stderr)
            check("memory_GBps" not in shm and "pushes: not measured (--quick)" in p.stderr,
                  "--quick leaves memory_GBps to the defaults and says so:\n" + p.stderr)
            # Nor the paths of copies and streams: the defaults, and the set-up's guess from
            # the copy speed (fast_single_copy), stay in force.
            check("single_copy" not in shm and "fast_single_copy" not in shm
                  and "stream_from_bytes" not in shm
                  and "single copy: not measured (--quick)" in p.stderr,
                  "--quick leaves single_copy and fast_single_copy alone and says so:\n"
                  + p.stderr)
        gamma = doc["gamma"]
        check(gamma["fp32"]["sum"] > 0 and "*" in gamma["*"], f"gamma: {gamma}")
        for t, ops in gamma.items():
            for op, v in ops.items():
                check(0.01 < v < 1e4, f"gamma {t}.{op} = {v}")
        why = faster(levels["level0"], levels["level1"])
        if not why:
            break
        print(f"attempt {attempt}: {why}")
        if time.monotonic() - start > 25:
            break
    if why:
        print(f"NOTE: level0 did not measure faster than level1 on this machine ({why}); "
              "a loaded machine spoils calibration, rerun hccl_calibrate when it is quiet")

    # The file loads without warnings, and the model it gives is the file's.
    p = run(info, "tuning", "--tuning", path)
    check("warning" not in p.stderr, "loads with warnings:\n" + p.stderr)
    model = json.loads(p.stdout)
    check(path in model["description"], "model source names the file: " + model["description"])
    for name in levels:
        for key in ("alpha_us", "bandwidth_GBps"):
            got, want = model["levels"][name][key], levels[name][key]
            check(abs(got - want) <= 1e-9 * want, f"{name}.{key}: model {got}, file {want}")
    check(abs(model["gamma"]["fp32"]["sum"] - gamma["fp32"]["sum"]) <= 1e-9 * gamma["fp32"]["sum"],
          "fp32 sum gamma")

    # The decision table is built from the file: it says so, and its predictions change.
    text = run(info, "table", "--tuning", path, "--shape", "4x8").stdout
    check(f"cost model = {path} (" in text, "table names the file as its cost model:\n" + text)
    tuned = json.loads(run(info, "table", "--tuning", path, "--shape", "4x8", "--json").stdout)
    default = json.loads(run(info, "table", "--shape", "4x8", "--json").stdout)
    check(len(tuned) == len(default) and all(r["error"] == "" and r["predicted_s"] > 0 for r in tuned),
          "every row decided")
    check(any(a["predicted_s"] != b["predicted_s"] for a, b in zip(tuned, default)),
          "predictions from the tuning file differ from the built-in defaults")

    # The in-process fallback: level0 and gamma only, level1/2 left to the defaults.
    small = os.path.join(tmp, "inproc.json")
    run(calibrate, "--inprocess", "--quick", "--max-size", "64K", "--gamma-size", "64K",
        "--output", small, "--description", "in-process check")
    with open(small) as f:
        doc = json.load(f)
    check(doc["description"] == "in-process check", "description option")
    check(set(doc["levels"]) == {"level0"}, f"in-process levels: {sorted(doc['levels'])}")
    check(doc["levels"]["level0"]["alpha_us"] > 0, "in-process alpha")
    check("warning" not in run(info, "tuning", "--tuning", small).stderr, "in-process file loads")

    # Bad options: named, with what is valid.
    p = run(calibrate, "--max-size", "12Q", ok=False)
    check(p.returncode != 0 and "12Q" in p.stderr and "B, K, M, G" in p.stderr, p.stderr)
    p = run(calibrate, "--max-size", "100", ok=False)
    check(p.returncode != 0 and "[1K, 1G]" in p.stderr, p.stderr)
    p = run(calibrate, "--repeat", "0", ok=False)
    check(p.returncode != 0 and "--repeat" in p.stderr, p.stderr)
    p = run(calibrate, "--quick", "--output", "/nonexistent-dir/t.json", ok=False)
    check(p.returncode != 0 and "/nonexistent-dir" in p.stderr, p.stderr)

print("PASS hccl_calibrate")
