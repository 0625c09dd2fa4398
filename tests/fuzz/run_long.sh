#!/bin/sh
# The long fuzz tier, run by hand: every parser target under libFuzzer (coverage-guided, clang
# with AddressSanitizer and UBSan) for SECONDS each, one after the other, then a summary line per
# target: executions, new corpus entries, crashes, hangs (timeouts), out-of-memory.
#
#   tests/fuzz/run_long.sh [BUILD_DIR [SECONDS [OUT_DIR]]]     defaults: build 600 /tmp/hccl-fuzz
#   FUZZ_TARGETS="rank_table" tests/fuzz/run_long.sh ...        some targets only
#
# Needs the libFuzzer targets (`meson compile -C BUILD_DIR fuzzers`, which needs clang++-14 and
# libclang-rt-14-dev). The seed corpus in tests/fuzz/corpus is only read; what libFuzzer adds goes
# to OUT_DIR/<target>/corpus, findings to OUT_DIR/<target>/ (crash-*, timeout-*, oom-*), each
# reproducible with `BUILD_DIR/tests/fuzz/libfuzzer_<target> FILE` (or the g++ build's
# fuzz_<target> FILE). Exit status 1 when any target found something.
set -eu
build=${1:-build}
seconds=${2:-600}
out=${3:-/tmp/hccl-fuzz}
here=$(cd "$(dirname "$0")" && pwd)
found=0
for t in ${FUZZ_TARGETS:-hccl_algo emulation rank_table values}; do
  exe="$build/tests/fuzz/libfuzzer_$t"
  [ -x "$exe" ] || { echo "$exe missing: meson compile -C $build fuzzers" >&2; exit 2; }
  mkdir -p "$out/$t/corpus"
  seeds="$here/corpus/$t"
  if [ "$t" = rank_table ]; then  # the topology fixtures are real rank tables; libFuzzer reads dirs
    mkdir -p "$out/$t/fixtures"
    cp "$here/../topology/rank_table_2x4_v1.0.json" "$here/../topology/rank_table_2x2x8_v1.2.json" \
      "$out/$t/fixtures/"
    seeds="$seeds $out/$t/fixtures"
  fi
  # -timeout: an input running longer is a hang; -rss_limit_mb: a parser must not need more.
  start=$(date +%s)
  # shellcheck disable=SC2086
  nice -n 10 "$exe" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -dict="$here/$t.dict" -artifact_prefix="$out/$t/" \
    "$out/$t/corpus" $seeds >"$out/$t/log" 2>&1 || true
  elapsed=$(($(date +%s) - start))  # shorter than SECONDS when libFuzzer stopped at a finding
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$t/log")
  added=$(sed -n 's/^stat::new_units_added: *//p' "$out/$t/log")
  crashes=$(find "$out/$t" -maxdepth 1 -name 'crash-*' | wc -l)
  hangs=$(find "$out/$t" -maxdepth 1 -name 'timeout-*' | wc -l)
  ooms=$(find "$out/$t" -maxdepth 1 -name 'oom-*' | wc -l)
  echo "$t: ${runs:-?} executions in ${elapsed} s, ${added:-?} new corpus entries, $crashes crashes, $hangs hangs, $ooms out-of-memory"
  [ $((crashes + hangs + ooms)) -eq 0 ] && [ -n "$runs" ] || found=1
done
exit $found
