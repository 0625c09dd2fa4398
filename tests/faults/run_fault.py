#!/usr/bin/env python3
"""Runs fault.c under mpirun with one rank stopped (SIGSTOP) or killed (SIGKILL) mid-collective,
and checks what every survivor was told.

Passes when every survivor
  - got an error from the call the fault hit, within coll_hccl_timeout + the allowed slack of its
    last successful call,
  - whose MPI_Error_string names the victim: its communicator rank, world rank, host and pid,
  - and whose error class is one of coll_hccl's ("coll_hccl timeout" / "coll_hccl peer lost"),
  - and whose next call on the communicator failed at once saying "broken since call",
  - no call returned a wrong result,
and mpirun ended once the stopped victim was killed. With --finalize the survivors call
MPI_Finalize once the victim is killed (instead of being terminated), and each must finish it,
with no UCX "not returned to mpool" line among its lines: the link layer returns what it held
for the dead peer. The job runs with --enable-recovery so
that mpirun lets the survivors report after a rank died; the stopped victim is continued and
killed by this script, so nothing is left behind. The job is bounded by `timeout`.

With --cluster SxL (e.g. 2x2) the job runs on the emulated cluster (tests/cluster/cluster.sh): one
network and UTS namespace per server, ranks filling servers in order, so survivors on other
servers than the victim's can only learn about it over the network; the victim is named with its
own server's host name. Without root or namespaces that case is skipped (exit 77).
Exit codes follow `meson test`: 0 pass, 1 fail, 77 skip.
"""
import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--component-dir", required=True)
    ap.add_argument("--np", type=int, default=3)
    ap.add_argument("--victim", type=int, default=1, help="world rank to stop or kill")
    ap.add_argument("--fault", choices=["stop", "kill"], default="stop")
    ap.add_argument("--hccl-timeout", type=float, default=2.0, help="coll_hccl_timeout, seconds")
    ap.add_argument("--slack", type=float, default=1.0,
                    help="seconds beyond the timeout a survivor may take to report")
    ap.add_argument("--job-timeout", type=int, default=90)
    ap.add_argument("--env", action="append", default=[], metavar="K=V")
    ap.add_argument("--coll-alone", action="store_true",
                    help="--mca coll hccl: coll_hccl the only coll component (its floor serves "
                         "what the engine does not), so the job also ends through its teardown")
    ap.add_argument("--cluster", metavar="SxL",
                    help="run on the emulated cluster: S servers of L ranks (np = S * L)")
    ap.add_argument("--finalize", action="store_true",
                    help="survivors call MPI_Finalize after the victim is killed; each must "
                         "finish it without UCX warnings")
    ap.add_argument("--resume", type=float, default=0.0, metavar="SECONDS",
                    help="with --finalize: let the stopped victim run this long (SIGCONT) before "
                         "killing it, so it pushes the rest of a message the survivors gave up "
                         "on into their queues, to land during their MPI_Finalize")
    ap.add_argument("--rig-id", default="faults",
                    help="cluster.sh rig id (one rig at a time per id)")
    ap.add_argument("program", nargs="+", help="fault binary and its arguments")
    return ap.parse_args()


HERE = os.path.dirname(os.path.abspath(__file__))
CLUSTER = os.path.join(HERE, "..", "cluster", "cluster.sh")
SKIP = 77
# Open MPI 4.1.4 itself: after a rank was SIGKILLed under --enable-recovery, its survivors'
# MPI_Finalize waits forever in the PMIx fence in 2-3 runs of 20, with no coll_hccl loaded (a
# 12-line MPI program: init, barrier, one rank raises SIGKILL, the others finalize). When that is
# the only failure (every stuck survivor is in ompi_mpi_finalize, no coll_hccl frame on any
# thread), the job is run once more, and skipped if it stalls again.
FENCE = "fence"


def cluster_shape(spec):
    m = re.fullmatch(r"(\d+)x(\d+)", spec or "")
    if not m or int(m.group(1)) < 1 or int(m.group(2)) < 1:
        raise SystemExit(f"bad --cluster '{spec}': use SxL, e.g. 2x2")
    return int(m.group(1)), int(m.group(2))


def cluster_skip_reason():
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    for tool in ["ip", "tc", "nsenter", "unshare", "setsid", "flock", "timeout", "mpirun"]:
        if shutil.which(tool) is None:
            return f"'{tool}' not found"
    if subprocess.run(["unshare", "--net", "--uts", "true"], capture_output=True).returncode:
        return "cannot create network/UTS namespaces here"
    return None


def signal_all(targets):
    """Sends each (pid, signal); a pid of None or a process already gone is skipped."""
    for pid, sig in targets:
        if pid:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass


