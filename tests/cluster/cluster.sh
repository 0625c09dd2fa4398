#!/bin/bash
# Emulated multi-server cluster on one machine: one network + UTS namespace per "server", veths
# into a bridge that lives in its own namespace, optional tbf rate shaping, and an ssh stand-in so
# a real mpirun (started inside the first server) launches its daemons on the others.
# See README.md in this directory for usage, requirements and limits.
#
# Nothing is created in the root network namespace: veth pairs are created directly between the
# bridge namespace and each server namespace, so several rigs (different --id) can coexist and
# never touch interfaces of the host or of other users.
set -euo pipefail

readonly SUBNET=10.200.0
readonly MAX_SERVERS=64
readonly DEFAULT_RUN_TIMEOUT=300
readonly DEFAULT_LOCK_WAIT=900

ID=${HCCL_CLUSTER_ID:-default}
SELF=$(readlink -f "$0")
LOCK_HELD=0

usage() {
  cat <<'EOF'
usage: cluster.sh [--id ID] COMMAND ...
  up N [--rate RATE] [--slots K|K0,K1,...]
                       create N servers ns0..nsN-1 (replaces a previous rig with this id)
  down                 remove everything the rig made; idempotent
  run [--timeout SEC] [--] MPIRUN-ARGS...
                       run mpirun inside ns0 with the rig's agent, hosts and safe defaults
  exec nsK [--timeout SEC] [--] COMMAND...
                       run a command inside server nsK (network, /etc/hosts, hostname)
  shape RATE|none      change (or remove) the link rate of every server
  session N [UP-OPTIONS] [--lock-wait SEC] -- COMMAND...
                       lock the id, bring the rig up, run COMMAND with HCCL_CLUSTER_ID set,
                       and tear down whatever happens (exit, failure, SIGTERM, SIGINT)
  status               show the rig's configuration, namespaces and qdiscs
The id (default "default", or $HCCL_CLUSTER_ID) is 1-24 characters [A-Za-z0-9_]; it names the
state directory /run/hccl-cluster-ID and the namespaces hccl-ID-ns0.., hccl-ID-br.
RATE is a tc rate such as 1gbit, 100mbit, 500kbit.
EOF
}

log() { printf 'cluster[%s]: %s\n' "$ID" "$*" >&2; }
die() {
  log "error: $*"
  exit 2
}
now() { printf '%s' "$EPOCHREALTIME"; }
elapsed_since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }'; }

set_paths() {
  [[ $ID =~ ^[A-Za-z0-9_]{1,24}$ ]] ||
    die "bad rig id '$ID': use 1-24 characters from [A-Za-z0-9_] (no '-', it separates name parts)"
  STATE=/run/hccl-cluster-$ID
  PREFIX=hccl-$ID-
  BRNS=${PREFIX}br
  LOCKFILE=/run/lock/hccl-cluster-$ID.lock
}

server_ns() { printf '%sns%d' "$PREFIX" "$1"; }

# Namespaces of this rig only: exact names, never a loose prefix match.
rig_namespaces() {
  ip netns list 2>/dev/null | awk '{ print $1 }' |
    grep -E "^hccl-${ID}-(br|ns[0-9]+)\$" || true
}

validate_rate() {
  [[ $1 =~ ^[1-9][0-9]*([kmgt]?bit)$ ]] ||
    die "bad rate '$1': use an integer with a unit bit, kbit, mbit, gbit or tbit (e.g. 1gbit), or none"
}

