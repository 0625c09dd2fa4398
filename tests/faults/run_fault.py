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
and mpirun ended once the stopped victim was killed. The job runs with --enable-recovery so
that mpirun lets the survivors report after a rank died; the stopped victim is continued and
killed by this script, so nothing is left behind. The job is bounded by `timeout`.
Exit codes follow `meson test`: 0 pass, 1 fail.
"""
import argparse
import os
import re
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
    ap.add_argument("program", nargs="+", help="fault binary and its arguments")
    return ap.parse_args()


def main():
    args = parse_args()
    cmd = ["timeout", "-k", "5", str(args.job_timeout), "mpirun", "--allow-run-as-root",
           "--oversubscribe", "--enable-recovery", "-np", str(args.np),
           "--mca", "mca_base_component_path", "SYS_DEFAULT:" + args.component_dir,
           "--mca", "coll_hccl_timeout", str(args.hccl_timeout),
           "--mca", "orte_base_help_aggregate", "0", "--mca", "pml", "ob1"]
    if args.coll_alone:
        cmd += ["--mca", "coll", "hccl"]
    for kv in args.env:
        cmd += ["-x", kv]
    cmd += [os.path.abspath(args.program[0])] + args.program[1:] + [
        "--victim", str(args.victim), "--fault", args.fault]
    print("$ " + " ".join(cmd), flush=True)

    lines, pids, done = [], {}, set()
    lock = threading.Condition()
    job = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           stdin=subprocess.DEVNULL)

    def reader():
        for line in job.stdout:
            line = line.rstrip("\n")
            print(line, flush=True)
            with lock:
                lines.append(line)
                m = re.match(r"READY rank \d+ world (\d+) pid (\d+)", line)
                if m:
                    pids[int(m.group(1))] = int(m.group(2))
                m = re.match(r"DONE rank (\d+)", line)
                if m:
                    done.add(int(m.group(1)))
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
    # then end the survivors, which wait for it.
    targets = [(victim_pid, signal.SIGCONT), (victim_pid, signal.SIGKILL)] + [
        (pids.get(r), signal.SIGTERM) for r in sorted(survivors)]
    for pid, sig in targets:
        if pid:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
    ended_at = time.monotonic()
    try:
        job.wait(timeout=30)
    except subprocess.TimeoutExpired:
        failures.append("mpirun did not end within 30 s of the ranks' end")
        job.kill()
        job.wait()
    t.join(timeout=5)
    print(f"mpirun ended {time.monotonic() - ended_at:.1f} s after the ranks were ended, "
          f"exit {job.returncode}")

    host = socket.gethostname()
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
        print(f"rank {r}: error after {ms:.0f} ms, class '{klass}': {text[:160]}")
        if ms > limit_ms:
            failures.append(f"rank {r}: error after {ms:.0f} ms, more than {limit_ms:.0f} ms")
        if klass not in ("coll_hccl timeout", "coll_hccl peer lost"):
            failures.append(f"rank {r}: error class '{klass}' is not coll_hccl's")
        if not any(n in text for n in names):
            failures.append(f"rank {r}: the error string does not name {names[0]}: {text}")
        if not again or "broken since call" not in again[0]:
            failures.append(f"rank {r}: the next call did not say the communicator is broken")
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
    if not failures:
        print(f"PASS: {len(survivors)} survivors named {names[0]}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
