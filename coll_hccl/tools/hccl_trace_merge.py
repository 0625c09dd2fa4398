#!/usr/bin/env python3
"""Joins coll_hccl's per-rank timelines (MCA coll_hccl_trace=FILE writes FILE.<world rank>) into
one Chrome trace-event JSON document for Perfetto or chrome://tracing, and puts a predicted
timeline of the same schedule (`hccl_info predict --trace P`) beside it as a second group of
processes, "predicted server N", so measured and predicted steps line up row by row.

Time: the engine stamps CLOCK_MONOTONIC, which every process on one host shares; by default the
measured events are shifted together so that the first kept one is at 0 (--align global). On
several hosts each host's clock has its own origin: --align per-file moves each file's first
kept event to 0 instead (then only durations and order within a file are meaningful across
files). The predicted timeline starts at 0. --seq N keeps one call (its number on its
communicator, args.seq), so that one measured call sits beside the one predicted call.

Usage: hccl_trace_merge.py [-o OUT] [--predicted P] [--seq N] [--coll NAME] [--align MODE] FILE...
Exit status 0 on success; 2 with a message naming the file on bad input.
"""
import argparse
import json
import sys

# Predicted processes get pids past every measured one, so the two groups never mix.
PREDICTED_PID = 1_000_000


def fail(message):
    print(f"hccl_trace_merge: {message}", file=sys.stderr)
    sys.exit(2)


def load(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: {e}")
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        fail(f"{path}: not a Chrome trace-event document (no traceEvents list)")
    return doc


def keep_call(events, seq, coll):
    """Events of the calls selected by seq/coll (b/e pairs by id, metadata always)."""
    if seq is None and coll is None:
        return events

    def wanted(e):
        a = e.get("args", {})
        return (seq is None or a.get("seq") == seq) and (coll is None or a.get("coll") == coll)

    ids = {e["id"] for e in events if e.get("ph") == "b" and wanted(e)}
    return [e for e in events
            if e.get("ph") == "M" or (e.get("ph") == "X" and wanted(e))
            or (e.get("ph") in ("b", "e") and e.get("id") in ids)]


def shift(events, by):
    for e in events:
        if "ts" in e:
            e["ts"] = round(e["ts"] - by, 3)


def first_ts(events):
    return min((e["ts"] for e in events if "ts" in e), default=0.0)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", help="per-rank timeline files (FILE.<rank>)")
    ap.add_argument("-o", "--output", default="-", help="merged file (default: stdout)")
    ap.add_argument("--predicted", help="hccl_info predict --trace output to put beside them")
    ap.add_argument("--seq", type=int, help="keep only the call with this number")
    ap.add_argument("--coll", help="keep only this collective (allreduce, allgather, ...)")
    ap.add_argument("--align", choices=["global", "per-file", "none"], default="global")
    args = ap.parse_args(argv)

    measured, dropped, seen_meta = [], 0, set()
    per_file = []
    for path in args.files:
        doc = load(path)
        other = doc.get("otherData", {})
        if other.get("source") != "coll_hccl engine":
            fail(f"{path}: not a coll_hccl engine timeline (otherData.source is "
                 f"{other.get('source')!r}); pass a predicted timeline with --predicted")
        dropped += int(other.get("dropped", 0))
        events = keep_call(doc["traceEvents"], args.seq, args.coll)
        if args.align == "per-file":
            shift(events, first_ts(events))
        per_file.append(events)
    if args.align == "global":
        origin = min((first_ts(ev) for ev in per_file if any("ts" in e for e in ev)), default=0.0)
        for ev in per_file:
            shift(ev, origin)
    for events in per_file:
        for e in events:
            if e.get("ph") == "M":  # one process/thread name per (pid, tid, kind)
                key = (e.get("name"), e.get("pid"), e.get("tid"))
                if key in seen_meta:
                    continue
                seen_meta.add(key)
            measured.append(e)
    for pid in sorted({e["pid"] for e in measured if "pid" in e}):
        measured.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0,
                         "args": {"sort_index": pid}})

    predicted = []
    if args.predicted:
        doc = load(args.predicted)
        for e in doc["traceEvents"]:
            e = dict(e)
            e["pid"] = PREDICTED_PID + int(e.get("pid", 0))
            if "id" in e:
                e["id"] = f"predicted-{e['id']}"
            if e.get("ph") == "M" and e.get("name") == "process_name":
                e["args"] = {"name": "predicted " + e["args"]["name"]}
            predicted.append(e)
        for pid in sorted({e["pid"] for e in predicted}):
            predicted.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0,
                              "args": {"sort_index": pid}})

    out = {"traceEvents": measured + predicted, "displayTimeUnit": "ns",
           "otherData": {"source": "hccl_trace_merge", "files": args.files,
                         "predicted": args.predicted or "", "seq": args.seq,
                         "coll": args.coll, "align": args.align, "dropped": dropped}}
    text = json.dumps(out)
    if args.output == "-":
        sys.stdout.write(text + "\n")
    else:
        with open(args.output, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
