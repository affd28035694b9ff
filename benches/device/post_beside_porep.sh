#!/usr/bin/env bash
# WinningPoSt, WindowPoSt and SnapDeals on one H200 beside PoRep (issue 23): a 2 KiB (or SIZE)
# sector sealed and updated by filecoin-proofs (or, with SAMPLE=1 and always at 32 and 64 GiB, a
# sample sector and its PoSts, no sealing), test parameters made on the GPU, one proof of each
# kind verified by filecoin's verifiers, then `cuzk bench` of each kind and of the sector's PoRep
# C2, one job at a time (-c 1: a job's wall time is its latency); a table last. With PROBE set
# (bench flags of a PoRep load, e.g. "-j 160 -c 16 --synthesis-concurrency 16"), the WinningPoSt
# again as a CRITICAL probe while that load keeps the GPU busy.
# Usage: benches/device/post_beside_porep.sh PACK [JOBS]
#   PACK: a .tar.xz holding `cuzk`, built here and stripped. SIZE=8MiB for another sector size;
#   KINDS="winning-post porep" for fewer kinds; BACKEND=cpu tries it without a GPU; HOLD=16 runs
#   everything with 16 GiB of device memory free (hold.sh); SECTOR and PARAMS: directories to
#   reuse (e.g. porep_sector.sh's /tmp/sector-32GiB and /tmp/p32, whose PoRep set a PROBE needs).
#   ONGPU=1: no setup and no proof through files; each bench makes random test parameters on the
#   GPU (--test-params-on-gpu: a 32 GiB set needs no disk but its R1CS cache), WARMUP=N jobs left
#   out of its steady state (default 1).
set -uo pipefail
PACK=${1:?usage: post_beside_porep.sh PACK [JOBS]}
JOBS=${2:-30}
BACKEND=${BACKEND:-gpu}
OUT=${OUT:-/tmp/post-out}
BIN=/tmp/post-bin
SIZE=${SIZE:-2KiB}
SAMPLE=${SAMPLE:-0}
case $SIZE in 32GiB|64GiB) SAMPLE=1 ;; esac
KINDS=${KINDS:-winning-post window-post snap porep}
ONGPU=${ONGPU:-}
PROBE=${PROBE:-}
SECTOR=${SECTOR:-/tmp/post-sector-$SIZE}
PARAMS=${PARAMS:-/tmp/post-params-$SIZE}
mkdir -p "$OUT" "$BIN" "$PARAMS"
python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" "$PACK" "$BIN"
chmod +x "$BIN/cuzk"
cuzk() { "$BIN/cuzk" "$@"; }

if [ ! -f "$SECTOR/c1.json" ]; then
  make=seal-test-sector; [ "$SAMPLE" = 1 ] && make=sample-sector
  /usr/bin/time -f "$make $SIZE: %e s, %M KiB" "$BIN/cuzk" $make --size "$SIZE" --out "$SECTOR" --miner-id 1000 > /dev/null
fi
# shellcheck source=hold.sh
. "$(dirname "$0")/hold.sh"
hold "${HOLD:-max}"
trap release EXIT
[ -n "$ONGPU" ] || for kind in $KINDS; do
  /usr/bin/time -f "setup $kind $SIZE: %e s, %M KiB" "$BIN/cuzk" setup "--$kind" "$SIZE" --backend "$BACKEND" --out "$PARAMS" > /dev/null || echo "setup $kind: failed"
done

[ -n "$ONGPU" ] || for kind in $KINDS; do
  [ "$kind" = porep ] && continue
  cuzk prove "$kind" --request "$SECTOR/$kind.json" --params-dir "$PARAMS" --backend "$BACKEND" \
    --out "$OUT/$kind.proof" > "$OUT/prove-$kind.txt" 2>&1 || { echo "prove $kind: failed"; tail -3 "$OUT/prove-$kind.txt"; }
  cuzk verify "$kind" --request "$SECTOR/$kind.json" --params-dir "$PARAMS" --proof "$OUT/$kind.proof" 2>&1 | tail -1
  echo "verify $kind: exit ${PIPESTATUS[0]}"
