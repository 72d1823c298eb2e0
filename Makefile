# iolens: build, test and try it.  `make test` is what CI runs (through .ci/run); `make run` is a short demo (iolens io500 --quick).
SHELL := /bin/bash
.DEFAULT_GOAL := install

PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
NATIVE_BUILD := build/native
NATIVE_NOMPI_BUILD := build/native-nompi
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

# The installed package is rebuilt only when something that goes into it changed.
NATIVE_SRC := $(shell find native -type f 2>/dev/null)
PY_SRC := $(shell find python -type f \( -name '*.py' -o -name '*.html' -o -name '*.js' -o -name '*.css' \) 2>/dev/null)
BENCH_PY := $(wildcard bench/*.py)
PIP := $(VPY) -m pip --disable-pip-version-check

.PHONY: install install-test native test-native lint test-python test-web test-faults test-advice test-replay test-cluster test run clean

$(VENV)/.created:
	$(PYTHON) -m venv $(VENV)
	touch $@

# Not editable: the installed iolens must carry the engine binary that CMake installs into the package.
# `make run` needs only the runtime dependencies; the test extras (pytest, hypothesis, playwright, darshan,
# psycopg, ...) come with `make test`.
$(VENV)/.installed: $(VENV)/.created pyproject.toml README.md $(NATIVE_SRC) $(PY_SRC)
	$(PIP) install .
	touch $@

# The test extras alone (read from pyproject.toml), so a change to the sources does not reinstall them.
$(VENV)/.test-installed: $(VENV)/.created pyproject.toml
	$(VPY) -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["test"]))' > $(VENV)/test-requirements.txt
	$(PIP) install -r $(VENV)/test-requirements.txt
	touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed $(VENV)/.test-installed

# The C engine and its unit tests, warnings as errors, in a build tree of its own; with the profiler runtime's
# test programs (tests/test_profile_runtime.py runs them from here) and its ThreadSanitizer thread test.
# A second tree builds the engine and its C unit tests without MPI (local mode only, as on a machine without
# mpicc) and without the profiler, which the first tree already covers: that build must keep working too.
native:
	cmake -S native -B $(NATIVE_BUILD) -DIOLENS_WERROR=ON -DIOLENS_TESTS=ON -DIOLENS_PROFILE_TSAN=ON
	cmake --build $(NATIVE_BUILD) -j $(JOBS)
	cmake -S native -B $(NATIVE_NOMPI_BUILD) -DIOLENS_WERROR=ON -DIOLENS_TESTS=ON -DIOLENS_WITH_MPI=OFF \
		-DIOLENS_PROFILER=OFF
	cmake --build $(NATIVE_NOMPI_BUILD) -j $(JOBS)

test-native: native
	cd $(NATIVE_BUILD) && ctest --output-on-failure
	cd $(NATIVE_NOMPI_BUILD) && ctest --output-on-failure
	$(NATIVE_NOMPI_BUILD)/iolens-bench --version | grep -q 'mpi=no'

lint: install-test
	$(VENV)/bin/ruff check python tests $(if $(BENCH_PY),bench)

test-python: install-test
	$(VENV)/bin/pytest tests -q --ignore=tests/faults --ignore=tests/test_advice_quality.py \
		--ignore=tests/test_replay_fidelity.py \
		--ignore-glob='tests/test_web_*.py' --ignore-glob='tests/test_cluster_*.py'

# The web portal (docs/web.md): real `iolens web` servers on SQLite and on a private PostgreSQL server, and
# its pages in Debian's Chromium driven by Playwright (screenshots kept in build/test-artifacts/web/).
test-web: install-test
	$(VENV)/bin/pytest tests/test_web_*.py -q

# The fault-injection suite (docs/reliability.md): signals at seeded random moments, full file systems,
# permission errors mid-run, and Hypothesis fuzzing of every parser of outside data. Some cases mount a small
# tmpfs, which needs root (CI is root); they skip otherwise.
test-faults: install-test
	$(VENV)/bin/pytest tests/faults -q

# The advice-quality suite (docs/profile.md): real programs and small MPI and HDF5 codes run under the
# profiler, each with its right advice written down; prints the rules' precision and recall. About a minute.
test-advice: install-test native
	IOLENS_ADVICE_TABLE=1 $(VENV)/bin/pytest tests/test_advice_quality.py -q -s

# Replay fidelity (docs/replay.md): 14 cases of the advice-quality suite profiled, their kernels made, run
# under the profiler and compared with the originals. Under a minute.
test-replay: install-test native
	$(VENV)/bin/pytest tests/test_replay_fidelity.py -q

# A real Slurm cluster on this machine (docs/site.md "Testing on a real cluster (CI)"): munged, a private
# MariaDB, slurmdbd, slurmctld and two slurmd nodes, each host in network, UTS and mount namespaces of its own;
# MPI jobs, iolens ior/mdtest/io500 under srun and mpirun across the nodes, a node lost mid-run, and jobs under
# `iolens site`'s TaskProlog and Epilog. Needs root and Debian's slurm-wlm, slurmdbd, munge and mariadb-server
# (skips without them); about 4 minutes.
test-cluster: install-test
	$(VENV)/bin/pytest tests/test_cluster_*.py -q

test: test-native lint test-python test-web test-faults test-advice test-replay test-cluster

# The IO500 suite in --quick mode (2 s stonewall, small sizes: not a valid IO500 run) with 2 local processes,
# on a scratch directory in /tmp: prints the phase table and the score; the result directory is kept (its path
# is printed), the data directory is removed. The run is stored in the statistics database ($IOLENS_DB, else the
# default file ~/.local/share/iolens/iolens.db), which `iolens web` then shows.
run: install
	@scratch=$$(mktemp -d /tmp/iolens-run.XXXXXX); \
	printf '[global]\ndatadir = %s/data\nresultdir = %s/results\ntimestamp-resultdir = FALSE\n' \
		"$$scratch" "$$scratch" > "$$scratch/io500.ini"; \
	echo "scratch directory: $$scratch (config: $$scratch/io500.ini)"; \
	db_opt=(); if [[ -z "$${IOLENS_DB:-}" ]]; then \
		db="$${XDG_DATA_HOME:-$$HOME/.local/share}/iolens/iolens.db"; mkdir -p "$$(dirname "$$db")"; db_opt=(--db "$$db"); fi; \
	$(VENV)/bin/iolens io500 "$$scratch/io500.ini" --quick --np 2 "$${db_opt[@]}"; status=$$?; \
	rm -rf "$$scratch/data"; \
	echo "results kept in $$scratch/results (rm -r $$scratch when done)"; \
	exit $$status

clean:
	rm -rf build dist .venv .pytest_cache .ruff_cache .mypy_cache python/iolens/_native *.egg-info python/*.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
