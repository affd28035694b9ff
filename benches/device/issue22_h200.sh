#!/usr/bin/env bash
# Issue 22 on one H200, in one device call.
# Usage: benches/device/issue22_h200.sh PACK [STEP ...]   (steps: checks staging; default both)
#   PACK: a .tar.xz of cuzk (this head), cuzk-before (the head before a/b/c were staged ahead of
#   the device lock; for `staging`), and the fixed_base and gpu_setup test binaries (for
#   `checks`), built here and stripped.
# checks: the GPU fixed-base kernel and GPU-made parameters against the CPU (tests), 2 KiB
# parameters made on the GPU and the CPU from one toxic seed byte for byte, sample sectors
# (2 KiB proven with GPU-made parameters and accepted by verify_seal; 32 GiB made), GPU setup time
# at 2^22 constraints. staging: the 2 KiB bench at 16 jobs in flight before and after the staging
# change (device region median and p90), twice each, alternated. Logs and JSON under $OUT (the
# TIMELINE logs analysed there and removed: a call brings back only a few files); a table last.
set -uo pipefail
PACK=${1:?usage: issue22_h200.sh PACK [STEP ...]}
shift
STEPS=" ${*:-checks staging} "
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

# Parameters and a sample sector every step uses.
"$BIN/cuzk" --json setup --porep 2KiB --toxic-seed 7 --backend gpu --out "$WORK/pg" > "$OUT/setup-gpu.json"
"$BIN/cuzk" sample-sector --size 2KiB --out "$WORK/s2k" --miner-id 1000

# A 2 KiB bench run: bench BIN NAME [FLAG ...], its TIMELINE analysed by this head's cuzk.
bench() {
  local bin=$1 name=$2; shift 2
  "$bin" bench --c1 "$WORK/s2k/c1.json" --params-dir "$WORK/pg" --backend gpu -j 160 -c 16 \
    --synthesis-concurrency 16 --timeline "$OUT/timeline-$name.log" "$@" > "$OUT/bench-$name.txt" 2>&1
  echo "$name: exit $?"; tail -12 "$OUT/bench-$name.txt"
  "$BIN/cuzk" --json analyze "$OUT/timeline-$name.log" > "$OUT/analyze-$name.json" 2>&1
  rm -f "$OUT/timeline-$name.log"
}

if [[ $STEPS == *" checks "* ]]; then
step "fixed-base kernel against the CPU tables"
"$BIN/fixed_base" 2>&1 | tail -4
step "GPU-made parameters against CPU-made (synthetic, byte for byte, and proving)"
"$BIN/gpu_setup" 2>&1 | tail -3

step "2 KiB PoRep parameters from toxic seed 7: GPU (above), then CPU"
cat "$OUT/setup-gpu.json"
seconds "$BIN/cuzk" --json setup --porep 2KiB --toxic-seed 7 --backend cpu --out "$WORK/pc" | tee "$OUT/setup-cpu.json"
same=yes
for f in "$WORK"/pg/*; do cmp -s "$f" "$WORK/pc/$(basename "$f")" || same=no; done
echo "identical files: $same"

step "sample sectors"
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

fi

if [[ $STEPS == *" staging "* ]]; then
step "2 KiB bench, 160 jobs, 16 in flight: before and after staging, alternated"
for round in 1 2; do
  bench "$BIN/cuzk-before" "before-$round"
  bench "$BIN/cuzk" "after-$round"
done
fi

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
print(f"{'bench':12} {'s/proof':>8} {'busy':>6} {'region med':>10} {'p10':>7} {'p90':>7} {'p90/med':>7} {'synth med':>9} {'prep p90':>8}")
for name in sorted(f[len("analyze-"):-5] for f in os.listdir(out) if f.startswith("analyze-")):
    d = load(f"analyze-{name}.json")
    if "error" in d:
        print(name, d["error"]); continue
    steady, per = d.get("steady_state") or {}, d.get("per_partition") or {}
    g, sy, prep = per.get("gpu_ms") or {}, per.get("synth_ms") or {}, per.get("prep_copy_ms") or per.get("stage_abc_ms") or {}
    ratio = g["p90"] / g["median"] if g.get("median") else float("nan")
    print(f"{name:12} {steady.get('s_per_proof', float('nan')):8.4f} {steady.get('gpu_busy_fraction', float('nan')):6.3f} "
          f"{g.get('median', float('nan')):10.1f} {g.get('p10', float('nan')):7.1f} {g.get('p90', float('nan')):7.1f} {ratio:7.3f} "
          f"{sy.get('median', float('nan')):9.1f} {prep.get('p90', float('nan')):8.1f}")
EOF
