#!/usr/bin/env bash
# Builds `bellperson-anchor` with bellperson's CUDA prover and packs it for a GPU host:
#   anchors/bellperson/build.sh [PACK]   (default PACK: target/anchor/bellperson-anchor.tar.xz)
# - nvcc: $NVCC_DIR, else target/cuda-toolchain's (pip's nvidia-cuda-nvcc), else PATH's.
# - ec-gpu-gen builds bellperson's (and neptune's) kernels for sm_90 only (H100/H200), SASS and
#   PTX; EC_GPU_CUDA_NVCC_ARGS overrides that.
# - libcuda: linked against a stub made here from the driver API that cuda-driver-sys declares
#   (its SONAME libcuda.so.1), so no driver is needed to build; the GPU host's real
#   libcuda.so.1 is used at run time. On a host without one, run with
#   LD_LIBRARY_PATH=target/anchor/cuda-stub/lib64: every CUDA call then fails and bellperson proves
#   on the CPU.
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(cd ../.. && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target/anchor}
PACK=${1:-$CARGO_TARGET_DIR/bellperson-anchor.tar.xz}
NVCC_DIR=${NVCC_DIR:-$ROOT/target/cuda-toolchain/lib/python3.11/site-packages/nvidia/cu13/bin}
[ -x "$NVCC_DIR/nvcc" ] && export PATH="$NVCC_DIR:$PATH"
command -v nvcc > /dev/null || { echo "build.sh: no nvcc (set NVCC_DIR)" >&2; exit 2; }
export EC_GPU_CUDA_NVCC_ARGS=${EC_GPU_CUDA_NVCC_ARGS:---optimize=6 --threads=0 --fatbin --generate-code=arch=compute_90,code=sm_90 --generate-code=arch=compute_90,code=compute_90}

# The stub: every cu* function cuda-driver-sys declares, each failing with CUDA_ERROR_UNKNOWN.
# cuda-driver-sys links with CUDA_LIBRARY_PATH/lib64; ec-gpu-gen's build scripts (linked to
# libcuda too, though they call none of it) must load it.
STUB=$CARGO_TARGET_DIR/cuda-stub/lib64
export CUDA_LIBRARY_PATH=${STUB%/lib64}
export LD_LIBRARY_PATH=$STUB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if [ ! -f "$STUB/libcuda.so" ]; then
  cargo fetch --locked
  decls=$(cargo metadata --format-version 1 --locked | python3 -c '
import json, sys
pkgs = json.load(sys.stdin)["packages"]
print(next(p["manifest_path"] for p in pkgs if p["name"] == "cuda-driver-sys"))')
  mkdir -p "$STUB"
  grep -ohE 'pub fn cu[A-Za-z0-9_]+' "$(dirname "$decls")"/src/*.rs | sort -u \
    | sed 's/pub fn \(.*\)/int \1(void) { return 999; }/' > "$STUB/libcuda-stub.c"
  cc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$STUB/libcuda.so.1" "$STUB/libcuda-stub.c"
  ln -sf libcuda.so.1 "$STUB/libcuda.so"
fi

cargo build --release --locked
BIN=$CARGO_TARGET_DIR/release/bellperson-anchor
python3 - "$BIN" "$PACK" <<'PY'
import sys, tarfile
with tarfile.open(sys.argv[2], "w:xz") as tar:
    tar.add(sys.argv[1], arcname="bellperson-anchor")
PY
ls -l "$BIN" "$PACK"
