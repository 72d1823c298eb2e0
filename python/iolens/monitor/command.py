"""`iolens monitor`: sample the node's I/O statistics and write them as a JSON-lines stream, serve them to
Prometheus, write InfluxDB line protocol, or show them live; `iolens monitor parse FILE` shows what the
parsers read from a saved statistics file. cli.py hands the arguments over untouched."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from rich.console import Console
from rich.live import Live
from rich.text import Text

from iolens.monitor import influx, influx_http, parsefile, proc_agg, prometheus, stream
from iolens.monitor.common import decode
from iolens.monitor.procio import ProcIoCollector
from iolens.monitor.sampler import SOURCES, Sampler, SourceOptions, make_collectors
from iolens.monitor.view import LiveView
from iolens.store.settings import store_help

PROG = "iolens monitor"
HELP = """usage: iolens monitor [--interval 1s] [--duration 10m] [--sources LIST] [--out FILE]
                      [--prometheus [HOST:]PORT] [--prometheus-jobs] [--prometheus-top N]
                      [--prometheus-pids] [--prometheus-names iolens|lustre_exporter]
                      [--influx FILE] [--influx-top N] [--influx-pids]
                      [--influx-url URL (--influx-org ORG --influx-bucket BUCKET | --influx-db DB)
                       [--influx-token-file FILE] [--influx-gzip]] [--no-live]
                      [--pid PID] [--pid-tree PID] [--cgroup DIR] [--devices REGEX]
                      [--lustre auto|files|lctl] [--lustre-exports] [--lustre-root DIR] [--proc DIR]
                      [--list-sources]
       iolens monitor parse FILE [--kind KIND]

