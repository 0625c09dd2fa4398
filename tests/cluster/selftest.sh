#!/bin/bash
# Self-test of the emulated cluster rig (meson suite 'cluster'). Needs root; exits 77 (skip)
# without root or without network namespaces.
#   selftest.sh PROBE          the test: argument checks, a 2 servers x 2 slots session at 1 Gbit/s
#                              running the checks below, then teardown checks (normal exit, failing
#                              body, and a session killed the way meson kills a timed-out test)
#   selftest.sh --body PROBE   what runs inside the session
set -euo pipefail

HERE=$(dirname "$(readlink -f "$0")")
CLUSTER=$HERE/cluster.sh
ID=selftest
UCX_PML=(--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any)
SHM_TLS='(sysv|posix|cma|xpmem|knem)/'

skip() {
  echo "SKIP: $*"
  exit 77
}
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
note() { echo "== $*"; }

cluster() { "$CLUSTER" --id "$ID" "$@"; }

# --- inside the session --------------------------------------------------------------------------

# Placement the probe must report for --host ns0:K,ns1:K,... with by-slot mapping, computed from
# the layout alone: rank r runs on ns(r / K), its shared group starts at K * (r / K).
expected_placement() {
  local np=$1 k=$2 r
  for ((r = 0; r < np; r++)); do
    echo "probe rank=$r size=$np host=ns$((r / k)) shm_leader=$((k * (r / k))) shm_rank=$((r % k)) shm_size=$k"
  done
}

check_probe_output() {
  local out=$1 np=$2 k=$3 what=$4 hosts s
  grep -q '^probe checks ok$' <<<"$out" || fail "$what: probe checks did not pass"
  diff <(expected_placement "$np" "$k") <(grep '^probe rank=' <<<"$out") ||
    fail "$what: placement differs from the namespaces (expected < > reported)"
  hosts=$(grep '^probe rank=' <<<"$out" | sed -E 's/.* host=([^ ]+) .*/\1/' | sort -u | tr '\n' ' ')
  hosts=${hosts% }
  [[ $hosts == "$(for ((s = 0; s < np / k; s++)); do printf 'ns%d ' "$s"; done | sed 's/ $//')" ]] ||
    fail "$what: distinct host names are '$hosts'"
  note "$what: $np ranks on hosts $hosts, shared groups match host names, allreduce ok"
}

# "HOST:PID CONFIG" for every UCX endpoint configuration except the loopback (self) one.
ucx_endpoint_configs() {
  sed -nE 's/.*\[(ns[0-9]+):([0-9]+) *:[0-9]+\].*ep_cfg\[[0-9]+\]: (.*)$/\1:\2 \3/p' <<<"$1" |
    grep -v 'self/' || true
}

classify_config() {
  local cfg=$1
  if [[ $cfg =~ $SHM_TLS && ! $cfg =~ tcp/ ]]; then
    echo shm
  elif [[ $cfg =~ tcp/eth0 && ! $cfg =~ $SHM_TLS ]]; then
    echo tcp
  else
    echo other
  fi
}

# Per process, the set of classes of its endpoint configurations, e.g. "ns0:123 shm tcp".
classes_per_process() {
  local proc cfg
  while read -r proc cfg; do
    echo "$proc $(classify_config "$cfg")"
  done <<<"$1" | sort -u | awk '{ c[$1] = c[$1] " " $2 } END { for (p in c) print p c[p] }' | sort
}

ucx_run() {
  local what=$1 np=$2 hosts=$3 want=$4 nprocs out configs classes proc cls line
  out=$(UCX_LOG_LEVEL=info cluster run --timeout 120 -- -np "$np" --host "$hosts" \
    -x UCX_LOG_LEVEL "${UCX_PML[@]}" "$PROBE" 2>&1) || {
    echo "$out"
    fail "$what: mpirun with pml ucx failed"
  }
  grep -q '^probe checks ok$' <<<"$out" || {
    echo "$out"
    fail "$what: probe checks did not pass"
  }
  configs=$(ucx_endpoint_configs "$out")
  note "$what: UCX endpoint lines (host:pid configuration):"
  while read -r line; do echo "   $line"; done <<<"$configs"
  classes=$(classes_per_process "$configs")
  nprocs=$(wc -l <<<"$classes")
  ((nprocs == np)) || fail "$what: expected endpoint lines from $np processes, got $nprocs"
  while read -r proc cls; do
    [[ $cls == "$want" ]] ||
      fail "$what: process $proc used '$cls', expected '$want' (shm = sysv/posix/cma, tcp = tcp/eth0)"
  done <<<"$classes"
  note "$what: every process used: $want"
}

