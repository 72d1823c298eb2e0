"""The stored profile's timeline (bytes and operations per time bin, from the trace) of a real program run
under `iolens profile --trace`: a POSIX AIO request's bytes count when aio_return collects them, as the
counters count the request (docs/profile-log.md: its trace record starts at its submission and lasts until
that aio_return)."""

from __future__ import annotations

import re
from pathlib import Path

from iolens.store import Store, queries

from .conftest import ProfileBuild
from .db_helpers import iolens, iolens_env
from .test_profile_layers import compile_c

PAUSE_S = 1.0

# A write of 4096 bytes submitted at once and collected PAUSE_S later, then a read of them submitted then
# and collected PAUSE_S after that; each aio_return's result said, and the times from the program's start.
LATE_RETURNS = r"""
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void pause_s(double s)
{
    struct timespec ts = { (time_t)s, (long)((s - (time_t)s) * 1e9) };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

static void wait_done(const struct aiocb *cb)
{
    const struct aiocb *list[1] = { cb };
    while (aio_error(cb) == EINPROGRESS)
        aio_suspend(list, 1, NULL);
}

int main(int argc, char **argv)
{
    double t0 = now();
    static char buf[4096], back[4096];
    memset(buf, 'x', sizeof buf);
    dir = argv[1];
    int fd = open(P("late"), O_RDWR | O_CREAT | O_TRUNC, 0644);
    struct aiocb cb[2];
    memset(cb, 0, sizeof cb);
    for (int k = 0; k < 2; k++) { /* the write, then the read */
        cb[k].aio_fildes = fd, cb[k].aio_buf = k ? back : buf, cb[k].aio_nbytes = sizeof buf;
        int submitted = k ? aio_read(&cb[k]) : aio_write(&cb[k]);
        say("%s %d at %.3f\n", k ? "aio_read" : "aio_write", submitted, now() - t0);
        wait_done(&cb[k]);
        pause_s(%PAUSE%);
        say("%s %zd at %.3f\n", k ? "read-return" : "write-return", aio_return(&cb[k]), now() - t0);
    }
    close(fd);
    flush_say();
    return 0;
}
""".replace("%PAUSE%", repr(PAUSE_S))


def test_aio_bytes_count_in_the_timeline_at_aio_return(
    profile_build: ProfileBuild, tmp_path: Path, tmpfs_dir: Path
) -> None:
    exe = compile_c(tmp_path, "late", LATE_RETURNS)
    db = tmp_path / "iolens.db"
    env = iolens_env({"IOLENS_PROFILE_LIB": str(profile_build.lib)}, home=tmp_path)
    r = iolens(
        "profile", "--trace", "--no-report", "--out", str(tmp_path / "logs"), "--db", str(db), "--",
        str(exe), str(tmpfs_dir), env=env,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    said = dict(re.findall(r"^(\S+) (-?\d+) at ", r.stdout, re.M))
    at = {k: float(v) for k, v in re.findall(r"^(\S+) -?\d+ at ([\d.]+)$", r.stdout, re.M)}
    assert said == {"aio_write": "0", "write-return": "4096", "aio_read": "0", "read-return": "4096"}, said
    with Store.open(str(db), create=False) as store:
        doc = queries.get_profile(store.db, 1)["document"]
    tl = doc["timeline"]
    # The bytes aio_return gave, once each: the submissions moved none.
    assert sum(tl["write_bytes"]) == 4096 and sum(tl["read_bytes"]) == 4096
    assert sum(tl["write_ops"]) == 1 and sum(tl["read_ops"]) == 1
    # In the bins of the aio_returns, PAUSE_S after their submissions: the job started before the program's
    # clock did (by the loader's time, under a bin or two), so a bin starts at most that before.
    width = tl["bin_s"]
    wrote = tl["t_s"][next(i for i, b in enumerate(tl["write_bytes"]) if b)]
    read = tl["t_s"][next(i for i, b in enumerate(tl["read_bytes"]) if b)]
    slack = 0.2
    assert at["write-return"] - width - slack <= wrote <= at["write-return"] + slack, (wrote, at, width)
    assert at["read-return"] - width - slack <= read <= at["read-return"] + slack, (read, at, width)
    assert wrote - at["aio_write"] > PAUSE_S / 2 and read - at["aio_read"] > PAUSE_S / 2
