#!/usr/bin/env python3
"""Writes the markdown report of an evidence.sh run (its --out directory) to stdout.

  evidence_report.py DIR [--servers S --ppn L] [--minutes M]

Reads bench-CFG-vs-BASE-RANGE.json/.log (hccl_bench), traffic-WHAT-SIZE.log (traffic_probe),
machine.txt, progress.log and qdisc-stats.txt. Predicted bytes per server come from the formulas
in cluster_mpi.py (predicted_tx), derived from algorithms/hierarchical.hpp and pipeline.cpp.
"""
import argparse
import glob
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_mpi import Layout, predicted_tx  # noqa: E402

COLLS = ["allreduce", "allgather", "reduce_scatter"]
MPI_NAME = {"MPI_Allreduce": "allreduce", "MPI_Allgather": "allgather",
            "MPI_Reduce_scatter_block": "reduce_scatter"}
CONFIG_ORDER = ["auto", "ring", "H-D_R", "NHR", "NB", "pipeline", "AHC", "NHR_V1"]


def size_text(n):
    for unit, div in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    return f"{n} B"


def load_bench(d):
    """(cfg, base) -> list of result rows (from both size ranges)."""
    runs = {}
    for path in sorted(glob.glob(os.path.join(d, "bench-*-vs-*-*.json"))):
        m = re.match(r"bench-(.+)-vs-(tuned|han)-(small|large)\.json$", os.path.basename(path))
        if not m:
            continue
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, ValueError):
            continue  # a run that did not finish: progress.log names it
        runs.setdefault((m.group(1), m.group(2)), []).extend(data["results"])
    return runs


def decisions_in(log_path):
    """(coll, bytes) -> {short decision: count} from rank 0's coll_hccl_verbose 1 lines."""
    out = {}
    if not os.path.isfile(log_path):
        return out
    pat = re.compile(r"^coll:hccl: (MPI_\w+) on .*?(\d+) bytes(?: gathered| in)? -> hccl: (.*)$")
    with open(log_path, errors="replace") as f:
        for line in f:
            m = pat.match(line.strip())
            if not m or m.group(1) not in MPI_NAME:
                continue
            levels = re.findall(r"level(\d) (\S+) \((forced|model|fallback)", m.group(3))
            short = " + ".join(f"L{lv} {a}" + (" (fallback)" if how == "fallback" else "")
                               for lv, a, how in levels)
            key = (MPI_NAME[m.group(1)], int(m.group(2)))
            out.setdefault(key, {}).setdefault(short, 0)
            out[key][short] += 1
    return out


def pair_avgs(results, coll, size, side):
    return [p["avg_us"] for r in results if r["collective"] == coll and r["bytes"] == size
            for p in r[side]["pairs"]]


def pair_ratios(results, coll, size):
    return [x for r in results if r["collective"] == coll and r["bytes"] == size
            for x in r["ratio_b_over_a"]["per_pair"]]


def fmt_ms(us_list):
    return f"{statistics.median(us_list) / 1000:.2f}" if us_list else "-"


def fmt_ratio(ratios):
    if not ratios:
        return "-"
    return f"{statistics.median(ratios):.2f} [{min(ratios):.2f}-{max(ratios):.2f}]"


