#!/usr/bin/env python3
"""Runs one MPI test job the way a user would, and checks what coll_hccl did.

The job runs under `timeout ... mpirun --allow-run-as-root --oversubscribe` with the freshly built
mca_coll_hccl.so appended to Open MPI's component path through a private directory, so a stale or
system-wide copy is never used and the system's Open MPI directories are never written. The test
fails unless the program exits 0 and printed its own PASS line (with at least one check), and,
as requested, unless coll_hccl's verbose output shows that it was loaded, enabled and called:
a component that silently failed to load would otherwise leave a passing job on tuned.

With --coll-alone the job runs with `--mca coll hccl`: coll_hccl is the only coll component Open
MPI loads, so it must serve every communicator (MPI_COMM_SELF, single ranks and whatever the
engine declines through its own point-to-point floor). Open MPI's selection output
(coll_base_verbose) must then show coll_hccl, and nothing else, selected and enabled on every
communicator created. Expectations that are facts of priority mode adapt: --expect-not-enabled
means that the engine was set up nowhere but the floor served the calls, and a fallback allowed by
--fallback-allowed may be a floor call. --expect-line-priority / --expect-line-alone hold in one
mode only.

In both modes a job fails when its output holds a help message of Open MPI's coll framework
(selection failures, and the "failed to finalize properly" text that follows them), so a
regression there cannot hide behind a passing program.

Exit codes follow `meson test`: 0 pass, 1 fail, 77 skipped.
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

SKIP = 77

# Help messages of Open MPI's coll framework (help-mca-coll-base.txt, and help-mca-base.txt's
# "not found" for a listed component). In 4.1.4 a typo in the first file appends "A coll module
# failed to finalize properly" to the selection failure, so that text is a symptom too.
FRAMEWORK_MESSAGES = [
    "failed to finalize properly",
    "none of them said that they could be used",
    "Although some coll components are available",
    "coll_base_comm_select",
    "A requested component was not found",
]


def framework_messages(text):
    """Help messages wrap lines: match on the text with its whitespace collapsed."""
    flat = " ".join(text.split())
    found = []
    for message in FRAMEWORK_MESSAGES:
        at = flat.find(message)
        if at >= 0:
            found.append(f"Open MPI's coll framework complained: ...{flat[at:at + 160]}...")
    return found


NEW_COMM = re.compile(r"coll:base:comm_select: new communicator: (.*) \(cid (\d+)\)")
SELECTING = re.compile(
    r"coll:base:comm_select: selecting\s+(\S+), priority\s+(-?\d+), (Enabled|Disabled)")


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--pml", choices=["ob1", "ucx"], default="ob1")
    ap.add_argument("--component-dir", required=True)
    ap.add_argument("--verbose", type=int, default=1, help="coll_hccl_verbose")
    ap.add_argument("--timeout", type=int, default=120, help="seconds for the whole job")
    ap.add_argument("--env", action="append", default=[], metavar="K=V",
                    help="environment variable for the ranks (mpirun -x)")
    ap.add_argument("--mca", action="append", nargs=2, default=[], metavar=("NAME", "VALUE"))
    ap.add_argument("--expect-enabled", action="store_true",
                    help="coll_hccl must be enabled on MPI_COMM_WORLD")
    ap.add_argument("--expect-not-enabled", action="store_true",
                    help="coll_hccl must not be enabled on any communicator")
    ap.add_argument("--expect-absent", action="store_true",
                    help="coll_hccl must print nothing at all (component excluded)")
    ap.add_argument("--expect-calls", default="",
                    help="comma-separated MPI functions coll_hccl must report intercepting")
    ap.add_argument("--expect-taken", action="store_true",
                    help="at least one call must have been run by the engine")
    ap.add_argument("--expect-line", action="append", default=[], metavar="REGEX",
                    help="a line of the job's output must match")
    ap.add_argument("--expect-no-line", action="append", default=[], metavar="REGEX",
                    help="no line of the job's output may match")
    ap.add_argument("--expect-all-taken", action="store_true",
                    help="every intercepted call must have been run by the engine")
    ap.add_argument("--fallback-allowed", metavar="REGEX",
                    help="with --expect-all-taken: a declined call whose line matches is allowed "
                         "(a call served by coll_hccl's floor, ' -> floor: ', is matched as if it "
                         "said ' -> fallback: ')")
    ap.add_argument("--expect-decisions", metavar="REGEX",
                    help="every call the engine ran must report a decision matching REGEX")
    ap.add_argument("--thread-multiple", action="store_true",
                    help="run the program at MPI_THREAD_MULTIPLE (it gets --thread-multiple) and "
                         "check that coll_hccl started in that mode")
    ap.add_argument("--coll-alone", action="store_true",
                    help="run with --mca coll hccl (no other coll component) and check from "
                         "Open MPI's selection output that coll_hccl alone served every "
                         "communicator")
    ap.add_argument("--expect-line-priority", action="append", default=[], metavar="REGEX",
                    help="as --expect-line, in priority mode only")
    ap.add_argument("--expect-line-alone", action="append", default=[], metavar="REGEX",
                    help="as --expect-line, with --coll-alone only")
    ap.add_argument("--expect-predictions", default="", metavar="CALLS",
                    help="comma-separated MPI functions: every rank-0 line of MPI_COMM_WORLD for "
                         "such a call on a predefined type must carry the decision (levels, "
                         "algorithms, predicted times) that `hccl_info table` gives for the same "
                         "shape, and each call must have at least one such line with a predicted "
                         "time; needs --hccl-info")
    ap.add_argument("--hccl-info", metavar="EXE", help="hccl_info, for --expect-predictions")
    ap.add_argument("--ompi-info", action="store_true",
                    help="run ompi_info instead of mpirun; program = expected parameter names")
    ap.add_argument("program", nargs="+")
    return ap.parse_args()


def component_path(args):
    # Appended to the system default: replacing it would drop mpirun's own plugins, and a
    # missing directory would stop the scan (reference section 1).
    path = os.path.abspath(args.component_dir)
    if not os.path.isfile(os.path.join(path, "mca_coll_hccl.so")):
        sys.exit(f"no mca_coll_hccl.so in {path}")
    return "SYS_DEFAULT:" + path


def run_ompi_info(args):
    env = dict(os.environ, OMPI_MCA_mca_base_component_path=component_path(args))
    # `ompi_info --mca mca_base_component_path ...` is read too late to find components: use env.
    cmd = ["timeout", str(args.timeout), "ompi_info", "--param", "coll", "hccl", "--level", "9"]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    print(out.stdout + out.stderr)
    failures = []
    if out.returncode != 0:
        failures.append(f"ompi_info exited {out.returncode}")
    if not re.search(r"MCA coll: hccl \(MCA v[\d.]+, API v[\d.]+, Component v[\d.]+\)", out.stdout):
        failures.append("ompi_info does not list 'MCA coll: hccl'")
    for name in args.program:
        if f'parameter "{name}"' not in out.stdout:
            failures.append(f"parameter {name} missing")
    return failures


def as_fallback(line):
    """A floor line read as the fallback line it replaces where no other component exists."""
    return line.replace(" -> floor: ", " -> fallback: ")


def read_rank_outputs(outdir, np):
    """mpirun --output-filename DIR writes DIR/1/rank.N/{stdout,stderr}."""
    texts = []
    for r in range(np):
        for stream in ("stdout", "stderr"):
            path = os.path.join(outdir, "1", f"rank.{r}", stream)
            if os.path.isfile(path):
                with open(path, errors="replace") as f:
                    part = f.read()
                texts.append(part if part.endswith("\n") or not part else part + "\n")
    return "".join(texts)


def run_job(args):
    cmd = ["timeout", "-k", "10", str(args.timeout), "mpirun", "--allow-run-as-root",
           "--oversubscribe", "-np", str(args.np),
           "--mca", "mca_base_component_path", component_path(args),
           "--mca", "coll_hccl_verbose", str(args.verbose),
           # keep help messages whole instead of "Data unpack would read past end of buffer"
           "--mca", "orte_base_help_aggregate", "0"]
    if args.pml == "ucx":
        cmd += ["--mca", "pml", "ucx", "--mca", "pml_ucx_tls", "any",
                "--mca", "pml_ucx_devices", "any"]
    else:
        cmd += ["--mca", "pml", "ob1"]
    if args.coll_alone:
        if any(name == "coll" for name, _ in args.mca):
            sys.exit("--coll-alone sets the coll list itself; drop --mca coll")
        # Level 9: one line per communicator and one per component enabled on it.
        cmd += ["--mca", "coll", "hccl", "--mca", "coll_base_verbose", "9"]
    for name, value in args.mca:
        cmd += ["--mca", name, value]
    for kv in args.env:
        cmd += ["-x", kv]
    cmd += [os.path.abspath(args.program[0])] + args.program[1:]
    if args.thread_multiple:
        cmd.append("--thread-multiple")
    print("$ " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    # Each rank's output to its own files (mpirun --output-filename): through mpirun's terminal,
    # lines of ranks that all print (every rank is rank 0 of its MPI_COMM_SELF) interleave within
    # a line, which breaks the line checks below. mpirun's own output holds the help messages.
    with tempfile.TemporaryDirectory(prefix="run_mpi-") as outdir:
        out = subprocess.run(cmd[:5] + ["--output-filename", outdir + ":nocopy"] + cmd[5:],
                             capture_output=True, text=True, errors="replace",
                             stdin=subprocess.DEVNULL)
        text = out.stdout + out.stderr + read_rank_outputs(outdir, args.np)
    sys.stdout.write(text if len(text) < 200_000 else text[:100_000] + "\n[...]\n" + text[-100_000:])
    lines = text.splitlines()

    failures = []
    if out.returncode == 124:
        failures.append(f"timed out after {args.timeout} s")
    elif out.returncode != 0:
        failures.append(f"job exited {out.returncode}")
    passes = [l for l in lines if re.search(r": PASS \((\d+) checks", l)]
    if not passes:
        failures.append("the program did not print its PASS line")
    elif any(int(re.search(r"\((\d+) checks", l).group(1)) == 0 for l in passes):
        failures.append("the program checked nothing")
    hccl = [l for l in lines if l.startswith("coll:hccl:")]
    if args.expect_absent and hccl:
        failures.append("coll_hccl printed output although it should be excluded")
    if args.expect_enabled and not any(
            l.startswith("coll:hccl: enabled on 'MPI_COMM_WORLD'") for l in hccl):
        failures.append("coll_hccl was not enabled on MPI_COMM_WORLD (component not loaded?)")
    if args.thread_multiple and not any("started (thread multiple: yes)" in l for l in hccl):
        failures.append("coll_hccl did not start in MPI_THREAD_MULTIPLE mode")
    if args.expect_not_enabled and any(l.startswith("coll:hccl: enabled on") for l in hccl):
        failures.append("coll_hccl was enabled although it should not be")
    floor = [l for l in hccl if " -> floor: " in l]
    if args.coll_alone:
        failures += check_alone(lines)
        # Not enabled in priority mode is "the engine is not set up" here: the floor serves.
        if args.expect_not_enabled and not floor:
            failures.append("no call was served by coll_hccl's floor although the engine is off")
    failures += framework_messages(text)
    for call in filter(None, args.expect_calls.split(",")):
        if not any(l.startswith(f"coll:hccl: {call} on ") for l in hccl):
            failures.append(f"coll_hccl did not report any {call}")
    taken = [l for l in hccl if " -> hccl: " in l]
    if args.expect_taken and not taken:
        failures.append("no call was run by the engine")
    calls = [l for l in hccl if re.match(r"coll:hccl: MPI_\w+ on ", l)]
    if args.expect_all_taken:
        # A call the engine did not take went to the previous component (' -> fallback: ') or,
        # where there is none, to coll_hccl's point-to-point floor (' -> floor: '): both are
        # "not taken", and an allowed fallback is allowed on either path.
        declined = [l for l in calls if " -> hccl: " not in l and not (
            args.fallback_allowed and re.search(args.fallback_allowed, as_fallback(l)))]
        if declined:
            failures.append(f"{len(declined)} call(s) not run by the engine, e.g.: {declined[0]}")
    if args.expect_decisions:
        off = [l for l in taken if not re.search(args.expect_decisions, l)]
        if off:
            failures.append(f"{len(off)} decision(s) do not match {args.expect_decisions!r}, "
                            f"e.g.: {off[0]}")
    errors = [l for l in hccl if re.search(r"failed|could not|error", l)]
    if errors and not (args.expect_line or args.expect_line_priority or args.expect_line_alone):
        failures.append(f"coll_hccl reported errors: {errors[0]}")
    if args.expect_predictions:
        failures += check_predictions(args, lines)
    mode_lines = args.expect_line_alone if args.coll_alone else args.expect_line_priority
    for regex in args.expect_line + mode_lines:
        if not any(re.search(regex, l) for l in lines):
            failures.append(f"no output line matches {regex!r}")
    for regex in args.expect_no_line:
        hit = next((l for l in lines if re.search(regex, l)), None)
        if hit is not None:
            failures.append(f"an output line matches {regex!r}: {hit}")
    summary = (f"{len(hccl)} coll_hccl lines, {len(taken)} calls run by the engine, "
               f"{sum(' -> fallback: ' in l for l in hccl)} fallbacks, {len(floor)} on the floor")
    print(summary)
    # What took the floor and why, counted over the whole output (the job's printed output above
    # is cut when long): rank 0 of each communicator speaks at verbose 1.
    why_floor = {}
    for l in floor:
        m = re.match(r"coll:hccl: (MPIX?_\w+) on .* -> floor: (.*)$", l)
        if m:
            key = (m.group(1), m.group(2))
            why_floor[key] = why_floor.get(key, 0) + 1
    for (call, why), n in sorted(why_floor.items()):
        print(f"floor count: {call}: {why}: {n}")
    return failures


# --expect-predictions: what coll_hccl_decide.c's describe() prints, read back as the call
# hccl_info table is asked about. Its sizes are MPI's count times the element size: the whole
# vector, per rank for Scatter and Gather, per pair for Alltoall (the line's bytes are p times
# those), as algo::CallInfo counts them. The calls that only move data reach the engine as bytes
# (the adapter describes them so), so hccl_info is asked about bytes for them, and about the MPI
# type for the reductions: the shape the engine decides on.
# MPI function: (hccl_info collective, size per rank or pair, moves bytes)
PREDICTED_CALLS = {"MPI_Allreduce": ("allreduce", False, False),
                   "MPI_Bcast": ("broadcast", False, True),
                   "MPI_Reduce": ("reduce", False, False),
                   "MPI_Scatter": ("scatter", True, True),
                   "MPI_Gather": ("gather", True, True),
                   "MPI_Alltoall": ("alltoall", True, True)}
MPI_TYPES = {"MPI_INT": "int32", "MPI_UNSIGNED": "uint32", "MPI_LONG": "int64",
             "MPI_FLOAT": "fp32", "MPI_DOUBLE": "fp64", "MPI_SHORT": "int16",
             "MPI_SIGNED_CHAR": "int8"}
MPI_OPS = {"MPI_SUM": "sum", "MPI_PROD": "prod", "MPI_MAX": "max", "MPI_MIN": "min"}
DECIDED = re.compile(r"^coll:hccl: (MPI_\w+) on MPI_COMM_WORLD \(cid 0, rank 0 of (\d+)\): "
                     r"(?:\d+ x )?(MPI_\w+), (?:(MPI_\w+), )?(\d+) bytes"
                     r"(?: from root \d+| to root \d+| sent)?(, in place)? -> hccl: (.*?)"
                     r"(?:; on the shared-memory slots)?$")
EXPLAIN_MAX = 511  # coll_hccl_decide.c's explain[512]: a longer decision is cut


def check_predictions(args, lines):
    """Each compared line's decision equals hccl_info's for the same call and layout."""
    if not args.hccl_info:
        return ["--expect-predictions needs --hccl-info"]
    wanted = set(filter(None, args.expect_predictions.split(",")))
    envs = dict(kv.split("=", 1) for kv in args.env)
    shape = envs.pop("HCCL_TOPO_EMULATE", f"1x{args.np}")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HCCL_", "COLL_HCCL_"))}
    env.update(envs)  # HCCL_ALGO and the like, as the ranks had them
    mca = [f"--mca={n}={v}" for n, v in args.mca if n.startswith("coll_hccl_")]
    asked, failures, timed = {}, [], {c: 0 for c in wanted}
    for line in lines:
        m = DECIDED.match(line)
        if not m or m.group(1) not in wanted or m.group(6):
            continue
        call, np_, mpi_type, mpi_op, total, summary = m.group(1, 2, 3, 4, 5, 7)
        coll, per_rank, moves_bytes = PREDICTED_CALLS[call]
        if mpi_type not in MPI_TYPES or (mpi_op and mpi_op not in MPI_OPS):
            continue
        size = int(total) // int(np_) if per_rank else int(total)
        dtype = "byte" if moves_bytes else MPI_TYPES[mpi_type]
        key = (coll, dtype, MPI_OPS.get(mpi_op, "sum"), size)
        if key not in asked:
            cmd = [args.hccl_info, "table", "--shape", shape, "--coll", coll, "--dtype", key[1],
                   "--op", key[2], "--min", str(size), "--max", str(size), "--json"] + mca
            out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60)
            if out.returncode != 0:
                return [f"{' '.join(cmd)} failed ({out.returncode}): {out.stderr.strip()}"]
            rows = [r for r in json.loads(out.stdout) if r["bytes"] == size]
            asked[key] = rows[0]["summary"] if rows else f"no row of {size} B in {out.stdout}"
        expect = asked[key]
        same = summary == expect or (len(summary) >= EXPLAIN_MAX and expect.startswith(summary))
        if not same:
            failures.append(f"{call} {mpi_type} {total} bytes: the engine decided '{summary}', "
                            f"hccl_info table --shape {shape} --coll {coll} --dtype {dtype} at {size} B "
                            f"'{expect}'")
        elif re.search(r"\d (us|ms|s) predicted", summary):
            timed[call] += 1
    for call, n in sorted(timed.items()):
        if n == 0:
            failures.append(f"no {call} line with a predicted time matched hccl_info")
    print(f"--expect-predictions: {len(asked)} shapes asked of hccl_info, lines with a predicted "
          f"time that match: {dict(sorted(timed.items()))}")
    return failures[:5] + ([f"... {len(failures) - 5} more"] if len(failures) > 5 else [])


def check_alone(lines):
    """Every communicator Open MPI created selected coll_hccl, enabled, and no other component."""
    failures = []
    created = [l for l in lines if NEW_COMM.search(l)]
    selected = [SELECTING.search(l) for l in lines]
    selected = [m for m in selected if m]
    if not created:
        return ["no selection output from Open MPI (coll_base_verbose): cannot check --coll-alone"]
    others = [m.group(0) for m in selected if m.group(1) != "hccl"]
    if others:
        failures.append(f"{len(others)} other coll component(s) selected, e.g.: {others[0]}")
    disabled = [m.group(0) for m in selected if m.group(1) == "hccl" and m.group(3) != "Enabled"]
    if disabled:
        failures.append(f"coll_hccl disabled on {len(disabled)} communicator(s): {disabled[0]}")
    enabled = sum(1 for m in selected if m.group(1) == "hccl" and m.group(3) == "Enabled")
    if enabled != len(created):
        failures.append(f"{len(created)} communicators created (all ranks) but coll_hccl enabled "
                        f"{enabled} times")
    print(f"--coll-alone: {len(created)} communicator set-ups (all ranks), coll_hccl enabled on "
          f"{enabled}, {len(others)} other components")
    return failures


def main():
    args = parse_args()
    failures = run_ompi_info(args) if args.ompi_info else run_job(args)
    if failures is None:
        return SKIP
    for f in failures:
        print("FAILED: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
