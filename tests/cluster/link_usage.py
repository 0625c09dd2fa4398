#!/usr/bin/env python3
"""How busy a server's link is during a run: idle time a collective leaves on the wire.

  link_usage.py sample FILE SECONDS [--dev eth0] [--every 0.0005]
      run inside a server (cluster.sh exec ns0 -- python3 link_usage.py sample ...): reads the
      device's tx_bytes and rx_bytes every 0.5 ms for SECONDS and writes "time tx rx" lines
      (CLOCK_MONOTONIC, the clock coll_hccl_trace stamps its timelines with)
  link_usage.py report FILE [--rate BYTES_PER_S] [--bin 0.001]
      per direction: from the first to the last busy bin, the bytes moved against the link's
      capacity, and the idle bins (under a fifth of the rate) with the gaps of 2 bins or more

Used for issue 13 on the 2x2 rig at 1 Gbit/s (--rate 125e6): coll_hccl's 64 MiB AllReduce left the
link 6-8% idle in 2-8 ms gaps at its steps' boundaries, HAN 1%; eager TCP sends brought that to 3%.
"""
import argparse
import sys
import time


def sample(path, seconds, dev, every):
    base = f"/sys/class/net/{dev}/statistics/"
    tx, rx = open(base + "tx_bytes"), open(base + "rx_bytes")
    rows = []
    end = time.monotonic() + seconds
    while (now := time.monotonic()) <= end:
        tx.seek(0)
        rx.seek(0)
        rows.append((now, int(tx.read()), int(rx.read())))
        time.sleep(every)
    with open(path, "w") as f:
        f.writelines("%.6f %d %d\n" % r for r in rows)


def report(path, rate, width):
    rows = [tuple(map(float, line.split())) for line in open(path) if line.strip()]
    if len(rows) < 2:
        sys.exit(f"{path}: fewer than two samples")
    for col, name in ((1, "tx"), (2, "rx")):
        bins = {}
        for a, b in zip(rows, rows[1:]):
            k = int((b[0] - rows[0][0]) / width)
            bins[k] = bins.get(k, 0) + b[col] - a[col]
        full = rate * width
        busy = [k for k, v in bins.items() if v > 0.3 * full]
        if not busy:
            print(f"{name}: no busy bin")
            continue
        lo, hi = min(busy), max(busy)
        moved = sum(bins.get(k, 0) for k in range(lo, hi + 1))
        idle = [k for k in range(lo, hi + 1) if bins.get(k, 0) < 0.2 * full]
        gaps, start = [], None
        for k in range(lo, hi + 2):
            if k in idle:
                start = k if start is None else start
            elif start is not None:
                gaps.append((start, k - start))
                start = None
        span = (hi - lo + 1) * width
        print(f"{name}: span {span * 1e3:.1f} ms, moved {moved / 1e6:.1f} MB of {span * rate / 1e6:.1f} MB "
              f"({100 * moved / (span * rate):.1f}%), idle {len(idle) * width * 1e3:.1f} ms")
        print("  gaps (ms from the span's start: length):",
              " ".join(f"{(a - lo) * width * 1e3:.0f}:{n * width * 1e3:.0f}" for a, n in gaps if n >= 2))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sample")
    s.add_argument("file")
    s.add_argument("seconds", type=float)
    s.add_argument("--dev", default="eth0")
    s.add_argument("--every", type=float, default=0.0005)
    r = sub.add_parser("report")
    r.add_argument("file")
    r.add_argument("--rate", type=float, default=125e6, help="link bytes per second (1 Gbit/s)")
    r.add_argument("--bin", type=float, default=0.001, help="bin width, seconds")
    a = p.parse_args()
    if a.cmd == "sample":
        sample(a.file, a.seconds, a.dev, a.every)
    else:
        report(a.file, a.rate, a.bin)


if __name__ == "__main__":
    main()
