#!/bin/bash
# bench/io500_hard_insuite.sh — IO500's two hard write phases measured in the suite's own state: runs
# `iolens io500` (config-quick.ini's sizes, np 2, /dev/shm) with pause-dir set, and while it waits before
# ior-hard-write and before mdtest-hard-write, alternates the engine's command of that phase and
# bench/hard_plain.c (3 rounds, each run's output removed), then lets the suite run the phase itself.
# Run from the repository root after `make install`; prints one line per run and the suite's two figures.
set -eu
E=${IOLENS_BENCH:-build/native/iolens-bench}
PD=$(mktemp -d)
P=$PD/hard_plain
gcc -O2 -std=c11 -Wall -Wextra -o $P bench/hard_plain.c
X=$(mktemp -d /dev/shm/iolens-insuite.XXXX)
mkdir -p $X/pause
touch $X/pause/ior-hard-write $X/pause/mdtest-hard-write
cat > $X/io500.ini <<INI
[global]
datadir = $X/data
resultdir = $X/res
timestamp-resultdir = FALSE
drop-caches = FALSE
[debug]
stonewall-time = 5
pause-dir = $X/pause
[ior-easy]
transferSize = 2m
blockSize = 2048m
[mdtest-easy]
n = 1000000
[ior-hard]
segmentCount = 10000000
[mdtest-hard]
n = 1000000
INI
.venv/bin/iolens io500 $X/io500.ini --np 2 > $X/suite.log 2>&1 &
SUITE=$!
# whatever happens (an engine failing, Ctrl-C), the suite stops and its data goes
trap 'kill $SUITE 2>/dev/null; wait $SUITE 2>/dev/null; rm -rf "$X" "$PD"' EXIT
for phase in ior-hard-write mdtest-hard-write; do
  while ! grep -q "pausing before $phase" $X/suite.log; do
    kill -0 $SUITE 2>/dev/null || { cat $X/suite.log; exit 1; }
    sleep 0.5
  done
  sleep 1
  for r in 1 2 3; do
    for tool in iolens plain; do
      if [ $phase = ior-hard-write ]; then
        mkdir -p $X/w
        if [ $tool = iolens ]; then
          $E ior -C -Q 1 -g -G 1837313549 -k -e -o $X/w/file -t 47008 -b 47008 -s 1447985 -w -D 5 -a POSIX -O stoneWallingWearOut=1 --np 2 --json $X/w.json --quiet
          python3 -c "import json;d=json.load(open('$X/w.json'));print('$phase $tool', round(d['phases'][0]['bw_bytes_per_s']/2**30,3),'GiB/s')"
        else
          $P ior-hard $X/w/file 2 5 | python3 -c "import json,sys;j=json.load(sys.stdin);print('$phase $tool', round(j['bytes']/j['seconds']/2**30,3),'GiB/s')"
        fi
      else
        if [ $tool = iolens ]; then
          mkdir -p $X/w
          $E mdtest -n 1000000 -t -w 3901 -e 3901 -P -G 2723491343 -N 1 -F -d $X/w/md -C -Y -W 5 -a POSIX --np 2 --json $X/w.json --quiet
          python3 -c "import json;d=json.load(open('$X/w.json'));p=[p for p in d['phases'] if p['name']=='file-create'][0];print('$phase $tool', round(p['io500_rate_per_s']/1000,1),'kIOPS')"
        else
          mkdir -p $X/w/md
          $P mdtest-hard $X/w/md 2 5 | python3 -c "import json,sys;j=json.load(sys.stdin);print('$phase $tool', round(j['items']/j['seconds']/1000,1),'kIOPS')"
        fi
      fi
      rm -rf $X/w $X/w.json
    done
  done
  rm $X/pause/$phase
done
wait $SUITE
grep -E "hard-write" $X/suite.log | head -6