check_timeout_bounds_runs() {
  local status=0 t0 k left
  t0=$EPOCHREALTIME
  cluster run --timeout 3 -- -np 2 --host ns0:1,ns1:1 sleep 60 >/dev/null 2>&1 || status=$?
  ((status == 124)) || fail "a run past its --timeout exited with $status, expected 124"
  # No rank may outlive the run: wait a moment for mpirun's daemons to finish their cleanup.
  for ((k = 0; k < 40; k++)); do
    left=$(ip netns pids "hccl-$ID-ns0"; ip netns pids "hccl-$ID-ns1")
    [[ -z $left ]] && break
    sleep 0.25
  done
  [[ -z $left ]] || fail "processes left in the servers after a timed-out run: $left"
  note "a run past --timeout 3 ended with 124 after $(awk -v a="$t0" -v b="$EPOCHREALTIME" \
    'BEGIN { printf "%.1f", b - a }') s, nothing left running in the servers"
}

time_allreduce() {
  local what=$1 hosts=$2 out
  out=$(cluster run --timeout 120 -- -np 2 --host "$hosts" --mca mpi_yield_when_idle 1 \
    "$PROBE" --time 16777216 10 2>&1) || {
    echo "$out"
    fail "timing run ($what) failed"
  }
  grep -q 'check=ok' <<<"$out" || fail "timing run ($what): wrong allreduce result: $out"
  note "16 MiB allreduce, 2 ranks, $what: $(grep '^allreduce' <<<"$out")"
}

body() {
  local k out status
  [[ ${HCCL_CLUSTER_ID:-} == "$ID" ]] || fail "body must run inside 'cluster.sh session'"
  for k in 0 1; do
    out=$(cluster exec "ns$k" -- hostname)
    [[ $out == "ns$k" ]] || fail "server ns$k has hostname '$out'"
    out=$(cluster exec "ns$k" -- getent hosts "ns$((1 - k))")
    [[ $out == "10.200.0.$((2 - k))"* ]] || fail "ns$k resolves ns$((1 - k)) as '$out'"
    tc -n "hccl-$ID-ns$k" qdisc show dev eth0 | grep -q 'tbf.*rate 1Gbit' ||
      fail "no 1 Gbit/s tbf on ns$k's eth0 (uplink)"
    tc -n "hccl-$ID-br" qdisc show dev "p$k" | grep -q 'tbf.*rate 1Gbit' ||
      fail "no 1 Gbit/s tbf on bridge port p$k (downlink of ns$k)"
  done
  note "hostnames ns0/ns1, name resolution and 1 Gbit/s tbf on both directions are in place"

  status=0
  out=$("/run/hccl-cluster-$ID/agent" ns2 true 2>&1) || status=$?
  if ((status != 255)) || [[ $out != *"unknown host 'ns2'"* ]]; then
    fail "agent accepted an unknown host (status $status, '$out')"
  fi

  out=$(cluster run --timeout 120 -- -np 4 "$PROBE" 2>&1) || {
    echo "$out"
    fail "mpirun (default pml) failed"
  }
  check_probe_output "$out" 4 2 "2x2, default pml (ob1)"

  ucx_run "pml ucx, 2 ranks in ns0" 2 ns0:2 shm
  ucx_run "pml ucx, 1 rank in ns0 + 1 in ns1" 2 ns0:1,ns1:1 tcp
  ucx_run "pml ucx, 2x2" 4 ns0:2,ns1:2 "shm tcp"

  check_timeout_bounds_runs

  # For the record only: timing is never asserted.
  time_allreduce "different servers, 1 Gbit/s" ns0:1,ns1:1
  time_allreduce "same server" ns0:2
  cluster shape none
  time_allreduce "different servers, unshaped" ns0:1,ns1:1
}

# --- outside -------------------------------------------------------------------------------------

expect_error() {
  local want=$1 out status=0
  shift
  out=$("$CLUSTER" "$@" 2>&1) || status=$?
  if ((status == 0)) || [[ $out != *"$want"* ]]; then
    fail "cluster.sh $* should fail with '$want' (status $status, output '$out')"
  fi
}

