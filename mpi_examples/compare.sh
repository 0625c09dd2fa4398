#!/bin/bash
# Runs hccl_bench the ways the issues ask for: coll_hccl (communicator A) against Open MPI tuned
# and HAN (communicator B), both in the same run, alternating. Prints each command before running
# it; --dry-run prints only. See mpi_examples/README.md for how to read the output.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: compare.sh [OPTIONS] local|cluster [-- HCCL_BENCH-ARGS...]
  local     on this machine: np=2 and np=4 (--np), A = default selection vs B = tuned and
            C = basic; with --json-dir also a plot per run (local-npN.png, needs gnuplot)
  cluster   on the emulated cluster (tests/cluster/cluster.sh), 2 servers x 2 ranks at 1 Gbit/s
            by default: one run vs tuned, one run vs HAN
Options:
  --build-dir DIR       where hccl_bench was built (default: ./build)
  --component-dir DIR   directory holding mca_coll_hccl.so, appended to Open MPI's component path
                        (default: $HCCL_COMPONENT_DIR; none: A runs stock Open MPI = an A/A check)
  --np "N..."           local: process counts (default "2 4")
  --servers N           cluster: servers (default 2)
  --ppn K               cluster: ranks per server (default 2)
  --rate RATE           cluster: link rate, tc syntax (default 1gbit)
  --json-dir DIR        write one JSON file per run there
  --timeout SEC         bound for each mpirun (default 1800)
  --dry-run             print the commands, run nothing
Arguments after -- go to hccl_bench (e.g. -b 64K -e 64M -C allreduce); without -C every
collective coll_hccl serves is measured.
EOF
}

die() {
  echo "compare.sh: $*" >&2
  exit 2
}

repo=$(cd "$(dirname "$0")/.." && pwd)
build_dir=$repo/build
component_dir=${HCCL_COMPONENT_DIR:-}
nps="2 4"
servers=2
ppn=2
rate=1gbit
json_dir=
run_timeout=1800
dry_run=0
mode=

while (($#)); do
  case $1 in
    --build-dir) build_dir=${2:?--build-dir needs a directory}; shift 2 ;;
    --component-dir) component_dir=${2:?--component-dir needs a directory}; shift 2 ;;
    --np) nps=${2:?--np needs process counts}; shift 2 ;;
    --servers) servers=${2:?--servers needs a number}; shift 2 ;;
    --ppn) ppn=${2:?--ppn needs a number}; shift 2 ;;
    --rate) rate=${2:?--rate needs a tc rate}; shift 2 ;;
    --json-dir) json_dir=${2:?--json-dir needs a directory}; shift 2 ;;
    --timeout) run_timeout=${2:?--timeout needs seconds}; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    -h | --help) usage; exit 0 ;;
    local | cluster) mode=$1; shift ;;
    --) shift; break ;;
    *) usage >&2; die "unknown argument '$1'" ;;
  esac
done
bench_args=("$@")
# Every collective coll_hccl serves, unless the arguments choose (-C / --collectives).
all_colls=allreduce,allgather,allgatherv,reduce_scatter,reduce_scatter_v,bcast,reduce,scatter,scatterv
all_colls+=,gather,gatherv,alltoall,alltoallv,alltoallw,scan,exscan,barrier
chosen=0
for a in "${bench_args[@]}"; do [[ $a == -C || $a == --collectives* ]] && chosen=1; done
((chosen)) || bench_args=(-C "$all_colls" "${bench_args[@]}")
[[ -n $mode ]] || { usage >&2; die "say 'local' or 'cluster'"; }
for n in $nps $servers $ppn $run_timeout; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || die "'$n' is not a positive whole number"
done

bench=$build_dir/mpi_examples/hccl_bench
((dry_run)) || [[ -x $bench ]] || die "no hccl_bench at $bench: build first (meson compile -C build)"

# Open MPI 4.1.4 stops scanning the component path at the first directory that does not exist,
# so a wrong directory would silently drop coll_hccl: refuse it instead.
component_args=()
label_a="auto (stock Open MPI)"
if [[ -n $component_dir ]]; then
  [[ -f $component_dir/mca_coll_hccl.so ]] ||
    die "no mca_coll_hccl.so in --component-dir '$component_dir'"
  component_args=(--mca mca_base_component_path "SYS_DEFAULT:$(cd "$component_dir" && pwd)")
  label_a="coll_hccl"
fi

json_args() {
  [[ -n $json_dir ]] || return 0
  ((dry_run)) || mkdir -p "$json_dir"
  printf '%s\n' --json "$json_dir/$1.json"
}

plot_args() {
  [[ -n $json_dir ]] || return 0
  printf '%s\n' --plot "$json_dir/$1.png"
}

show_and_run() {
  printf '+'
  printf ' %q' "$@"
  printf '\n'
  ((dry_run)) || "$@"
}

# B = "tuned,^hccl": tuned first, coll_hccl out. B = "han,^hccl": HAN first (its default priority 0
# does not matter: the preference list reorders every component that accepted the communicator),
# coll_hccl out. Write the '^' entry last: Open MPI 4.1.4 excludes every entry from the first '^'
# on, so "^hccl,han" would exclude HAN too.
run_local() {
  local np
  for np in $nps; do
    local -a json=() plot=()
    mapfile -t json < <(json_args "local-np$np-vs-tuned")
    mapfile -t plot < <(plot_args "local-np$np")
    show_and_run timeout "$run_timeout" mpirun --allow-run-as-root --oversubscribe -np "$np" \
      "${component_args[@]}" "$bench" --compare "tuned,^hccl" --label-a "$label_a" \
      --label-b "tuned" --also "basic,^hccl" "${json[@]}" "${plot[@]}" "${bench_args[@]}"
  done
}

run_cluster() {
  local cluster=$repo/tests/cluster/cluster.sh
  ((dry_run)) || [[ -x $cluster ]] || die "no emulated cluster script at $cluster"
  local np=$((servers * ppn)) id=bench$$ b label
  for b in "tuned,^hccl" "han,^hccl"; do
    label=${b%%,*}
    local -a json=()
    mapfile -t json < <(json_args "cluster-${servers}x$ppn-$rate-vs-$label")
    # session: bring the rig up, run, tear it down whatever happens; run: mpirun inside ns0 with
    # the rig's hosts, ssh stand-in and --bind-to none.
    show_and_run "$cluster" --id "$id" session "$servers" --rate "$rate" --slots "$ppn" -- \
      "$cluster" run --timeout "$run_timeout" -- -np "$np" --map-by "ppr:$ppn:node" \
      --mca mpi_yield_when_idle 1 "${component_args[@]}" "$bench" --compare "$b" \
      --label-a "$label_a" --label-b "$label" "${json[@]}" "${bench_args[@]}"
  done
}

case $mode in
  local) run_local ;;
  cluster) run_cluster ;;
esac
