"""fio's multi-client mode on the command line: `--client=HOST[,HOST...]`, `--client=FILE` and a job file per
client (`--client=h1 a.fio --client=h2 b.fio`), read as fio 3.33 reads them (docs/fio.md, "Multi-client
mode"); and `--server`, which iolens does not need.

Only the command line is read here: which clients, and which arguments each client's engine gets. Running
them is fio_client_run.py's part.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

# fio's default port: what fio's client_stats say when --client named none (iolens uses no port).
FIO_DEFAULT_PORT = 8765

# fio's address types in front of a host (`ip:host`, `ip6:::1`); `sock:` names a local socket, no host.
_TYPES = ("ip:", "ip4:", "ip6:")

SERVER_MESSAGE = (
    "--server: not needed: iolens starts one rank per client with mpirun or srun; run `iolens fio "
    '--client=HOSTS job.fio` (docs/fio.md, "Multi-client mode") instead of a server on each client'
)


class ClientError(Exception):
    """A --client that cannot run: `iolens: error: ...`, exit status 2, nothing started."""


@dataclass
class Client:
    host: str  # as typed (without fio's `ip:` prefix and `,port`): the JSON's hostname
    port: int  # the port typed, else fio's default (JSON only)
    jobfiles: list[str] = field(default_factory=list)  # this client's own job files


@dataclass
class ClientPlan:
    """The clients in order, and the arguments every client's engine gets besides its own job files."""

    clients: list[Client]
    common: list[str]  # options and the job files of clients without their own


def wants_server(args: Sequence[str]) -> bool:
    """`--server` or `--server=...` among fio's arguments (before a `--` that ends them)."""
    return any(a == "--server" or a.startswith("--server=") for a in args)


def _client_value(args: Sequence[str], i: int) -> tuple[str | None, int]:
    """The value of a --client option at args[i] (`--client=X` or `--client X`), and the next index; None
    when args[i] is not one."""
    arg = args[i]
    if arg.startswith("--client="):
        return arg[len("--client=") :], i + 1
    if arg == "--client":
        if i + 1 >= len(args):
            raise ClientError("--client: expects a host, a list of hosts or a file of hosts")
        return args[i + 1], i + 2
    return None, i


def parse_host(spec: str, where: str) -> tuple[str, int | None]:
    """One fio server address, `[ip:|ip4:|ip6:]HOST[,PORT]` → (HOST, PORT or None)."""
    if spec.startswith("sock:"):
        raise ClientError(f"{where}: {spec!r} is a local socket; iolens needs the clients' host names")
    for prefix in _TYPES:
        if spec.startswith(prefix):
            spec = spec[len(prefix) :]
            break
    host, _, port = spec.partition(",")
    if not host:
        raise ClientError(f"{where}: an empty host name")
    if port and not port.isdigit():
        raise ClientError(f"{where}: {port!r} is not a port number")
    return host, int(port) if port else None


def split_hosts(value: str, where: str) -> list[tuple[str, int | None]]:
    """`--client=`'s value that is not a file: one host, fio's `HOST,PORT`, or (iolens) several hosts
    separated by commas, each optionally followed by its port (`h1,h2`, `h1,8766,h2,8767`)."""
    if value.startswith("sock:"):
        return [parse_host(value, where)]
    out: list[tuple[str, int | None]] = []
    prefix = next((t for t in _TYPES if value.startswith(t)), "")  # fio's type applies to each host
    for part in value[len(prefix) :].split(","):
        if part.isdigit() and out and out[-1][1] is None:
            out[-1] = (out[-1][0], int(part))
        elif part.isdigit():
            raise ClientError(f"{where}: a port ({part}) without a host before it")
        else:
            out.append(parse_host(prefix + part, where))
    return out


def read_hosts_file(path: str) -> list[tuple[str, int | None]]:
    """A file of hosts as fio reads one: words separated by blanks or newlines, each one fio address, blank
    lines skipped. iolens also skips comment lines (`#` first on the line), which fio would take for a host
    named '#' and fail on."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ClientError(f"--client={path}: cannot read the file of hosts: {exc.strerror}") from None
    out: list[tuple[str, int | None]] = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip().startswith("#"):
            continue
        for word in line.split():
            out.append(parse_host(word, f"{path}:{n}"))
    if not out:
        raise ClientError(f"--client={path}: the file names no host")
    return out


def parse(args: Sequence[str]) -> ClientPlan | None:
    """The clients of fio's arguments, or None when no --client is given. As fio: a --client value that is
    a readable file is a file of hosts (and job files after it are for every client); otherwise the job
    files right after a --client are that client's own; other job files go to every client that has none of
    its own."""
    clients: list[Client] = []
    common: list[str] = []
    i = 0
    while i < len(args):
        value, nxt = _client_value(args, i)
        if value is None:
            common.append(args[i])
            i += 1
            continue
        if not value:
            raise ClientError("--client: expects a host, a list of hosts or a file of hosts")
        is_file = os.access(value, os.R_OK) and not os.path.isdir(value)
        hosts = read_hosts_file(value) if is_file else split_hosts(value, f"--client={value}")
        added = [Client(h, p if p is not None else FIO_DEFAULT_PORT) for h, p in hosts]
        clients.extend(added)
        i = nxt
        while not is_file and i < len(args) and not args[i].startswith("-"):
            for c in added:
                c.jobfiles.append(args[i])
            i += 1
    if not clients:
        return None
    return ClientPlan(clients, common)


def check_hosts(plan: ClientPlan) -> None:
    """Every host resolves (fio fails on one that does not, before any client starts)."""
    for c in plan.clients:
        try:
            socket.getaddrinfo(c.host, None)
        except (socket.gaierror, UnicodeError) as exc:
            raise ClientError(f"--client: unknown host {c.host!r} ({exc})") from None


def client_args(plan: ClientPlan, index: int) -> list[str]:
    """What client `index`'s engine gets: the common arguments, its own job files instead of the common
    ones when it has some, and its index (its instances and files are numbered as rank `index`'s)."""
    c = plan.clients[index]
    args = list(plan.common)
    if c.jobfiles:
        args = [a for a in args if a.startswith("-")] + c.jobfiles
    return [*args, f"--client-index={index}"]
