"""The CUDA driver API through ctypes, for the device scripts that need no toolkit: device 0's
primary context made current, and `check` for every call."""
import ctypes
import os
import sys

cuda = ctypes.CDLL("libcuda.so.1")
_script = os.path.basename(sys.argv[0])


def check(rc, what):
    """Exits naming the call and the script when a driver call fails."""
    if rc != 0:
        sys.exit(f"{_script}: {what} failed with CUDA error {rc}")


def use_device0():
    """Initialises the driver and makes device 0's primary context current."""
    check(cuda.cuInit(0), "cuInit")
    device, ctx = ctypes.c_int(), ctypes.c_void_p()
    check(cuda.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
    check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), device), "cuDevicePrimaryCtxRetain")
    check(cuda.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
