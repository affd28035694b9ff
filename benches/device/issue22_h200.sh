#!/usr/bin/env bash
# Issue 22 on one H200, in one device call. Usage: benches/device/issue22_h200.sh PACK
#   PACK: a .tar.xz of cuzk (this head), cuzk-before (the head before a/b/c were staged ahead of
#   the device lock), and the fixed_base and gpu_setup test binaries (built here, stripped).
# Checks: the GPU fixed-base kernel and GPU-made parameters against the CPU (tests), 2 KiB
# parameters made on the GPU and the CPU from one toxic seed byte for byte, sample sectors
# (2 KiB proven with GPU-made parameters and accepted by verify_seal; 32 GiB made), GPU setup time
# at 2^22 constraints. Times: the 2 KiB bench at 16 jobs in flight before and after the staging
# change (device region median and p90). Logs and JSON under $OUT; a short table last.
set -uo pipefail
PACK=${1:?usage: issue22_h200.sh PACK}
OUT=${OUT:-/tmp/issue22-out}
BIN=/tmp/issue22-bin
WORK=/tmp/issue22
mkdir -p "$OUT" "$BIN" "$WORK"
python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" "$PACK" "$BIN"
chmod +x "$BIN"/*
nvidia-smi --query-gpu=name,memory.used,memory.total,clocks.sm --format=csv,noheader
nproc

step() { echo; echo "== $*"; }
# Runs a command and says its wall time (and peak RSS where GNU time is installed) on stderr.
seconds() {
  if [ -x /usr/bin/time ]; then /usr/bin/time -f "%e s, peak RSS %M kB" "$@"; return; fi
  local start=$(date +%s.%N); "$@"; local rc=$?
  python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f} s', file=sys.stderr)" "$start" "$(date +%s.%N)"
  return $rc
}

step "fixed-base kernel against the CPU tables"
"$BIN/fixed_base" 2>&1 | tail -4
step "GPU-made parameters against CPU-made (synthetic, byte for byte, and proving)"
"$BIN/gpu_setup" 2>&1 | tail -3

step "2 KiB PoRep parameters from toxic seed 7: GPU, then CPU"
seconds "$BIN/cuzk" --json setup --porep 2KiB --toxic-seed 7 --backend gpu --out "$WORK/pg" | tee "$OUT/setup-gpu.json"
seconds "$BIN/cuzk" --json setup --porep 2KiB --toxic-seed 7 --backend cpu --out "$WORK/pc" | tee "$OUT/setup-cpu.json"
same=yes
for f in "$WORK"/pg/*; do cmp -s "$f" "$WORK/pc/$(basename "$f")" || same=no; done
echo "identical files: $same"

step "sample sectors"
seconds "$BIN/cuzk" sample-sector --size 2KiB --out "$WORK/s2k" --miner-id 1000
seconds "$BIN/cuzk" sample-sector --size 32GiB --out "$WORK/s32" --miner-id 1000
seconds "$BIN/cuzk" sample-sector --size 64GiB --out "$WORK/s64" --miner-id 1000
ls -la "$WORK/s32" "$WORK/s64"
step "the 2 KiB sample proven with the GPU-made parameters"
seconds "$BIN/cuzk" prove porep --c1 "$WORK/s2k/c1.json" --params-dir "$WORK/pg" --backend gpu --out "$WORK/s2k/c1.proof"
prover=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['prover_id'])" "$WORK/s2k/sector.json")
sector=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['sector_id'])" "$WORK/s2k/sector.json")
"$BIN/cuzk" verify porep --c1 "$WORK/s2k/c1.json" --params-dir "$WORK/pg" --proof "$WORK/s2k/c1.proof" \
  --prover-id "$prover" --sector-id "$sector"
verdict=$?
echo "verify_seal exit $verdict"

step "GPU setup at 2^22 constraints (then removed)"
seconds "$BIN/cuzk" --json setup --constraints 4194304 --backend gpu --out "$WORK/big.params" | tee "$OUT/setup-2p22-gpu.json"
rm -f "$WORK/big.params"

step "2 KiB bench, 160 jobs, 16 in flight: before and after staging"
for version in before after; do
  bin="$BIN/cuzk"; [ "$version" = before ] && bin="$BIN/cuzk-before"
  "$bin" bench --c1 "$WORK/s2k/c1.json" --params-dir "$WORK/pg" --backend gpu -j 160 -c 16 \
    --synthesis-concurrency 16 --timeline "$OUT/timeline-$version.log" \
    > "$OUT/bench-$version.txt" 2>&1
  echo "$version: exit $?"; tail -12 "$OUT/bench-$version.txt"
done
for version in before after; do
  "$BIN/cuzk" --json analyze "$OUT/timeline-$version.log" > "$OUT/analyze-$version.json" 2>&1
done

step "table"
python3 - "$OUT" <<'EOF'
import json, sys, os
out = sys.argv[1]
def load(name):
    try:
        return json.load(open(os.path.join(out, name)))
    except Exception as e:
        return {"error": str(e)}
for name in ["setup-gpu.json", "setup-cpu.json", "setup-2p22-gpu.json"]:
    d = load(name)
    print(f"{name:24} setup_s {d.get('setup_s')}  domain {d.get('domain_size')}  bytes {d.get('file_bytes')}")
for v in ["before", "after"]:
    d = load(f"analyze-{v}.json")
    print(v, json.dumps(d)[:900])
EOF
