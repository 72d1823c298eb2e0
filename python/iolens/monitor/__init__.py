"""Monitoring: collectors of Linux and Lustre I/O statistics, the sampler, and what it gives out.

One module per source, each with a parser (text → tree of values, malformed lines counted) and a collector
(where to read it): diskstats, procio, mountstats, cgroupio, pressure, meminfo, loadavg, procstat, and the
lustre package (stats, jobstats, histogram parsers; params: where lctl finds parameters; collector). Then
common (the collector interface, rates with reset detection), sampler, stream (the JSON-lines format),
prometheus (exposition and HTTP server), influx (line protocol), view (live view), parsefile (`iolens monitor
parse`), attach (`--monitor` on benchmark runs: schedule, phases for the phase windows, node_wrap and nodes
for every node of an MPI run), report (its table) and command (`iolens monitor`).
docs/monitor.md describes the formats.
"""
