#!/usr/bin/env bash
# A 32 GiB PoRep bench on the H200 as smaller cards see it: another process holds all but N GiB of
# the device's memory (hold_gpu_memory.py, driver API), then `cuzk bench` runs with parameters
# read from the `.params` file that `porep_sector.sh PACK setup` wrote to /tmp/p32.
# Usage: benches/device/small_gpu.sh PACK "N..." [BENCH FLAGS ...]
#   N: free GiB to leave (e.g. "16 24 max"; max = no holder). Default flags: -j 3 -c 1.
# Per N: summary JSON, bench output and TIMELINE under $OUT; a table last (device region
# median and p90, s/sector, GPU busy, most device memory cuzk held, peak RSS, the plan).
set -uo pipefail
PACK=${1:?usage: small_gpu.sh PACK "N..." [FLAGS]}
SIZES=${2:?usage: small_gpu.sh PACK "N..." [FLAGS]}
shift 2
FLAGS=("$@")
[ ${#FLAGS[@]} -eq 0 ] && FLAGS=(-j 3 -c 1)
# shellcheck source=hold.sh
. "$(dirname "$0")/hold.sh"
OUT=${OUT:-/tmp/small-gpu-out}
BIN=/tmp/porep32-bin
SECTOR=/tmp/sector-${SIZE:-32GiB}
mkdir -p "$OUT" "$BIN"
python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" "$PACK" "$BIN"
chmod +x "$BIN/cuzk"
rows=()
for n in $SIZES; do
  hold "$n"
  /usr/bin/time -v ${BENCH_TIMEOUT:+timeout "$BENCH_TIMEOUT"} "$BIN/cuzk" bench --c1 "$SECTOR/c1.json" \
    --params-dir /tmp/p32 --backend gpu --json-out "$OUT/bench-$n.json" \
    --timeline "$OUT/timeline-$n.log" "${FLAGS[@]}" > "$OUT/bench-$n.txt" 2>&1
  rc=$?
  release
  tail -14 "$OUT/bench-$n.txt"
  # A failed run's reason, and what its device faults were.
  grep -E "^cuzk:" "$OUT/bench-$n.txt"
  grep -m3 DEVICE_FAULT "$OUT/timeline-$n.log"
  python3 "$(dirname "$0")/stage_medians.py" "$OUT/timeline-$n.log" gpu_ms h_two_vectors_ms \
    h2d_abc_ms products_ms matrices_streamed host_products_ms ntt_ms msm_h_ms h2d_witness_ms gather_ms msm_a_ms msm_b_g1_ms \
    msm_b_g2_ms msm_l_ms msm_beside_queries msm_h_copy_wait_ms msm_beside_copy_wait_ms device_outside_pool_bytes msm_h_passes msm_a_passes msm_b_g1_passes msm_b_g2_passes msm_l_passes \
    msm_h_room_bytes msm_a_room_bytes msm_b_g2_room_bytes msm_l_room_bytes synth_ms
  rss=$(awk '/Maximum resident/ {printf "%.1f", $NF / 1048576}' "$OUT/bench-$n.txt")
  row=$(python3 - "$OUT/bench-$n.json" <<'PY'
import json, sys
try:
    s = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"no summary ({e.__class__.__name__})"); sys.exit()
g = (s.get("per_partition") or {}).get("gpu_ms") or {}
d = (s.get("devices") or [{}])[0]
steady = s.get("steady_state_s_per_proof")
print(f"{g.get('median', float('nan')):.0f} | {g.get('p90', float('nan')):.0f} | "
      f"{steady if steady is None else round(steady, 2)} | {100 * (s.get('gpu_busy_fraction') or 0):.0f}% | "
      f"{(d.get('device_peak_bytes') or 0) / 2**30:.1f} of {(d.get('device_budget_bytes') or 0) / 2**30:.1f} GiB | "
      f"{d.get('plan')}")
PY
)
  rows+=("$n GiB | exit $rc | $row | rss $rss GiB")
done
echo; echo "free | exit | region median ms | p90 | s/sector | GPU busy | cuzk held (GiB) | plan | peak RSS"
printf '%s\n' "${rows[@]}"
