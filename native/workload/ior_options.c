/* ior_options.c — every option of the ior workload, declared once (IOR's flags, IOR's -O names as aliases). */
#include <stddef.h>
#include "ior.h"
#include "../backend/backend.h"

#define F(field) offsetof(struct ior_cfg, field)
#define NOLIM 0, 0

const struct iol_option ior_options[] = {
    {'a', "api", NULL, IOL_OPT_STRING, F(api), "posix", "storage backend, one of" IOL_BACKEND_NAMES_TEXT " (psync = posix, aio = libaio, dummy = null; null does no I/O; see docs/backends.md)", NOLIM},
    {'F', "file-per-proc", "filePerProc", IOL_OPT_FLAG, F(fpp), "0", "one file per rank (N-N) instead of one shared file", NOLIM},
    {'t', "transfer-size", "transferSize", IOL_OPT_SIZE, F(xfer), "256k", "bytes per I/O call (a multiple of 8)", 8, 1073741824.0},
    {'b', "block-size", "blockSize", IOL_OPT_SIZE, F(block), "1m", "contiguous bytes per rank per segment (a multiple of -t)", 8, 0},
    {'s', "segment-count", "segmentCount", IOL_OPT_INT, F(segments), "1", "number of segments (-1: as many as the existing file holds, for reads)", -1, 1e15},
    {'i', "repetitions", "repetitions", IOL_OPT_INT, F(reps), "1", "number of iterations of the whole test", 1, 1e9},
    {'w', "write-file", "writeFile", IOL_OPT_FLAG, F(write), "0", "write the file(s)", NOLIM},
    {'r', "read-file", "readFile", IOL_OPT_FLAG, F(read), "0", "read the file(s)", NOLIM},
    {'W', "check-write", "checkWrite", IOL_OPT_FLAG, F(check_write), "0", "read back and verify every byte after writing", NOLIM},
    {'R', "check-read", "checkRead", IOL_OPT_FLAG, F(check_read), "0", "verify every byte read against the pattern (implies -r)", NOLIM},
    {'G', "set-time-stamp-signature", "setTimeStampSignature,seed", IOL_OPT_INT, F(seed), "0", "seed of the data pattern and of -z offsets", -9.2e18, 9.2e18},
    {'k', "keep-file", "keepFile", IOL_OPT_FLAG, F(keep), "0", "keep the file(s) at the end", NOLIM},
    {'e', "fsync", "fsync", IOL_OPT_FLAG, F(fsync), "0", "fsync when closing after a write (timed in close)", NOLIM},
    {'Y', "fsync-per-write", "fsyncPerWrite", IOL_OPT_FLAG, F(fsync_per_write), "0", "fsync after every write", NOLIM},
    {'z', "random-offset", "randomOffset", IOL_OPT_COUNT, F(random), "0", "random order: -z within each block, -z -z across all of a rank's blocks", NOLIM},
    {'C', "reorder-tasks", "reorderTasks,reorderTasksConstant", IOL_OPT_FLAG, F(reorder), "0", "read the data another node wrote (rank + Q*tasks-per-node)", NOLIM},
    {'Q', "task-per-node-offset", "taskPerNodeOffset", IOL_OPT_INT, F(task_offset), "1", "node offset used by -C", 1, 1e9},
    {'g', "intra-test-barriers", "intraTestBarriers", IOL_OPT_FLAG, F(intra_barriers), "0", "barrier between open, transfer and close", NOLIM},
    {'D', "deadline-for-stonewalling", "deadlineForStonewalling,stoneWallingTime", IOL_OPT_INT, F(deadline_s), "0", "stop each phase after this many seconds (0 = off)", 0, 1e9},
    {'d', "inter-test-delay", "interTestDelay", IOL_OPT_INT, F(delay_s), "0", "seconds to wait before each write and read phase (as IOR)", 0, 1e6},
    {'m', "multi-file", "multiFile", IOL_OPT_FLAG, F(multi_file), "0", "a new file name for every iteration", NOLIM},
    {'u', "unique-dir", "uniqueDir", IOL_OPT_FLAG, F(unique_dir), "0", "with -F, each rank's file in its own directory", NOLIM},
    {'o', "test-file", "testFile", IOL_OPT_STRING, F(path), "testFile", "path of the test file (ranks add .NNNNNNNN with -F)", NOLIM},
    {'E', "use-existing-test-file", "useExistingTestFile", IOL_OPT_FLAG, F(use_existing), "0", "write into existing file(s), even ones iolens did not create", NOLIM},
    {0, "stone-walling-wear-out", "stoneWallingWearOut", IOL_OPT_FLAG, F(wear_out), "0", "after the deadline, every rank continues to the largest count any rank reached", NOLIM},
    {0, "stone-walling-status-file", "stoneWallingStatusFile", IOL_OPT_STRING, F(status_file), "", "file that records the transfer count of a stonewalled write for later reads", NOLIM},
    {0, "stone-walling-wear-out-iterations", "stoneWallingWearOutIterations", IOL_OPT_INT, F(wear_out_iterations), "0", "transfers per rank to do: for a read, the count a stonewalled write reached (0 = all, or the status file's count)", 0, 1e15},
    {0, "posix.odirect", "direct,posix.odirect,useO_DIRECT", IOL_OPT_FLAG, F(direct), "0", "open with O_DIRECT (bypass the page cache); also --direct", NOLIM},
    {0, "queue-depth", "queueDepth,iodepth", IOL_OPT_INT, F(queue_depth), "1", "transfers in flight per rank", 1, 4096},
    {0, "submit-batch", "submitBatch,iodepth_batch_submit", IOL_OPT_INT, F(submit_batch), "1", "transfers handed to an asynchronous backend per submit call, as fio's iodepth_batch_submit (0 = every free slot at once)", 0, 4096},
    {0, "summary-format", "summaryFormat", IOL_OPT_STRING, F(summary_format), "default", "default, or JSON to print the result document", NOLIM},
    {0, "summary-file", "summaryFile", IOL_OPT_STRING, F(summary_file), "", "write the summary (or JSON document) to this file", NOLIM},
    {0, "keep-cache", "keepCache", IOL_OPT_FLAG, F(keep_cache), "0", "do not evict written files from the page cache before reading", NOLIM},
    {0, "tasks-per-node", "tasksPerNode", IOL_OPT_INT, F(tasks_per_node), "0", "ranks per node used by -C (0 = counted from host names)", 0, 1e9},
    {0, "remove-only", "removeOnly", IOL_OPT_FLAG, F(remove_only), "0", "only remove the files an earlier -k run kept (those iolens created)", NOLIM},
    {0, "mmap.madv_dont_need", "mmap.madv_dont_need", IOL_OPT_FLAG, F(mmap_madv_dont_need), "0", "-a MMAP: posix_madvise(DONTNEED) over the mapping at open, as IOR", NOLIM},
    {0, "mmap.madv_pattern", "mmap.madv_pattern", IOL_OPT_FLAG, F(mmap_madv_pattern), "0", "-a MMAP: posix_madvise SEQUENTIAL (RANDOM with -z) over the mapping at open, as IOR", NOLIM},
    {'O', "directives", NULL, IOL_OPT_DIRECTIVES, 0, NULL, "IOR directives key=value[,key=value] (e.g. stoneWallingWearOut=1)", NOLIM},
    {0},
};
