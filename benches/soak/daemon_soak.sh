#!/usr/bin/env bash
# A soak of `cuzk serve` (issue 40): N proofs from concurrent `cuzk client prove` callers against
# a daemon this script configures and starts, while the live page's /timeline is polled every 2 s
# as an open page polls it, parameter sets are evicted and preloaded now and then (EVICT_EVERY),
# and the daemon's memory is sampled (VmRSS, and device memory when nvidia-smi exists) on a timer
# and at every k-th proof. Ends with a table and `RSS flat within X%: yes/no`; exits 1 when a
# proof failed or did not verify, or RSS grew past RSS_TOLERANCE. Needs only `cuzk`, bash and
# python3 (stdlib): runs here on the CPU backend and on a GPU machine without Rust.
#
# Usage: benches/soak/daemon_soak.sh [CUZK]
#   CUZK: the `cuzk` binary, a directory holding it, or a .tar.xz pack holding it (as the device
#   scripts take); default $CUZK, else `cuzk` on PATH, else target/release/cuzk.
# Environment (defaults in brackets):
#   KINDS [porep]        comma-separated: porep, winning, window (2 KiB, Filecoin circuits, test
#                        parameters made by `cuzk setup`), or synthetic alone (a daemon serving
#                        `circuits = "synthetic"`: SYNTH_CONSTRAINTS [1024] x SYNTH_PARTITIONS [2])
#   N [5000]             proofs in all; DURATION [0]: also stop starting proofs after this many s
#   CLIENTS [4]          requests in flight for porep/synthetic; POST_CLIENTS [1] per PoSt kind
#   BATCH [25]           requests per `cuzk client prove --count` call (ids of their own each)
#   BACKEND [auto]       cpu | gpu | auto, for the daemon and for `cuzk setup`
#   EVICT_EVERY [0]      seconds between an evict + preload of each parameter set (0: never);
#                        an evict refused because the set is in use is retried for EVICT_TRY [10] s
#   RSS_TOLERANCE [10]   % of RSS growth from the warm-up sample to the end that still passes
#   WARMUP [60]          the warm-up sample is the first after 10% of the proofs and WARMUP s;
#                        and, when the /timeline ring (EVENTS_KEPT records, a few MB, growing
#                        by design until full) fills in the first half of the load, after that
#                        (WARM_AFTER_RING [1]; 0: not). The table shows RSS from both points.
#   RETENTION [30s]      [daemon] result_retention: finished results kept for AwaitProof (each
#                        holds its proof; the default 10m would grow RSS for the first 10 min)
#   POLL_EVERY [2] (0: no page open) SAMPLE_EVERY [5] SAMPLE_PROOFS [N/100] VERIFY_EVERY [10] (each worker's
#   every 10th batch has its first proof checked by `cuzk verify`; every proof is verified by
#   the daemon before it is returned either way)
#   OUT [/tmp/soak-out]  samples.csv, timeline_polls.csv, evictions.csv, summary.{txt,json},
#                        serve.log, errors.log
#   PARAMS, SECTOR       directories to reuse (parameters; a `seal-test-sector` output)
#   EXTRA_TOML           a file of TOML tables added to the config ([gpus], [synthesis],
#                        [pipeline], [memory]; not [daemon] or [srs]); a [gpus] table there
#                        replaces the script's `backend = "$BACKEND"`
#   KEEP=1               keep the work directory
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

KINDS=${KINDS:-porep}
N=${N:-5000}
DURATION=${DURATION:-0}
CLIENTS=${CLIENTS:-4}
POST_CLIENTS=${POST_CLIENTS:-1}
BATCH=${BATCH:-25}
BACKEND=${BACKEND:-auto}
EVICT_EVERY=${EVICT_EVERY:-0}
EVICT_TRY=${EVICT_TRY:-10}
RSS_TOLERANCE=${RSS_TOLERANCE:-10}
WARMUP=${WARMUP:-60}
RETENTION=${RETENTION:-30s}
POLL_EVERY=${POLL_EVERY:-2}
SAMPLE_EVERY=${SAMPLE_EVERY:-5}
SAMPLE_PROOFS=${SAMPLE_PROOFS:-0}
VERIFY_EVERY=${VERIFY_EVERY:-10}
MINER=${MINER:-1000}
export SYNTH_CONSTRAINTS=${SYNTH_CONSTRAINTS:-1024}
export SYNTH_PARTITIONS=${SYNTH_PARTITIONS:-2}
OUT=${OUT:-/tmp/soak-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/cuzk-soak.XXXXXX")

# ---- the binary ------------------------------------------------------------------------------
src=${1:-${CUZK:-}}
if [ -z "$src" ]; then
  src=$(command -v cuzk || echo "$root/target/release/cuzk")
fi
case $src in
  *.tar.xz|*.txz|*.tar.gz|*.tgz|*.tar)
    mkdir -p "$work/bin"
    python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" "$src" "$work/bin"
    cuzk=$(find "$work/bin" -name cuzk -type f | head -1)
    chmod +x "$cuzk" ;;
  *) if [ -d "$src" ]; then cuzk=$src/cuzk; else cuzk=$src; fi ;;
