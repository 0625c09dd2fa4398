#!/usr/bin/env python3
"""coll_hccl's MPI tests on the emulated cluster (meson suite 'cluster').

One layout per invocation: the rig (cluster.sh session) comes up with one server per network
namespace, a list of real mpirun jobs runs inside it, and the rig is torn down whatever happens.
Each job loads the freshly built component from its private directory and must:
  - exit 0 with the program's own PASS line (results checked by the program itself);
  - on every rank, report the hierarchy the namespaces make ("2 servers x 2 ranks -> ...", or
    "servers of 1+3 ranks -> ... flat over level1 links" for unequal servers);
  - run the expected MPI functions through the engine, each call's decision matching the job's
    expectation (hierarchical "level0 X (...), level1 Y (...)", forced algorithms "(forced",
    fallbacks "(fallback: ...)");
  - where asked, show placement and transports: each rank's UCX lines name the server the
    mapping put it on; per process, UCX's endpoint configurations (UCX_LOG_LEVEL=info "ep_cfg"
    lines) are shared memory (sysv/posix/cma) only or tcp/eth0 only, shared memory present iff the
    process's server holds another rank, tcp/eth0 iff there are other servers (on unequal servers,
    where the schedule is flat, a subset per process and the whole set per server); and
    coll_hccl's own transport report names the same classes;
  - traffic jobs: the bytes each server's eth0 sent per call (traffic_probe) match the formula of
    the algorithm that ran, within protocol overhead.

  cluster_mpi.py --layout 2x2|4x2|1,3 --component-dir DIR --programs DIR --probe PATH [--list]
                 [--only REGEX]
Exit codes follow meson: 0 pass, 1 fail, 77 skipped (not root, no namespaces, tools missing).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
CLUSTER = os.path.join(HERE, "cluster.sh")
SHM_TLS = re.compile(r"\b(sysv|posix|cma|xpmem|knem)/")
LEVEL1_ALGOS = ["ring", "H-D_R", "NHR", "NB", "pipeline"]
LEVEL0_ALGOS = ["ring", "H-D_R", "fullmesh", "NHR", "NB"]
# traffic_rooted's algorithms: hierarchical Broadcast and Reduce with ring at both levels, AllToAll
# with fullmesh inside the servers and pairwise between them.
ROOTED_TRAFFIC_ALGO = ("broadcast=level0:ring;level1:ring/reduce=level0:ring;level1:ring/"
                       "alltoall=level0:fullmesh;level1:pairwise")
ROOTED_TRAFFIC_DECISIONS = (r"_(Bcast|Reduce) on .*-> hccl: level0 ring \(forced[^)]*\), "
                            r"level1 ring \(forced|_Alltoall on .*-> hccl: level0 fullmesh "
                            r"\(forced[^)]*\), level1 pairwise \(forced")
ALL_CALLS = ["MPI_Allreduce", "MPI_Iallreduce", "MPI_Reduce_scatter_block",
             "MPI_Ireduce_scatter_block", "MPI_Reduce_scatter", "MPI_Ireduce_scatter",
             "MPI_Allgather", "MPI_Iallgather"]


class Layout:
    """Ranks per server, e.g. [2, 2] or [1, 3]; ranks fill servers in order (by slot)."""

    def __init__(self, spec):
        m = re.fullmatch(r"(\d+)x(\d+)", spec)
        if m:
            self.slots = [int(m.group(2))] * int(m.group(1))
        elif re.fullmatch(r"\d+(,\d+)+", spec):
            self.slots = [int(s) for s in spec.split(",")]
        else:
            raise ValueError(f"bad layout '{spec}': use SxL (e.g. 2x2) or K0,K1,... (e.g. 1,3)")
        if min(self.slots) < 1:
            raise ValueError(f"bad layout '{spec}': every server needs a rank")
        self.spec = spec
        self.servers = len(self.slots)
        self.np = sum(self.slots)
        self.symmetric = len(set(self.slots)) == 1

    def name(self):
        return self.spec.replace(",", "p")

    def server_of_rank(self, interleaved=False):
        """Server of each rank for by-slot mapping, or round-robin over servers (--map-by node,
        symmetric layouts only)."""
        if interleaved:
            return [r % self.servers for r in range(self.np)]
        return [s for s, k in enumerate(self.slots) for _ in range(k)]

    def hierarchy_text(self, interleaved=False):
        """The hierarchy coll_hccl must report (its Hierarchy/Layout description)."""
        if self.symmetric:
            s, l = self.servers, self.slots[0]
            order = ", round-robin ranks" if interleaved else ""
            return (f"{s} servers x {l} ranks{order} -> {self.np} ranks: L0 {l} per server, "
                    f"L1 {s} servers")
        return (f"servers of {'+'.join(map(str, self.slots))} ranks -> {self.np} ranks flat over "
                f"level1 links (groups of unequal size)")


def decision_regex(level0=None, level1=None, flat=False):
    """A regex for the decision part of a call line. level0/level1: (algo, how) where how is
    'forced', 'fallback' or 'any'; None: any algorithm chosen any way."""
    def part(level, spec):
        if spec is None:
            return rf"level{level} \S+ \((model|forced|fallback)[^)]*\)"
        algo, how = spec
        name = re.escape(algo) if algo else r"\S+"
        why = {"forced": r"\(forced", "fallback": r"\(fallback", "any": r"\("}[how]
        return rf"level{level} {name} {why}"
    if flat:
        return r"-> hccl: " + part(1, level1) + r"(?!.*level0)"
    return r"-> hccl: " + part(0, level0) + r".*, " + part(1, level1)


def rank_local_regex():
    """Gatherv and Scatterv, whose non-roots know only their own counts: on several servers the
    outermost level's algorithm runs flat over every rank, and the line says why."""
    return (r"_I?(Gatherv|Scatterv)(_init)? on .*-> hccl: level1 \S+ \([^)]*flat over all ranks: "
            r"a rank-local")


