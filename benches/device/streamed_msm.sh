#!/usr/bin/env bash
# What streamed MSMs cost on the H200 (issue 36, session 27: a 32 GiB partition with 16 GiB free
# took ≥ 13 s, ~4× what synthetic circuits predict), in one call, a table last:
#   1. host→device copy rates (h2d_rate.py) alone and beside a CPU proving load;
#   2. the streamed G1 MSM of `bench-kernels` at 2^24 and 2^25 with the whole device, under
#      budgets that shrink its passes, and beside the CPU load;
#   3. the synthetic proof whose every attempt ran out of device memory (2^22, 90% boolean, 8G).
# Usage: benches/device/streamed_msm.sh PACK   (PACK: `cargo xtask gpu-bundle --pack …`)
set -uo pipefail
PACK=${1:?usage: streamed_msm.sh PACK}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/streaming-out}
BIN=/tmp/streaming-bin
mkdir -p "$OUT" "$BIN"
python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" "$PACK" "$BIN"
chmod +x "$BIN/cuzk"
rows=()
row() { rows+=("$1 | $2"); echo "$1 | $2"; }

# A CPU load like a prover's: synthesis and CPU proving of 2^20 circuits on every core.
load_start() {
  "$BIN/cuzk" bench --constraints $((1 << 20)) --boolean-fraction 0.9 --backend cpu -j 1000 \
    > "$OUT/load.txt" 2>&1 & load=$!
  sleep 5
}
load_stop() { kill "$load" 2>/dev/null; wait "$load" 2>/dev/null; }
copies() { python3 "$HERE/h2d_rate.py" 4 | paste -sd';'; }
msm() {
  "$BIN/cuzk" bench-kernels --runs 3 --g1-min "$1" --g1-max "$1" --g2-min 16 --g2-max 16 \
    --ntt-min 16 --ntt-max 16 "${@:2}" 2>&1 | grep -E "^msm g1" | tr -s ' '
}

row "copies alone" "$(copies)"
load_start
row "copies beside a CPU load" "$(copies)"
load_stop
for log in 24 25; do
  for budget in auto 12G 8G; do
    row "G1 MSM 2^$log, --gpu-memory $budget" "$(msm $log --gpu-memory $budget)"
  done
done
load_start
row "G1 MSM 2^25 beside a CPU load" "$(msm 25)"
load_stop
timeout 150 "$BIN/cuzk" bench --constraints $((1 << 22)) --boolean-fraction 0.9 --backend gpu -j 3 \
  --gpu-memory 8G --timeline "$OUT/t-22-8G.log" > "$OUT/b-22-8G.txt" 2>&1
row "2^22, 90% boolean, --gpu-memory 8G: exit $?" "$(grep -E "steady|cuzk:" "$OUT/b-22-8G.txt" | head -2 | paste -sd';')"
echo; echo "what | figure"
printf '%s\n' "${rows[@]}"
