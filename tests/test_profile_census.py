"""Every function the profiler runtime wraps, called once each (native/profiler/tests/profile_census.c), with
the trace on: the records between an entry point's two markers are exactly those its call must make (the
op, the file, the bytes moved). The census must cover every function the runtime exports, so a wrapper
added later without a census entry fails here; the output is the same with and without the runtime.
"""

from __future__ import annotations

import shutil
import subprocess
from fnmatch import fnmatchcase
from pathlib import Path

from iolens.profile.reader import read_log

from .conftest import ProfileBuild
from .test_profile_runtime import plain_env, profiled_env, run

# Exported, and run one by one by test_profile_runtime's cases (they end or replace the process).
ELSEWHERE = {
    "_Exit", "_exit", "exit", "execl", "execle", "execlp", "execv", "execve", "execveat", "execvp", "execvpe",
    "fexecve", "__libc_start_main",
}  # fmt: skip
# The MPI-IO layer's C and Fortran entry points: called under mpirun by tests/test_profile_mpiio.py (which
# checks that its program calls every C one).
MPIIO_PREFIXES = ("MPI_File_", "mpi_file_", "ompi_file_")
# The HDF5 layer's entry points: called by tests/test_profile_hdf5.py's programs (which checks that they call
# every one).
HDF5_PREFIXES = ("H5F", "H5D", "H5I", "H5P")
# The PnetCDF layer's entry points: called by tests/test_profile_pnetcdf.py's programs (which checks that they
# call every one).
PNETCDF_PREFIXES = ("ncmpi_",)
# MPI_Finalize's C and Fortran entry points: called under mpirun by tests/test_profile_joblog.py.
FINALIZE = {
    "MPI_Finalize",
    "MPI_FINALIZE",
    "mpi_finalize",
    "mpi_finalize_",
    "mpi_finalize__",
    "ompi_finalize_f",
}

