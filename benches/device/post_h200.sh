#!/usr/bin/env bash
# WinningPoSt and WindowPoSt on one H200 beside PoRep (issue 23): a 2 KiB (or SIZE) sector sealed by
# filecoin-proofs, test parameters made on the GPU, one proof of each PoSt kind verified by
# filecoin's verifiers, then `cuzk bench` of each kind and of the sector's PoRep C2, one job at a
# time (-c 1: a job's wall time is its latency); a table last.
# Usage: benches/device/post_h200.sh PACK [JOBS]
#   PACK: a .tar.xz holding `cuzk`, built here and stripped. SIZE=8MiB for another sector size;
#   BACKEND=cpu tries it without a GPU.
set -uo pipefail
PACK=${1:?usage: post_h200.sh PACK [JOBS]}
JOBS=${2:-30}
BACKEND=${BACKEND:-gpu}
OUT=${OUT:-/tmp/post-out}
BIN=/tmp/post-bin
SIZE=${SIZE:-2KiB}
SECTOR=/tmp/post-sector-$SIZE
PARAMS=/tmp/post-params-$SIZE
mkdir -p "$OUT" "$BIN" "$PARAMS"
python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" "$PACK" "$BIN"
chmod +x "$BIN/cuzk"
cuzk() { "$BIN/cuzk" "$@"; }

[ -f "$SECTOR/winning-post.json" ] || cuzk seal-test-sector --size "$SIZE" --out "$SECTOR" --miner-id 1000 > /dev/null
for setup in "--winning-post $SIZE" "--window-post $SIZE" "--porep $SIZE"; do
  # shellcheck disable=SC2086
  cuzk setup $setup --backend "$BACKEND" --out "$PARAMS" > /dev/null || echo "setup $setup: failed"
done

for kind in winning-post window-post; do
  cuzk prove "$kind" --request "$SECTOR/$kind.json" --params-dir "$PARAMS" --backend "$BACKEND" \
    --out "$OUT/$kind.proof" > "$OUT/prove-$kind.txt" 2>&1 || { echo "prove $kind: failed"; tail -3 "$OUT/prove-$kind.txt"; }
  cuzk verify "$kind" --request "$SECTOR/$kind.json" --params-dir "$PARAMS" --proof "$OUT/$kind.proof" 2>&1 | tail -1
  echo "verify $kind: exit ${PIPESTATUS[0]}"
done

rows=()
for kind in winning-post window-post porep; do
  input=(--post "$SECTOR/$kind.json")
  [ "$kind" = porep ] && input=(--c1 "$SECTOR/c1.json")
  cuzk bench "${input[@]}" --params-dir "$PARAMS" --backend "$BACKEND" -j "$JOBS" -c 1 \
    --json-out "$OUT/bench-$kind.json" --timeline "$OUT/timeline-$kind.log" > "$OUT/bench-$kind.txt" 2>&1 || { echo "bench $kind: failed"; tail -5 "$OUT/bench-$kind.txt"; continue; }
  rows+=("$kind | $(python3 - "$OUT/bench-$kind.json" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))
p = b["per_partition"]
med = lambda k: p[k]["median"] if k in p else float("nan")
print(f"{b['steady_state_s_per_proof'] * 1e3:.1f} | {b.get('rows')} | {med('synth_ms'):.1f} | "
      f"{med('prove_start_ms'):.1f} | {med('gpu_ms'):.1f} / {p['gpu_ms']['p90']:.1f}")
PY
)")
done
echo "kind | ms per proof, one at a time | rows | synthesis median ms | prove_start median | device region median / p90"
printf '%s\n' "${rows[@]}"
