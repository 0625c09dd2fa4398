#!/bin/bash
# Evidence for issue 7 on the emulated cluster (not part of `meson test`; run it by hand, as root):
#   1. hccl_bench, A = coll_hccl (automatic choice, then each level-1 algorithm forced through the
#      info key hccl_algo) against B = Open MPI tuned and B = HAN, in alternating A/B pairs;
#   2. traffic_probe: the bytes each server's eth0 sent per call, for the same configurations and
#      for tuned and HAN, next to the formula's prediction.
# Everything (logs, JSON, the report) goes to --out; the report is report.md there.
#
#   tests/cluster/evidence.sh [--build-dir DIR] [--out DIR] [--quick] [options, see --help]
set -euo pipefail

HERE=$(dirname "$(readlink -f "$0")")
REPO=$(cd "$HERE/../.." && pwd)
CLUSTER=$HERE/cluster.sh

usage() {
  cat <<'EOF'
usage: evidence.sh [OPTIONS]
  --build-dir DIR       build directory (default: <repo>/build)
  --component-dir DIR   directory of mca_coll_hccl.so (default: BUILD/coll_hccl/private)
  --out DIR             where logs, JSON and report.md go (default: BUILD/cluster-evidence)
  --servers N --ppn K   layout (default 2 servers x 2 ranks)
  --rate RATE           link rate, tc syntax (default 1gbit)
  --configs "..."       coll_hccl configurations: auto and level-1 algorithms
                        (default "auto ring H-D_R NHR NB pipeline")
  --baselines "..."     B sides: tuned, han (default "tuned han")
  --pairs P             A/B pairs per size, 64 KiB .. 1 MiB (default 4; order abba)
  --large-pairs P       A/B pairs per size, 4 MiB .. 64 MiB (default 2)
  --small-iters N       timed calls per block, 64 KiB .. 1 MiB (default 20)
  --large-iters N       timed calls per block, 4 MiB .. 64 MiB (default 2)
  --traffic-sizes "..." sizes for the byte counts (default "1M 16M")
  --quick               a smoke run of the script itself: 64 KiB .. 256 KiB, 1 pair, 2 configs
  --timeout SEC         bound for each mpirun (default 1200)
EOF
}

build=$REPO/build
component=
out=
servers=2
ppn=2
rate=1gbit
configs="auto ring H-D_R NHR NB pipeline"
baselines="tuned han"
pairs=4
large_pairs=2
small_iters=20
large_iters=2
traffic_sizes="1M 16M"
quick=0
run_timeout=1200

die() {
  echo "evidence.sh: $*" >&2
  exit 2
}

parse() {
  while (($#)); do
    case $1 in
      --build-dir) build=${2:?}; shift 2 ;;
      --component-dir) component=${2:?}; shift 2 ;;
      --out) out=${2:?}; shift 2 ;;
      --servers) servers=${2:?}; shift 2 ;;
      --ppn) ppn=${2:?}; shift 2 ;;
      --rate) rate=${2:?}; shift 2 ;;
      --configs) configs=${2:?}; shift 2 ;;
      --baselines) baselines=${2:?}; shift 2 ;;
      --pairs) pairs=${2:?}; shift 2 ;;
      --large-pairs) large_pairs=${2:?}; shift 2 ;;
      --small-iters) small_iters=${2:?}; shift 2 ;;
      --large-iters) large_iters=${2:?}; shift 2 ;;
      --traffic-sizes) traffic_sizes=${2:?}; shift 2 ;;
      --quick) quick=1; shift ;;
      --timeout) run_timeout=${2:?}; shift 2 ;;
      -h | --help) usage; exit 0 ;;
      *) usage >&2; die "unknown argument '$1'" ;;
    esac
  done
  build=$(readlink -f "$build")
  component=$(readlink -f "${component:-$build/coll_hccl/private}")
  out=$(readlink -m "${out:-$build/cluster-evidence}")
  for n in $servers $ppn $pairs $large_pairs $small_iters $large_iters $run_timeout; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || die "'$n' is not a positive whole number"
  done
  for c in $configs; do
    [[ $c =~ ^(auto|ring|H-D_R|NHR|NB|pipeline|AHC|NHR_V1)$ ]] ||
      die "unknown configuration '$c' (valid: auto ring H-D_R NHR NB pipeline AHC NHR_V1)"
  done
  for b in $baselines; do
    [[ $b =~ ^(tuned|han)$ ]] || die "unknown baseline '$b' (valid: tuned han)"
  done
  if ((quick)); then
    configs="auto pipeline"
    pairs=1
    traffic_sizes="256K"
  fi
}

preference_of() {
  case $1 in
    tuned) echo "tuned,^hccl" ;;
    han) echo "han,^hccl" ;;
  esac
}

# mpirun inside the rig: ranks by slot (ns0 gets 0..K-1), coll_hccl from its private directory,
# its verbose level 1 (rank 0 prints each call's decision, so the log shows what ran).
mpirun_rig() {
  "$CLUSTER" run --timeout "$run_timeout" -- -np $((servers * ppn)) --map-by "ppr:$ppn:node" \
    --mca mpi_yield_when_idle 1 --mca pml ob1 \
    --mca mca_base_component_path "SYS_DEFAULT:$component" --mca coll_hccl_verbose 1 "$@"
}