# What each entry's call records: op:file=result ("-": no file; "." the scratch directory; a file outside
# it by its absolute path), where "=N" is the result the call must give (the bytes moved; absent: any
# success, a descriptor or pid); "?" and "*" match any character(s), as in a shell (the names mkstemp and
# tmpfile make). The data file "cs" holds "hello world\nsecond line\n12 34\nlast;rest\n"; reads take 5
# bytes, vectors 4, lines up to "\n".
OPEN, FOPEN, FORK = "open:cs", "fopen:cs", "fork:-"
WINDOWS: dict[str, list[str]] = {
    **{name: [OPEN] for name in ("open", "open64", "openat", "openat64", "creat", "creat64", "__open_2",
                                 "__open64_2", "__openat_2", "__openat64_2")},
    **{name: ["close:cs=0"] for name in ("close", "close_range", "closefrom")},
    **{name: ["dup:cs"] for name in ("dup", "dup2", "dup3", "fcntl", "fcntl64")},
    **{name: ["read:cs=5"] for name in ("read", "__read_chk")},
    "write": ["write:cs=5"],
    **{name: ["pread:cs=5"] for name in ("pread", "pread64", "__pread_chk", "__pread64_chk")},
    **{name: ["pwrite:cs=5"] for name in ("pwrite", "pwrite64")},
    "readv": ["readv:cs=4"], "writev": ["writev:cs=4"],
    **{name: ["preadv:cs=4"] for name in ("preadv", "preadv64", "preadv2", "preadv64v2")},
    **{name: ["pwritev:cs=4"] for name in ("pwritev", "pwritev64", "pwritev2", "pwritev64v2")},
    **{name: ["lseek:cs=3"] for name in ("lseek", "lseek64")},
    "fsync": ["fsync:cs=0"], "fdatasync": ["fdatasync:cs=0"], "sync_file_range": ["sync_file_range:cs=0"],
    **{name: ["ftruncate:cs=0"] for name in ("ftruncate", "ftruncate64")},
    **{name: ["fallocate:cs=0"] for name in ("fallocate", "fallocate64", "posix_fallocate",
                                             "posix_fallocate64")},
    "copy_file_range": ["copy_file_range:cs2=5"],
    **{name: ["sendfile:cs2=5"] for name in ("sendfile", "sendfile64")},
    **{name: ["stat:cs=0"] for name in ("stat", "stat64", "__xstat", "__xstat64")},
    **{name: ["lstat:cs=0"] for name in ("lstat", "lstat64", "__lxstat", "__lxstat64")},
    **{name: ["fstat:cs=0"] for name in ("fstat", "fstat64", "__fxstat", "__fxstat64")},
    **{name: ["fstatat:cs=0"] for name in ("fstatat", "fstatat64", "__fxstatat", "__fxstatat64")},
    "statx": ["statx:cs=0"],
    **{name: ["access:cs=0"] for name in ("access", "faccessat", "euidaccess", "eaccess")},
    **{name: ["unlink:cs=0"] for name in ("unlink", "unlinkat")},
    **{name: ["mkdir:d1=0"] for name in ("mkdir", "mkdirat")},
    "rmdir": ["rmdir:d1=0"],
    **{name: ["rename:cs=0"] for name in ("rename", "renameat", "renameat2")},  # the source's name
    **{name: ["truncate:cs=0"] for name in ("truncate", "truncate64")},
    **{name: ["chmod:cs=0"] for name in ("chmod", "fchmod", "fchmodat")},
    **{name: ["link:cs4=0"] for name in ("link", "linkat")},  # the new name
    **{name: ["link:sl=0"] for name in ("symlink", "symlinkat")},
    # The working directory is followed, not recorded: no op of its own.
    "chdir": [], "fchdir": [],
    **{name: ["opendir:."] for name in ("opendir", "fdopendir")},
    **{name: ["readdir:.=1"] for name in ("readdir", "readdir64")},
    "closedir": ["closedir:.=0"], "getdents64": ["getdents:."],
    **{name: ["mmap:cs=0"] for name in ("mmap", "mmap64")},
    # An unmap or sync names a range of memory, not a file.
    "munmap": ["munmap:-=0"], "msync": ["msync:-=0"],
    **{name: [FOPEN] for name in ("fopen", "fopen64", "fdopen")},
    **{name: ["fclose:cs=0", FOPEN] for name in ("freopen", "freopen64")},
    "fclose": ["fclose:cs=0"],
    "fileno": [],  # counted in POSIX_FILENOS and POSIX_OPENS, not traced
    **{name: ["mkstemp:mk-??????"] for name in ("mkstemp", "mkstemp64", "mkostemp", "mkostemp64")},
    **{name: ["mkstemp:mk-??????.s"] for name in ("mkstemps", "mkstemps64", "mkostemps", "mkostemps64")},
    **{name: ["tmpfile:/tmp/*"] for name in ("tmpfile", "tmpfile64")},  # the C library's P_tmpdir
    "rewind": ["rewind:cs=0"],
    **{name: ["fsetpos:cs=0"] for name in ("fsetpos", "fsetpos64")},
    **{name: ["fgetpos:cs=0"] for name in ("fgetpos", "fgetpos64")},
    # An AIO request's record is written when aio_return collects it, and starts at its submission: it is in
    # the submission's window (the trace is in start order), not in aio_return's.
    **{name: ["aio_read:cs=5"] for name in ("aio_read", "aio_read64")},
    **{name: ["aio_write:cs=5"] for name in ("aio_write", "aio_write64")},
    **{name: ["lio_listio:-=0", "aio_read:cs=5"] for name in ("lio_listio", "lio_listio64")},
    **{name: [] for name in ("aio_return", "aio_return64")},
    **{name: ["aio_error:-=0"] for name in ("aio_error", "aio_error64")},
    **{name: ["aio_suspend:-=0"] for name in ("aio_suspend", "aio_suspend64")},
    **{name: ["aio_fsync:cs=0"] for name in ("aio_fsync", "aio_fsync64")},
    **{name: ["aio_cancel:-=2"] for name in ("aio_cancel", "aio_cancel64")},  # AIO_ALLDONE
    **{name: ["fseek:cs=0"] for name in ("fseek", "fseeko", "fseeko64")},
    **{name: ["ftell:cs=0"] for name in ("ftell", "ftello", "ftello64")},
    **{name: ["fflush:cs=0"] for name in ("fflush", "fflush_unlocked")},
    **{name: ["fread:cs=5"] for name in ("fread", "fread_unlocked", "__fread_chk", "__fread_unlocked_chk")},
    **{name: ["fgets:cs=12"] for name in ("fgets", "fgets_unlocked", "__fgets_chk", "__fgets_unlocked_chk",
                                          "getline")},
    **{name: ["fgets:cs=6"] for name in ("getdelim", "__getdelim")},  # "hello "
    **{name: ["fread:cs=1"] for name in ("fgetc", "fgetc_unlocked", "getc", "getc_unlocked", "_IO_getc",
                                         "getchar", "getchar_unlocked")},
    **{name: ["fscanf:cs=5"] for name in ("fscanf", "__isoc99_fscanf", "vfscanf", "__isoc99_vfscanf")},
    **{name: ["fwrite:cs=5"] for name in ("fwrite", "fwrite_unlocked")},
    **{name: ["fputs:cs=5"] for name in ("fputs", "fputs_unlocked")},
    "puts": ["fputs:cs=6"],  # and its newline
    **{name: ["fwrite:cs=1"] for name in ("fputc", "fputc_unlocked", "putc", "putc_unlocked", "_IO_putc",
                                          "putchar", "putchar_unlocked")},
    **{name: ["fprintf:cs=5"] for name in ("fprintf", "__fprintf_chk", "vfprintf", "__vfprintf_chk", "printf",
                                           "__printf_chk", "vprintf", "__vprintf_chk")},
    **{name: [FORK] for name in ("fork", "_Fork", "clone")},
    "vfork": ["fork:-=0"],  # written before the call: the parent resumes in the program
    **{name: ["spawn:-"] for name in ("posix_spawn", "posix_spawnp")},
    # The runtime keeps its own handlers; the program's calls behave as without it and are not recorded.
    **{name: [] for name in ("signal", "sysv_signal", "__sysv_signal", "bsd_signal", "sigset", "sigaction")},
}  # fmt: skip


