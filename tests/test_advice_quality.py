"""The advice-quality suite (tests/advice_suite.py, tests/data/advice_suite/): every case, a real program or a
small C, MPI or HDF5 code run under `iolens profile`, gets exactly the advice written down for it, with the
counts the program itself made; and the rules' precision and recall over the suite are at their floor.
`make test-advice` runs it (about a minute on 2 cores: it is not part of test-python)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from .advice_suite import Case, CaseSkipped, Outcome, load_cases, run_case, score, table
from .conftest import REPO, ProfileBuild, require_mpirun

CASES = load_cases()
# The floor of the overall precision and recall (docs/profile.md, "The advice-quality suite").
PRECISION_FLOOR = 1.0
RECALL_FLOOR = 1.0


class Suite:
    """Runs each case once, on demand; the precision test reuses what the case tests ran."""

    def __init__(self, root: Path, iolens: list[str], lib: Path) -> None:
        self.root, self.bin_dir = root / "work", root / "bin"
        self.root.mkdir()
        self.bin_dir.mkdir()
        self.iolens, self.lib = iolens, lib
        self.done: dict[str, Outcome | str] = {}

    def outcome(self, case: Case) -> Outcome:
        if case.name not in self.done:
            if case.ranks > 1:
                require_mpirun()
            try:
                self.done[case.name] = run_case(case, self.root, self.bin_dir, self.iolens, self.lib)
            except CaseSkipped as exc:
                self.done[case.name] = str(exc)
        got = self.done[case.name]
        if isinstance(got, str):
            pytest.skip(f"{case.name}: {got}")
        return got


@pytest.fixture(scope="module")
def suite(profile_build: ProfileBuild, iolens_bin: list[str]) -> Iterator[Suite]:
    # On /tmp: a disk file system here, as the cases assume (a sync costs time there; on a tmpfs it does not).
    import tempfile

    with tempfile.TemporaryDirectory(prefix="iolens-advice-suite-", dir="/tmp") as tmp:
        yield Suite(Path(tmp), iolens_bin, profile_build.lib)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_case_gets_its_right_advice(suite: Suite, case: Case) -> None:
    o = suite.outcome(case)
    assert o.fired == case.fires, (
        f"{case.name}: expected {sorted(case.fires)}, fired {sorted(o.fired)}:\n"
        + "\n".join(f"  {a['rule']}: {a['finding']}" for a in o.report["advice"])
    )
    # Never what the program does already.
    for a in o.report["advice"]:
        said = [p for p in case.never_says if p in a["finding"] + a["suggestion"]]
        assert said == [], f"{case.name}: {a['rule']} says {said}: the program does it already"
    # Every key of the advice's evidence and thresholds is documented (docs/profile.md, "The JSON report").
    documented = (REPO / "docs" / "profile.md").read_text()
    for a in o.report["advice"]:
        missing = sorted(k for k in (*a["evidence"], *a["thresholds"]) if f"`{k}`" not in documented)
        assert missing == [], f"{case.name}: {a['rule']}: keys not in docs/profile.md: {missing}"
    # The counts behind the advice are the program's own (its arguments, or what it printed it did).
    for rule, expected in o.expected_evidence().items():
        got = next(a["evidence"] for a in o.report["advice"] if a["rule"] == rule)
        for key, value in expected.items():
            assert got[key] == value, (
                f"{case.name}: {rule} evidence {key} = {got[key]}, the program made {value}"
            )


def test_precision_and_recall_over_the_suite(suite: Suite) -> None:
    outcomes = []
    for case in CASES:
        try:
            outcomes.append(suite.outcome(case))
        except pytest.skip.Exception:
            continue
    if len(outcomes) < 12:
        pytest.skip(f"only {len(outcomes)} of {len(CASES)} cases could run here")
    _, total = score(outcomes)
    if os.environ.get("IOLENS_ADVICE_TABLE"):
        print("\n" + table(outcomes))
    assert total.precision is not None and total.precision >= PRECISION_FLOOR, table(outcomes)
    assert total.recall is not None and total.recall >= RECALL_FLOOR, table(outcomes)