def uneven_regex(level0=None):
    """Decisions on servers of unequal size: AHC (with its intra-server level0 part), or the
    outermost level's algorithm flat over all ranks when the model or a constraint says so."""
    return (r"(" + decision_regex(level0, ("AHC", "any")) + r"|" + decision_regex(flat=True)
            + r")")


class Job:
    def __init__(self, name, program, args=(), env=None, decisions=None, calls=(),
                 ucx_log=False, interleaved=False, pml="ob1", traffic=None, all_taken=True,
                 timeout=120):
        self.name = name
        self.program = program
        self.args = list(args)
        self.env = dict(env or {})
        self.decisions = decisions  # regex every taken call on MPI_COMM_WORLD must match
        self.calls = list(calls)  # MPI functions that must appear taken on MPI_COMM_WORLD
        self.ucx_log = ucx_log
        self.interleaved = interleaved
        self.pml = pml
        self.traffic = traffic  # algorithm name whose formula predicts the bytes per server
        self.all_taken = all_taken  # False: calls the engine declines (with a reason) are fine
        self.timeout = timeout
        self.coll_alone = False  # --mca coll hccl: no other coll component (--coll-alone)


def algo_env(setting):
    return {"HCCL_ALGO": setting}


def jobs_for(layout, progs, probe):
    """The job list of a layout. progs: name -> path of the tests/mpi programs."""
    jobs = []
    auto = (r"(" + decision_regex() + r"|" + rank_local_regex() + r")" if layout.symmetric
            else uneven_regex())
    smoke = progs["smoke"]
    # The automatic choice, with the transport evidence.
    jobs.append(Job("auto_smoke", smoke, [], decisions=auto,
                    calls=ALL_CALLS, ucx_log=True))
    # Level0 over UCX tagged messages instead of the shared-memory link: UCX shared memory again.
    jobs.append(Job("tagged_smoke", smoke, ["--quick"], env={"COLL_HCCL_LEVEL0_LINK": "tagged"},
                    decisions=auto, calls=ALL_CALLS, ucx_log=True))
    # Every level-1 algorithm forced (HCCL's own syntax). On unequal servers, the outermost
    # level's algorithm runs flat; pipeline needs equal servers and falls back.
    for algo in LEVEL1_ALGOS:
        how = "fallback" if algo == "pipeline" and not layout.symmetric else "forced"
        want = (None if how == "fallback" else algo, how)
        if algo == "pipeline" and how == "forced":
            dec = decision_regex(("pipeline", "forced"), ("pipeline", "forced"))
        else:
            dec = decision_regex(None, want, flat=not layout.symmetric)
        if how == "fallback":
            dec += r".*pipeline forced by env HCCL_ALGO"
        jobs.append(Job(f"level1_{algo}", smoke, ["--quick"],
                        env=algo_env(f"level0:NA;level1:{algo}"), decisions=dec, calls=ALL_CALLS,
                        ucx_log=True))
    # AHC on equal and unequal servers alike: its level0 part runs inside the servers.
    jobs.append(Job("level1_AHC", smoke, ["--quick"], env=algo_env("level0:NA;level1:AHC"),
                    decisions=decision_regex(None, ("AHC", "forced")), calls=ALL_CALLS))
    # Every level-0 algorithm forced (coll_hccl's extension). Level 1 is pinned to a non-pipeline
    # algorithm: a level-1 pipeline brings its own intra-server part and replaces level 0.
    if layout.symmetric:
        for k, algo in enumerate(LEVEL0_ALGOS):
            l1 = ["ring", "H-D_R", "NHR", "NB"][k % 4]
            jobs.append(Job(f"level0_{algo}", smoke, ["--quick"],
                            env=algo_env(f"level0:{algo};level1:{l1}"),
                            decisions=decision_regex((algo, "forced"), (l1, "forced")),
                            calls=ALL_CALLS))
    else:
        # On unequal servers level 0 exists only inside AHC; flat plans ignore it.
        jobs.append(Job("level0_ring", smoke, ["--quick"], env=algo_env("level0:ring"),
                        decisions=uneven_regex(("ring", "forced")), calls=ALL_CALLS))
    # The test programs, each checking its own results, with the automatic choice.
    for prog, args in [("reductions", ["--quick"]), ("allgather", ["--quick"]), ("comms", []),
                       ("nonblocking", [])]:
        calls = {"reductions": ALL_CALLS[:6], "allgather": ALL_CALLS[6:]}.get(prog, [])
        # comms.c's non-commutative user ops need rank order, which the hierarchical
        # compositions do not keep: the engine declines those calls, saying why.
        jobs.append(Job(f"auto_{prog}", progs[prog], args, decisions=auto,
                        calls=calls, all_taken=prog != "comms", ucx_log=prog == "nonblocking"))
    if layout.symmetric and layout.servers == 2:
        # Ranks alternating between the servers: the hierarchy is the same, the data layout is
        # not server by server.
        jobs.append(Job("interleaved_reductions", progs["reductions"], ["--quick"],
                        interleaved=True, calls=ALL_CALLS[:6], ucx_log=True,
                        decisions=decision_regex()))
        jobs.append(Job("interleaved_allgather", progs["allgather"], ["--quick"],
                        interleaved=True, calls=ALL_CALLS[6:], decisions=decision_regex()))
        # Open MPI's UCX PML next to coll_hccl's own UCX workers.
        jobs.append(Job("pml_ucx_smoke", smoke, ["--quick"], pml="ucx",
                        decisions=auto, calls=ALL_CALLS))
    # Bytes per server on the links: every level-1 algorithm where there are more than two
    # servers (with two, every one of them is a single exchange).
    traffic_algos = ["ring"]
    if layout.symmetric:
        traffic_algos = (LEVEL1_ALGOS if layout.servers > 2 else ["ring", "pipeline"]) + ["AHC"]
    for algo in traffic_algos:
        jobs.append(Job(f"traffic_{algo}", probe,
                        ["--bytes", "4M", "--calls", "3", "allreduce", "allgather",
                         "reduce_scatter"],
                        env=algo_env(f"level0:NA;level1:{algo}"), traffic=algo))
    if layout.symmetric and layout.servers == 2:
        # Broadcast and Reduce from and to rank 0, and AllToAll, each over both levels with the
        # algorithms forced that predicted_tx's formulas follow (per-op HCCL_ALGO).
        jobs.append(Job("traffic_rooted", probe,
                        ["--bytes", "4M", "--calls", "3", "bcast", "reduce", "alltoall"],
                        env=algo_env(ROOTED_TRAFFIC_ALGO), traffic="rooted",
                        calls=["MPI_Bcast", "MPI_Reduce", "MPI_Alltoall"]))
    if layout.np > 4:
        for j in jobs:
            j.timeout = 180
    return jobs