esac
[ -x "$cuzk" ] || { echo "daemon_soak: no cuzk binary at $cuzk" >&2; exit 2; }
cuzk=$(cd "$(dirname "$cuzk")" && pwd)/$(basename "$cuzk")

# ---- clean up on every exit: the driver, then the daemon (SIGTERM, wait, again, kill) ---------
daemon=""
driver=""
stop_daemon() {
  [ -n "$daemon" ] || return 0
  if kill -0 "$daemon" 2>/dev/null; then
    local begin=$SECONDS
    kill -TERM "$daemon" 2>/dev/null || true
    for _ in $(seq 600); do kill -0 "$daemon" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$daemon" 2>/dev/null; then
      echo "daemon_soak: the daemon still runs 60 s after SIGTERM; a second SIGTERM" >&2
      kill -TERM "$daemon" 2>/dev/null || true; sleep 5
      kill -KILL "$daemon" 2>/dev/null || true
    fi
    local rc=0
    wait "$daemon" 2>/dev/null || rc=$?
    echo "daemon: exit $rc, $((SECONDS - begin)) s after SIGTERM" | tee -a "$OUT/summary.txt"
    daemon_rc=$rc
  fi
  daemon=""
}
cleanup() {
  local rc=$?
  trap - EXIT
  trap '' INT TERM  # a second signal must not cut the cleanup short
  if [ -n "$driver" ] && kill -0 "$driver" 2>/dev/null; then
    kill -TERM "$driver" 2>/dev/null || true
    wait "$driver" 2>/dev/null || true
  fi
  stop_daemon
  if [ "${KEEP:-0}" = 1 ]; then echo "work directory kept: $work"; else rm -rf "$work"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- work: a sector, its PoSt requests and test parameters ------------------------------------
IFS=, read -r -a kinds <<< "$KINDS"
sets=()
circuits=filecoin
c1="" winning="" window="" sector_id=0 params=""
for kind in "${kinds[@]}"; do
  case $kind in
    porep) sets+=(porep-2k) ;;
    winning) sets+=(winning-2k) ;;
    window) sets+=(wpost-2k) ;;
    synthetic)
      [ "${#kinds[@]}" = 1 ] || { echo "daemon_soak: synthetic cannot be mixed (a daemon serves filecoin or synthetic circuits)" >&2; exit 2; }
      circuits=synthetic; sets+=("synthetic-$SYNTH_CONSTRAINTS") ;;
    *) echo "daemon_soak: unknown kind $kind (porep, winning, window, synthetic)" >&2; exit 2 ;;
  esac
done
if [ "$circuits" = filecoin ]; then
  sector=${SECTOR:-$work/sector}
  if [ ! -f "$sector/c1.json" ]; then
    "$cuzk" seal-test-sector --size 2KiB --miner-id "$MINER" --out "$sector" > /dev/null
  fi
  c1=$sector/c1.json winning=$sector/winning-post.json window=$sector/window-post.json
  sector_id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sector_id"])' "$sector/sector.json")
  params=${PARAMS:-$work/params}
  mkdir -p "$params"
  params=$(cd "$params" && pwd)
  setup_backend=$BACKEND
  for kind in "${kinds[@]}"; do
    flag=--porep; [ "$kind" = winning ] && flag=--winning-post; [ "$kind" = window ] && flag=--window-post
    if [ ! -f "$params/.soak-$kind" ]; then
      begin=$SECONDS
      "$cuzk" setup "$flag" 2KiB --backend "$setup_backend" --out "$params" > "$OUT/setup-$kind.log" 2>&1 \
        || { echo "daemon_soak: setup $flag 2KiB failed:" >&2; tail -5 "$OUT/setup-$kind.log" >&2; exit 2; }
      touch "$params/.soak-$kind"
      echo "setup $flag 2KiB: $((SECONDS - begin)) s"
    fi
  done