load() { cut -d' ' -f1-3 /proc/loadavg; }

note() {
  printf '%s %s\n' "$(date +%T)" "$*" | tee -a "$out/progress.log"
}

bench_run() {
  local cfg=$1 base=$2 range=$3 name log status=0 colls=allreduce,allgather,reduce_scatter
  local -a algo=() sizes iters
  if [[ $cfg == auto ]]; then
    algo=(--label-a auto)
  else
    algo=(--hccl-algo "level0:NA;level1:$cfg" --label-a "$cfg")
  fi
  if [[ $range == small ]]; then
    sizes=(-b 64K -e "$( ((quick)) && echo 256K || echo 1M)")
    iters=(-n "$small_iters" -w 2 -p "$pairs")
  else
    sizes=(-b 4M -e 64M)
    iters=(-n "$large_iters" -w 1 -p "$large_pairs")
  fi
  # HAN has no reduce_scatter: its B side would be tuned's again, measured in the tuned runs.
  [[ $base == han ]] && colls=allreduce,allgather
  name=bench-$cfg-vs-$base-$range
  log=$out/$name.log
  note "hccl_bench A=$cfg B=$base $range (load $(load))"
  mpirun_rig "$build/mpi_examples/hccl_bench" -C "$colls" \
    "${sizes[@]}" -f 4 "${iters[@]}" --order abba \
    --compare "$(preference_of "$base")" --label-b "$base" "${algo[@]}" \
    --json "$out/$name.json" >"$log" 2>&1 || status=$?
  ((status == 0)) || note "  FAILED with status $status (see $log)"
  return 0
}

traffic_run() {
  local what=$1 size=$2 calls log status=0
  local -a info
  case $what in
    auto) info=() ;;
    tuned | han) info=(--info "ompi_comm_coll_preference=$(preference_of "$what")") ;;
    *) info=(--info "hccl_algo=level0:NA;level1:$what") ;;
  esac
  # About 64 MiB per server per measurement: enough to drown the barriers, quick at 1 Gbit/s.
  calls=$(awk -v s="$size" 'BEGIN {
    m = s + 0; u = substr(s, length(s)); if (u == "K") m *= 1024; if (u == "M") m *= 1048576;
    c = int(67108864 / m); if (c < 3) c = 3; if (c > 50) c = 50; print c }')
  log=$out/traffic-$what-$size.log
  note "traffic_probe $what $size x $calls (load $(load))"
  mpirun_rig "$build/tests/cluster/traffic_probe" --bytes "$size" --calls "$calls" --warmup 2 \
    "${info[@]}" allreduce allgather reduce_scatter >"$log" 2>&1 || status=$?
  ((status == 0)) || note "  FAILED with status $status (see $log)"
  return 0
}

body() {
  local cfg base range size k
  [[ -n ${HCCL_CLUSTER_ID:-} ]] || die "--body runs inside cluster.sh session"
  {
    echo "started=$(date -Is)"
    echo "host=$(hostname) cpus=$(nproc) kernel=$(uname -r)"
    echo "load_at_start=$(load)"
    echo "git=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "layout=${servers}x$ppn rate=$rate small: pairs=$pairs iters=$small_iters;" \
      "large: pairs=$large_pairs iters=$large_iters; configs='$configs' baselines='$baselines'"
    "$CLUSTER" status
  } >"$out/machine.txt" 2>&1
  for cfg in $configs; do
    for base in $baselines; do
      for range in small large; do
        ((quick)) && [[ $range == large ]] && continue
        bench_run "$cfg" "$base" "$range"
      done
    done
  done
  for size in $traffic_sizes; do
    for cfg in $configs $baselines; do
      traffic_run "$cfg" "$size"
    done
  done
  for ((k = 0; k < servers; k++)); do
    echo "== ns$k"
    tc -s -n "hccl-$HCCL_CLUSTER_ID-ns$k" qdisc show dev eth0
  done >"$out/qdisc-stats.txt" 2>&1
  echo "load_at_end=$(load)" >>"$out/machine.txt"
  echo "ended=$(date -Is)" >>"$out/machine.txt"
}

main() {
  if [[ ${1:-} == --body ]]; then
    shift
    parse "$@"
    body
    return
  fi
  parse "$@"
  ((EUID == 0)) || die "must run as root (network namespaces)"
  [[ -x $build/mpi_examples/hccl_bench ]] || die "no hccl_bench in $build: build first"
  [[ -x $build/tests/cluster/traffic_probe ]] || die "no traffic_probe in $build: build first"
  [[ -f $component/mca_coll_hccl.so ]] || die "no mca_coll_hccl.so in $component"
  mkdir -p "$out"
  rm -f "$out"/bench-*.json "$out"/bench-*.log "$out"/traffic-*.log "$out/progress.log"
  local t0=$SECONDS status=0
  "$CLUSTER" --id evidence session "$servers" --slots "$ppn" --rate "$rate" -- \
    "$0" --body "$@" --build-dir "$build" --component-dir "$component" --out "$out" ||
    status=$?
  python3 "$HERE/evidence_report.py" "$out" --servers "$servers" --ppn "$ppn" \
    --minutes "$(((SECONDS - t0 + 30) / 60))" >"$out/report.md" || status=$?
  echo "report: $out/report.md ($(((SECONDS - t0) / 60)) min)"
  return "$status"
}

main "$@"