# --- checks --------------------------------------------------------------------------------------

def predicted_tx(layout, algo, coll, n):
    """Bytes each server sends per call: a list by server. From algorithms/hierarchical.hpp and
    pipeline.cpp (S servers of L ranks, p ranks, n = hccl_bench's size):
      hierarchical AllReduce: L0 RS, L1 AR of n/L among same-index ranks, L0 AG
                              -> L * 2(S-1)/S * n/L = 2(S-1)/S n per server (ring, H-D_R, NHR, NB)
      hierarchical AllGather: L0 AG, then L1 AG of whole servers (n/S each) among same-index ranks
                              -> every rank sends (S-1)/S n: L (S-1)/S n per server
      hierarchical ReduceScatter: L1 RS of the whole input by server among same-index ranks first
                              -> L (S-1)/S n per server
      pipeline AllGather/ReduceScatter: each rank sends S-1 blocks of n/p -> (S-1)/S n per server;
                              AllReduce = both over n -> 2(S-1)/S n
      AHC: level1 runs among logical same-index ranks on each rank's 1/L of its server's data, so
                              the same volumes as the pipeline
      flat ring over all ranks (unequal servers): every ring edge r -> r+1 that leaves a server
                              carries 2(p-1)/p n (AllReduce) or (p-1)/p n (the others).
    traffic_rooted (ROOTED_TRAFFIC_ALGO, root rank 0 on ns0, two servers; n = the vector for
    Broadcast and Reduce, the per-rank send buffer for AllToAll, n/p per pair):
      Broadcast (hier_broadcast.cpp): L0 Bc of n on the root's server, then piece j (n/L) from
                              its rank j to rank j of the other server (L1 ring chain), then L0 AG
                              there -> the root's server sends L n/L = n, the other server 0
      Reduce (hier_reduce.cpp): L0 RS on every server, L1 ring Reduce of piece j (n/L) towards
                              the root's server's rank j, L0 Gather there -> the other server
                              sends L n/L = n, the root's server 0
      AllToAll (hier_alltoall.cpp): L0 fullmesh packs the blocks by destination server, L1
                              pairwise sends each rank's L blocks of each remote rank (L n/p per
                              pair and index) once -> L (S-1) L n/p = L (S-1)/S n per server: n
    A server the formula gives 0 only acknowledges what it receives (TCP ACKs, the barriers)."""
    S, p = layout.servers, layout.np
    if algo == "rooted":
        assert layout.symmetric and S == 2
        L = layout.slots[0]
        root_server = layout.server_of_rank()[0]
        return {"bcast": [n if s == root_server else 0 for s in range(S)],
                "reduce": [0 if s == root_server else n for s in range(S)],
                "alltoall": [L * (S - 1) / S * n] * S}[coll]
    if layout.symmetric:
        L = layout.slots[0]
        if coll == "allreduce":
            per = 2 * (S - 1) / S * n
        elif algo in ("pipeline", "AHC"):
            per = (S - 1) / S * n
        else:
            per = L * (S - 1) / S * n
        return [per] * S
    assert algo == "ring"
    edge = (2 if coll == "allreduce" else 1) * (p - 1) / p * n
    where = layout.server_of_rank()
    out = [0.0] * S
    for r in range(p):
        if where[r] != where[(r + 1) % p]:
            out[where[r]] += edge
    return out


