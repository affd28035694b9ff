#!/usr/bin/env python3
"""Makes device 0 look like a smaller card: allocates its memory through the CUDA driver API until
only FREE_GIB GiB are free device-wide (what cuMemGetInfo reports to every process), writes READY,
then sleeps until killed. Usage: hold_gpu_memory.py FREE_GIB READY_FILE"""
import ctypes
import sys
import time

from cuda_driver import check, cuda, use_device0

free_gib, ready = float(sys.argv[1]), sys.argv[2]
use_device0()
target = int(free_gib * (1 << 30))
held, chunk = [], 1 << 30
while True:
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    check(cuda.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total)), "cuMemGetInfo")
    excess = free.value - target
    if excess <= 0:
        break
    size = min(chunk, excess)
    if size < (2 << 20):
        break
    ptr = ctypes.c_uint64()
    if cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(size)) != 0:
        chunk //= 2
        if chunk < (2 << 20):
            break
        continue
    held.append(ptr)
print(f"hold_gpu_memory: holding {sum(1 for _ in held)} blocks; free {free.value / 2**30:.2f} GiB "
      f"of {total.value / 2**30:.1f}", flush=True)
open(ready, "w").write(f"{free.value}\n")
while True:
    time.sleep(3600)