done

rows=()
for kind in $KINDS; do
  input=(--post "$SECTOR/$kind.json")
  [ "$kind" = snap ] && input=(--snap "$SECTOR/snap.json")
  [ "$kind" = porep ] && input=(--c1 "$SECTOR/c1.json")
  /usr/bin/time -f "bench $kind: %e s, %M KiB" "$BIN/cuzk" bench "${input[@]}" --params-dir "$PARAMS" \
    --backend "$BACKEND" -j "$JOBS" -c 1 --warmup "${WARMUP:-1}" ${ONGPU:+--test-params-on-gpu} --json-out "$OUT/bench-$kind.json" --timeline "$OUT/timeline-$kind.log" > "$OUT/bench-$kind.txt" 2>&1 || { echo "bench $kind: failed"; tail -5 "$OUT/bench-$kind.txt"; continue; }
  rows+=("$kind | $(python3 - "$OUT/bench-$kind.json" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))
p = b["per_partition"]
med = lambda k: p[k]["median"] if k in p else float("nan")
steady = b['steady_state_s_per_proof']
print(f"{steady * 1e3 if steady else float('nan'):.1f} | {b.get('rows')} | {med('synth_ms'):.1f} | "
      f"{med('prove_start_ms'):.1f} | {med('gpu_ms'):.1f} / {p['gpu_ms']['p90']:.1f}")
PY
)")
done
echo "kind | ms per proof, one at a time | rows | synthesis median ms | prove_start median | device region median / p90"
printf '%s\n' "${rows[@]}"
echo; echo "kind | device region stages, medians in ms (the first partition's SRS placement left out)"
for kind in $KINDS; do
  [ -f "$OUT/timeline-$kind.log" ] || continue
  echo "$kind | $(python3 "$(dirname "$0")/stage_medians.py" "$OUT/timeline-$kind.log" prep_ms \
    h2d_witness_ms gather_ms products_ms ntt_ms msm_h_ms msm_ms gpu_ms finalize_ms)"
done

if [ -n "$PROBE" ]; then
  echo; echo "== WinningPoSt at CRITICAL while a PoRep bench ($PROBE) keeps the GPU busy"
  # shellcheck disable=SC2086
  cuzk bench --c1 "$SECTOR/c1.json" --params-dir "$PARAMS" --backend "$BACKEND" $PROBE \
    --probe "$SECTOR/winning-post.json" --json-out "$OUT/bench-probe.json" \
    --timeline "$OUT/timeline-probe.log" > "$OUT/bench-probe.txt" 2>&1 || { echo "probe bench: failed"; tail -5 "$OUT/bench-probe.txt"; }
  grep -E "steady|GPU busy|probe" "$OUT/bench-probe.txt"
  # Whether the probes under load ran beside the PoRep regions, and if not what they lacked
  # (beside_missing: 1 index lists, 2 NTT tables, 3 set, 4 a streamed query, 5 matrices, 6 room).
  python3 - "$OUT/timeline-probe.log" <<'PY'
import collections, sys
beside, missing, room = collections.Counter(), collections.Counter(), []
for line in open(sys.argv[1]):
    fields = line.strip().split(",")
    if len(fields) < 4 or "PARTITION_STATS" not in line or not fields[3].startswith("probe"):
        continue
    kv = dict(f.partition("=")[::2] for f in fields[4:])
    beside[kv.get("beside")] += 1
    if "beside_missing" in kv:
        missing[kv["beside_missing"]] += 1
    if "beside_free_bytes" in kv:
        room.append([float(kv[k]) / 2**20 for k in ("beside_free_bytes", "beside_needed_bytes",
                                                     "beside_held_back_bytes")])
print(f"probes beside a region: {dict(beside)}; missing: {dict(missing)}; "
      f"room free/needed/held back MiB: {['/'.join(f'{v:.0f}' for v in r) for r in room[:8]]}")
PY
fi