# Burst of at least 256 KiB (enough for one TSO/GSO segment) or 4 ms worth of data at high rates.
burst_for_rate() {
  local rate=$1 value unit
  value=${rate%%[kmgt]bit}
  value=${value%bit}
  unit=${rate#"$value"}
  local -A scale=([bit]=1 [kbit]=1000 [mbit]=1000000 [gbit]=1000000000 [tbit]=1000000000000)
  awk -v v="$value" -v s="${scale[$unit]}" \
    'BEGIN { b = v * s / 8 * 0.004; if (b < 262144) b = 262144; printf "%d", b }'
}

apply_rate() {
  local rate=$1 n=$2 k burst
  if [[ $rate == none ]]; then
    for ((k = 0; k < n; k++)); do
      tc -n "$(server_ns "$k")" qdisc del dev eth0 root 2>/dev/null || true
      tc -n "$BRNS" qdisc del dev "p$k" root 2>/dev/null || true
    done
    return
  fi
  burst=$(burst_for_rate "$rate")
  for ((k = 0; k < n; k++)); do
    # Uplink (server -> bridge) on eth0, downlink (bridge -> server) on the bridge port.
    tc -n "$(server_ns "$k")" qdisc replace dev eth0 root tbf rate "$rate" burst "$burst" latency 5ms
    tc -n "$BRNS" qdisc replace dev "p$k" root tbf rate "$rate" burst "$burst" latency 5ms
  done
}

load_config() {
  [[ -f $STATE/config ]] || die "rig '$ID' is not up (no $STATE/config); run: cluster.sh --id $ID up N"
  # shellcheck source=/dev/null
  . "$STATE/config"
}

write_agent() {
  local n=$1
  cat >"$STATE/agent" <<EOF
#!/bin/sh
# ssh stand-in for Open MPI's rsh launcher on rig $ID: agent [ssh options] HOST COMMAND...
# Runs COMMAND through sh -c, as sshd would, in HOST's network namespace (ip netns exec also
# remounts /sys, which UCX reads to list devices) and UTS namespace (its own hostname).
while [ \$# -gt 0 ]; do
  case \$1 in
    -[bcDEeFIiJLlmOopQRSWw]) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
[ \$# -ge 1 ] || { echo "agent: no host given" >&2; exit 255; }
host=\${1#*@}
shift
case \$host in
  ns*) k=\${host#ns} ;;
  $SUBNET.*) k=\${host#$SUBNET.} ;;
  *) k=x ;;
esac
case \$k in
  ''|*[!0-9]*) echo "agent: unknown host '\$host' (rig $ID has ns0..ns$((n - 1)))" >&2; exit 255 ;;
esac
case \$host in $SUBNET.*) k=\$((k - 1)) ;; esac
if [ "\$k" -lt 0 ] || [ "\$k" -ge $n ]; then
  echo "agent: unknown host '\$host' (rig $ID has ns0..ns$((n - 1)))" >&2
  exit 255
fi
exec ip netns exec "${PREFIX}ns\$k" nsenter --uts="$STATE/uts/ns\$k" /bin/sh -c "\$*"
EOF
  chmod 755 "$STATE/agent"
}

