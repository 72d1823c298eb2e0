"""The store's questions as pandas data frames, for notebooks and scripts.

    from iolens.store import api
    db = api.open_store("results.db")            # or "postgresql://…", or None for the configured one
    api.runs(db, system="lustre-prod", since="30d")
    api.trend(db, "ior-easy-write", system="lustre-prod")
    api.regressions(db)
    api.compare(db, [41, 57]), api.compare_differences(db, [41, 57])

compare() and compare_differences() raise queries.MixedCacheModes for runs made in different page-cache modes
(their read figures are not like-for-like) unless allow_mixed_cache=True, which adds the `mixed_cache`
column (True for the runs whose mode is not the first run's).

Times are pandas Timestamps in UTC; values keep the units of the `unit` column.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from iolens.store import queries
from iolens.store.settings import StoreOptions, resolve
from iolens.store.store import Store

if TYPE_CHECKING:
    import pandas as pd

TIME_COLUMNS = ("started_at", "ended_at", "imported_at", "t")


def open_store(url: str | None = None) -> Store:
    """The store at url (a SQLite path or a postgresql:// URL); None: the configured or default one."""
    resolved = resolve(StoreOptions(db=url), fallback_to_default=True)
    assert resolved.url is not None
    return Store.open(resolved.url, create=False)


def _frame(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> pd.DataFrame:
    import pandas as pd

    df = pd.DataFrame(list(rows), columns=list(columns) if columns is not None and not rows else None)
    for col in TIME_COLUMNS:
        if col in df.columns:
            df[col] = pd.to_datetime(df[col], unit="s", utc=True)
    return df


def _since(since: str | float | None) -> float | None:
    if since is None or isinstance(since, int | float):
        return since
    return queries.parse_since(since)


def runs(
    store: Store, system: str | None = None, tool: str | None = None, since: str | float | None = None
) -> pd.DataFrame:
    """One row per run, newest first."""
    rows = queries.list_runs(store.db, system, tool, _since(since))
    return _frame(rows, [c.split(" AS ")[-1] for c in queries.RUN_COLUMNS.split(", ")]).set_index("id")


def phases(store: Store, run_ids: Sequence[int]) -> pd.DataFrame:
    """Every phase row of the runs (one per iteration)."""
    return _frame(queries.phases_of(store.db, run_ids), queries.PHASE_COLUMNS.split(", "))


def compare(store: Store, run_ids: Sequence[int], allow_mixed_cache: bool = False) -> pd.DataFrame:
    """Phase by phase: each run's value (mean of iterations) and its ratio to the first run's, with the run's
    cache mode and whether it differs from the others' (`mixed_cache`)."""
    c = queries.compare(store.db, run_ids, allow_mixed_cache)
    rows = []
    for name, figs in c.phases.items():
        base = figs[0].value if figs and figs[0] is not None else None
        for run, fig, mixed in zip(c.runs, figs, c.mixed_cache, strict=True):
            if fig is None:
                continue
            rows.append(
                {
                    "phase": name,
                    "run_id": run["id"],
                    "value": fig.value,
                    "unit": fig.unit,
                    "ratio": fig.value / base if base and fig.value is not None else None,
                    "valid": fig.valid,
                    **{k: fig.percentiles.get(k) for k in queries.PERCENTILES},
                    "cache_mode": run["cache_mode"],
                    "mixed_cache": mixed,
                }
            )
    cols = ["phase", "run_id", "value", "unit", "ratio", "valid", *queries.PERCENTILES]
    return _frame(rows, [*cols, "cache_mode", "mixed_cache"])


def compare_differences(
    store: Store, run_ids: Sequence[int], allow_mixed_cache: bool = False
) -> pd.DataFrame:
    """What differed between the runs compare() compares: one row per run field (system, host, ranks,
    version, command…: `what` "run") or configuration key (dotted: `what` "config") whose values are not all
    the same, indexed by (what, key), with one column per run id holding that run's value (None: unset).
    Empty when the runs had the same fields and configuration."""
    import pandas as pd

    c = queries.compare(store.db, run_ids, allow_mixed_cache)
    ids = [int(r["id"]) for r in c.runs]
    rows = [("run", k, *vals) for k, vals in c.run_differences.items()]
    rows += [("config", k, *vals) for k, vals in c.config_differences.items()]
    df = pd.DataFrame(rows, columns=["what", "key", *ids], dtype=object)
    return df.set_index(["what", "key"])


def trend(
    store: Store,
    phase: str,
    system: str | None = None,
    tool: str | None = None,
    config_hash: str | None = None,
) -> pd.DataFrame:
    """The phase's value per run over time (oldest first)."""
    rows = queries.trend(store.db, phase, system, tool, config_hash)
    cols = ["run_id", "started_at", "value", "unit", "config_hash", "tool", "valid", "cache_mode"]
    return _frame(rows, cols)


def regressions(store: Store, **kwargs: Any) -> pd.DataFrame:
    """Every (system, tool, config hash, phase): the latest run against its history; `regression` flags
    the drops (queries.regressions for the options)."""
    checks = queries.regressions(store.db, **kwargs)
    return _frame([asdict(c) for c in checks], list(queries.RegressionCheck.__dataclass_fields__))


def jobs(
    store: Store,
    by: str = "bytes",
    limit: int | None = None,
    system: str | None = None,
    since: str | float | None = None,
) -> pd.DataFrame:
    """Profiles ranked by bytes, metadata share of I/O time ("meta") or small-I/O count ("small"); `since`
    keeps the jobs that started since then (an age "7d", a date "2026-05-01", or epoch seconds)."""
    rows = queries.jobs(store.db, by, limit, system, _since(since))
    cols = [c.split(" AS ")[-1] for c in queries.PROFILE_COLUMNS.split(", ")] + ["meta_share"]
    return _frame(rows, cols).set_index("id")


def profile_files(store: Store, profile_id: int) -> pd.DataFrame:
    return _frame(queries.profile_files(store.db, profile_id))


def samples(
    store: Store,
    start: float,
    end: float,
    hosts: Sequence[str] | None = None,
    metrics: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Monitoring samples in [start, end] (epoch seconds), narrow: t, host, source, target, metric, value."""
    import pandas as pd

    rows = queries.samples(store.db, start, end, hosts, metrics)
    df = pd.DataFrame(rows, columns=["t", "host", "source", "target", "metric", "value", "unit"])
    df["t"] = pd.to_datetime(df["t"], unit="s", utc=True)
    return df


def run_samples(store: Store, run_id: int, margin_s: float = 10.0) -> pd.DataFrame:
    """The samples taken while a run ran."""
    run = queries.get_run(store.db, run_id)
    window = queries.run_window(run, margin_s)
    if window is None:
        return samples(store, 0, -1)
    return samples(store, *window)
