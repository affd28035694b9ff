#!/usr/bin/env bash
# The daemon on a GPU host, against `cuzk bench` on the same work (issue 21's device check):
# 2 KiB PoRep, parameters preloaded, N requests from C concurrent clients, the same engine
# settings as the bench; then the parameter tiers on the GPU (evict, prove, preload).
# Run from a directory holding `cuzk` (built with kernels) and, optionally, `gpu_backend`
# (cuzk-groth16's GPU test binary). Writes logs under $OUT.
# Usage: daemon_vs_bench.sh BIN_DIR [REQUESTS] [CLIENTS ...]   (one bench/daemon pair per CLIENTS)
set -euo pipefail
bin=$1; n=${2:-48}; shift 2 || true
clients=("${@:-12}")
out=${OUT:-/tmp/out}; mkdir -p "$out"
work=$(mktemp -d); cd "$work"
cuzk=$bin/cuzk
workers=$(nproc)
first_lines() { sed -n "1,${1}p"; }

if [ -x "$bin/gpu_backend" ]; then
  echo "== cuzk-groth16 GPU backend tests"
  "$bin/gpu_backend" --test-threads=1 2>&1 | tail -3 | tee "$out/gpu_backend.log"
fi

echo "== sector and parameters"
"$cuzk" seal-test-sector --size 2KiB --miner-id 1000 --out sector >/dev/null
sector=$(python3 -c 'import json;print(json.load(open("sector/sector.json"))["sector_id"])')
/usr/bin/time -f "setup %e s" "$cuzk" setup --porep 2KiB --out params >/dev/null 2>"$out/setup.log" || cat "$out/setup.log"
client() { "$cuzk" client --address "unix://$work/cuzk.sock" "$@"; }
cat > tiers.py <<'PY'
import json, sys
s = json.load(sys.stdin)
sets = [f"{x['circuit_id']}={x['tier']}/{x['size_bytes']}B/in-use:{x['ref_count']}" for x in s["loaded_srs"]]
gpus = [f"gpu{g['ordinal']}={g['name']} free={g['vram_free_bytes'] >> 20}MiB" for g in s["gpus"]]
print(" ".join(sets), "|", " ".join(gpus))
PY
tiers() { client status | python3 tiers.py; }

round=0
for c in "${clients[@]}"; do
  round=$((round + 1)); tag="$c-$round"
  echo "== cuzk bench: $n jobs, $c at once"
  "$cuzk" bench --c1 sector/c1.json --params-dir params -j "$n" -c "$c" \
    --synthesis-concurrency "$c" --partition-workers "$workers" --gpu-workers 2 --backend gpu \
    --timeline "$out/bench-$tag.timeline" --json-out "$out/bench-$tag.json" > "$out/bench-$tag.txt" 2>&1
  grep -E "steady|wall|synthesis  |GPU " "$out/bench-$tag.txt"

  echo "== cuzk serve (porep-2k preloaded) + cuzk client: $n requests, $c clients"
  cat > serve.toml <<TOML
[daemon]
listen = "unix://$work/cuzk.sock"
status_listen = "127.0.0.1:9820"
[gpus]
backend = "gpu"
gpu_workers_per_device = 2
[synthesis]
partition_workers = $workers
[pipeline]
jobs_synthesizing = $c
[srs]
param_cache = "$work/params"
preload = ["porep-2k"]
[logging]
timeline = "$out/serve-$tag.timeline"
TOML
  "$cuzk" serve --config serve.toml > "$out/serve-$tag.log" 2>&1 &
  daemon=$!
  for _ in $(seq 600); do
    if client status 2>/dev/null | grep -q '"HOT"'; then break; fi
    sleep 0.2
  done
  echo "tiers: $(tiers)"
  "$cuzk" --json client --address "unix://$work/cuzk.sock" prove --c1 sector/c1.json \
    --miner-id 1000 --sector-id "$sector" --out daemon.proof --count "$n" --concurrency "$c" \
    | tee "$out/client-$tag.json"
  "$cuzk" verify porep --c1 sector/c1.json --proof daemon.proof --params-dir params \
    --prover-id 0xe807000000000000000000000000000000000000000000000000000000000000 \
    --sector-id "$sector"
  echo "-- analyze: bench, then daemon"
  "$cuzk" analyze "$out/bench-$tag.timeline" | first_lines 4
  "$cuzk" analyze "$out/serve-$tag.timeline" | first_lines 4

  if [ "$round" = 1 ]; then
    echo "== tiers on the GPU: evict, prove (loads again), preload"
    echo "evict: $(client evict porep-2k)   tiers: $(tiers)"
    "$cuzk" --json client --address "unix://$work/cuzk.sock" prove --c1 sector/c1.json \
      --miner-id 1000 --sector-id "$sector" --out again.proof | python3 -c 'import json,sys; r=json.load(sys.stdin); print("prove after evict: srs_load_ms", r["first_srs_load_ms"], "failed", r["failed"])'
    echo "tiers: $(tiers)"
    echo "preload: $(client preload porep-2k)   tiers: $(tiers)"
  fi
  curl -s 127.0.0.1:9820/metrics > "$out/metrics-$tag.txt" || true
  kill -TERM "$daemon"; wait "$daemon" || echo "serve exited $?"
  rm -f "$work/cuzk.sock"
done