def check_traffic(layout, job, text, failures, notes):
    lines = re.findall(r"^traffic coll=(\w+) bytes=(\d+) calls=\d+ server=ns(\d+) ranks=\d+ "
                       r"tx_bytes=\d+ rx_bytes=\d+ tx_per_call=(\d+) rx_per_call=(\d+)$",
                       text, re.M)
    if len(lines) != 3 * layout.servers:
        failures.append(f"expected {3 * layout.servers} traffic lines, got {len(lines)}")
        return
    for coll, n, server, tx, _rx in lines:
        want = predicted_tx(layout, job.traffic, coll, int(n))[int(server)]
        if want == 0:
            # Only acknowledgements and the barriers: a few percent of what the server received.
            notes.append(f"{coll} ns{server}: {int(tx)} B/call sent, predicted 0 (acks only; "
                         f"{int(tx) / int(n):.4f} n)")
            if int(tx) > 0.05 * int(n):
                failures.append(f"{coll}: ns{server} sent {tx} B per call, the {job.traffic} "
                                f"formula predicts 0 (acknowledgements only, allowed 0.05 n = "
                                f"{0.05 * int(n):.0f} B)")
            continue
        ratio = int(tx) / want
        notes.append(f"{coll} ns{server}: {int(tx)} B/call sent, predicted {want:.0f} "
                     f"({ratio:.4f}x)")
        # TCP/IP headers, acknowledgements and the closing barrier add a little; a different
        # composition (flat instead of hierarchical, whole servers instead of pieces) is off by
        # 1/6 or more.
        if not 0.999 <= ratio <= 1.08:
            failures.append(f"{coll}: ns{server} sent {tx} B per call, the {job.traffic} formula "
                            f"predicts {want:.0f} B ({ratio:.3f}x, allowed 0.999..1.08)")
    checked = re.findall(r"^traffic coll=(\w+) .* check=(\w+)", text, re.M)
    if len(checked) != 3 or any(ok != "ok" for _, ok in checked):
        failures.append(f"traffic_probe reported wrong results or not every collective's: "
                        f"{checked}")


