"""Profiles turned into runnable I/O kernels, run and checked against the original (docs/replay.md).

source.py reads a profile (iolens logs, a Darshan log, profile:ID) into each rank's use of each data file;
kernel.py makes the kernel (JSON) from it; plan.py turns a kernel into each rank's calls at a rank count
and scale; run.py runs them with the iolens-replay executor (native/main/iolens_replay.c) in a run directory
of its own; check.py compares two profiles' reports; command.py holds the options.
"""