fi

# ---- the daemon ------------------------------------------------------------------------------
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
socket=$work/cuzk.sock
preload=$(printf '"%s", ' "${sets[@]}"); preload="[${preload%, }]"
{
  echo "[daemon]"
  echo "listen = \"unix://$socket\""
  echo "status_listen = \"127.0.0.1:$port\""
  echo "circuits = \"$circuits\""
  echo "result_retention = \"$RETENTION\""
  echo "drain_timeout = \"60s\""
  echo
  if [ -n "${EXTRA_TOML:-}" ]; then cat "$EXTRA_TOML"; echo; fi
  grep -q '^\[gpus\]' "${EXTRA_TOML:-/dev/null}" || printf '[gpus]\nbackend = "%s"\n\n' "$BACKEND"
  echo "[srs]"
  [ -n "$params" ] && echo "param_cache = \"$params\""
  echo "preload = $preload"
} > "$work/cuzk.toml"
cp "$work/cuzk.toml" "$OUT/cuzk.toml"
"$cuzk" serve --config "$work/cuzk.toml" --check-config > "$OUT/check-config.txt" 2>&1 \
  || { cat "$OUT/check-config.txt" >&2; exit 2; }
"$cuzk" serve --config "$work/cuzk.toml" > "$OUT/serve.log" 2>&1 &
daemon=$!
client() { "$cuzk" client --address "unix://$socket" "$@"; }
hot=0
for _ in $(seq 1200); do
  kill -0 "$daemon" 2>/dev/null || { echo "daemon_soak: cuzk serve exited at start:" >&2; tail -20 "$OUT/serve.log" >&2; exit 2; }
  hot=$(client status 2>/dev/null | grep -c '"HOT"' || true)
  [ "$hot" -ge "${#sets[@]}" ] && break
  sleep 0.5
done
[ "$hot" -ge "${#sets[@]}" ] || { echo "daemon_soak: ${sets[*]} not HOT after 10 min" >&2; exit 2; }
echo "daemon pid $daemon ($("$cuzk" --version 2>/dev/null || echo cuzk)), backend $BACKEND, sets ${sets[*]} HOT; status http://127.0.0.1:$port/"
grep -m1 "daemon built" "$OUT/serve.log" | sed 's/.*daemon built/daemon built/' || true

# ---- the soak --------------------------------------------------------------------------------
set +e
python3 "$here/soak.py" --cuzk "$cuzk" --address "unix://$socket" --status-port "$port" --pid "$daemon" \
  --log "$OUT/serve.log" --out "$OUT" --work "$work" --backend "$BACKEND" --kinds "$KINDS" --n "$N" \
  --duration "$DURATION" --clients "$CLIENTS" --post-clients "$POST_CLIENTS" --batch "$BATCH" \
  --sets "$(IFS=,; echo "${sets[*]}")" --evict-every "$EVICT_EVERY" --evict-try "$EVICT_TRY" \
  --poll-every "$POLL_EVERY" --sample-every "$SAMPLE_EVERY" --sample-proofs "$SAMPLE_PROOFS" \
  --warmup "$WARMUP" --warm-after-ring "${WARM_AFTER_RING:-1}" --rss-tolerance "$RSS_TOLERANCE" --verify-every "$VERIFY_EVERY" \
  --c1 "$c1" --winning "$winning" --window "$window" --params "$params" --miner "$MINER" \
  --sector-id "$sector_id" \
  --prover-id "0x$(python3 -c 'import sys
n=int(sys.argv[1]); b=bytearray()
while True:
    x=n&0x7f; n>>=7
    b.append(x|(0x80 if n else 0))
    if not n: break
print((bytes(b)+bytes(32-len(b))).hex())' "$MINER")" &
driver=$!
wait "$driver"
rc=$?
driver=""
set -e
daemon_rc=0
stop_daemon
[ "$daemon_rc" = 0 ] || rc=1
exit "$rc"
