#!/usr/bin/env bash
# Issue 37's mixed daemon run: `cuzk serve` with every 32 GiB parameter set made on the GPU
# (`[srs] test_params = "gpu"`: the device machine's 64 GiB disk cannot hold their files), a
# WindowPoSt and a WinningPoSt proven alone (their quiet latency), then again in the middle of
# PoRep and SnapDeals requests that keep the GPU busy; a table of latencies, the sets' tiers
# (settled ones marked), the daemon's peak RSS and `cuzk analyze` of its TIMELINE.
# Usage: benches/device/mixed_daemon.sh PACK [POREPS] [SNAPS]
#   PACK: a .tar.xz holding `cuzk`, or a directory holding it. SIZE=64GiB for the larger sectors
#   (SIZE=2KiB BACKEND=cpu tries the script on a machine without a GPU); HOLD=24 runs with 24 GiB of
#   device memory free (hold.sh); SECTOR and PARAMS: directories to reuse between calls (the
#   sample sector and the compiled R1CS files, which take minutes to record: STAGE=prepare makes
#   them and the sets, then stops). The load starts POREPS (default 6) PoRep and SNAPS
#   (default 2) SnapDeals requests, 2 at a time; the PoSts go LOAD_S (default 40) s after.
set -uo pipefail
PACK=${1:?usage: mixed_daemon.sh PACK [POREPS] [SNAPS]}
POREPS=${2:-6}
SNAPS=${3:-2}
SIZE=${SIZE:-32GiB}
OUT=${OUT:-/tmp/mixed-out}
BACKEND=${BACKEND:-gpu}
SECTOR=${SECTOR:-/tmp/sample-$SIZE}
PARAMS=${PARAMS:-/tmp/r1cs-$SIZE}
LOAD_S=${LOAD_S:-40}
WORK=$(mktemp -d)
mkdir -p "$OUT" "$PARAMS"
if [ -d "$PACK" ]; then
  BIN=$PACK
else
  BIN=/tmp/mixed-bin; mkdir -p "$BIN"
  python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" "$PACK" "$BIN"
fi
cuzk() { "$BIN/cuzk" "$@"; }
short=$(echo "$SIZE" | tr 'A-Z' 'a-z' | sed 's/gib/g/; s/mib/m/; s/kib/k/')

[ -f "$SECTOR/c1.json" ] || /usr/bin/time -f "sample-sector $SIZE: %e s, %M KiB" \
  "$BIN/cuzk" sample-sector --size "$SIZE" --out "$SECTOR" --miner-id 1000 > /dev/null
sector_id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sector_id"])' "$SECTOR/sector.json")
# shellcheck source=hold.sh
. "$(dirname "$0")/hold.sh"
hold "${HOLD:-max}"

cat > "$WORK/serve.toml" <<TOML
[daemon]
listen = "unix://$WORK/cuzk.sock"
[gpus]
backend = "$BACKEND"
[srs]
param_cache = "$PARAMS"
test_params = "$BACKEND"
[logging]
timeline = "$OUT/serve.timeline"
TOML
rm -f "$OUT/serve.timeline"
"$BIN/cuzk" serve --config "$WORK/serve.toml" > "$OUT/serve.log" 2>&1 &
daemon=$!
trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null; release' EXIT
client() { "$BIN/cuzk" --json client --address "unix://$WORK/cuzk.sock" "$@"; }
for _ in $(seq 100); do client status > /dev/null 2>&1 && break; sleep 0.2; done
cat > "$WORK/sets.py" <<'PY'
import json, sys
s = json.load(sys.stdin)
print(" ".join(f"{x['circuit_id']}={x['tier']}{'(settled)' if x.get('host_copy_released') else ''}/"
               f"{x['size_bytes'] / 2**30:.1f}GiB" for x in s["loaded_srs"] if x["tier"] != "COLD"))
PY
cat > "$WORK/latency.py" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print("FAILED" if s["failed"] else f"{s['mean_total_ms']:.0f}")
PY
sets() { client status | python3 "$WORK/sets.py"; }
rss() { grep -E "VmHWM|VmRSS" "/proc/$daemon/status" | tr -s ' ' | tr '\n' ' '; }

# One set at a time: made together, their scalars alone would crowd the host.
for kind in porep wpost snap winning; do
  S=$SECONDS
  client preload "$kind-$short" > /dev/null || { echo "preload $kind-$short: failed"; tail -5 "$OUT/serve.log"; }
  echo "preload $kind-$short: $((SECONDS - S)) s | $(sets) | $(rss)"
done
[ "${STAGE:-}" = prepare ] && exit 0

latency() { # KIND FILE ID: the request's latency in ms, its JSON summary kept
  local flag=--post; [ "$1" = snap ] && flag=--snap
  client prove "$flag" "$2" --miner-id 1000 --id "$3" --out "$OUT/$3.proof" > "$OUT/$3.json" 2>> "$OUT/client.err"
  python3 "$WORK/latency.py" "$OUT/$3.json"
}
quiet_window=$(latency post "$SECTOR/window-post.json" window-quiet)
quiet_winning=$(latency post "$SECTOR/winning-post.json" winning-quiet)
echo "quiet: WindowPoSt $quiet_window ms, WinningPoSt $quiet_winning ms | $(sets)"

S=$SECONDS
client prove --c1 "$SECTOR/c1.json" --miner-id 1000 --sector-id "$sector_id" --count "$POREPS" \
  --concurrency 2 --id porep-load --out "$OUT/porep.proof" > "$OUT/porep-load.json" 2>> "$OUT/client.err" &
porep=$!
client prove --snap "$SECTOR/snap.json" --miner-id 1000 --count "$SNAPS" --concurrency 2 \
  --id snap-load --out "$OUT/snap.proof" > "$OUT/snap-load.json" 2>> "$OUT/client.err" &
snap=$!
sleep "$LOAD_S"
echo "under load at $((SECONDS - S)) s: $(sets)"
loaded_window=$(latency post "$SECTOR/window-post.json" window-loaded)
loaded_winning=$(latency post "$SECTOR/winning-post.json" winning-loaded)
echo "loaded: WindowPoSt $loaded_window ms, WinningPoSt $loaded_winning ms | $(sets)"
wait $porep; wait $snap
echo "load done at $((SECONDS - S)) s: PoRep $(cat "$OUT/porep-load.json") | SnapDeals $(cat "$OUT/snap-load.json")"
echo "daemon: $(rss) | $(sets)"
grep -E "settled|evicted|test parameters" "$OUT/serve.log" | cut -c1-220 | tail -12
ratio() { python3 -c 'import sys; a,b=sys.argv[1:]; print(f"{float(b)/float(a):.2f}" if a.isdigit() and b.isdigit() else "n/a")' "$1" "$2"; }
echo "kind | quiet ms | in the mixed load ms | ratio (≤ 2)"
echo "WindowPoSt | $quiet_window | $loaded_window | $(ratio "$quiet_window" "$loaded_window")"
echo "WinningPoSt | $quiet_winning | $loaded_winning | $(ratio "$quiet_winning" "$loaded_winning")"
cuzk analyze "$OUT/serve.timeline" | sed -n 1,8p
[ -s "$OUT/client.err" ] && { echo "client errors:"; tail -5 "$OUT/client.err"; }
exit 0
