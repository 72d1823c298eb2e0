"""Two HDF5 libraries in one process (tests/test_profile_hdf5.py): h5py's own, and the system's behind
h5_sys.so (loaded with ctypes, RTLD_LOCAL). Each must get its own calls. argv: DIR, path of h5_sys.so."""

import ctypes
import sys

import h5py
import numpy as np

d = sys.argv[1]
with h5py.File(f"{d}/py.h5", "w") as f:
    f.create_dataset("py", data=np.arange(20, dtype="i8"))  # 160 B
lib = ctypes.CDLL(sys.argv[2])
rc = lib.h5_sys_write(f"{d}/sys.h5".encode())
with h5py.File(f"{d}/py.h5", "r") as f:
    total = int(f["py"][...].sum())
print("sys", rc, "py", total)
