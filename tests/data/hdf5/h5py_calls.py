"""h5py (with the HDF5 library inside its wheel): known dataset writes and reads of DIR/y.h5, for
tests/test_profile_hdf5.py. Prints what it read."""

import sys

import h5py
import numpy as np

path = f"{sys.argv[1]}/y.h5"
with h5py.File(path, "w") as f:
    d = f.create_dataset("d", shape=(100,), dtype="f4", chunks=(10,))
    d[:] = np.arange(100, dtype="f4")  # 400 B
    d[10:20] = np.zeros(10, dtype="f4")  # 40 B
with h5py.File(path, "r") as f:
    d = f["d"]  # H5Oopen: the runtime first sees the dataset at its read
    a = d[5:8]  # 12 B
    b = d[...]  # 400 B
print("read", a.tolist(), float(b.sum()))
