#!/usr/bin/env bash
# The daemon on a GPU host, against `cuzk bench` on the same work (issue 21's device check):
# 2 KiB PoRep, parameters preloaded, N requests from C concurrent clients, the same engine
# settings as the bench. Run from a directory holding `cuzk` (built with kernels) and,
# optionally, `gpu_backend` (cuzk-groth16's GPU test binary). Writes logs under $OUT.
# Usage: daemon_h200.sh BIN_DIR [REQUESTS] [CLIENTS]
set -euo pipefail
bin=$1; n=${2:-48}; c=${3:-12}
out=${OUT:-/tmp/out}; mkdir -p "$out"
work=$(mktemp -d); cd "$work"
cuzk=$bin/cuzk
workers=$(nproc)

if [ -x "$bin/gpu_backend" ]; then
  echo "== cuzk-groth16 GPU backend tests"
  "$bin/gpu_backend" --test-threads=1 2>&1 | tail -15 | tee "$out/gpu_backend.log"
fi

echo "== sector and parameters"
"$cuzk" seal-test-sector --size 2KiB --miner-id 1000 --out sector >/dev/null
sector=$(python3 -c 'import json;print(json.load(open("sector/sector.json"))["sector_id"])')
/usr/bin/time -f "setup %e s" "$cuzk" setup --porep 2KiB --out params >/dev/null

echo "== cuzk bench: $n jobs, $c at once"
"$cuzk" bench --c1 sector/c1.json --params-dir params -j "$n" -c "$c" \
  --synthesis-concurrency "$c" --partition-workers "$workers" --gpu-workers 2 --backend gpu \
  --timeline "$out/bench.timeline" --json-out "$out/bench.json" > "$out/bench.txt" 2>&1
tail -12 "$out/bench.txt"

echo "== cuzk serve, porep-2k preloaded; cuzk client: $n requests, $c clients"
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
synthesis_concurrency = $c
[srs]
param_cache = "$work/params"
preload = ["porep-2k"]
[logging]
timeline = "$out/serve.timeline"
TOML
"$cuzk" serve --config serve.toml > "$out/serve.log" 2>&1 &
daemon=$!
for _ in $(seq 600); do
  if "$cuzk" client --address "unix://$work/cuzk.sock" status 2>/dev/null | grep -q '"HOT"'; then break; fi
  sleep 0.2
done
"$cuzk" client --address "unix://$work/cuzk.sock" status > "$out/status_before.json"
grep -E '"tier"|"name"|vram' "$out/status_before.json" || true
"$cuzk" --json client --address "unix://$work/cuzk.sock" prove --c1 sector/c1.json \
  --miner-id 1000 --sector-id "$sector" --out daemon.proof --count "$n" --concurrency "$c" \
  | tee "$out/client.json"
"$cuzk" verify porep --c1 sector/c1.json --proof daemon.proof --params-dir params \
  --prover-id 0xe807000000000000000000000000000000000000000000000000000000000000 \
  --sector-id "$sector"
curl -s 127.0.0.1:9820/metrics > "$out/metrics.txt" || true
grep -E '^cuzk_(proofs_completed_total\{proof_kind="porep-c2"\}|gpu_busy_fraction|partition_gpu_seconds_(sum|count))' "$out/metrics.txt" || true
kill -TERM "$daemon"; wait "$daemon" || echo "serve exited $?"
echo "== analyze: bench, then daemon"
"$cuzk" analyze "$out/bench.timeline" | head -8
"$cuzk" analyze "$out/serve.timeline" | head -8
