#!/usr/bin/env bash
# Runs GPU test binaries on the device: every executable of the pack but `cuzk` and scripts, one
# test at a time (they share one GPU), then a table of each binary's result.
# Usage: [HOLD=16] [ONLY="pool msm"] benches/device/gpu_tests.sh PACK [CUZK_GPU_TEST_MAX_LOG]
#   PACK: `cargo xtask gpu-bundle --pack .pack/all.tar.xz` here (carry .pack). HOLD=N runs them
#   with N GiB of device memory free (hold.sh), as on a smaller card. ONLY names the binaries to
#   run, in that order (default: every one).
set -uo pipefail
PACK=${1:?usage: gpu_tests.sh PACK [MAX_LOG]}
export CUZK_GPU_TEST_MAX_LOG=${2:-20}
OUT=${OUT:-/tmp/gpu-tests-out}
BIN=/tmp/gpu-tests-bin
mkdir -p "$OUT" "$BIN"
python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" "$PACK" "$BIN"
chmod +x "$BIN"/*
# shellcheck source=hold.sh
. "$(dirname "$0")/hold.sh"
hold "${HOLD:-max}"
trap release EXIT
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader
results=()
tests=("$BIN"/*)
[ -n "${ONLY:-}" ] && read -ra tests <<< "$(printf "$BIN/%s " $ONLY)"
for test in "${tests[@]}"; do
  name=$(basename "$test")
  case $name in cuzk | *.sh | COMMIT) continue ;; esac
  start=$SECONDS
  "$test" --test-threads 1 > "$OUT/$name.txt" 2>&1
  rc=$?
  summary=$(grep -E "^test result" "$OUT/$name.txt" | tail -1)
  skipped=$(grep -c SKIPPED "$OUT/$name.txt")
  results+=("$name | exit $rc | $((SECONDS - start)) s | skipped $skipped | $summary")
  [ $rc -ne 0 ] && grep -E "panicked|FAILED|assert" "$OUT/$name.txt" | head -20
done
echo; echo "binary | exit | time | skipped | result"
printf '%s\n' "${results[@]}"
