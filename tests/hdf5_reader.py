"""What an HDF5 file holds, read through the real HDF5 library (the one the engine links, via ctypes): each
dataset's name, shape, element size, where its contiguous data starts in the file and its fill time. Tests
use it to check the layout IOR's HDF5 backend gives a file, without h5dump or h5py."""

from __future__ import annotations

import ctypes as C
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path

H5F_ACC_RDONLY = 0
H5P_DEFAULT = 0
FILL_TIME_NAMES = {0: "alloc", 1: "never", 2: "ifset"}


@dataclass(frozen=True)
class Dataset:
    name: str
    dims: tuple[int, ...]
    elem_size: int
    offset: int  # byte offset of the data in the file (contiguous layout)
    fill_time: str


@cache
def _lib() -> C.CDLL | None:
    """libhdf5 of the parallel build the engine uses, or None when it is not installed."""
    try:
        flags = subprocess.run(
            ["pkg-config", "--libs-only-L", "hdf5-openmpi"], capture_output=True, text=True, check=True
        ).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        return None
    found = [Path(f[2:]) / "libhdf5.so" for f in flags if f.startswith("-L")]
    path = next((p for p in found if p.exists()), None)
    if path is None:
        return None
    lib = C.CDLL(str(path))
    hid = C.c_int64
    lib.H5open()
    lib.H5Eset_auto2.argtypes = [hid, C.c_void_p, C.c_void_p]
    lib.H5Eset_auto2(0, None, None)
    for name, res, args in [
        ("H5Fopen", hid, [C.c_char_p, C.c_uint, hid]),
        ("H5Fclose", C.c_int, [hid]),
        ("H5Dopen2", hid, [hid, C.c_char_p, hid]),
        ("H5Dclose", C.c_int, [hid]),
        ("H5Dget_offset", C.c_uint64, [hid]),
        ("H5Dget_space", hid, [hid]),
        ("H5Dget_type", hid, [hid]),
        ("H5Dget_create_plist", hid, [hid]),
        ("H5Pget_fill_time", C.c_int, [hid, C.POINTER(C.c_int)]),
        ("H5Pclose", C.c_int, [hid]),
        ("H5Tget_size", C.c_size_t, [hid]),
        ("H5Tclose", C.c_int, [hid]),
        ("H5Sget_simple_extent_dims", C.c_int, [hid, C.POINTER(C.c_uint64), C.c_void_p]),
        ("H5Sclose", C.c_int, [hid]),
        ("H5Gget_info", C.c_int, [hid, C.c_void_p]),
        (
            "H5Lget_name_by_idx",
            C.c_ssize_t,
            [hid, C.c_char_p, C.c_int, C.c_int, C.c_uint64, C.c_char_p, C.c_size_t, hid],
        ),
    ]:
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    return lib


def available() -> bool:
    return _lib() is not None


class _GroupInfo(C.Structure):
    _fields_ = [
        ("storage_type", C.c_int),
        ("nlinks", C.c_uint64),
        ("max_corder", C.c_int64),
        ("mounted", C.c_bool),
    ]


def datasets(path: Path) -> list[Dataset]:
    """The datasets of the file's root group, in name order."""
    lib = _lib()
    assert lib is not None, "libhdf5 (hdf5-openmpi) is not installed"
    fid = lib.H5Fopen(str(path).encode(), H5F_ACC_RDONLY, H5P_DEFAULT)
    if fid < 0:
        raise OSError(f"HDF5 cannot open {path}")
    try:
        info = _GroupInfo()
        assert lib.H5Gget_info(fid, C.byref(info)) >= 0
        out = []
        for i in range(info.nlinks):
            buf = C.create_string_buffer(256)
            assert lib.H5Lget_name_by_idx(fid, b".", 0, 0, i, buf, 256, H5P_DEFAULT) > 0
            did = lib.H5Dopen2(fid, buf.value, H5P_DEFAULT)
            assert did >= 0
            sid, tid, pid = lib.H5Dget_space(did), lib.H5Dget_type(did), lib.H5Dget_create_plist(did)
            dims = (C.c_uint64 * 8)()
            ndims = lib.H5Sget_simple_extent_dims(sid, dims, None)
            fill = C.c_int(-1)
            lib.H5Pget_fill_time(pid, C.byref(fill))
            out.append(
                Dataset(
                    name=buf.value.decode(),
                    dims=tuple(dims[k] for k in range(ndims)),
                    elem_size=lib.H5Tget_size(tid),
                    offset=lib.H5Dget_offset(did),
                    fill_time=FILL_TIME_NAMES.get(fill.value, str(fill.value)),
                )
            )
            lib.H5Pclose(pid)
            lib.H5Tclose(tid)
            lib.H5Sclose(sid)
            lib.H5Dclose(did)
        return sorted(out, key=lambda d: d.name)
    finally:
        lib.H5Fclose(fid)


def data_bytes(path: Path) -> bytes:
    """The datasets' raw bytes, concatenated in name order (segment 0 first)."""
    raw = path.read_bytes()
    return b"".join(raw[d.offset : d.offset + d.elem_size * _count(d)] for d in datasets(path))


def _count(d: Dataset) -> int:
    n = 1
    for k in d.dims:
        n *= k
    return n