def ucx_endpoint_classes(text):
    """host:pid -> set of classes ('shm', 'tcp', 'other:...') of its UCX endpoint configs."""
    out = {}
    for m in re.finditer(r"\[(ns\d+):(\d+) *(?::\d+)?\][^\n]*ep_cfg\[\d+\]: ([^\n]*)", text):
        cfg = m.group(3)
        if "self/" in cfg and not SHM_TLS.search(cfg) and "tcp/" not in cfg:
            continue  # the loopback endpoint to the rank itself
        if SHM_TLS.search(cfg) and "tcp/" not in cfg:
            cls = "shm"
        elif re.search(r"tcp/eth0", cfg) and not SHM_TLS.search(cfg) and "tcp/lo" not in cfg:
            cls = "tcp"
        else:
            cls = "other: " + cfg
        out.setdefault(f"{m.group(1)}:{m.group(2)}", set()).add(cls)
    return out


def shm_link_reports(layout, text, failures, notes):
    """rank -> the ranks its level0 shared-memory link (coll_hccl's own, ucx_tl/shm_link) spans.
    Level0 rides it by default (coll_hccl_level0_link=auto), so same-server traffic then shows no
    UCX endpoint at all. Each rank on a server of k > 1 ranks must list k ranks, itself among them."""
    links = {int(r): [int(x) for x in ranks.split(",")] for r, ranks in re.findall(
        r"rank (\d+) level0: shared-memory link: ranks ([\d,]+) on one segment", text)}
    if not links:
        return links
    want = sorted(k for k in layout.slots if k > 1 for _ in range(k))
    got = sorted(len(v) for v in links.values())
    if got != want:
        failures.append(f"shared-memory link reports span {got} ranks, expected {want} "
                        f"(one per rank on a server of several)")
    for rank, ranks in sorted(links.items()):
        if rank not in ranks:
            failures.append(f"rank {rank}: its shared-memory link spans {ranks}, not itself")
    notes.append(f"level0 shared-memory link on {len(links)} ranks, e.g. rank "
                 f"{min(links)}: ranks {','.join(map(str, links[min(links)]))}")
    return links