check_nothing_left() {
  local id=$1 what=$2 left
  left=$(ip netns list | awk '{ print $1 }' | grep -E "^hccl-$id-" || true)
  [[ -z $left ]] || fail "$what: namespaces left: $left"
  [[ ! -e /run/hccl-cluster-$id ]] || fail "$what: /run/hccl-cluster-$id left"
  ! compgen -G "/etc/netns/hccl-$id-*" >/dev/null || fail "$what: /etc/netns/hccl-$id-* left"
  ! grep -q "/run/hccl-cluster-$id/" /proc/self/mountinfo || fail "$what: UTS mounts left"
  note "$what: nothing left (no hccl-$id-* namespaces, bridge, state dir, /etc/netns entries, mounts)"
}

rig_gone_within() {
  local id=$1 seconds=$2 i
  for ((i = 0; i < seconds * 4; i++)); do
    [[ ! -e /run/hccl-cluster-$id ]] && [[ -z $(ip netns list | grep -E "^hccl-$id-" || true) ]] &&
      return 0
    sleep 0.25
  done
  return 1
}

# Meson's way of killing a timed-out test: SIGTERM to the process group, SIGKILL 0.5 s later.
check_killed_session_tears_down() {
  local id=selftest_kill pgid i
  setsid "$CLUSTER" --id "$id" session 2 --rate 100mbit -- sleep 300 >/dev/null 2>&1 &
  pgid=$!
  BACKGROUND+=("$pgid")
  for ((i = 0; i < 80; i++)); do
    [[ -f /run/hccl-cluster-$id/config ]] && break
    sleep 0.25
  done
  [[ -f /run/hccl-cluster-$id/config ]] || fail "session $id did not come up"
  kill -TERM -- "-$pgid"
  sleep 0.5
  kill -KILL -- "-$pgid" 2>/dev/null || true
  wait "$pgid" 2>/dev/null || true
  rig_gone_within "$id" 20 || fail "a session killed like meson kills a timed-out test left its rig"
  check_nothing_left "$id" "session killed by SIGTERM then SIGKILL"
}

# Sessions started in the background (some in process groups of their own, out of reach of a
# signal sent to ours): on SIGTERM/SIGINT pass the signal on, their traps tear the rigs down.
BACKGROUND=()
stop_background() {
  local pid
  trap '' TERM INT
  for pid in "${BACKGROUND[@]}"; do
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  done
  wait
  exit "$1"
}

outer() {
  ((EUID == 0)) || skip "needs root (network namespaces, bind mounts, tc)"
  local cmd
  for cmd in ip tc nsenter unshare setsid flock timeout mpirun getent; do
    command -v "$cmd" >/dev/null || skip "'$cmd' not found"
  done
  ip netns list >/dev/null 2>&1 || skip "'ip netns' is not available"
  unshare --net --uts true 2>/dev/null || skip "cannot create network/UTS namespaces here"
  [[ -x $PROBE ]] || fail "probe program '$PROBE' is not executable"
  # Concurrent runs of this test (other worktrees) take turns: they use the same rig ids.
  mkdir -p /run/lock
  exec 8>/run/lock/hccl-cluster-selftest_suite.lock
  flock -w 800 8 || fail "another run of this self-test held its lock for 800 s"

  expect_error "bad rig id 'a-b'" --id a-b down
  expect_error "bad server count '0'" --id selftest_args up 0
  expect_error "bad rate '1Gb'" --id selftest_args up 2 --rate 1Gb
  expect_error "bad --slots '1,2,3'" --id selftest_args up 2 --slots 1,2,3
  expect_error "rig 'selftest_args' is not up" --id selftest_args run -- -np 1 true
  note "bad arguments are refused with the bad value named"

  trap 'stop_background 143' TERM
  trap 'stop_background 130' INT
  local status=0 session
  "$CLUSTER" --id "$ID" session 2 --slots 2 --rate 1gbit -- "$0" --body "$PROBE" &
  session=$!
  BACKGROUND+=("$session")
  wait "$session" || status=$?
  ((status == 0)) || fail "session body failed with status $status"
  check_nothing_left "$ID" "after the session"

  status=0
  "$CLUSTER" --id selftest_fail session 1 -- false &
  BACKGROUND+=("$!")
  wait "$!" || status=$?
  ((status == 1)) || fail "a session whose body fails exited with $status, expected 1"
  check_nothing_left selftest_fail "session whose body failed"

  check_killed_session_tears_down
  echo "PASS"
}

if [[ ${1:-} == --body ]]; then
  (($# == 2)) || fail "usage: selftest.sh --body PROBE"
  PROBE=$2
  body
else
  (($# == 1)) || fail "usage: selftest.sh PROBE"
  PROBE=$(readlink -f "$1")
  outer
fi
