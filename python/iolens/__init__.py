"""iolens: HPC storage I/O benchmarks, profiling and monitoring in one tool."""

# Kept equal to native/VERSION (the packaging metadata reads that file); a test checks they agree.
__version__ = "0.1.0"
