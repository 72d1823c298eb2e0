"""`iolens fio --client=...`: fio's multi-client mode through mpirun or srun (docs/fio.md, "Multi-client
mode").

Each client is one rank placed on its host, and that rank is an engine of its own (`--comm local`, one
process with the client's `numjobs` instances) running the client's job files, as a fio server runs what
its client sent it: clients do not wait for each other between groups, and each writes its own result
document. The front end then reports them as fio's client mode does: each client's report after a
`<hostname>` line, then "All clients"; or fio's JSON with `client_stats`.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console

from iolens import atomic, fio_client_merge, fio_clients, fio_json, interrupt, launch, render, results
from iolens.engine import EngineNotFound, find_engine
from iolens.messages import PROG, error
from iolens.pipeline import FioOutput, RunInput, fio_emit, store_document


def _refusal(run: RunInput, plan: fio_clients.ClientPlan) -> str | None:
    """Why these options cannot go with --client, or None."""
    opts, n = run.opts, len(plan.clients)
    if opts.launcher == "local" and opts.launcher_given:
        return "--launcher local: --client runs one rank on each client's host: use --launcher mpirun or srun"
    if opts.np_given and opts.np != n:
        return f"--np {opts.np}: --client runs one rank per client ({n}); drop --np"
    if opts.nodes is not None:
        return "--nodes: --client places one rank on each client's host; drop --nodes"
    if run.output is not None and run.output.per_second_log is not None:
        return "--per-second-log: not with --client (each client's log is in its document, --json)"
    if run.monitor is not None:
        return "--monitor: not with --client"
    if launch.mpi_job() is not None:
        return "--client: this process is already a rank of an MPI job; run `iolens fio --client` outside it"
    hosts = [c.host for c in plan.clients]
    if opts.launcher == "srun" and len(set(hosts)) < len(hosts):
        return "--client: srun runs one task per node here, and a host is listed twice; use --launcher mpirun"
    return None


def run_clients(run: RunInput, plan: fio_clients.ClientPlan) -> int:
    """Check, launch, report; the exit status (2 and nothing started for bad input)."""
    problem = _refusal(run, plan)
    if problem is not None:
        return error(problem)
    try:
        fio_clients.check_hosts(plan)
        engine = find_engine()
    except fio_clients.ClientError as exc:
        return error(str(exc))
    except EngineNotFound as exc:
        return error(str(exc), 1)
    launcher = run.opts.launcher if run.opts.launcher_given else "mpirun"
    tmp_parent = os.environ.get("IOLENS_TMPDIR") or None
    if tmp_parent is not None and not os.path.isdir(tmp_parent):
        return error(f"IOLENS_TMPDIR={tmp_parent}: not a directory")
    with tempfile.TemporaryDirectory(prefix="iolens-", dir=tmp_parent) as tmp:
        docs = [Path(tmp) / f"client-{i}.json" for i in range(len(plan.clients))]
        commands = [
            [str(engine), "fio", *fio_clients.client_args(plan, i), "--json", str(doc), "--quiet"]
            for i, doc in enumerate(docs)
        ]
        # Every client's job files and options are checked here first: a refusal starts no launcher.
        for i, command in enumerate(commands):
            req = launch.RunRequest("fio", [a for a in command[2:] if a != "--check"], np=1)
            checked = launch.precheck(req, engine)
            if checked.returncode != 0:
                for line in checked.stderr_tail:
                    print(line, file=sys.stderr)
                for msg in checked.errors or [f"the engine refused client {i}'s options"]:
                    error(f"client {plan.clients[i].host}: {msg}")
                return checked.returncode if checked.returncode > 0 else 1
        if "--check" in plan.common:
            print(f"{PROG}: fio options ok for {len(plan.clients)} client(s)")
            return 0
        hosts = [c.host for c in plan.clients]
        ranks = [[*c, "--comm", "local", "--np", "1"] for c in commands]
        env: dict[str, str] = {}
        if launcher == "srun":
            hostfile = Path(tmp) / "hosts"
            hostfile.write_text("\n".join(hosts) + "\n", encoding="utf-8")
            env["SLURM_HOSTFILE"] = str(hostfile)
        flavor = launch.detect_mpi_flavor() if launcher == "mpirun" else "openmpi"
        try:
            cmd = launch.clients_command(
                launcher, hosts, ranks, run.opts.launcher_args, flavor, Path(tmp) / "multi-prog.conf"
            )
            outcome = launch.run_command(cmd, launcher, engine, env)
        except launch.LaunchError as exc:
            return error(str(exc))
        if not outcome.started:
            signum = interrupt.STOP.signum or 0
            error(f"stopped by {interrupt.signal_name(signum)} before the clients started: nothing done", 1)
            return interrupt.exit_status(signum)
        return _report(run, plan, docs, outcome, launcher)


def _report(
    run: RunInput, plan: fio_clients.ClientPlan, paths: list[Path], outcome: launch.RunOutcome, launcher: str
) -> int:
    raws: list[dict[str, Any]] = []
    parsed: list[results.FioDocument] = []
    for client, path in zip(plan.clients, paths, strict=True):
        if not path.exists():
            for msg in outcome.errors:
                error(msg, 1)
            return error(
                f"client {client.host}: no result document ({launcher} exited with "
                f"status {outcome.returncode}; if the clients are other nodes, set IOLENS_TMPDIR to a "
                "directory every node has)",
                1,
            )
        try:
            raw = results.load(path).raw
            raw["engine_command"] = raw.get("command", [])
            raw["command"] = list(run.typed)
            raw["fio_client"] = {"host": client.host, "port": client.port, "index": len(raws)}
            doc = results.parse(raw)
        except results.ResultError as exc:
            return error(f"client {client.host}: {exc}", 1)
        if not isinstance(doc, results.FioDocument):
            return error(f"client {client.host}: not a fio document", 1)
        raws.append(raw)
        parsed.append(doc)
    status = 0
    for client, doc in zip(plan.clients, parsed, strict=True):
        if doc.error is not None:
            error(f"client {client.host}: {doc.error.message}", 1)
            status = 1
        elif doc.verify_errors:
            status = 1
    if run.opts.json is not None:
        try:
            atomic.write_text(run.opts.json, json.dumps(raws, indent=2) + "\n")
        except OSError as exc:
            status = error(f"--json: cannot write {run.opts.json}: {exc.strerror}", 1)
    if not _write_output(plan, parsed, run.output or FioOutput()):
        status = 1
    if run.store is not None:
        for raw in raws:
            if not store_document(run.store, raw):
                status = 1
    if outcome.signal is not None:
        error(f"stopped by {interrupt.signal_name(outcome.signal)}", 1)
        return interrupt.exit_status(outcome.signal)
    if status == 0 and outcome.returncode != 0:
        status = outcome.returncode if outcome.returncode > 0 else 1
    return status


def client_stats_json(
    plan: fio_clients.ClientPlan, docs: list[results.FioDocument], plus: bool
) -> dict[str, Any]:
    """fio's JSON of a client-mode run: its top level with `client_stats` instead of `jobs`."""
    shaped = [fio_json.to_fio_json(d, plus=plus) for d in docs]
    last = shaped[-1]
    out: dict[str, Any] = {k: last[k] for k in ("fio version", "timestamp", "time")}
    out["global options"] = last.get("global options", {})
    out["client_stats"] = fio_client_merge.client_stats(
        [(s, c.host, c.port) for s, c in zip(shaped, plan.clients, strict=True)]
    )
    out["disk_util"] = []
    out["iolens"] = {
        "clients": [
            {"hostname": c.host, "port": c.port, "node": d.host.hostname, "status": s["iolens"]["status"],
             "error": s["iolens"]["error"]}
            for c, d, s in zip(plan.clients, docs, shaped, strict=True)
        ]
    }  # fmt: skip
    return out


def _write_output(plan: fio_clients.ClientPlan, docs: list[results.FioDocument], output: FioOutput) -> bool:
    """fio's client-mode report, or its JSON shape, on standard output or in --output."""

    def draw(console: Console) -> None:
        for doc in docs:
            console.print(f"<{doc.host.hostname}> ", highlight=False, markup=False)
            render.print_document(doc, console)
        entries = fio_client_merge.client_stats(
            [(fio_json.to_fio_json(d), c.host, c.port) for d, c in zip(docs, plan.clients, strict=True)]
        )
        if len(entries) > 1:
            block = "\n".join(fio_client_merge.all_clients_text(entries[-1]))
            console.print(block, highlight=False, markup=False)

    return fio_emit(output, draw, lambda plus: client_stats_json(plan, docs, plus))
