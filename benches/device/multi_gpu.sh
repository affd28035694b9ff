#!/usr/bin/env bash
# Issue 25: the engine on every GPU of the host against one GPU, and a device that dies in the
# middle of a bench. On a one-GPU host it runs two backends on that GPU (`--devices 0,0`): the
# placement and failure paths hold, but throughput cannot scale there.
#   1. the pack's GPU test binaries, one test at a time (gpu_tests.sh);
#   2. 2 KiB PoRep, JOBS_2K jobs, 16 at once: one device, then all;
#   3. the same on all devices with the last dying at its FAULT_AT-th proof (no job may be lost);
#   4. a synthetic circuit of SYN constraints (default 2^24), JOBS_SYN jobs of 2 partitions, as
#      many synthesizing as cores: one device, then all;
#   then a table, and `cuzk analyze` of the faulty run.
# Usage: [STEPS="tests 2k syn"] [SYN=N] [FAULT_AT=N] [BENCH_TIMEOUT=S] \
#          benches/device/multi_gpu.sh PACK [JOBS_2K] [JOBS_SYN]
#   PACK: `cargo xtask gpu-bundle --pack .pack/all.tar.xz` here (`cuzk` and the GPU tests).
set -uo pipefail
PACK=${1:?usage: multi_gpu.sh PACK [JOBS_2K] [JOBS_SYN]}
JOBS_2K=${2:-160}
JOBS_SYN=${3:-24}
SYN=${SYN:-16777216}
FAULT_AT=${FAULT_AT:-20}
STEPS=${STEPS:-tests 2k syn}
step() { [[ " $STEPS " == *" $1 "* ]]; }
# Everything is written to WORK and packed into one file under OUT at the end (the device tool
# brings back a few files only).
HERE=$(cd "$(dirname "$0")" && pwd)
FINAL=${OUT:-/tmp/multi-gpu-out}
OUT=/tmp/multi-gpu-work
BIN=/tmp/multi-gpu-bin
PARAMS=/tmp/p2k
SECTOR=/tmp/sector-2KiB
mkdir -p "$OUT" "$FINAL" "$BIN" "$PARAMS"
python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" "$PACK" "$BIN"
chmod +x "$BIN"/*
nvidia-smi --query-gpu=index,name,memory.used,memory.total --format=csv,noheader
gpus=$(nvidia-smi -L | wc -l)
all=$(seq -s, 0 $((gpus - 1)))
[ "$gpus" -eq 1 ] && all="0,0"
last=$(( $(tr ',' '\n' <<< "$all" | wc -l) - 1 ))
echo "GPUs: $gpus; all devices: --devices $all; CPU cores: $(nproc)"

step tests && OUT="$OUT/tests" "$HERE/gpu_tests.sh" "$PACK"

step 2k && { [ -f "$SECTOR/c1.json" ] || "$BIN/cuzk" sample-sector --size 2KiB --out "$SECTOR" --miner-id 1000 > /dev/null
ls "$PARAMS"/*.params > /dev/null 2>&1 || "$BIN/cuzk" setup --porep 2KiB --backend gpu --out "$PARAMS" > /dev/null; }

rows=()
bench() { # name, then bench flags
  local name=$1; shift
  local start=$SECONDS
  timeout "${BENCH_TIMEOUT:-240}" "$BIN/cuzk" bench --backend gpu "$@" --timeline "$OUT/$name.log" \
    --json-out "$OUT/$name.json" > "$OUT/$name.txt" 2>&1
  local rc=$?
  local row
  row=$(python3 - "$OUT/$name.json" <<'PY'
import json, sys
try:
    s = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"no summary ({e})"); sys.exit()
per = s.get("steady_state_s_per_proof")
devices = "; ".join(
    f"d{d['device']}: {d.get('partitions', 0)} p, busy {100 * d.get('gpu_busy_fraction', 0):.1f}%"
    + (f", starved {100 * d['gpu_starved_fraction']:.1f}%" if d.get("gpu_starved_fraction") is not None else "")
    + (f", {d['faults']} faults" if d.get("faults") else "")
    + (", out" if d.get("out_of_service_ms") is not None else "")
    for d in s.get("devices", []))
print(f"{s['jobs']} | {1 / per if per else float('nan'):.2f} | {100 * s['gpu_busy_fraction']:.1f}% | {devices}")
PY
)
  rows+=("$name | exit $rc | $((SECONDS - start)) s | $row")
  echo "${rows[-1]}"
  [ $rc -ne 0 ] && tail -5 "$OUT/$name.txt"
}

porep=(--c1 "$SECTOR/c1.json" --params-dir "$PARAMS" -j "$JOBS_2K" -c 16 --synthesis-concurrency 16)
if step 2k; then
  bench 2k-one "${porep[@]}" --devices 0
  bench 2k-all "${porep[@]}" --devices "$all"
  bench 2k-fault "${porep[@]}" --devices "$all" --inject-device-fault "$last@$FAULT_AT"
fi
# One thread per synthetic witness: as many in flight as cores, or the GPU waits for the CPU.
cores=$(nproc)
synthetic=(--constraints "$SYN" --partitions 2 -j "$JOBS_SYN" -c "$cores" --synthesis-concurrency "$cores")
if step syn; then
  bench syn-one "${synthetic[@]}" --devices 0
  bench syn-all "${synthetic[@]}" --devices "$all"
fi

echo
echo "run | exit | wall | jobs | jobs/s (steady) | GPU busy (merged) | per device (starved: idle with no partition ready)"
printf '%s\n' "${rows[@]}"
echo
[ -f "$OUT/2k-fault.log" ] && "$BIN/cuzk" analyze "$OUT/2k-fault.log" | grep -E "device|GPU busy"
for run in syn-one syn-all; do
  [ -f "$OUT/$run.txt" ] && { echo "$run:"; grep -E "device region|synthesis |prove_start|device [0-9]|cuzk:" "$OUT/$run.txt"; }
done
tar -C "$OUT" -cf - . | xz -T0 > "$FINAL/multi_gpu.tar.xz"
