/* hard_plain.c — the least code that does what IO500's two "hard" write phases do, as a peer for
 * bench/io500_hard.py: NPROC forked processes, a stonewall of SECONDS with wear-out (after the deadline every
 * process goes on to the largest count any process reached, as IOR's and mdtest's stoneWallingWearOut).
 *
 *   hard_plain ior-hard FILE NPROC SECONDS
 *       every process opens FILE (O_CREAT|O_WRONLY) and writes 47008-byte transfers with pwrite at
 *       offset (i * NPROC + rank) * 47008, i = 0, 1, ... (IOR -t 47008 -b 47008 -s N, shared file); fsync
 *       and close at the end (IOR -e). Prints {"bytes": B, "seconds": S}: S from the common start to the
 *       last process's close.
 *   hard_plain mdtest-hard DIR NPROC SECONDS
 *       every process creates DIR/file.R.I (open O_CREAT|O_EXCL|O_WRONLY, a 3901-byte write, close) in the
 *       one shared directory DIR, i = 0, 1, ...; then sync() (mdtest -Y). Prints {"items": N, "seconds": S}.
 *
 * No clock is read per operation beyond the one that checks the deadline; nothing is recorded. The start is
 * a pipe every child waits on, so all begin together. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { IOR_XFER = 47008, MD_BYTES = 3901, MAX_PROCS = 64 };

struct shared {
    uint64_t count[MAX_PROCS]; /* operations done by the deadline */
    uint64_t target;           /* the largest count: what every process goes on to */
    uint64_t end_ns[MAX_PROCS];
    volatile int phase;        /* 1 once the target is known */
    volatile int arrived;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
    perror(what);
    _exit(1);
}

/* One operation number i of process rank; returns 0 or exits. */
static void ior_op(int fd, const char *buf, int nproc, int rank, uint64_t i)
{
    off_t off = (off_t)((i * (uint64_t)nproc + (uint64_t)rank) * IOR_XFER);
    if (pwrite(fd, buf, IOR_XFER, off) != IOR_XFER) die("pwrite");
}

static void md_op(const char *dir, const char *buf, int rank, uint64_t i)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/file.%d.%llu", dir, rank, (unsigned long long)i);
    int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
    if (fd < 0) die("open");
    if (write(fd, buf, MD_BYTES) != MD_BYTES) die("write");
    if (close(fd) != 0) die("close");
}

static void child(struct shared *sh, int start_fd, int mode_ior, const char *target, int nproc, int rank,
                  double seconds)
{
    static char buf[IOR_XFER];
    memset(buf, 'a' + rank, sizeof buf);
    int fd = -1;
    if (mode_ior && (fd = open(target, O_CREAT | O_WRONLY, 0644)) < 0) die("open");
    char go;
    if (read(start_fd, &go, 1) < 0) die("read start");
    uint64_t t0 = now_ns(), deadline = t0 + (uint64_t)(seconds * 1e9), i = 0;
    while (now_ns() < deadline) {
        if (mode_ior) ior_op(fd, buf, nproc, rank, i);
        else md_op(target, buf, rank, i);
        i++;
    }
    sh->count[rank] = i;
    __atomic_add_fetch(&sh->arrived, 1, __ATOMIC_SEQ_CST);
    while (!sh->phase) usleep(100);
    for (; i < sh->target; i++) {
        if (mode_ior) ior_op(fd, buf, nproc, rank, i);
        else md_op(target, buf, rank, i);
    }
    if (mode_ior) {
        if (fsync(fd) != 0) die("fsync");
        if (close(fd) != 0) die("close");
    }
    sh->end_ns[rank] = now_ns();
    _exit(0);
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s ior-hard FILE NPROC SECONDS | mdtest-hard DIR NPROC SECONDS\n", argv[0]);
        return 2;
    }
    int mode_ior = strcmp(argv[1], "ior-hard") == 0;
    if (!mode_ior && strcmp(argv[1], "mdtest-hard") != 0) {
        fprintf(stderr, "unknown mode %s\n", argv[1]);
        return 2;
    }
    int nproc = atoi(argv[3]);
    double seconds = atof(argv[4]);
    if (nproc < 1 || nproc > MAX_PROCS || seconds <= 0) {
        fprintf(stderr, "NPROC must be 1..%d and SECONDS > 0\n", MAX_PROCS);
        return 2;
    }
    struct shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) die("mmap");
    memset(sh, 0, sizeof *sh);
    int start[2];
    if (pipe(start) != 0) die("pipe");
    for (int r = 0; r < nproc; r++) {
        pid_t pid = fork();
        if (pid < 0) die("fork");
        if (pid == 0) {
            close(start[1]);
            child(sh, start[0], mode_ior, argv[2], nproc, r, seconds);
        }
    }
    close(start[0]);
    usleep(100000); /* every child has opened its file and waits */
    uint64_t t0 = now_ns();
    close(start[1]); /* EOF: every child's read returns at once */
    while (__atomic_load_n(&sh->arrived, __ATOMIC_SEQ_CST) < nproc) usleep(100);
    uint64_t target = 0, total = 0;
    for (int r = 0; r < nproc; r++)
        if (sh->count[r] > target) target = sh->count[r];
    sh->target = target;
    __atomic_store_n(&sh->phase, 1, __ATOMIC_SEQ_CST);
    int failed = 0;
    for (int r = 0; r < nproc; r++) {
        int st;
        if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) failed = 1;
    }
    if (failed) return 1;
    uint64_t end = 0;
    for (int r = 0; r < nproc; r++)
        if (sh->end_ns[r] > end) end = sh->end_ns[r];
    if (!mode_ior) sync();
    uint64_t synced = now_ns();
    total = target * (uint64_t)nproc;
    double s = (double)((mode_ior ? end : synced) - t0) / 1e9;
    if (mode_ior) printf("{\"bytes\": %llu, \"seconds\": %.6f}\n", (unsigned long long)(total * IOR_XFER), s);
    else printf("{\"items\": %llu, \"seconds\": %.6f}\n", (unsigned long long)total, s);
    return 0;
}