def print_stacks(stuck):
    """Where ranks that did not finish are: every thread's stack through gdb (when installed),
    so a hang in the suite's log says where it hung. Returns True when each of them waits in
    Open MPI's own MPI_Finalize with no coll_hccl frame on any thread (see FENCE)."""
    gdb = shutil.which("gdb")
    in_fence = bool(gdb) and bool(stuck)
    for pid in stuck:
        if not pid:
            in_fence = False
            continue
        if not gdb:
            print(f"(pid {pid} is stuck; install gdb to see its stacks here)")
            continue
        p = subprocess.run([gdb, "-p", str(pid), "-batch", "-ex", "thread apply all bt 40"],
                           capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        frames = [l for l in p.stdout.splitlines() if l.startswith(("#", "Thread"))]
        print(f"--- stacks of pid {pid}")
        for line in frames:
            print(line)
        text = "\n".join(frames)
        if "ompi_mpi_finalize" not in text or "hccl" in text:
            in_fence = False
    return in_fence


def descendants(root, comm):
    """Pids of the processes named `comm` below `root` (this job's own process tree)."""
    children = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append((int(d), name))
    out, todo = [], [root]
    while todo:
        for pid, name in children.get(todo.pop(), []):
            todo.append(pid)
            if name == comm:
                out.append(pid)
    return out


def main():
    args = parse_args()
    if args.cluster:
        servers, slots = cluster_shape(args.cluster)
        if servers * slots != args.np:
            raise SystemExit(f"--cluster {args.cluster} holds {servers * slots} ranks, "
                             f"--np is {args.np}")
        if os.environ.get("HCCL_CLUSTER_ID") != args.rig_id:
            why = cluster_skip_reason()
            if why:
                print(f"SKIP: {why}")
                return SKIP
            # The session brings the rig up, runs this script again inside it and tears the rig
            # down whatever happens (exit, failure, meson's SIGTERM).
            return subprocess.run([CLUSTER, "--id", args.rig_id, "session", str(servers),
                                   "--slots", str(slots), "--rate", "1gbit", "--",
                                   sys.executable, os.path.abspath(__file__)] + sys.argv[1:],
                                  stdin=subprocess.DEVNULL).returncode
        # cluster.sh run adds --allow-run-as-root --oversubscribe, the rig's hosts (servers
        # filled in order), --bind-to none, and bounds mpirun by the timeout.
        cmd = [CLUSTER, "run", "--timeout", str(args.job_timeout), "--",
               "--mca", "mpi_yield_when_idle", "1"]
    else:
        cmd = ["timeout", "-k", "5", str(args.job_timeout), "mpirun", "--allow-run-as-root",
               "--oversubscribe"]
    cmd += ["--enable-recovery", "-np", str(args.np),
           "--mca", "mca_base_component_path", "SYS_DEFAULT:" + args.component_dir,
           "--mca", "coll_hccl_timeout", str(args.hccl_timeout),
           "--mca", "orte_base_help_aggregate", "0", "--mca", "pml", "ob1"]
    if args.coll_alone:
        cmd += ["--mca", "coll", "hccl"]
    for kv in args.env + (["FAULT_FINALIZE=1"] if args.finalize else []):
        cmd += ["-x", kv]
    cmd += [os.path.abspath(args.program[0])] + args.program[1:] + [
        "--victim", str(args.victim), "--fault", args.fault]
    print("$ " + " ".join(cmd), flush=True)

    for attempt in (1, 2):
        rc = run_job(args, cmd)
        if rc != FENCE:
            return rc
        print(f"attempt {attempt}: the survivors wait in Open MPI's MPI_Finalize fence, not in "
              f"coll_hccl (see FENCE in {os.path.basename(__file__)})", flush=True)
    print("SKIP: Open MPI's finalize fence stalled twice after the victim's death: the errors and "
          "the culprit passed both times, the teardown after the fence could not be checked")
    return SKIP


def run_job(args, cmd):
    """One run of the job; FENCE when the only failure is Open MPI's finalize fence."""
    lines, pids, hosts, done, finalized = [], {}, {}, set(), set()
    fence_stall = False
    lock = threading.Condition()
    job = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           stdin=subprocess.DEVNULL)

    def reader():
        for line in job.stdout:
            line = line.rstrip("\n")
            print(line, flush=True)
            with lock:
                lines.append(line)
                m = re.match(r"READY rank \d+ world (\d+) pid (\d+) host (\S+)", line)
                if m:
                    pids[int(m.group(1))] = int(m.group(2))
                    hosts[int(m.group(1))] = m.group(3)
                m = re.match(r"DONE rank (\d+)", line)
                if m:
                    done.add(int(m.group(1)))
                m = re.match(r"FINALIZED rank (\d+)", line)
                if m:
                    finalized.add(int(m.group(1)))
                lock.notify_all()

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    survivors = set(range(args.np)) - {args.victim}
    failures = []
    deadline = time.monotonic() + args.hccl_timeout + 60
    with lock:
        while done != survivors and time.monotonic() < deadline and job.poll() is None:
            lock.wait(0.5)
        if done != survivors:
            failures.append(f"survivors {sorted(survivors - done)} did not finish reporting")
        victim_pid = pids.get(args.victim)
    # Nothing stays behind: continue and kill the victim (it may be stopped, or gone already),
    # then end the survivors, which wait for it (with --finalize: once they had their time to
    # finalize).
    targets = [(victim_pid, signal.SIGCONT), (victim_pid, signal.SIGKILL)]
    if args.finalize:
        signal_all(targets[:1])
        time.sleep(args.resume)
        signal_all(targets[1:])
        targets = []
        with lock:
            until = time.monotonic() + 30
            while not survivors <= finalized and time.monotonic() < until and job.poll() is None:
                lock.wait(0.5)
            if not survivors <= finalized:
                failures.append(f"survivors {sorted(survivors - finalized)} did not finish "
                                f"MPI_Finalize within 30 s of the victim's death")
                stuck = [pids.get(r) for r in sorted(survivors - finalized)]
        if not survivors <= finalized:
            fence_stall = print_stacks(stuck)
    targets += [(pids.get(r), signal.SIGTERM) for r in sorted(survivors - finalized)]
    signal_all(targets)
    ended_at = time.monotonic()
    try:
        if args.cluster:
            # Across daemons, Open MPI 4.1.4's mpirun with --enable-recovery does not end by
            # itself once every rank was killed (its remote orted stays): end it as an operator
            # would, with SIGTERM (cluster.sh's timeout, which runs it, forwards the signal).
            try:
                job.wait(timeout=10)
            except subprocess.TimeoutExpired:
                print("mpirun still running 10 s after the ranks ended: SIGTERM to it")
                for pid in descendants(job.pid, "mpirun"):
                    try:
                        os.kill(pid, signal.SIGTERM)
                    except ProcessLookupError:
                        pass
        job.wait(timeout=30)
    except subprocess.TimeoutExpired:
        failures.append("mpirun did not end within 30 s of the ranks' end")
        job.kill()
        job.wait()
    t.join(timeout=5)
    print(f"mpirun ended {time.monotonic() - ended_at:.1f} s after the ranks were ended, "
          f"exit {job.returncode}")

    host = hosts.get(args.victim, socket.gethostname())
    rank_of = {}  # world rank -> communicator rank
    for l in lines:
        m = re.match(r"READY rank (\d+) world (\d+)", l)
        if m:
            rank_of[int(m.group(2))] = int(m.group(1))
    victim_rank = rank_of.get(args.victim, args.victim)
    names = [f"rank {victim_rank} (world rank {args.victim}, host {host}, pid {victim_pid})"]
    limit_ms = (args.hccl_timeout + args.slack) * 1000
    field = r"class_string \|([^|]*)\| error_string \|([^|]*)\|"
    for r in sorted(survivors):
        res = [l for l in lines if l.startswith(f"RESULT rank {r} ")]
        again = [l for l in lines if l.startswith(f"AGAIN rank {r} ")]
        if not res:
            failures.append(f"rank {r}: no error reported")
            continue
        m = re.search(r"after_ms (\d+) .*" + field, res[0])
        ms, klass, text = float(m.group(1)), m.group(2), m.group(3)
        print(f"rank {r} (host {hosts.get(r, '?')}): error after {ms:.0f} ms, class '{klass}': "
              f"{text[:160]}")
        if ms > limit_ms:
            failures.append(f"rank {r}: error after {ms:.0f} ms, more than {limit_ms:.0f} ms")
        if klass not in ("coll_hccl timeout", "coll_hccl peer lost"):
            failures.append(f"rank {r}: error class '{klass}' is not coll_hccl's")
        if not any(n in text for n in names):
            failures.append(f"rank {r}: the error string does not name {names[0]}: {text}")
        if not again or "broken since call" not in again[0]:
            failures.append(f"rank {r}: the next call did not say the communicator is broken")
    # UCX's log lines carry [host:pid:thread]; a survivor's "not returned to mpool" lines (at
    # worker destruction) mean the link layer left something outstanding with the dead peer.
    # (UCX's "connect ... refused" errors while the victim dies are expected and not counted.)
    survivor_pids = {pids.get(r) for r in survivors}
    ucx_lines = [l for l in lines if (m := re.search(r"\[[^\]:]+:(\d+) *:\d+\]", l))
                 and int(m.group(1)) in survivor_pids
                 and "mpool" in l]
    if ucx_lines:
        failures.append(f"{len(ucx_lines)} UCX 'mpool' lines from survivors, e.g. "
                        f"{ucx_lines[0]}")
    wrong = [l for l in lines if l.startswith("WRONG") or l.startswith("NOERROR")]
    if wrong:
        failures.append(wrong[0])
    # Open MPI's coll framework help messages (tests/mpi/run_mpi.py FRAMEWORK_MESSAGES); they
    # wrap lines, so match on the text with its whitespace collapsed.
    flat = " ".join(" ".join(lines).split())
    for bad in ("failed to finalize properly", "none of them said that they could be used",
                "Although some coll components are available", "coll_base_comm_select"):
        at = flat.find(bad)
        if at >= 0:
            failures.append(f"Open MPI's coll framework complained: ...{flat[at:at + 160]}...")
    for f in failures:
        print("FAIL: " + f)
    if fence_stall and len(failures) == 1:
        return FENCE
    if not failures:
        where = sorted({hosts.get(r, "?") for r in survivors})
        print(f"PASS: {len(survivors)} survivors (hosts {', '.join(where)}) named {names[0]}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
