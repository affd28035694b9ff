#!/usr/bin/env bash
# Parameters made on the GPU, checked in one device call: 2 KiB PoRep parameters made on the GPU
# and on the CPU from one toxic seed, byte for byte; the 2 KiB sample sector proven with the
# GPU-made ones and accepted by verify_seal; 32 and 64 GiB sample sectors made; GPU setup time at
# 2^22 constraints. (The GPU kernels behind them are tested by gpu_tests.sh.)
# Usage: benches/device/gpu_setup_checks.sh PACK
#   PACK: a .tar.xz holding this head's `cuzk` (`cargo xtask gpu-bundle --pack`). Setup JSON
#   under $OUT; a table last.
set -uo pipefail
PACK=${1:?usage: gpu_setup_checks.sh PACK}
OUT=${OUT:-/tmp/setup-checks-out}
BIN=/tmp/setup-checks-bin
WORK=/tmp/setup-checks
mkdir -p "$OUT" "$BIN" "$WORK"
python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" "$PACK" "$BIN"
chmod +x "$BIN/cuzk"
nvidia-smi --query-gpu=name,memory.used,memory.total,clocks.sm --format=csv,noheader
nproc

step() { echo; echo "== $*"; }
# Runs a command and says its wall time and peak RSS on stderr.
seconds() { /usr/bin/time -f "%e s, peak RSS %M kB" "$@"; }

step "2 KiB PoRep parameters from toxic seed 7: GPU, then CPU"
seconds "$BIN/cuzk" --json setup --porep 2KiB --toxic-seed 7 --backend gpu --out "$WORK/pg" | tee "$OUT/setup-gpu.json"
seconds "$BIN/cuzk" --json setup --porep 2KiB --toxic-seed 7 --backend cpu --out "$WORK/pc" | tee "$OUT/setup-cpu.json"
same=yes
for f in "$WORK"/pg/*; do cmp -s "$f" "$WORK/pc/$(basename "$f")" || same=no; done
echo "identical files: $same"

step "sample sectors"
for size in 2KiB 32GiB 64GiB; do
  seconds "$BIN/cuzk" sample-sector --size "$size" --out "$WORK/s$size" --miner-id 1000
done
step "the 2 KiB sample proven with the GPU-made parameters"
seconds "$BIN/cuzk" prove porep --c1 "$WORK/s2KiB/c1.json" --params-dir "$WORK/pg" --backend gpu --out "$WORK/s2KiB/c1.proof"
identity() { python3 -c "import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$WORK/s2KiB/sector.json" "$1"; }
"$BIN/cuzk" verify porep --c1 "$WORK/s2KiB/c1.json" --params-dir "$WORK/pg" --proof "$WORK/s2KiB/c1.proof" \
  --prover-id "$(identity prover_id)" --sector-id "$(identity sector_id)"
echo "verify_seal exit $?"

step "GPU setup at 2^22 constraints (then removed)"
seconds "$BIN/cuzk" --json setup --constraints 4194304 --backend gpu --out "$WORK/big.params" | tee "$OUT/setup-2p22-gpu.json"
rm -f "$WORK/big.params"

step "table"
python3 - "$OUT" <<'PY'
import json, os, sys
for name in ["setup-gpu.json", "setup-cpu.json", "setup-2p22-gpu.json"]:
    try:
        d = json.load(open(os.path.join(sys.argv[1], name)))
    except Exception as e:
        print(f"{name:24} {e}")
        continue
    print(f"{name:24} setup_s {d.get('setup_s')}  domain {d.get('domain_size')}  bytes {d.get('file_bytes')}")
PY
