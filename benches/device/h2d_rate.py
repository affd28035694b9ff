#!/usr/bin/env python3
"""Host-to-device copy rate of device 0 through the driver API: from memory allocated page-locked
(cuMemHostAlloc), from memory locked in place (cuMemHostRegister, as streamed parameters are) and
from pageable memory. Usage: h2d_rate.py [GIB]"""
import ctypes
import mmap
import sys
import time

from cuda_driver import check, cuda, use_device0

gib = float(sys.argv[1]) if len(sys.argv) > 1 else 4
size = int(gib * (1 << 30))
use_device0()
dst = ctypes.c_uint64()
check(cuda.cuMemAlloc_v2(ctypes.byref(dst), ctypes.c_size_t(size)), "cuMemAlloc")


def rate(src, what):
    best = 0.0
    for _ in range(3):
        start = time.perf_counter()
        check(cuda.cuMemcpyHtoD_v2(dst, src, ctypes.c_size_t(size)), "cuMemcpyHtoD")
        best = max(best, size / (time.perf_counter() - start) / 1e9)
    print(f"{what}: {best:.1f} GB/s ({gib:g} GiB)")


pinned = ctypes.c_void_p()
check(cuda.cuMemHostAlloc(ctypes.byref(pinned), ctypes.c_size_t(size), 0), "cuMemHostAlloc")
ctypes.memset(pinned, 1, size)
rate(pinned, "cuMemHostAlloc")
pageable = mmap.mmap(-1, size)
pageable.write(b"\1" * size)
address = ctypes.addressof(ctypes.c_char.from_buffer(pageable))
rate(ctypes.c_void_p(address), "pageable")
check(cuda.cuMemHostRegister_v2(ctypes.c_void_p(address), ctypes.c_size_t(size), 0), "cuMemHostRegister")
rate(ctypes.c_void_p(address), "cuMemHostRegister")