# Kill every process inside the rig's namespaces: they can only be ours.
kill_rig_processes() {
  local ns pids="" round
  for round in 1 2 3 4 5 6 7 8 9 10 11 12; do
    pids=""
    for ns in $(rig_namespaces); do
      pids+=" $(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')"
    done
    [[ -z ${pids// /} ]] && return 0
    if ((round == 1)); then
      # shellcheck disable=SC2086
      kill -TERM $pids 2>/dev/null || true
    elif ((round >= 8)); then
      # shellcheck disable=SC2086
      kill -KILL $pids 2>/dev/null || true
    fi
    sleep 0.25
  done
  log "warning: processes still alive in the rig's namespaces:$pids"
}

teardown() {
  local ns mnt
  kill_rig_processes
  for ns in $(rig_namespaces); do
    ip netns delete "$ns" 2>/dev/null || log "warning: could not delete namespace $ns"
  done
  # Persistent UTS namespaces are bind mounts under the state directory.
  if [[ -d $STATE ]]; then
    awk -v d="$STATE/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo |
      while read -r mnt; do
        umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null ||
          log "warning: could not unmount $mnt"
      done
  fi
  rm -rf /etc/netns/"${PREFIX}"br /etc/netns/"${PREFIX}"ns[0-9]*
  rmdir /etc/netns 2>/dev/null || true
  rm -rf "$STATE"
}

rig_exists() {
  [[ -e $STATE || -n $(rig_namespaces) ]] && return 0
  compgen -G "/etc/netns/${PREFIX}ns[0-9]*" >/dev/null
}

# shellcheck disable=SC2120 # called without arguments by session
cmd_down() {
  (($# == 0)) || die "down takes no arguments (got '$*')"
  local t0
  t0=$(now)
  if ! rig_exists; then
    log "down: nothing to remove"
    return 0
  fi
  teardown
  log "down in $(elapsed_since "$t0") s"
}

take_lock_nowait() {
  ((LOCK_HELD)) && return 0
  mkdir -p "${LOCKFILE%/*}"
  exec 9>"$LOCKFILE"
  flock -n 9 || die "rig '$ID' is in use by a running session (lock $LOCKFILE); use another --id"
  LOCK_HELD=1
}

parse_slots() {
  local n=$1 spec=$2 k
  if [[ $spec =~ ^[1-9][0-9]*$ ]]; then
    SLOTS=()
    for ((k = 0; k < n; k++)); do SLOTS+=("$spec"); done
  elif [[ $spec =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]]; then
    IFS=, read -r -a SLOTS <<<"$spec"
    ((${#SLOTS[@]} == n)) || die "bad --slots '$spec': give one count or exactly $n counts (one per server)"
  else
    die "bad --slots '$spec': use a positive integer K or a list K0,K1,... of $n positive integers"
  fi
}

cmd_up() {
  local n="" rate=none slots_spec=2 k ns t0 hosts
  while (($#)); do
    case $1 in
      --rate) (($# >= 2)) || die "--rate needs a value"; rate=$2; shift 2 ;;
      --rate=*) rate=${1#*=}; shift ;;
      --slots) (($# >= 2)) || die "--slots needs a value"; slots_spec=$2; shift 2 ;;
      --slots=*) slots_spec=${1#*=}; shift ;;
      -*) die "unknown option '$1' for up (valid: --rate RATE, --slots K)" ;;
      *) [[ -z $n ]] || die "up takes one server count (got '$n' and '$1')"; n=$1; shift ;;
    esac
  done
  if ! [[ $n =~ ^[1-9][0-9]*$ ]] || ((n > MAX_SERVERS)); then
    die "bad server count '${n}': give an integer from 1 to $MAX_SERVERS"
  fi
  [[ $rate == none ]] || validate_rate "$rate"
  parse_slots "$n" "$slots_spec"
  if ! command -v nsenter >/dev/null || ! command -v unshare >/dev/null; then
    die "nsenter and unshare (util-linux) are required"
  fi

  take_lock_nowait
  t0=$(now)
  if rig_exists; then
    log "removing leftovers of a previous rig '$ID'"
    teardown
  fi
  # Any failure from here on (set -e) exits through this trap and leaves nothing behind.
  trap 'log "up failed; removing what was made"; teardown' EXIT
  mkdir -p "$STATE/uts" "$STATE/tmp"

  ip netns add "$BRNS"
  ip -n "$BRNS" link set lo up
  ip -n "$BRNS" link add br0 type bridge stp_state 0
  ip -n "$BRNS" link set br0 up

  hosts="127.0.0.1 localhost"$'\n'"::1 localhost ip6-localhost ip6-loopback"$'\n'
  for ((k = 0; k < n; k++)); do hosts+="$SUBNET.$((k + 1)) ns$k"$'\n'; done

  for ((k = 0; k < n; k++)); do
    ns=$(server_ns "$k")
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip -n "$BRNS" link add "p$k" type veth peer name eth0 netns "$ns"
    ip -n "$BRNS" link set "p$k" master br0 up
    ip -n "$ns" addr add "$SUBNET.$((k + 1))/24" dev eth0
    ip -n "$ns" link set eth0 up
    mkdir -p "/etc/netns/$ns"
    printf '%s' "$hosts" >"/etc/netns/$ns/hosts"
    touch "$STATE/uts/ns$k"
    unshare --uts="$STATE/uts/ns$k" hostname "ns$k"
  done
  [[ $rate == none ]] || apply_rate "$rate" "$n"

  write_agent "$n"
  : >"$STATE/hostfile"
  for ((k = 0; k < n; k++)); do echo "ns$k slots=${SLOTS[k]}" >>"$STATE/hostfile"; done
  {
    echo "N=$n"
    echo "LINK_RATE=$rate"
    echo "SLOT_LIST='${SLOTS[*]}'"
  } >"$STATE/config"
  trap - EXIT
  log "up: $n servers (slots ${SLOTS[*]}, rate $rate) in $(elapsed_since "$t0") s; state $STATE"
}

host_list() {
  local k list="" slots
  read -r -a slots <<<"$SLOT_LIST"
  for ((k = 0; k < N; k++)); do list+="${list:+,}ns$k:${slots[k]}"; done
  printf '%s' "$list"
}

# Run COMMAND bounded by SECONDS. mpirun must get exactly one SIGTERM: a second one makes it exit
# at once without killing its ranks. So the command runs in a session of its own (signals sent to
# our process group, by a terminal or by meson, do not reach it), timeout signals only its child
# (--foreground), and our traps pass a signal on once. It runs in the background because bash
# defers traps until a foreground child ends.
run_bounded() {
  local seconds=$1 child status
  shift
  setsid -w timeout --foreground -k 10 "$seconds" "$@" &
  child=$!
  # set -e also applies inside traps: nothing here may fail before the exit.
  trap 'kill -TERM "$child" 2>/dev/null || true; wait "$child" || true; exit 143' TERM
  trap 'kill -INT "$child" 2>/dev/null || true; wait "$child" || true; exit 130' INT
  status=0
  wait "$child" || status=$?
  trap - TERM INT
  return "$status"
}

parse_timeout_opt() {
  TIMEOUT=${HCCL_CLUSTER_TIMEOUT:-$DEFAULT_RUN_TIMEOUT}
  ARGS=()
  while (($#)); do
    case $1 in
      --timeout) (($# >= 2)) || die "--timeout needs a value"; TIMEOUT=$2; shift 2 ;;
      --timeout=*) TIMEOUT=${1#*=}; shift ;;
      --) shift; ARGS+=("$@"); break ;;
      *) ARGS+=("$@"); break ;;
    esac
  done
  [[ $TIMEOUT =~ ^[1-9][0-9]*$ ]] || die "bad --timeout '$TIMEOUT': give whole seconds > 0"
}

report_status() {
  local status=$1 what=$2
  ((status == 124)) && log "$what timed out after $TIMEOUT s"
  return "$status"
}

cmd_run() {
  parse_timeout_opt "$@"
  load_config
  local -a extra=() args=("${ARGS[@]}")
  ((${#args[@]})) || die "run needs mpirun arguments, e.g.: cluster.sh run -- -np 4 ./prog"
  local a has_hosts=0 has_bind=0
  for a in "${args[@]}"; do
    case $a in
      --host | -host | -H | --hostfile | -hostfile | --machinefile | -machinefile | \
        --default-hostfile | -default-hostfile) has_hosts=1 ;;
      --bind-to | -bind-to) has_bind=1 ;;
    esac
  done
  ((has_hosts)) || extra+=(--host "$(host_list)")
  ((has_bind)) || extra+=(--bind-to none)
  local status=0
  # Private session directories per rig, so rigs that share host names never share files.
  run_bounded "$TIMEOUT" ip netns exec "$(server_ns 0)" nsenter --uts="$STATE/uts/ns0" \
    env OMPI_MCA_orte_tmpdir_base="$STATE/tmp" \
    mpirun --mca plm_rsh_agent "$STATE/agent" --allow-run-as-root --oversubscribe \
    "${extra[@]}" "${args[@]}" || status=$?
  report_status "$status" "mpirun"
}

cmd_exec() {
  (($#)) || die "exec needs a server, e.g.: cluster.sh exec ns1 -- ucx_info -d"
  local host=$1 k
  shift
  parse_timeout_opt "$@"
  load_config
  if ! [[ $host =~ ^ns([0-9]+)$ ]] || ((BASH_REMATCH[1] >= N)); then
    die "unknown server '$host': rig '$ID' has ns0..ns$((N - 1))"
  fi
  k=${BASH_REMATCH[1]}
  ((${#ARGS[@]})) || die "exec needs a command after the server"
  local status=0
  run_bounded "$TIMEOUT" ip netns exec "$(server_ns "$k")" nsenter --uts="$STATE/uts/ns$k" \
    "${ARGS[@]}" || status=$?
  report_status "$status" "exec on $host"
}

cmd_shape() {
  (($# == 1)) || die "shape takes one rate (e.g. 1gbit) or none"
  load_config
  [[ $1 == none ]] || validate_rate "$1"
  apply_rate "$1" "$N"
  sed -i "s/^LINK_RATE=.*/LINK_RATE=$1/" "$STATE/config"
  log "shape: rate $1 on $N servers"
}

cmd_status() {
  load_config
  local k
  echo "id=$ID state=$STATE servers=$N slots=($SLOT_LIST) rate=$LINK_RATE"
  echo "agent=$STATE/agent hostfile=$STATE/hostfile hosts=$(host_list)"
  echo "namespaces: $(rig_namespaces | tr '\n' ' ')"
  for ((k = 0; k < N; k++)); do
    echo "ns$k: $(ip -n "$(server_ns "$k")" -br addr show dev eth0) |" \
      "$(tc -n "$(server_ns "$k")" qdisc show dev eth0 | head -1)"
  done
}

cmd_session() {
  local -a up_args=() body=()
  local lock_wait=$DEFAULT_LOCK_WAIT
  while (($#)); do
    case $1 in
      --lock-wait) (($# >= 2)) || die "--lock-wait needs a value"; lock_wait=$2; shift 2 ;;
      --) shift; body=("$@"); break ;;
      *) up_args+=("$1"); shift ;;
    esac
  done
  ((${#body[@]})) || die "session needs a command after --"
  [[ $lock_wait =~ ^[0-9]+$ ]] || die "bad --lock-wait '$lock_wait': give whole seconds"

  mkdir -p "${LOCKFILE%/*}"
  exec 9>"$LOCKFILE"
  if ! flock -n 9; then
    log "waiting up to $lock_wait s for another session of rig '$ID' to finish"
    flock -w "$lock_wait" 9 || die "rig '$ID' still in use after $lock_wait s (lock $LOCKFILE)"
  fi
  LOCK_HELD=1

  local child=""
  # On a signal, tear down in a new session: meson SIGKILLs the test's process group 0.5 s after
  # SIGTERM, too soon for a teardown. The detached child inherits fd 9, so the lock is held until
  # the teardown is done.
  # shellcheck disable=SC2317 # invoked by the traps below
  on_signal() {
    trap '' TERM INT HUP
    trap - EXIT
    if [[ -n $child ]]; then kill -TERM "$child" 2>/dev/null || true; fi
    log "session interrupted; tearing down in the background"
    setsid -f "$SELF" --id "$ID" down </dev/null >/dev/null 2>&1
    exit "$1"
  }
  trap 'on_signal 143' TERM
  trap 'on_signal 130' INT
  trap 'on_signal 129' HUP

  cmd_up "${up_args[@]}"
  local status=0
  # The body stays in our process group, so a signal to the group (meson, a terminal) reaches it
  # as well. It does not get the lock: a body that outlived a killed session must not keep the
  # next session from cleaning up.
  HCCL_CLUSTER_ID=$ID "${body[@]}" 9>&- &
  child=$!
  wait "$child" || status=$?
  child=""
  trap '' TERM INT HUP
  # shellcheck disable=SC2119
  cmd_down
  return "$status"
}

main() {
  while (($#)); do
    case $1 in
      --id) (($# >= 2)) || die "--id needs a value"; ID=$2; shift 2 ;;
      --id=*) ID=${1#*=}; shift ;;
      -h | --help | help) usage; exit 0 ;;
      *) break ;;
    esac
  done
  set_paths
  (($#)) || { usage >&2; exit 2; }
  local cmd=$1
  shift
  case $cmd in
    up | down | run | exec | shape | status | session)
      ((EUID == 0)) || die "must run as root (network namespaces, bind mounts, tc)"
      command -v ip >/dev/null || die "ip (iproute2) is required"
      "cmd_$cmd" "$@"
      ;;
    *) usage >&2; die "unknown command '$cmd'" ;;
  esac
}

main "$@"
