"""An mpi4py program: each rank writes N blocks of 4 KiB collectively (File.Write_at_all, interleaved by
rank) and one block independently (File.Write_at) to one file, syncs, closes, then reads its own blocks back
collectively (File.Read_at_all), and prints what it did as one TALLY line."""

import json
import sys

from mpi4py import MPI

N = 12
BLOCK = 4096

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
path = sys.argv[1]
fh = MPI.File.Open(comm, path, MPI.MODE_CREATE | MPI.MODE_RDWR)
buf = bytearray([65 + rank]) * BLOCK
for i in range(N):
    fh.Write_at_all((i * size + rank) * BLOCK, buf)
fh.Write_at((N * size + rank) * BLOCK, buf)
fh.Sync()
back = bytearray(BLOCK)
for i in range(N):
    fh.Read_at_all((i * size + rank) * BLOCK, back)
    assert back == buf
fh.Close()
tally = {
    "coll_writes": N,
    "indep_writes": 1,
    "coll_reads": N,
    "bytes_written": (N + 1) * BLOCK,
    "bytes_read": N * BLOCK,
    "syncs": 1,
}
print(f"TALLY {rank} {json.dumps(tally)}", flush=True)