def bench_section(d, runs):
    lines = []
    configs = sorted({c for c, _ in runs}, key=lambda c: CONFIG_ORDER.index(c)
                     if c in CONFIG_ORDER else 99)
    bases = [b for b in ("tuned", "han") if any(k[1] == b for k in runs)]
    wrong = sum((r["a"]["wrong"] or 0) + (r["b"]["wrong"] or 0) for rs in runs.values()
                for r in rs)
    auto_dec = {}
    for base in bases:
        for rng in ("small", "large"):
            for k, v in decisions_in(os.path.join(d, f"bench-auto-vs-{base}-{rng}.log")).items():
                for short, n in v.items():
                    auto_dec.setdefault(k, {}).setdefault(short, 0)
                    auto_dec[k][short] += n
    forced_off = []
    for cfg in configs:
        if cfg == "auto":
            continue
        for base in bases:
            for rng in ("small", "large"):
                for (coll, size), v in decisions_in(
                        os.path.join(d, f"bench-{cfg}-vs-{base}-{rng}.log")).items():
                    want = "L1 pipeline" if cfg == "pipeline" else f"L1 {cfg}"
                    for short, n in v.items():
                        if want not in short or "fallback" in short:
                            forced_off.append(f"{cfg} vs {base}: {coll} {size_text(size)}: "
                                              f"{short} x{n}")
    lines.append(f"Wrong values over every run and side: {wrong}.")
    if forced_off:
        lines.append("Calls of a forced run that did not use the forced level-1 algorithm: " +
                     "; ".join(forced_off[:10]))
    else:
        lines.append("Every call of every forced run used the forced level-1 algorithm "
                     "(rank 0's coll_hccl_verbose 1 lines).")
    lines.append("")
    for coll in COLLS:
        sizes = sorted({r["bytes"] for rs in runs.values() for r in rs
                        if r["collective"] == coll})
        if not sizes:
            continue
        lines.append(f"### {coll}")
        lines.append("")
        lines.append("Median time per call in ms (A sides over both of their runs; tuned and "
                     "HAN over every run they were B in), and what the automatic choice ran:")
        lines.append("")
        head = ["size"] + [b if b != "han" else "HAN" for b in bases] + \
            [f"A {c}" for c in configs] + ["auto ran"]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
        for size in sizes:
            row = [size_text(size)]
            for b in bases:
                us = [x for (c, bb), rs in runs.items() if bb == b
                      for x in pair_avgs(rs, coll, size, "b")]
                row.append(fmt_ms(us))
            for c in configs:
                us = [x for (cc, _), rs in runs.items() if cc == c
                      for x in pair_avgs(rs, coll, size, "a")]
                row.append(fmt_ms(us))
            dec = auto_dec.get((coll, size), {})
            row.append(", ".join(f"{k}" + (f" ({n})" if len(dec) > 1 else "")
                                 for k, n in sorted(dec.items(), key=lambda x: -x[1])) or "-")
            lines.append("| " + " | ".join(row) + " |")
        lines.append("")
        for b in bases:
            label = "HAN" if b == "han" else "tuned"
            if not any(pair_ratios(runs.get((c, b), []), coll, size) for c in configs
                       for size in sizes):
                lines.append(f"No {label} runs of {coll}" + (
                    " (HAN has no reduce_scatter: Open MPI would run tuned's, measured above)."
                    if b == "han" and coll == "reduce_scatter" else "."))
                lines.append("")
                continue
            lines.append(f"Ratio time {label} / time coll_hccl (> 1: coll_hccl faster), median "
                         f"over pairs [lowest-highest pair]:")
            lines.append("")
            head = ["size"] + configs
            lines.append("| " + " | ".join(head) + " |")
            lines.append("|" + "---|" * len(head))
            for size in sizes:
                row = [size_text(size)]
                for c in configs:
                    row.append(fmt_ratio(pair_ratios(runs.get((c, b), []), coll, size)))
                lines.append("| " + " | ".join(row) + " |")
            lines.append("")
    return lines