def check_transports(layout, job, text, failures, notes):
    per_proc = ucx_endpoint_classes(text)
    # Same-server traffic on coll_hccl's shared-memory link: UCX shared memory becomes optional
    # (the link hands UCX only what it cannot carry), and never tcp for it, as before. A rank
    # whose flat schedule talks only to its own server then opens no UCX endpoint at all.
    on_link = len(shm_link_reports(layout, text, failures, notes)) == \
        sum(k for k in layout.slots if k > 1) > 0
    if len(per_proc) > layout.np or (len(per_proc) < layout.np and
                                     (layout.symmetric or not on_link)):
        failures.append(f"UCX endpoint reports from {len(per_proc)} processes, expected "
                        f"{layout.np}")
    # Endpoints are made on first use, so a process shows the classes of the peers its schedule
    # talks to. Hierarchical (equal servers): every rank has a same-server peer at level 0 and
    # other-server peers at level 1. Flat (unequal servers): a rank may talk to one kind only,
    # but never to a kind its server cannot have, and each server as a whole uses what it has.
    def matches(classes, want, subset):
        if on_link:
            classes, want = classes - {"shm"}, want - {"shm"}
        return classes <= want if subset else classes == want

    by_server = {}
    for proc, classes in sorted(per_proc.items()):
        server = int(proc.split(":")[0][2:])
        want = set()
        if layout.slots[server] > 1:
            want.add("shm")
        if layout.servers > 1:
            want.add("tcp")
        by_server.setdefault(server, set()).update(classes)
        if not matches(classes, want, not layout.symmetric):
            failures.append(f"process {proc} used {sorted(classes)}, expected "
                            f"{'' if layout.symmetric else 'a subset of '}{sorted(want)} "
                            f"(shm = sysv/posix/cma only, tcp = tcp/eth0 only"
                            f"{'; shm optional: level0 on the shared-memory link' if on_link else ''})")
    for server, classes in sorted(by_server.items()):
        want = ({"shm"} if layout.slots[server] > 1 else set()) | \
            ({"tcp"} if layout.servers > 1 else set())
        if not matches(classes, want, False):
            failures.append(f"the ranks of ns{server} used {sorted(classes)} together, expected "
                            f"{sorted(want)}")
    summary = {}
    for proc, classes in per_proc.items():
        summary.setdefault(proc.split(":")[0], set()).add("+".join(sorted(classes)))
    notes.append("UCX endpoints per process: " +
                 ", ".join(f"{h}: {'/'.join(sorted(c))}" for h, c in sorted(summary.items())))
    # coll_hccl's own report, one per rank: the same-server class on shared memory (or only the
    # loopback "self" for a rank alone on its server), the other-server class on tcp/eth0. The
    # report spans two lines; ranks' lines may interleave, so they are matched separately.
    hccs = re.findall(r"rank (\d+) transport: HCCS class: transport list '[^']*' opened ([^\n]*)",
                      text)
    roce = re.findall(r"^RoCE class: transport list '[^']*' opened ([^\n]*)", text, re.M)
    if len(hccs) != layout.np:
        failures.append(f"coll_hccl transport reports from {len(hccs)} ranks, expected "
                        f"{layout.np}")
    for rank, opened in hccs:
        if "tcp/" in opened or not re.search(r"\b(self|sysv|posix|cma)/", opened):
            failures.append(f"rank {rank}: the same-server class opened {opened}")
    if layout.servers > 1 and len(roce) != layout.np:
        failures.append(f"coll_hccl other-server class reports from {len(roce)} ranks, expected "
                        f"{layout.np}")
    for opened in roce:
        if "tcp/eth0" not in opened or SHM_TLS.search(opened):
            failures.append(f"the other-server class opened {opened} (expected tcp/eth0)")
    if hccs:
        notes.append(f"coll_hccl rank {hccs[0][0]} transports: HCCS class {hccs[0][1]}; "
                     f"RoCE class {roce[0] if roce else 'none'}")


def check_placement(layout, job, per_rank, failures, notes):
    """Each rank must run on the server the mapping puts it on: its UCX lines name the host."""
    where = layout.server_of_rank(job.interleaved)
    seen = {}
    for rank, text in enumerate(per_rank):
        hosts = set(re.findall(r"\[(ns\d+):\d+ *:\d+\]", text))
        seen[rank] = hosts
        if hosts != {f"ns{where[rank]}"}:
            failures.append(f"rank {rank} ran on {sorted(hosts) or 'unknown'}, expected "
                            f"ns{where[rank]}")
    notes.append("placement: " + ", ".join(f"rank {r} on {'/'.join(sorted(h))}"
                                           for r, h in seen.items()))


