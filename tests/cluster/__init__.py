"""A real Slurm cluster on this one machine, for the tests (docs/site.md "Testing on a real cluster (CI)").

netns.py builds the network (a bridge and one network namespace per host), daemons.py starts and stops the
processes inside those hosts, slurm.py writes the configuration and brings the whole cluster up and down, and
fixtures.py offers it to pytest as the session fixture `slurm_cluster`.
"""
