#!/usr/bin/env python3
"""Runs the malformed-input table (malformed_inputs.tsv) through real mpirun jobs.

Each row becomes one job of malformed_mpi (an MPI_Allreduce whose sums it checks) with the bad
value given the way a user would: an engine setting through its environment variable, its MCA
parameter (mpirun --mca) or its communicator info key (MPI_Comm_dup_with_info), a topology
variable through the environment. A row passes when the job ends in time with correct sums
(coll_hccl declined and Open MPI's own components ran) and, for an error row, the job's output
holds the row's message fragment. Note rows only need a passing job: the engine does not log its
notes yet.

By default each engine-setting row uses one of its layers, in turn across the table, so that
every layer is exercised; --all-layers runs every layer of every row.

  run_malformed_mpi.py --component-dir build/coll_hccl/private --program build/tests/inputs/malformed_mpi
                       [--table tests/inputs/malformed_inputs.tsv] [--np 4] [--timeout 60]
                       [--all-layers] [--only REGEX]

Exit status 0 when every row passed, 1 otherwise.
"""
import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# The adapter's layers per engine setting (coll_hccl_settings.c): info key, environment variable.
ADAPTER = {
    "algorithm": ("hccl_algo", "HCCL_ALGO"),
    "selection": (None, None),
    "buffsize_mb": ("hccl_buffsize", "HCCL_BUFFSIZE"),
    "deterministic": ("hccl_deterministic", "HCCL_DETERMINISTIC"),
    "hccs_tls": (None, None),
    "roce_tls": (None, None),
    "intra_roce": (None, "HCCL_INTRA_ROCE_ENABLE"),
    "tuning_file": (None, None),
    "timeout": (None, "HCCL_EXEC_TIMEOUT"),
    "verbose": (None, None),
    "level0_link": (None, "COLL_HCCL_LEVEL0_LINK"),
    "shm_slot_bytes": (None, "HCCL_SHM_SLOT_BYTES"),
}
# Open MPI parses coll_hccl_verbose as an integer itself; the engine's check is not reachable.
MPI_SKIP = {"verbose"}
LIMITS = {"RANK_TABLE_FILE": 32 << 20, "tuning_file": 4 << 20}


def unescape(text):
    out = bytearray()
    i = 0
    while i < len(text):
        c = text[i]
        if c != "\\":
            out += c.encode()
            i += 1
            continue
        e = text[i + 1]
        if e in "tn\\":
            out += {"t": b"\t", "n": b"\n", "\\": b"\\"}[e]
            i += 2
        elif e == "x":
            out.append(int(text[i + 2:i + 4], 16))
            i += 4
        elif e == "u":
            close = text.index("}", i)
            out += chr(int(text[i + 3:close], 16)).encode()
            i = close + 1
        else:
            sys.exit(f"unknown escape \\{e}")
    return bytes(out)


def read_table(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            setting, kind, value, fragment = line.split("\t")
            rows.append((n, setting, kind, unescape(value), fragment))
    return rows


def file_value(value, tmp, n, limit):
    """The path a @-value names, prepared in tmp."""
    path = os.path.join(tmp, f"row{n}")
    if value == b"@dir":
        os.mkdir(path)
    elif value == b"@fifo":
        os.mkfifo(path)
    elif value == b"@missing":
        pass
    elif value == b"@devzero":
        return b"/dev/zero"
    elif value == b"@big":
        with open(path, "wb") as f:
            f.truncate(limit + 1)
    elif value.startswith(b"@text:"):
        with open(path, "wb") as f:
            f.write(value[len(b"@text:"):])
    else:
        sys.exit(f"line {n}: unknown file value {value!r}")
    return path.encode()


def job(args, env_extra, mca, info):
    cmd = [b"timeout", b"-k", b"5", str(args.timeout).encode(), b"mpirun", b"--allow-run-as-root",
           b"--oversubscribe", b"-np", str(args.np).encode(),
           b"--mca", b"mca_base_component_path",
           b"SYS_DEFAULT:" + os.path.abspath(args.component_dir).encode(),
           b"--mca", b"pml", b"ob1", b"--mca", b"orte_base_help_aggregate", b"0"]
    for name, value in mca:
        cmd += [b"--mca", name, value]
    env = dict(os.environb)
    for name, value in env_extra:
        env[name] = value
        cmd += [b"-x", name]
    cmd += [os.path.abspath(args.program).encode()] + list(info)
    start = time.monotonic()
    out = subprocess.run(cmd, env=env, capture_output=True, stdin=subprocess.DEVNULL)
    took = time.monotonic() - start
    return cmd, out.returncode, (out.stdout + out.stderr).decode("utf-8", "replace"), took


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--component-dir", required=True)
    ap.add_argument("--program", required=True)
    ap.add_argument("--table", default=os.path.join(HERE, "malformed_inputs.tsv"))
    ap.add_argument("--np", type=int, default=4, help="the table's job size is 4 ranks")
    ap.add_argument("--timeout", type=int, default=60)
    ap.add_argument("--all-layers", action="store_true")
    ap.add_argument("--only", help="run the rows whose setting matches this regex")
    args = ap.parse_args()

    failures = []
    runs = 0
    turn = 0
    with tempfile.TemporaryDirectory(prefix="hccl_malformed_mpi_") as tmp:
        for n, setting, kind, value, fragment in read_table(args.table):
            if args.only and not re.search(args.only, setting):
                continue
            if setting in MPI_SKIP:
                continue
            if setting in LIMITS:
                value = file_value(value, tmp, n, LIMITS[setting])
            layers = []  # (label, env, mca, info)
            if setting in ADAPTER:
                info_key, env_var = ADAPTER[setting]
                if env_var:
                    layers.append((f"env {env_var}", [(env_var.encode(), value)], [], []))
                layers.append((f"MCA coll_hccl_{setting}", [],
                               [(f"coll_hccl_{setting}".encode(), value)], []))
                if info_key:
                    layers.append((f"info key {info_key}", [], [], [info_key.encode(), value]))
                if not args.all_layers:
                    layers = [layers[turn % len(layers)]]
                    turn += 1
            else:
                layers.append((f"env {setting}", [(setting.encode(), value)], [], []))
            for label, env_extra, mca, info in layers:
                runs += 1
                cmd, rc, text, took = job(args, env_extra, mca, info)
                problems = []
                if rc == 124:
                    problems.append(f"hung: no end within {args.timeout} s")
                elif rc != 0:
                    problems.append(f"job exited {rc}")
                if not re.search(r"malformed_mpi: PASS \([1-9]\d* checks\)", text):
                    problems.append("no PASS line (wrong sums or no end)")
                said = [l for l in text.splitlines() if fragment in l]
                if kind == "error" and not said:
                    problems.append(f"no line says: {fragment}")
                where = f"line {n} {setting} via {label}"
                shown = said[0] if said else ""
                print(f"{'FAIL' if problems else 'ok  '} {where} ({took:.1f} s) {shown[:300]}",
                      flush=True)
                if problems:
                    failures.append((where, problems, cmd, text))
    for where, problems, cmd, text in failures:
        print(f"\n=== {where}: {'; '.join(problems)}")
        print("$ " + " ".join(shlex.quote(c.decode("utf-8", "replace")) for c in cmd))
        print(text[-3000:])
    print(f"\n{runs - len(failures)} of {runs} jobs passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
