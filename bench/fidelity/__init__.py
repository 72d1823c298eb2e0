"""bench/fidelity: the same job through iolens and its peer (fio, the official IOR and mdtest) on the same
files, on a disk and on tmpfs, with what reached the block device, what stayed in the page cache and the
rate. The rule: the device work agrees (rule.py), and only then is the rate compared. See docs/fidelity.md.

    python3 bench/fidelity                 # ~20 min: writes bench/results/fidelity.txt and .json
    python3 bench/fidelity --quick         # 2 runs, sizes / 16: prints only
    python3 bench/fidelity --cases 'randread-*' --fs disk --runs 3
"""
