# Sourced by the device scripts: `hold N` makes device 0 look like a card with N GiB free (another
# process holds the rest, see hold_gpu_memory.py) until `release`; `hold max` holds nothing.
HOLD_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
holder=""
hold() {
  [ "$1" = max ] && return 0
  rm -f /tmp/held.ready
  python3 "$HOLD_DIR/hold_gpu_memory.py" "$1" /tmp/held.ready > "/tmp/holder-$1.txt" 2>&1 & holder=$!
  for _ in $(seq 120); do [ -f /tmp/held.ready ] && break; sleep 1; done
  cat "/tmp/holder-$1.txt"
}
release() {
  [ -n "$holder" ] && kill "$holder" && wait "$holder" 2>/dev/null
  holder=""
}
