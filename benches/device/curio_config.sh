#!/usr/bin/env bash
# The daemon as an operator coming from Curio's own runs it (issue 35's device check): `cuzk
# --config F` with Curio's example configuration (crates/cuzk-cli/tests/data/curio-cuzk.toml: its
# gpu_threads 32, synthesis_concurrency 1 (ignored), sort_by_type, …), listen moved to loopback TCP, on a
# 2 KiB PoRep: N requests from C clients over TCP, the proof checked by verify_seal, the
# TIMELINE analyzed, Curio's /status fields and metric names read back.
# Run from the repository root with BIN_DIR holding `cuzk` built with kernels. Logs under $OUT.
# Usage: curio_config.sh BIN_DIR [REQUESTS] [CLIENTS]
set -euo pipefail
bin=$(realpath "$1"); n=${2:-48}; c=${3:-12}
out=${OUT:-/tmp/out}; mkdir -p "$out"
curio=$(realpath crates/cuzk-cli/tests/data/curio-cuzk.toml)
work=$(mktemp -d); cd "$work"
cuzk=$bin/cuzk
"$cuzk" seal-test-sector --size 2KiB --miner-id 1000 --out sector >/dev/null
sector=$(python3 -c 'import json;print(json.load(open("sector/sector.json"))["sector_id"])')
"$cuzk" setup --porep 2KiB --out params >/dev/null 2>"$out/curio-setup.log"
# Curio's file has no status port and no TIMELINE: both added, the rest as it is.
sed -e 's|0.0.0.0:9820|127.0.0.1:9830"\nstatus_listen = "127.0.0.1:9831|' \
    -e "s|/data/zk/params|$work/params|" \
    -e "s|^level = \"info\"|level = \"info\"\ntimeline = \"$out/curio.timeline\"|" "$curio" > cuzk.toml
"$cuzk" --config cuzk.toml > "$out/curio-serve.log" 2>&1 &
daemon=$!
for _ in $(seq 300); do
  "$cuzk" client --address 127.0.0.1:9830 status >/dev/null 2>&1 && break
  sleep 0.2
done
echo "== cuzk --config (Curio's example, loopback): $n requests, $c clients"
grep -E "configuration|config:" "$out/curio-serve.log" | cut -c1-200
"$cuzk" --json client --address 127.0.0.1:9830 prove --c1 sector/c1.json --miner-id 1000 \
  --sector-id "$sector" --out curio.proof --count "$n" --concurrency "$c" | tee "$out/curio-client.json"
"$cuzk" verify porep --c1 sector/c1.json --proof curio.proof --params-dir params \
  --prover-id 0xe807000000000000000000000000000000000000000000000000000000000000 --sector-id "$sector"
curl -s 127.0.0.1:9831/metrics | grep -E "^cuzk_proofs_completed(_total)? |^cuzk_proofs_completed\{proof_kind=\"porep_c2\"\}" || true
curl -s 127.0.0.1:9831/status | python3 -c 'import json,sys; s=json.load(sys.stdin); print("status:", {k: s[k] for k in ("counters","synthesis","memory")}, "workers", len(s["gpu_workers"]))'
kill -TERM "$daemon"; wait "$daemon" || echo "serve exited $?"
echo "-- analyze"
"$cuzk" analyze "$out/curio.timeline" | sed -n 1,6p
