"""`iolens site`: every job profiled on a center's cluster, and the batch system's records beside it
(docs/site.md).

- config: the site's settings file (log directory, database, partitions left out, time limits);
- scripts: the Slurm TaskProlog and Epilog, PBS hooks, and the slurm.conf lines (`iolens site install`);
- facts, sacct: what the batch system says of a job (its environment, scontrol, sacct) as store records;
- epilog: a job's end: its logs reduced and stored with its facts, within a hard time limit;
- sync: what the epilog left (deferred jobs) and the accounting records of all jobs (sacct);
- compare: a job's profile, accounting record and Lustre job_stats side by side, and where they disagree;
- command: the command line.

The store layer (iolens.store) holds every SQL statement; nothing here speaks SQL.
"""
