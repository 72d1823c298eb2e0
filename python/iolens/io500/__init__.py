"""IO500 support: read IO500 configs as the official app does, score runs, and read, write and verify the
app's result files (result.txt, result_summary.txt, config.ini) — pure Python, no benchmark execution.

Modules: spec (sections, options and phases of the app), ini (the INI reader), hashes (config and score
hashes), score (phase order, units, scores, validity), results_files (the result files and io500-verify).
"""

from iolens.io500.ini import IniError, Io500Config, load_config, parse_config
from iolens.io500.results_files import VerifyReport, verify
from iolens.io500.score import Evaluation, PhaseOutcome, RunRules, Scores, compute_scores, evaluate

__all__ = [
    "Evaluation",
    "IniError",
    "Io500Config",
    "PhaseOutcome",
    "RunRules",
    "Scores",
    "VerifyReport",
    "compute_scores",
    "evaluate",
    "load_config",
    "parse_config",
    "verify",
]
