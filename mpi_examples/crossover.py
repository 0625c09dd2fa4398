#!/usr/bin/python3
"""Crossover plots from the simulator (issue 14 item 5): for each collective and server count,
`hccl_info predict --json` with each level1 algorithm forced (coll_hccl_algorithm=level1:X),
the simulated time against the size, one PNG per collective and server count, and a text table
of the winner per size (crossover.txt) and every curve's time per size (crossover_times.txt).

  mpi_examples/crossover.py build/coll_hccl/tools/hccl_info OUTDIR [--servers 8,64,512,4096]
      [--colls allreduce,allgather,reducescatter] [--min 1K] [--max 1G] [--factor 4]
      [--algos ring,H-D_R,NHR,NB,pipeline,AHC]

Servers have 8 ranks; a size predict refuses there (the servers are not alike, as for H-D_R/NHR
off powers of two, or some ranks' blocks are empty, as for a small AllReduce, and 8 ranks per
server are above predict's whole-simulation limit of 4096 ranks) is left out of that curve;
an algorithm refused at every size runs on servers of 1 rank instead, its curve labelled "(x1)"
and left out of the winner table. A forced algorithm
whose plan did not run it (it does not serve the collective) is left out. Needs matplotlib for the
system python3: the Debian package python3-matplotlib."""
import argparse
import json
import os
import subprocess
import sys

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit("crossover.py needs matplotlib: apt-get install python3-matplotlib "
             "(Debian package python3-matplotlib), then run it with /usr/bin/python3")

ALGOS = ["ring", "H-D_R", "NHR", "NB", "pipeline", "AHC"]


def predict(exe, shape, coll, algo, a):
    p = subprocess.run([exe, "predict", "--shape", shape, "--coll", coll, "--min", a.min,
                        "--max", a.max, "--factor", str(a.factor), "--json",
                        "--mca", f"coll_hccl_algorithm=level1:{algo}"],
                       capture_output=True, text=True, timeout=3600)
    if p.returncode == 2 and "bad_alloc" not in p.stderr:
        sys.exit(f"hccl_info predict {shape} {coll} {algo}: {p.stderr}")
    try:  # exit 1 with rows: some were refused or failed, each saying why
        return json.loads(p.stdout)
    except json.JSONDecodeError:  # e.g. out of memory under a ulimit: no curve, not no plot
        print(f"hccl_info predict {shape} {coll} {algo} failed ({p.returncode}): "
              f"{p.stderr.strip()[-300:]}", file=sys.stderr)
        return []


def ran(algo, plan):
    # The plan names the algorithm it ran: "per-level[fullmesh,H-D_R,ring]", "AHC[...]".
    return algo in plan.replace("[", ",").replace("]", ",").replace(";", ",").split(",")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("hccl_info")
    ap.add_argument("outdir")
    ap.add_argument("--servers", default="8,64,512,4096")
    ap.add_argument("--colls", default="allreduce,allgather,reducescatter")
    ap.add_argument("--min", default="1K")
    ap.add_argument("--max", default="1G")
    ap.add_argument("--factor", type=int, default=4)
    ap.add_argument("--algos", default=",".join(ALGOS),
                    help="level1 algorithms to force (one server simulated where servers are "
                         "alike: every one of them over a power of two of servers)")
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    table = []
    times = []  # every curve's time at every size: ties the winner table cannot show
    for coll in a.colls.split(","):
        for servers in [int(s) for s in a.servers.split(",")]:
            curves = {}  # label -> [(bytes, seconds)]
            for algo in a.algos.split(","):
                rows = predict(a.hccl_info, f"{servers}x8", coll, algo, a)
                pts = [(r["bytes"], r["simulated_s"]) for r in rows
                       if r["error"] == "" and ran(algo, r["plan"])]
                refused = [r["bytes"] for r in rows if r["error"].startswith("refused")]
                if pts:
                    curves[algo] = pts
                print(f"{coll} {servers} servers {algo}: {len(pts)} sizes"
                      + (f", {len(refused)} refused" if refused else ""), file=sys.stderr)
                # Sizes the simulator refused on x8 (fewer elements than ranks, or servers that
                # differ) are left out of the x8 curve; an algorithm with no x8 size at all gets a
                # curve on servers of 1 rank, which is another cluster and competes with no one.
                if refused and not pts:
                    rows = predict(a.hccl_info, f"{servers}x1", coll, algo, a)
                    pts = [(r["bytes"], r["simulated_s"]) for r in rows
                           if r["error"] == "" and ran(algo, r["plan"])]
                    if pts:
                        curves[f"{algo} (x1)"] = pts
                    print(f"{coll} {servers} servers {algo} (x1): {len(pts)} sizes",
                          file=sys.stderr)
            fig, ax = plt.subplots(figsize=(8, 5))
            for label, pts in curves.items():
                ax.loglog([b for b, _ in pts], [t for _, t in pts], marker="o", label=label)
            ax.set_xlabel("bytes per rank (MPI count x datatype)")
            ax.set_ylabel("simulated time (s)")
            ax.set_title(f"{coll}, {servers} servers x 8 ranks, level1 forced")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend()
            fig.savefig(os.path.join(a.outdir, f"{coll}_{servers}.png"), dpi=100)
            plt.close(fig)
            sizes = sorted({b for pts in curves.values() for b, _ in pts})
            for b in sizes:
                times.append(f"{coll:<14} {servers:>5} {b:>11} " + " ".join(
                    f"{l}={dict(p)[b]:.4e}" for l, p in curves.items() if b in dict(p)))
                # Only the x8 curves compete: x1 is another cluster.
                cand = {l: dict(p)[b] for l, p in curves.items() if "(x1)" not in l and b in dict(p)}
                if cand:
                    w = min(cand, key=cand.get)
                    others = sorted(cand.items(), key=lambda kv: kv[1])[1:2]
                    second = f"{others[0][0]} x{others[0][1] / cand[w]:.2f}" if others else "-"
                    table.append(f"{coll:<14} {servers:>5} {b:>11} {w:<9} {cand[w]:.3e}  {second}")
    with open(os.path.join(a.outdir, "crossover.txt"), "w") as f:
        f.write(f"{'collective':<14} {'srv':>5} {'bytes':>11} {'winner':<9} {'time_s':<9}  "
                "runner-up (x slower)\n")
        f.write("\n".join(table) + "\n")
    with open(os.path.join(a.outdir, "crossover_times.txt"), "w") as f:
        f.write("collective     srv       bytes  simulated seconds per curve\n")
        f.write("\n".join(times) + "\n")
    print(open(os.path.join(a.outdir, "crossover.txt")).read())


if __name__ == "__main__":
    main()