def check_job(layout, job, status, per_rank):
    """per_rank: each rank's stdout + stderr (mpirun --output-filename), so ranks' lines never
    interleave."""
    failures, notes = [], []
    text = "\n".join(per_rank)
    lines = text.splitlines()
    if status == 124:
        failures.append(f"timed out after {job.timeout} s")
    elif status != 0:
        failures.append(f"mpirun exited {status}")
    if len(per_rank) != layout.np or not all(per_rank):
        failures.append(f"output files of {sum(1 for t in per_rank if t)} ranks, expected "
                        f"{layout.np}")
    if job.traffic is None:
        passes = [l for l in lines if re.search(r": PASS \((\d+) checks", l)]
        if not passes:
            failures.append("the program did not print its PASS line")
        elif any(int(re.search(r"\((\d+) checks", l).group(1)) == 0 for l in passes):
            failures.append("the program checked nothing")
    else:
        check_traffic(layout, job, text, failures, notes)
    hccl = [l for l in lines if l.startswith("coll:hccl:")]
    # The hierarchy, reported by every rank for MPI_COMM_WORLD.
    hier = re.findall(r"^coll:hccl: engine: 'MPI_COMM_WORLD' \(cid 0\) rank (\d+): (.*?); links:",
                      text, re.M)
    want = layout.hierarchy_text(job.interleaved)
    ranks = sorted(int(r) for r, h in hier if h == want)
    if ranks != list(range(layout.np)):
        seen = sorted({h for _, h in hier}) or ["nothing"]
        failures.append(f"hierarchy: expected '{want}' from ranks 0..{layout.np - 1}, got "
                        f"{len(ranks)} such reports; seen: {seen}")
    else:
        notes.append(f"hierarchy on every rank: {want}")
    # Calls on MPI_COMM_WORLD (for the traffic probe: its duplicate).
    comm = r"MPI_COMM_WORLD" if job.traffic is None else r"MPI COMMUNICATOR \d+ DUP FROM 0"
    calls = [l for l in hccl if re.match(rf"coll:hccl: MPI_\w+ on {comm} \(", l)]
    taken = [l for l in calls if " -> hccl: " in l]
    declined = [l for l in calls if " -> hccl: " not in l]
    if declined and job.all_taken:
        failures.append(f"{len(declined)} call(s) not run by the engine, e.g.: {declined[0]}")
    elif declined:
        notes.append(f"{len(declined)} call(s) left to Open MPI, e.g. "
                     f"{re.sub(r'^coll:hccl: ', '', declined[0])[:300]}")
    if not taken:
        failures.append("no call was run by the engine")
    for fn in job.calls:
        if not any(l.startswith(f"coll:hccl: {fn} on ") for l in taken):
            failures.append(f"no {fn} run by the engine")
    regex = job.decisions
    if job.traffic == "pipeline":
        regex = decision_regex(("pipeline", "forced"), ("pipeline", "forced"))
    elif job.traffic == "rooted":
        regex = ROOTED_TRAFFIC_DECISIONS
    elif job.traffic is not None:
        regex = decision_regex(None, (job.traffic, "forced"), flat=not layout.symmetric)
    if regex:
        off = [l for l in taken if not re.search(regex, l)]
        if off:
            failures.append(f"{len(off)} of {len(taken)} decisions do not match {regex!r}, e.g.: "
                            f"{off[0]}")
    if taken:
        sample = re.sub(r"^coll:hccl: ", "", taken[len(taken) // 2])
        notes.append(f"{len(taken)} calls run by the engine (all ranks), e.g. {sample}")
    errors = [l for l in hccl if re.search(r"failed|could not|error", l)]
    if errors:
        failures.append(f"coll_hccl reported errors: {errors[0]}")
    # Open MPI's coll framework help messages (tests/mpi/run_mpi.py FRAMEWORK_MESSAGES); they
    # wrap lines, so match on the text with its whitespace collapsed.
    flat = " ".join(" ".join(lines).split())
    for bad in ("failed to finalize properly", "none of them said that they could be used",
                "Although some coll components are available", "coll_base_comm_select"):
        at = flat.find(bad)
        if at >= 0:
            failures.append(f"Open MPI's coll framework complained: ...{flat[at:at + 160]}...")
    if job.ucx_log:
        check_placement(layout, job, per_rank, failures, notes)
        check_transports(layout, job, text, failures, notes)
    return failures, notes


# --- running -------------------------------------------------------------------------------------

def mpirun_args(layout, job, component_dir, outdir):
    args = ["-np", str(layout.np), "--mca", "mpi_yield_when_idle", "1",
            "--mca", "mca_base_component_path", "SYS_DEFAULT:" + component_dir,
            "--mca", "coll_hccl_verbose", "2", "--mca", "orte_base_help_aggregate", "0",
            "--output-filename", outdir]
    if job.pml == "ucx":
        args += ["--mca", "pml", "ucx", "--mca", "pml_ucx_tls", "any",
                 "--mca", "pml_ucx_devices", "any"]
    else:
        args += ["--mca", "pml", "ob1"]
    if job.interleaved:
        args += ["--map-by", "node"]
    if job.coll_alone:
        args += ["--mca", "coll", "hccl"]
    env = dict(job.env)
    if job.ucx_log:
        env["UCX_LOG_LEVEL"] = "info"
    for k, v in env.items():
        args += ["-x", f"{k}={v}"]
    return args + [job.program] + job.args


def read_rank_outputs(outdir, np):
    """mpirun --output-filename DIR writes DIR/1/rank.N/{stdout,stderr}."""
    texts = []
    for r in range(np):
        parts = []
        for stream in ("stdout", "stderr"):
            path = os.path.join(outdir, "1", f"rank.{r}", stream)
            if os.path.isfile(path):
                with open(path, errors="replace") as f:
                    parts.append(f.read())
        texts.append("".join(parts))
    return texts


def run_job(layout, job, component_dir):
    with tempfile.TemporaryDirectory(prefix="hccl-cluster-job-") as outdir:
        cmd = [CLUSTER, "run", "--timeout", str(job.timeout), "--"] + \
            mpirun_args(layout, job, component_dir, outdir)
        t0 = time.monotonic()
        out = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, errors="replace")
        secs = time.monotonic() - t0
        per_rank = read_rank_outputs(outdir, layout.np)
    return out.returncode, out.stdout, per_rank, secs, cmd


def body(args, layout):
    progs = {name: os.path.join(args.programs, "mpi_" + name)
             for name in ["smoke", "reductions", "allgather", "comms", "nonblocking"]}
    jobs = [j for j in jobs_for(layout, progs, args.probe)
            if not args.only or re.search(args.only, j.name)]
    for j in jobs:
        j.coll_alone = args.coll_alone
    failed = []
    t_all = time.monotonic()
    for job in jobs:
        status, console, per_rank, secs, cmd = run_job(layout, job, args.component_dir)
        failures, notes = check_job(layout, job, status, per_rank)
        print(f"{'ok  ' if not failures else 'FAIL'} {layout.spec} {job.name} ({secs:.1f} s)",
              flush=True)
        for n in notes:
            print(f"     {n}")
        if failures:
            failed.append(job.name)
            print("     $ " + " ".join(cmd))
            for f in failures:
                print(f"     FAILED: {f}")
            tail = console if len(console) < 20000 else \
                console[:4000] + "\n[...]\n" + console[-15000:]
            print("     --- mpirun output ---\n" + tail + "\n     --- end of output ---",
                  flush=True)
    print(f"{layout.spec}: {len(jobs) - len(failed)} of {len(jobs)} jobs passed in "
          f"{time.monotonic() - t_all:.0f} s" + (f"; failed: {', '.join(failed)}" if failed
                                                  else ""))
    return 1 if failed else 0


def skip_reason():
    if os.geteuid() != 0:
        return "needs root (network namespaces, bind mounts, tc)"
    for tool in ["ip", "tc", "nsenter", "unshare", "setsid", "flock", "timeout", "mpirun"]:
        if shutil.which(tool) is None:
            return f"'{tool}' not found"
    if subprocess.run(["ip", "netns", "list"], capture_output=True).returncode != 0:
        return "'ip netns' is not available"
    if subprocess.run(["unshare", "--net", "--uts", "true"], capture_output=True).returncode != 0:
        return "cannot create network/UTS namespaces here"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layout", required=True, help="SxL (2x2, 4x2) or K0,K1,... (1,3)")
    ap.add_argument("--component-dir", required=True, help="directory with mca_coll_hccl.so")
    ap.add_argument("--programs", required=True, help="directory of the tests/mpi programs")
    ap.add_argument("--probe", required=True, help="the traffic_probe program")
    ap.add_argument("--rate", default="1gbit", help="link rate (tc syntax)")
    ap.add_argument("--only", help="run only the jobs whose name matches this regex")
    ap.add_argument("--list", action="store_true", help="list the jobs and exit")
    ap.add_argument("--coll-alone", action="store_true",
                    help="run every job with --mca coll hccl (no other coll component)")
    ap.add_argument("--body", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    try:
        layout = Layout(args.layout)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    args.component_dir = os.path.abspath(args.component_dir)
    args.programs = os.path.abspath(args.programs)
    args.probe = os.path.abspath(args.probe)
    if args.list:
        for j in jobs_for(layout, {n: n for n in ["smoke", "reductions", "allgather", "comms",
                                                  "nonblocking"]}, "traffic_probe"):
            print(f"{j.name}: {os.path.basename(j.program)} {' '.join(j.args)} {j.env or ''}")
        return 0
    if args.body:
        return body(args, layout)
    why = skip_reason()
    if why:
        print(f"SKIP: {why}")
        return SKIP
    if not os.path.isfile(os.path.join(args.component_dir, "mca_coll_hccl.so")):
        print(f"no mca_coll_hccl.so in {args.component_dir}", file=sys.stderr)
        return 1
    # The session tears the rig down on exit, failure and the signals meson sends; its lock keeps
    # concurrent runs of the same layout (other worktrees) apart.
    rig = "mpi_" + layout.name()
    cmd = [CLUSTER, "--id", rig, "session", str(layout.servers), "--slots",
           ",".join(map(str, layout.slots)), "--rate", args.rate, "--",
           sys.executable, os.path.abspath(__file__), "--body"] + sys.argv[1:]
    return subprocess.run(cmd, stdin=subprocess.DEVNULL).returncode


if __name__ == "__main__":
    sys.exit(main())
