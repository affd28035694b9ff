#!/usr/bin/env bash
# The device region's tail under host load (issue 22): 2 KiB PoRep, 160 jobs, 16 syntheses at
# once, with the synthesis threads niced (--synthesis-nice 10) and not (0), and with a
# previous build's `cuzk-old` when the pack has one, ROUNDS times in turn; a table of the device
# region (median, p90, p90/median), staging and throughput last.
# Usage: [VARIANTS="name binary flags;…"] benches/device/region_tail.sh PACK [ROUNDS]
#   PACK: a .tar.xz holding `cuzk` (and optionally `cuzk-old`), built here and stripped.
set -uo pipefail
PACK=${1:?usage: region_tail.sh PACK [ROUNDS]}
ROUNDS=${2:-2}
OUT=${OUT:-/tmp/region-tail-out}
BIN=/tmp/region-tail-bin
PARAMS=/tmp/p2k
SECTOR=/tmp/sector-2KiB
mkdir -p "$OUT" "$BIN" "$PARAMS"
python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" "$PACK" "$BIN"
chmod +x "$BIN"/*
[ -f "$SECTOR/c1.json" ] || "$BIN/cuzk" sample-sector --size 2KiB --out "$SECTOR" --miner-id 1000 > /dev/null
ls "$PARAMS"/*.params > /dev/null 2>&1 || "$BIN/cuzk" setup --porep 2KiB --backend gpu --out "$PARAMS" > /dev/null

if [ -n "${VARIANTS:-}" ]; then
  IFS=';' read -ra variants <<< "$VARIANTS"
else
  variants=("nice10 cuzk --synthesis-nice 10" "nice0 cuzk --synthesis-nice 0")
  [ -x "$BIN/cuzk-old" ] && variants+=("old cuzk-old")
fi
rows=()
for round in $(seq "$ROUNDS"); do
  for variant in "${variants[@]}"; do
    read -r name binary flags <<< "$variant"
    run="$OUT/$name-$round"
    # shellcheck disable=SC2086
    "$BIN/$binary" bench --c1 "$SECTOR/c1.json" --params-dir "$PARAMS" --backend gpu -j 160 -c 16 \
      --synthesis-concurrency 16 $flags --timeline "$run.log" > "$run.txt" 2>&1 || { echo "$name: failed"; tail -5 "$run.txt"; continue; }
    row=$(PYTHONPATH="$(dirname "$0")" python3 - "$run.log" "$run.txt" <<'PY'
import re, sys
from stage_medians import stage_values
def pct(v, p):
    v = sorted(v)
    return v[int(p * (len(v) - 1))]
stats = stage_values(sys.argv[1])
steady = re.search(r"steady state\s+([\d.]+) s per proof", open(sys.argv[2]).read())
region, msm, copy = stats["gpu_ms"], stats["msm_ms"], stats["prep_copy_ms"]
print(f"{pct(region, .5):.1f} | {pct(region, .9):.1f} | {pct(region, .9) / pct(region, .5):.3f} | "
      f"{pct(msm, .5):.1f} / {pct(msm, .9):.1f} | {pct(copy, .5):.1f} / {pct(copy, .9):.1f} | "
      f"{1 / float(steady.group(1)) if steady else float('nan'):.2f}")
PY
)
    rows+=("$name | $round | $row")
  done
done
echo "variant | round | region median ms | p90 | p90/median | MSM stage median / p90 | staging copy median / p90 | proofs/s"
printf '%s\n' "${rows[@]}"
