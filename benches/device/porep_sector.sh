#!/usr/bin/env bash
# A 32 GiB (or 64 GiB) PoRep C2 bench on one H200, from a sample sector and test parameters.
# Usage: benches/device/porep_sector.sh PACK STEP [BENCH FLAGS ...]
#   PACK: a .tar.xz holding this head's `cuzk` (built here, stripped).
#   STEP setup: sample sector and parameters written to /tmp/p32 (about 6 min; the machine keeps
#               them while warm: start the next call within its idle window).
#   STEP bench: `cuzk bench` of that sector with those parameters and the flags given
#               (default: -j 3 -c 1), host memory and GPU memory sampled every 10 s.
#   STEP inproc: the same bench with --test-params (parameters made in the process, no file).
#   STEP ongpu: the same bench with --test-params-on-gpu (parameters made on the GPU and kept
#               there: no file, no host copy; needs only the sample sector and the R1CS cache,
#               which it records into /tmp/p32 when absent).
#   STEP prove: `cuzk prove porep` of the sector with the parameters of `setup`, then
#               `cuzk verify porep` (filecoin's verify_seal with the test .vk) of the proof, and
#               of the proof with one byte flipped (must be rejected).
# SIZE=64GiB for the 64 GiB sector (SIZE=2KiB BACKEND=cpu tries the script on a machine without a GPU); BENCH_TIMEOUT=SECONDS stops a bench that would outrun the call. Summary, analysis and samples under $OUT; a table last.
set -uo pipefail
PACK=${1:?usage: porep_sector.sh PACK STEP [BENCH FLAGS ...]}
STEP=${2:?usage: porep_sector.sh PACK STEP [BENCH FLAGS ...]}
shift 2
FLAGS=("$@")
[ ${#FLAGS[@]} -eq 0 ] && FLAGS=(-j 3 -c 1)
SIZE=${SIZE:-32GiB}
BACKEND=${BACKEND:-gpu}
OUT=${OUT:-/tmp/porep32-out}
BIN=/tmp/porep32-bin
PARAMS=/tmp/p32
SECTOR=/tmp/sector-$SIZE
mkdir -p "$OUT" "$BIN" "$PARAMS"
python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" "$PACK" "$BIN"
chmod +x "$BIN/cuzk"
df -h /tmp | tail -1
free -g | head -2

# Host RSS of cuzk, GPU memory and utilisation every 10 s, until the caller kills it.
sample() {
  while sleep 10; do
    echo "t+$SECONDS rss_gb=$(ps -o rss= -C cuzk | awk '{s+=$1} END {printf "%.1f", s/1048576}')" \
      "gpu=$(nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv,noheader)"
  done
}

[ -f "$SECTOR/c1.json" ] || "$BIN/cuzk" sample-sector --size "$SIZE" --out "$SECTOR" --miner-id 1000

case $STEP in
  setup)
    sample > "$OUT/samples-setup.txt" & sampler=$!
    /usr/bin/time -v "$BIN/cuzk" --json setup --porep "$SIZE" --backend "$BACKEND" --out "$PARAMS" \
      > "$OUT/setup.json" 2> "$OUT/setup-time.txt"
    echo "setup: exit $?"
    kill $sampler
    cat "$OUT/setup.json"; grep -E "Elapsed|Maximum resident" "$OUT/setup-time.txt"
    ls -la "$PARAMS"
    ;;
  bench | inproc | ongpu)
    extra=()
    [ "$STEP" = inproc ] && extra=(--test-params)
    [ "$STEP" = ongpu ] && extra=(--test-params-on-gpu)
    sample > "$OUT/samples-$STEP.txt" & sampler=$!
    /usr/bin/time -v ${BENCH_TIMEOUT:+timeout "$BENCH_TIMEOUT"} "$BIN/cuzk" bench --c1 "$SECTOR/c1.json" --params-dir "$PARAMS" --backend "$BACKEND" \
      "${extra[@]}" --timeline "$OUT/timeline-$STEP.log" --json-out "$OUT/bench-$STEP.json" "${FLAGS[@]}" \
      > "$OUT/bench-$STEP.txt" 2>&1
    echo "bench: exit $?"
    kill $sampler
    tail -25 "$OUT/bench-$STEP.txt"
    "$BIN/cuzk" analyze "$OUT/timeline-$STEP.log" > "$OUT/analyze-$STEP.txt" 2>&1
    tail -4 "$OUT/samples-$STEP.txt"
    ;;
  prove)
    sample > "$OUT/samples-prove.txt" & sampler=$!
    /usr/bin/time -v ${BENCH_TIMEOUT:+timeout "$BENCH_TIMEOUT"} "$BIN/cuzk" prove porep \
      --c1 "$SECTOR/c1.json" --params-dir "$PARAMS" --backend "$BACKEND" --out "$SECTOR/proof.bin" \
      --timeline "$OUT/timeline-prove.log" > "$OUT/prove.txt" 2>&1
    echo "prove: exit $?"
    kill $sampler
    grep -vE "^\s+(Average|Socket|Signals|Swaps|Page size|File system|Voluntary|Involuntary)" \
      "$OUT/prove.txt" | tail -14
    identity() { python3 -c "import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$SECTOR/sector.json" "$1"; }
    verify() {
      "$BIN/cuzk" verify porep --c1 "$SECTOR/c1.json" --params-dir "$PARAMS" --proof "$1" \
        --prover-id "$(identity prover_id)" --sector-id "$(identity sector_id)" 2>&1 | tail -2
      echo "verify $(basename "$1"): exit ${PIPESTATUS[0]}"
    }
    verify "$SECTOR/proof.bin"
    python3 -c "import sys; b = bytearray(open(sys.argv[1], 'rb').read()); b[len(b) // 2] ^= 1; open(sys.argv[2], 'wb').write(b)" \
      "$SECTOR/proof.bin" "$SECTOR/flipped.bin"
    verify "$SECTOR/flipped.bin"
    tail -3 "$OUT/samples-prove.txt"
    ;;
  *) echo "unknown step $STEP (setup, bench, inproc, ongpu, prove)"; exit 2 ;;
esac