Samples this node's I/O statistics every interval (docs/monitor.md). In a terminal it shows a live view;
--out writes the JSON-lines stream (`-` for standard output, the default when standard output is not a
terminal and no other output is asked for).

  --interval T          time between samples (1s; 100ms, 0.5s, 2m ...)
  --duration T          stop after T (default: until Ctrl-C)
  --sources LIST        comma-separated, from: {sources} (default: all; proc_io
                        needs --pid or --pid-tree)
  --out FILE            write the JSON-lines stream to FILE (`-`: standard output)
  --prometheus ADDR     serve the current values at http://ADDR/metrics; ADDR is PORT or HOST:PORT
                        (host 127.0.0.1 unless given; port 0 picks a free one, printed on standard error)
  --prometheus-jobs     also serve per-job Lustre metrics (lustre_job_*{{jobid}}: one series per job)
  --prometheus-names N  the Lustre metrics' names: iolens (default; histograms for rpc_stats/brw_stats) or
                        lustre_exporter (the names of lustre_exporter 2.1.9, so its dashboards work)
  --prometheus-top N    serve the processes as iolens_command_*{{comm[,jobid]}} of the N commands with the
                        most I/O, the others summed as comm="_other" (default {top}; 0: none)
  --prometheus-pids     also serve one iolens_process_*{{pid,comm}} series per process
  --influx FILE         write InfluxDB line protocol to FILE (`-`: standard output)
  --influx-top N        command_io lines of the N commands with the most I/O, + _other (default {top})
  --influx-pids         also write one proc_io line per process
  --influx-url URL      send the same lines to the InfluxDB server at URL (such as http://localhost:8086)
  --influx-org ORG      with --influx-bucket: InfluxDB 2.x's /api/v2/write (ORG default: $INFLUX_ORG)
  --influx-bucket B     the 2.x bucket
  --influx-db DB        InfluxDB 1.x's /write?db=DB instead
  --influx-token-file F read the token from F (default: $INFLUX_TOKEN; 1.x: USER:PASSWORD, optional)
  --influx-gzip         send gzip-compressed bodies
  --no-live             no live view, even in a terminal
  --pid PID             watch /proc/PID/io of this process (repeatable)
  --pid-tree PID        watch this process and all its descendants (repeatable)
  --cgroup DIR          read DIR/io.stat of this cgroup v2 directory (repeatable; default: our own cgroup)
  --devices REGEX       block devices to report (default: all but partitions, loop, ram, zram)
  --lustre MODE         auto (files if visible, else `lctl get_param`), files, or lctl
  --lustre-exports      also read the per-client exports stats of Lustre servers (one file per client)
  --lustre-root DIR     look for Lustre parameters under DIR instead of /proc/fs/lustre, /sys/fs/lustre and
                        /sys/kernel/debug/lustre (repeatable; in that order)
  --proc DIR            read the Linux sources under DIR instead of /proc (a container's view of the host)
  --list-sources        say which sources are available here, and exit

  parse FILE            print, as JSON, what the parsers read from FILE (lctl get_param output or a copy
                        of a /proc file; `-` for standard input)
  --kind KIND           the file's kind, when it should not be recognised from the content: {kinds}
""" + store_help("every sample is stored (not by parse)", tagged=False)


class UsageError(Exception):
    pass


def seconds(text: str, opt: str) -> float:
    """`1s`, `100ms`, `0.5`, `10m`, `2h`, `1d` → seconds (a bare number is seconds)."""
    t = text.strip().lower()
    number, mult = t, 1.0
    for suffix, scale in (("ms", 1e-3), ("us", 1e-6), ("s", 1.0), ("m", 60.0), ("h", 3600.0), ("d", 86400.0)):
        if t.endswith(suffix):
            number, mult = t[: -len(suffix)], scale
            break
    try:
        value = float(number) * mult
    except ValueError:
        raise UsageError(f"{opt}: expected a time such as 1s, 100ms or 10m, got {text!r}") from None
    if not value > 0 or value != value or value == float("inf"):
        raise UsageError(f"{opt}: must be more than zero, got {text!r}")
    return value


def _error(message: str, status: int = 2) -> int:
    Console(stderr=True, highlight=False).print(Text(f"iolens: error: {message}"), soft_wrap=True)
    return status


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, add_help=False)
    p.add_argument("-h", "--help", action="store_true")
    p.add_argument("--interval", default="1s")
    p.add_argument("--duration")
    p.add_argument("--sources")
    p.add_argument("--out")
    p.add_argument("--prometheus")
    p.add_argument("--prometheus-jobs", action="store_true")
    p.add_argument("--prometheus-names", default="iolens")
    p.add_argument("--prometheus-top", default=str(proc_agg.DEFAULT_TOP))
    p.add_argument("--prometheus-pids", action="store_true")
    p.add_argument("--influx")
    p.add_argument("--influx-top", default=str(proc_agg.DEFAULT_TOP))
    p.add_argument("--influx-pids", action="store_true")
    p.add_argument("--influx-url")
    p.add_argument("--influx-org")
    p.add_argument("--influx-bucket")
    p.add_argument("--influx-db")
    p.add_argument("--influx-token-file")
    p.add_argument("--influx-gzip", action="store_true")
    p.add_argument("--no-live", action="store_true")
    p.add_argument("--pid", action="append", default=[])
    p.add_argument("--pid-tree", action="append", default=[])
    p.add_argument("--cgroup", action="append", default=[])
    p.add_argument("--devices")
    p.add_argument("--lustre", default="auto", choices=("auto", "files", "lctl"))
    p.add_argument("--lustre-exports", action="store_true")
    p.add_argument("--lustre-root", action="append", default=[])
    p.add_argument("--proc", default="/proc")
    p.add_argument("--list-sources", action="store_true")
    return p


class _ArgError(Exception):
    pass


def _parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = _parser()

    def fail(message: str) -> None:
        raise _ArgError(message)

    p.error = fail  # type: ignore[method-assign]
    try:
        return p.parse_args(list(argv))
    except _ArgError as exc:
        raise UsageError(str(exc)) from None


def _pids(values: list[str], opt: str) -> list[int]:
    out = []
    for v in values:
        for part in v.split(","):
            if not part.strip().isdigit():
                raise UsageError(f"{opt}: expected a process id, got {part!r}")
            out.append(int(part))
    return out


def _count(text: str, opt: str) -> int:
    if not text.strip().isdigit():
        raise UsageError(f"{opt}: expected a number of commands (0 or more), got {text!r}")
    return int(text)


def _influx_target(ns: argparse.Namespace) -> influx_http.Target | None:
    """The --influx-url server and how to write there; None without --influx-url."""
    if ns.influx_url is None:
        for opt in ("org", "bucket", "db", "token_file"):
            if getattr(ns, f"influx_{opt}") is not None:
                raise UsageError(f"--influx-{opt.replace('_', '-')}: needs --influx-url")
        if ns.influx_gzip:
            raise UsageError("--influx-gzip: needs --influx-url")
        return None
    problem = influx_http.check_url(ns.influx_url)
    if problem:
        raise UsageError(f"--influx-url: {problem}")
    if (ns.influx_bucket is None) == (ns.influx_db is None):
        raise UsageError(
            "--influx-url: give --influx-bucket (InfluxDB 2.x API) or --influx-db (1.x API), one of them"
        )
    token = os.environ.get("INFLUX_TOKEN", "")
    if ns.influx_token_file is not None:
        try:
            token = Path(ns.influx_token_file).read_text("utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"--influx-token-file: cannot read {ns.influx_token_file}: {exc}") from None
        if not token:
            raise UsageError(f"--influx-token-file: {ns.influx_token_file} is empty")
    if ns.influx_db is not None:
        if ns.influx_org is not None:
            raise UsageError("--influx-org: only with --influx-bucket (the 2.x API)")
        return influx_http.Target(ns.influx_url, db=ns.influx_db, token=token, gzip=ns.influx_gzip)
    org = ns.influx_org if ns.influx_org is not None else os.environ.get("INFLUX_ORG", "")
    if not org:
        raise UsageError("--influx-bucket: needs --influx-org ORG (or the INFLUX_ORG environment variable)")
    if not token:
        raise UsageError(
            "--influx-bucket: needs a token: --influx-token-file FILE or the INFLUX_TOKEN environment "
            "variable"
        )
    return influx_http.Target(
        ns.influx_url, org=org, bucket=ns.influx_bucket, token=token, gzip=ns.influx_gzip
    )


def source_names(text: str | None, with_pids: bool) -> list[str]:
    if text is None or text == "all":
        return [s for s in SOURCES if s != "proc_io" or with_pids]
    names = [s.strip() for s in text.split(",") if s.strip()]
    for n in names:
        if n not in SOURCES:
            raise UsageError(f"--sources: unknown source {n!r} (one of {', '.join(SOURCES)})")
    if not names:
        raise UsageError("--sources: expects at least one source")
    return names


def main(argv: Sequence[str], sink: Callable[[dict[str, Any]], None] | None = None) -> int:
    """`iolens monitor`; `sink` is given every sample record too (the statistics database stores them)."""
    args = list(argv)
    if args and args[0] == "parse":
        return parse_command(args[1:])
    try:
        ns = _parse_args(args)
        if ns.help:
            text = HELP.format(
                sources=", ".join(SOURCES), kinds=", ".join(parsefile.KINDS), top=proc_agg.DEFAULT_TOP
            )
            sys.stdout.write(text)
            return 0
        interval = seconds(ns.interval, "--interval")
        duration = seconds(ns.duration, "--duration") if ns.duration is not None else None
        pids, trees = _pids(ns.pid, "--pid"), _pids(ns.pid_tree, "--pid-tree")
        names = source_names(ns.sources, bool(pids or trees))
        ns.prometheus_top = _count(ns.prometheus_top, "--prometheus-top")
        ns.influx_top = _count(ns.influx_top, "--influx-top")
        ns.influx_target = _influx_target(ns)
        address = None
        if ns.prometheus is not None:
            try:
                address = prometheus.parse_address(ns.prometheus)
            except ValueError as exc:
                raise UsageError(f"--prometheus: {exc}") from None
        if ns.prometheus_names not in prometheus.NAMES:
            names = " or ".join(prometheus.NAMES)
            raise UsageError(f"--prometheus-names: expected {names}, got {ns.prometheus_names!r}")
        for opt, value in (("--out", ns.out), ("--influx", ns.influx)):
            if value not in (None, "-"):
                parent = Path(value).parent
                if not parent.is_dir():
                    raise UsageError(f"{opt}: directory {parent} does not exist")
        if ns.devices is not None:
            import re

            try:
                re.compile(ns.devices)
            except re.error as exc:
                raise UsageError(f"--devices: not a regular expression: {exc}") from None
    except UsageError as exc:
        return _error(str(exc))
    opts = SourceOptions(
        proc=ns.proc.rstrip("/") or "/",
        lustre_roots=tuple(ns.lustre_root) or None,
        devices=ns.devices,
        pids=pids,
        pid_trees=trees,
        cgroups=ns.cgroup,
        lustre_mode=ns.lustre,
        lustre_exports=ns.lustre_exports,
    )
    sampler = Sampler(make_collectors(names, opts))
    if ns.list_sources:
        return _list_sources(sampler)
    return _run(sampler, ns, interval, duration, address, sink)


def event_text(ev: dict[str, Any]) -> str:
    """What an event record says about its source, for a person."""
    if ev["event"] == "unavailable":
        return f"unavailable: {ev.get('reason', '')}"
    if ev["event"] == "partial":
        parts = ev.get("unreadable") or {}
        return "partly unavailable: " + "; ".join(f"{part}: {why}" for part, why in parts.items())
    return "available"


def _list_sources(sampler: Sampler) -> int:
    sampler.sample()
    for name, info in sampler.availability().items():
        if info["available"]:
            print(f"{name:11s} available     {info['reads']}")
            for part, why in (info.get("unreadable") or {}).items():
                print(f"{'':11s} not readable  {part}: {why}")
        else:
            print(f"{name:11s} unavailable   {info.get('reason', '')}")
    return 0


@contextlib.contextmanager
def _open_out(path: str | None) -> Iterator[IO[str] | None]:
    if path is None:
        yield None
    elif path == "-":
        yield sys.stdout
    else:
        with open(path, "w", encoding="utf-8") as f:
            yield f


def _run(
    sampler: Sampler,
    ns: argparse.Namespace,
    interval: float,
    duration: float | None,
    address: tuple[str, int] | None,
    sink: Callable[[dict[str, Any]], None] | None = None,
) -> int:
    err = Console(stderr=True, highlight=False)
    interactive = sys.stdout.isatty()
    out_path = ns.out
    if (
        out_path is None
        and not interactive
        and address is None
        and ns.influx is None
        and ns.influx_url is None
    ):
        out_path = "-"
    live = interactive and not ns.no_live and out_path != "-" and ns.influx != "-"
    host = socket.gethostname()
    latest: dict[str, Any] = {"record": None, "n": 0}

    def on_term(signum: int, frame: Any) -> None:
        sampler.stop()

    previous = signal.signal(signal.SIGTERM, on_term)
    server = None
    procs = next((c for c in sampler.collectors if isinstance(c, ProcIoCollector)), None)
    # Per-command totals only when an output serves them or the live view shows them (the stream keeps the
    # raw per-process values); one set of totals for all of them.
    outputs = ((ns.prometheus_top, address), (ns.influx_top, ns.influx), (ns.influx_top, ns.influx_url))
    tops = {n for n, used in outputs if n and used is not None}
    commands = proc_agg.CommandTotals(tops) if procs is not None and (tops or live) else None
    view = LiveView(interval, host, commands)

    def top(n: int) -> proc_agg.Series | None:
        return commands.top(n) if commands is not None and n else None

    sender = None
    if ns.influx_target is not None:
        sender = influx_http.HttpWriter(
            ns.influx_target,
            lambda text: err.print(Text(f"iolens monitor: --influx-url: {text}"), soft_wrap=True),
        ).start()
    try:
        if address is not None:
            try:
                # Bound first (a port in use is an error before anything is written), served once the first
                # sample is there: a scrape never sees an empty page.
                server = prometheus.MetricsServer(
                    address[0],
                    address[1],
                    lambda: prometheus.build(
                        latest["record"],
                        sampler.availability(),
                        ns.prometheus_jobs,
                        latest["n"],
                        ns.prometheus_names,
                        pids=ns.prometheus_pids,
                        commands=top(ns.prometheus_top),
                    ),
                )
            except OSError as exc:
                return _error(f"--prometheus: cannot listen on {address[0]}:{address[1]}: {exc.strerror}", 1)
        with _open_out(out_path) as out, _open_out(ns.influx) as influx_out:
            writer = stream.Writer(out) if out is not None else None
            first, events = sampler.sample()
            if writer is not None:
                writer.write(stream.header(first["time"], interval, sampler.availability()))

            def on_event(ev: dict[str, Any]) -> None:
                view.event(ev)
                if writer is not None:
                    writer.write(ev)
                if not live:
                    err.print(Text(f"iolens monitor: {ev['source']} {event_text(ev)}"), soft_wrap=True)

            def on_record(rec: dict[str, Any]) -> None:
                if commands is not None and procs is not None and "proc_io" in rec["data"]:
                    commands.update(rec["data"]["proc_io"], procs.info)
                latest["record"] = rec
                latest["n"] += 1
                if live:  # its per-command rates cost a little: only when drawn
                    view.update(rec, procs.info if procs is not None else None)
                if writer is not None:
                    writer.write(rec)
                if influx_out is not None or sender is not None:
                    lines = list(influx.lines(rec, host, ns.influx_pids, top(ns.influx_top)))
                    if sender is not None:
                        sender.put(lines)
                    if influx_out is not None:
                        influx_out.writelines(ln + "\n" for ln in lines)
                        influx_out.flush()
                if sink is not None:
                    sink(rec)

            for ev in events:
                on_event(ev)
            on_record(first)
            if server is not None:
                server.start()
                h, p = server.address
                err.print(
                    Text(f"iolens monitor: serving Prometheus metrics at http://{h}:{p}/metrics"),
                    soft_wrap=True,
                )
            remaining = None if duration is None else duration - interval
            try:
                if live:
                    with Live(view, console=Console(), auto_refresh=False) as display:

                        def on_record_live(rec: dict[str, Any]) -> None:
                            on_record(rec)
                            display.refresh()

                        display.refresh()
                        _loop(sampler, interval, remaining, on_record_live, on_event)
                else:
                    _loop(sampler, interval, remaining, on_record, on_event)
            except KeyboardInterrupt:
                pass
            if writer is not None:
                skipped = {c.name: c.skipped for c in sampler.collectors if c.skipped}
                end: dict[str, Any] = {"type": "end", "time": round(time.time(), 6), "samples": latest["n"]}
                if skipped:
                    end["skipped_lines"] = skipped
                writer.write(end)
    except OSError as exc:
        return _error(f"cannot write: {exc}", 1)
    finally:
        signal.signal(signal.SIGTERM, previous)
        if server is not None:
            server.close()
        if sender is not None:
            sender.close()
            st = sender.stats()
            if st["dropped_lines"]:
                err.print(
                    Text(
                        f"iolens monitor: --influx-url: {st['written_lines']} lines written, "
                        f"{st['dropped_lines']} lines of {st['dropped_batches']} samples not written"
                    ),
                    soft_wrap=True,
                )
    return 0


def _loop(sampler: Sampler, interval: float, remaining: float | None, on_record: Any, on_event: Any) -> None:
    """The samples after the first one: from one interval on, for `remaining` more seconds (or until
    stopped)."""
    if remaining is not None and remaining < -1e-9:
        return
    if sampler.wait(interval):
        return
    sampler.run(interval, on_record, on_event, duration=remaining)


def parse_command(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(prog=f"{PROG} parse", add_help=False)
    p.add_argument("file", nargs="?")
    p.add_argument("--kind")
    p.add_argument("-h", "--help", action="store_true")

    def fail(message: str) -> None:
        raise _ArgError(message)

    p.error = fail  # type: ignore[method-assign]
    try:
        ns = p.parse_args(list(argv))
    except _ArgError as exc:
        return _error(f"monitor parse: {exc}")
    if ns.help or ns.file is None:
        sys.stdout.write("usage: iolens monitor parse FILE [--kind KIND]\n")
        return 0 if ns.help else 2
    try:
        text = decode(sys.stdin.buffer.read() if ns.file == "-" else Path(ns.file).read_bytes())
    except OSError as exc:
        return _error(f"{ns.file}: cannot read: {exc.strerror}")
    try:
        result = parsefile.parse_text(text, ns.kind)
    except parsefile.UnknownKind as exc:
        return _error(f"{ns.file}: {exc}")
    result = {"file": ns.file, **result}
    sys.stdout.write(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    return 0
