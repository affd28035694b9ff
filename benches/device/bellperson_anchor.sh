#!/usr/bin/env bash
# The bellperson anchor: cuzk's PoSt requests proven by filecoin-proofs 19 with bellperson's own
# CUDA prover (anchors/bellperson), from the same parameter files, so that its times sit beside
# cuzk's from the same run. One warm-up proof (it reads the parameters), then RUNS timed ones; a
# proof verified by filecoin-proofs; a table last. Exit 1 when a kind failed or did not prove on
# the GPU. One GPU (CUDA_VISIBLE_DEVICES, default 0): bellperson would otherwise spread its
# multiexps over every GPU it sees.
# Usage: benches/device/bellperson_anchor.sh PACK REQUEST_DIR PARAMS_DIR [RUNS]
#   PACK: a .tar.xz holding `bellperson-anchor` (anchors/bellperson/build.sh makes it);
#   REQUEST_DIR: `cuzk seal-test-sector --out` (winning-post.json, window-post.json);
#   PARAMS_DIR: `cuzk setup --winning-post SIZE --window-post SIZE --out`. KINDS=winning-post for
#   one kind. Logs, JSON and proofs go to OUT (default /tmp/anchor-out).
set -uo pipefail
PACK=${1:?usage: bellperson_anchor.sh PACK REQUEST_DIR PARAMS_DIR [RUNS]}
REQUESTS=${2:?usage: bellperson_anchor.sh PACK REQUEST_DIR PARAMS_DIR [RUNS]}
PARAMS=${3:?usage: bellperson_anchor.sh PACK REQUEST_DIR PARAMS_DIR [RUNS]}
RUNS=${4:-10}
KINDS=${KINDS:-winning-post window-post}
OUT=${OUT:-/tmp/anchor-out}
BIN=/tmp/anchor-bin
mkdir -p "$OUT" "$BIN"
python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" "$PACK" "$BIN"
chmod +x "$BIN/bellperson-anchor"
# bellperson's GPU on, its kernel reports in the log (RUST_LOG=info), all multiexp work on the GPU.
unset BELLMAN_NO_GPU BELLMAN_CPU_UTILIZATION
export RUST_LOG=info CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}

status=0
rows=()
for kind in $KINDS; do
  request=$REQUESTS/$kind.json
  [ -f "$request" ] || { echo "$kind: no $request"; status=1; continue; }
  "$BIN/bellperson-anchor" "$kind" --request "$request" --params-dir "$PARAMS" --runs "$RUNS" \
    --json-out "$OUT/anchor-$kind.json" --proof-out "$OUT/anchor-$kind.proof" \
    > "$OUT/anchor-$kind.txt" 2> "$OUT/anchor-$kind.log"
  rc=$?
  cat "$OUT/anchor-$kind.txt"
  echo "$kind: exit $rc; bellperson's GPU reports: $(grep -cE 'GPU (FFT|Multiexp) kernel instantiated' "$OUT/anchor-$kind.log") kernels," \
    "$(grep -cE 'Cannot instantiate GPU|Falling back to CPU|Unable to retrieve CUDA' "$OUT/anchor-$kind.log") failures"
  [ "$rc" = 0 ] || { status=1; tail -3 "$OUT/anchor-$kind.log"; continue; }
  grep -q '"gpu": true' "$OUT/anchor-$kind.json" || { echo "$kind: bellperson did not prove on the GPU"; status=1; }
  rows+=("$(python3 - "$OUT/anchor-$kind.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"{r['kind']} | {r['proof']} | {r['warmup_ms']:.1f} | {r['median_ms']:.1f} | {r['min_ms']:.1f} | "
      f"{r['runs']} | {'yes' if r['gpu'] else 'NO'} | {'yes' if r['verified'] else 'NO'}")
PY
)")
done
echo "kind | registered proof | bellperson warm-up ms | median ms | min ms | runs | GPU | verified"
printf '%s\n' "${rows[@]}"
exit $status
