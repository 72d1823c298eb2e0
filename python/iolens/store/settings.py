"""Which database, which system: from the command line, the environment, or the config file.

- the database: `--db PATH_OR_URL`, else $IOLENS_DB, else `db` in the [store] section of the config file;
  the `iolens db`, `compare` and `report` commands fall back on the default file
  ($XDG_DATA_HOME/iolens/iolens.db, i.e. ~/.local/share/iolens/iolens.db). Benchmark, profile and monitor
  commands store their results only when a database is configured one of those three ways, and not with
  `--no-store` (or `store = no` in the config file).
- the system runs are tagged with: `--system NAME`, else $IOLENS_SYSTEM, else `system` in [store].

The config file is $IOLENS_CONFIG, else $XDG_CONFIG_HOME/iolens/iolens.ini (~/.config/iolens/iolens.ini):

    [store]
    db = postgresql://iolens@dbhost/iolens
    system = lustre-prod
"""

from __future__ import annotations

import configparser
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from iolens.store.db import default_location

ENV_DB = "IOLENS_DB"
ENV_SYSTEM = "IOLENS_SYSTEM"
ENV_CONFIG = "IOLENS_CONFIG"

# The options every command takes (taken out of a benchmark's arguments before the engine sees them).
VALUED = ("--db", "--system")
FLAGS = ("--no-store",)


def store_help(what: str, tagged: bool = True) -> str:
    """The store options' lines for a command's --help; `what` says what the command stores, `tagged`
    whether it is tagged with a system (monitoring samples are labelled by host instead)."""
    system = (
        "tag what is stored with this system (else $IOLENS_SYSTEM, else `system` in [store])"
        if tagged
        else "accepted; samples are labelled with their host, not a system"
    )
    return f"""
statistics database (docs/db.md), when one is configured: {what}
  --db PATH_OR_URL       a SQLite file or postgresql://user@host/dbname (else $IOLENS_DB, else `db` in the
                         config file's [store] section; none of them: nothing is stored)
  --system NAME          {system}
  --no-store             store nothing, even with a database configured
"""


class SettingsError(ValueError):
    """A bad store option or config file; the message is for the user."""


@dataclass(frozen=True)
class StoreOptions:
    """The store options of one command line, before the environment and config file are consulted."""

    db: str | None = None
    system: str | None = None
    no_store: bool = False


def take_options(
    argv: Sequence[str], leading_valued: Sequence[str] | None = None
) -> tuple[StoreOptions, list[str]]:
    """Take --db, --system and --no-store out of argv (up to a `--`); the rest keeps its order.

    With leading_valued (the command's own valued options), only the options before the first positional
    argument are looked at: what follows is another program's command line (`iolens profile`)."""
    db = system = None
    no_store = False
    rest: list[str] = []
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest.extend(args[i:])
            break
        if leading_valued is not None and not arg.startswith("-"):
            rest.extend(args[i:])
            break
        if leading_valued is not None and arg in leading_valued and i + 1 < len(args):
            rest.extend(args[i : i + 2])
            i += 2
            continue
        name, eq, inline = arg.partition("=")
        if name in VALUED:
            if eq:
                value = inline
            elif i + 1 < len(args):
                i += 1
                value = args[i]
            else:
                raise SettingsError(f"{name}: expects a value")
            if not value:
                raise SettingsError(f"{name}: expects a value")
            if name == "--db":
                db = value
            else:
                system = value
        elif arg in FLAGS:
            no_store = True
        else:
            rest.append(arg)
        i += 1
    return StoreOptions(db, system, no_store), rest


def config_file() -> Path:
    env = os.environ.get(ENV_CONFIG)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "iolens" / "iolens.ini"


def _config_values() -> dict[str, str]:
    path = config_file()
    named = bool(os.environ.get(ENV_CONFIG))
    try:
        text = path.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        if named:
            raise SettingsError(f"{ENV_CONFIG}={path}: no such file") from None
        return {}
    except PermissionError:
        # The default file under a home this user may not read (a command run through setpriv or sudo -u
        # keeps HOME): as if there were none. A file named by $IOLENS_CONFIG must be readable.
        if named:
            raise SettingsError(f"{ENV_CONFIG}={path}: permission denied") from None
        return {}
    except UnicodeDecodeError as exc:
        raise SettingsError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise SettingsError(f"{path}: cannot read it: {exc.strerror}") from None
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text, source=str(path))
    except configparser.Error as exc:
        raise SettingsError(f"{path}: {exc}") from None
    if not parser.has_section("store"):
        return {}
    values = dict(parser.items("store"))
    unknown = sorted(set(values) - {"db", "system", "store"})
    if unknown:
        raise SettingsError(
            f"{path}: [store] has unknown key(s): {', '.join(unknown)} (known: db, system, store)"
        )
    return values


@dataclass(frozen=True)
class Resolved:
    url: str | None  # None: no database configured
    system: str | None
    origin: str  # where the url came from, for messages


def resolve(opts: StoreOptions, fallback_to_default: bool) -> Resolved:
    """The database and system for a command. With fallback_to_default (the db/report commands), a
    command with no configured database uses the default file."""
    cfg = _config_values()
    url, origin = None, ""
    if opts.db:
        url, origin = opts.db, "--db"
    elif os.environ.get(ENV_DB):
        url, origin = os.environ[ENV_DB], ENV_DB
    elif cfg.get("db"):
        url, origin = cfg["db"], str(config_file())
    elif fallback_to_default:
        url, origin = str(default_location()), "default"
    system = opts.system or os.environ.get(ENV_SYSTEM) or cfg.get("system") or None
    return Resolved(url, system, origin)


def autostore_target(opts: StoreOptions, check: bool = True) -> Resolved | None:
    """Where a benchmark, profile or monitor command stores its result; None when it does not store.

    With `check` (what the commands do before they run anything), the database must be reachable and
    writable and be an iolens database or an empty or new file (store.preflight): else SettingsError, so
    that the command stops with a usage error before any I/O. The store itself checks again when it
    writes (check=False then)."""
    if opts.no_store:
        return None
    cfg = _config_values()
    flag = cfg.get("store", "yes").strip().lower()
    if flag not in ("yes", "no", "true", "false", "1", "0", "on", "off"):
        raise SettingsError(f"{config_file()}: [store] store = {flag!r}: expected yes or no")
    if flag in ("no", "false", "0", "off") and not opts.db:
        return None
    r = resolve(opts, fallback_to_default=False)
    if not r.url:
        return None
    if check:
        from iolens.store.db import StoreError
        from iolens.store.preflight import check_writable

        try:
            check_writable(r.url)
        except StoreError as exc:
            where = {"--db": "--db", ENV_DB: ENV_DB}.get(r.origin, f"{r.origin}: [store] db")
            raise SettingsError(f"{where}: {exc} (the result could not be stored: nothing was run)") from None
    return r