def exported(lib: Path) -> set[str]:
    nm = shutil.which("nm")
    assert nm is not None, "nm (binutils) is needed to list what the runtime exports"
    out = subprocess.run([nm, "-D", "--defined-only", str(lib)], capture_output=True, text=True, check=True)
    return {line.split()[-1] for line in out.stdout.splitlines() if line.split()[-2:-1] == ["T"]}


def test_census_calls_every_wrapped_function(profile_build: ProfileBuild) -> None:
    census = str(profile_build.program("profile_census"))
    listed = subprocess.run([census, "--list"], capture_output=True, text=True, check=True).stdout.split()
    assert listed == sorted(WINDOWS)
    missing = {
        n
        for n in exported(profile_build.lib) - set(listed) - ELSEWHERE
        if not n.startswith(MPIIO_PREFIXES + HDF5_PREFIXES + PNETCDF_PREFIXES) and n not in FINALIZE
    }
    assert missing == set(), f"wrapped functions the census does not call: {sorted(missing)}"


def where(path: str | None, work: Path) -> str:
    """A record's file as WINDOWS names it."""
    if path is None:
        return "-"
    p = Path(path)
    if p == work:
        return "."
    return str(p.relative_to(work)) if p.is_relative_to(work) else path


def windows(logs: Path, work: Path) -> dict[str, list[str]]:
    """The records of the census's process between each entry's markers, as op:file=result."""
    (main,) = [log for log in (read_log(p) for p in logs.iterdir()) if any(
        (e.path or "").startswith("/iolens-census/") for e in log.trace
    )]  # fmt: skip
    out: dict[str, list[str]] = {}
    current: str | None = None
    for e in main.trace:
        path = e.path or ""
        if path.startswith("/iolens-census/"):
            name = path[len("/iolens-census/") :]
            current = None if name == "-" else name
            if current is not None:
                out[current] = []
            continue
        if current is None:
            continue
        out[current].append(f"{e.op}:{where(e.path, work)}={e.result}")
    return out


def test_each_entry_point_records_its_own_call(profile_build: ProfileBuild, tmpfs_dir: Path) -> None:
    census = str(profile_build.program("profile_census"))
    a, b, logs = tmpfs_dir / "plain", tmpfs_dir / "profiled", tmpfs_dir / "logs"
    for d in (a, b, logs):
        d.mkdir()
    plain = run([census, str(a)], plain_env())
    prof = run([census, str(b)], profiled_env(profile_build, logs, IOLENS_TRACE="1"))
    assert prof.returncode == plain.returncode == 0, prof.stderr.decode()
    assert prof.stdout.decode().replace(str(b), "D") == plain.stdout.decode().replace(str(a), "D")
    got = windows(logs, b)
    assert sorted(got) == sorted(WINDOWS)
    wrong = {}
    for name, want in WINDOWS.items():
        rec = got[name]
        ok = len(rec) == len(want) and all(
            fnmatchcase(r.rsplit("=", 1)[0], w) and int(r.rsplit("=", 1)[1]) >= 0
            if "=" not in w
            else fnmatchcase(r, w)
            for r, w in zip(rec, want, strict=True)
        )
        if not ok:
            wrong[name] = (rec, want)
    assert wrong == {}, "\n".join(f"{n}: recorded {r}, expected {w}" for n, (r, w) in sorted(wrong.items()))