def traffic_section(d, layout):
    lines = []
    rows = []
    for path in sorted(glob.glob(os.path.join(d, "traffic-*.log"))):
        m = re.match(r"traffic-(.+)-(\d+[KMG]?)\.log$", os.path.basename(path))
        if not m:
            continue
        what = m.group(1)
        with open(path, errors="replace") as f:
            text = f.read()
        dec = decisions_in(path)
        for coll in COLLS:
            per = re.findall(rf"^traffic coll={coll} bytes=(\d+) calls=(\d+) server=ns(\d+) "
                             rf"ranks=\d+ tx_bytes=\d+ rx_bytes=\d+ tx_per_call=(\d+) "
                             rf"rx_per_call=(\d+)$", text, re.M)
            summary = re.search(rf"^traffic coll={coll} .*time_per_call_s=([\d.]+) "
                                rf"check=(\w+)", text, re.M)
            if not per:
                rows.append((coll, 0, what, "FAILED (no counters, see log)", [], None, None, ""))
                continue
            n = int(per[0][0])
            sent = [int(x[3]) for x in sorted(per, key=lambda x: int(x[2]))]
            ran = ", ".join(dec.get((coll, n), {}).keys()) or \
                {"tuned": "Open MPI tuned", "han": "Open MPI HAN"}.get(what, "?")
            algo = None
            if what not in ("tuned", "han"):
                algo = "pipeline" if "L1 pipeline" in ran else "AHC" if "L1 AHC" in ran else "ring"
            pred = predicted_tx(layout, algo, coll, n) \
                if algo and layout.symmetric else None
            t = f"{float(summary.group(1)) * 1000:.1f}" if summary else "-"
            check = summary.group(2) if summary else "?"
            rows.append((coll, n, what, ran, sent, pred, t, check))
    order = {c: i for i, c in enumerate(CONFIG_ORDER + ["tuned", "han"])}
    rows.sort(key=lambda r: (COLLS.index(r[0]), r[1], order.get(r[2], 99)))
    S, L = layout.servers, layout.slots[0]
    lines.append(f"Formulas (S = {S} servers, L = {L} ranks per server, n = size): hierarchical "
                 f"allreduce 2(S-1)/S n = {2 * (S - 1) / S:g} n; hierarchical allgather and "
                 f"reduce_scatter L(S-1)/S n = {L * (S - 1) / S:g} n (level 1 moves whole "
                 f"servers' blocks among same-index ranks); pipeline and AHC allgather and "
                 f"reduce_scatter (S-1)/S n = {(S - 1) / S:g} n, their allreduce 2(S-1)/S n.")
    lines.append("")
    head = ["collective", "size", "config", "ran"] + [f"ns{k} sent/call" for k in range(S)] + \
        ["predicted", "sent / predicted", "ms/call", "results"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for coll, n, what, ran, sent, pred, t, check in rows:
        cells = [coll, size_text(n), what, ran] + [f"{x:,}" for x in sent] + \
            [""] * (S - len(sent))
        if pred:
            cells += [f"{pred[0]:,.0f}",
                      " / ".join(f"{x / p:.4f}" for x, p in zip(sent, pred))]
        else:
            cells += ["-", " / ".join(f"{x / n:.3f} n" for x in sent) if n else "-"]
        cells += [t or "-", check]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("For tuned and HAN the last-but-one column gives the bytes sent as a multiple "
                 "of n.")
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--servers", type=int, default=2)
    ap.add_argument("--ppn", type=int, default=2)
    ap.add_argument("--minutes", type=int)
    a = ap.parse_args()
    layout = Layout(f"{a.servers}x{a.ppn}")
    d = a.dir
    out = [f"# coll_hccl on the emulated cluster: {a.servers} servers x {a.ppn} ranks", ""]

    def read(name):
        p = os.path.join(d, name)
        return open(p, errors="replace").read() if os.path.isfile(p) else ""
    machine = read("machine.txt")
    out.append("```")
    out.append(machine.strip())
    out.append("```")
    loads = [float(x) for x in re.findall(r"\(load ([\d.]+)", read("progress.log"))]
    if loads:
        out.append(f"1-minute load average at the start of each run: min {min(loads):.2f}, "
                   f"median {statistics.median(loads):.2f}, max {max(loads):.2f} "
                   f"(2 CPUs; other work on the machine shows as load above ~{a.servers * a.ppn})."
                   + (f" Whole evidence run: about {a.minutes} min." if a.minutes else ""))
    drops = re.findall(r"dropped (\d+)", read("qdisc-stats.txt"))
    if drops:
        out.append(f"tbf drops on the servers' uplinks over the whole run: "
                   f"{', '.join(drops)} packets.")
    failed = [l for l in read("progress.log").splitlines() if "FAILED" in l]
    if failed:
        out.append("Runs that failed: " + "; ".join(failed))
    out.append("")
    out.append("## hccl_bench: coll_hccl (A) against Open MPI tuned and HAN (B)")
    out.append("")
    out.extend(bench_section(d, load_bench(d)))
    out.append("## Bytes each server sent across its link per call (eth0 tx_bytes)")
    out.append("")
    out.extend(traffic_section(d, layout))
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
