/* comm_local.c — the "local" communicator: np forked processes on this node.
 *
 * Before forking, the parent maps one MAP_SHARED|MAP_ANONYMOUS region that every child inherits:
 *
 *     [ header: barrier words, abort/departure flags ][ bank 0: np slots ][ bank 1: np slots ]
 *
 * Each collective moves its data through the slots in chunks: "write my slot (or the root writes);
 * barrier; read the slots I need". The two banks alternate chunk by chunk (and collective by collective:
 * every rank flips its bank in the same order because every rank calls the same collectives), which is
 * what lets one barrier per chunk suffice: before a rank overwrites bank b it has passed the barrier of
 * the chunk that used the other bank, and every rank entered that barrier only after it had finished
 * reading bank b.
 *
 * The barrier is our own (a generation counter on a futex) rather than a process-shared pthread barrier,
 * because a pthread barrier cannot be broken: a rank that returns early (an error on that rank) or aborts
 * would leave its peers asleep in it forever. Ours returns -1 to everyone once a rank has left; after an
 * abort (or a rank's death) the others stop in it until the parent's SIGKILL, as MPI_Abort would end them.
 *
 * np == 1 also forks, so that abort() ends the rank and never the caller, and a crash in the workload is
 * reported in the outcome the same way as with more ranks.
 *
 * The caller must be single-threaded when it calls iol_local_run (children run arbitrary code after fork),
 * and must not reap children it did not create with waitpid(-1) while the run is in progress. */
#define _GNU_SOURCE
#include "comm.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>

#include "../common/interrupt.h"
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Per rank and per bank. Big enough that a histogram-sized allreduce is one chunk; small enough that a
 * run with hundreds of ranks maps (lazily) only tens of MiB. */
#define LOCAL_SLOT_BYTES ((size_t)128 * 1024)
#define LOCAL_BANKS 2
/* The parent allocates 2 * np slots; past this the region alone would be tens of GiB. */
#define LOCAL_MAX_NP 65536
/* Iterations a waiter polls before sleeping on the futex: a barrier among ranks that each own a core
 * usually completes within microseconds, much less than a sleep/wake round trip. (Overridable at build
 * time for experiments.) */
#ifndef LOCAL_SPIN
#define LOCAL_SPIN 2000
#endif

struct local_shared {
    _Atomic uint32_t arrived;      /* ranks that reached the current barrier */
    _Atomic uint32_t generation;   /* completed barriers */
    _Atomic uint32_t wake_seq;     /* futex word: bumped on every event a sleeping waiter must see */
    _Atomic uint32_t departed;     /* a rank has returned from its function (or died) */
    _Atomic uint32_t aborted;      /* a rank called abort(), or the parent is killing the run: the others
                                    * stop in their next (or current) collective and wait for SIGKILL */
    volatile sig_atomic_t interrupted; /* the signal any process of the run received (interrupt.h) */
    int np;
    int spin;                      /* 0 when ranks outnumber CPUs: spinning would steal the CPU we wait for */
    size_t slots_offset;           /* from the start of the region to bank 0 */
};

struct local_impl {
    struct local_shared *sh;
    unsigned char *slots;
    unsigned bank;                 /* the bank the next chunk uses */
    int broken;                    /* a collective failed: the barrier state is no longer consistent */
};

/* ---- futex barrier ---------------------------------------------------------------------------------- */

static void futex_wake_all(_Atomic uint32_t *word)
{
    /* Not FUTEX_PRIVATE_FLAG: the waiters are other processes sharing the mapping. */
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static void futex_wait(_Atomic uint32_t *word, uint32_t seen)
{
    /* Returns at once if the word no longer holds `seen`, so an event between our check and this call is
     * never lost. EINTR and spurious wake-ups just send the caller round its loop again. */
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT, seen, NULL, NULL, 0);
}

static void announce(struct local_shared *sh, _Atomic uint32_t *flag)
{
    atomic_store(flag, 1);
    atomic_fetch_add(&sh->wake_seq, 1);
    futex_wake_all(&sh->wake_seq);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* After an abort every rank ends, as with MPI_Abort: the parent is already killing us. Returning -1
 * instead would let this rank race the SIGKILL and exit as if it had finished, which would make the
 * outcome depend on timing. (If the parent itself is gone, PR_SET_PDEATHSIG ends us.) */
__attribute__((noreturn)) static void await_kill(void)
{
    for (;;)
        pause();
}

static int local_barrier(struct iol_comm *c)
{
    struct local_impl *li = c->impl;
    struct local_shared *sh = li->sh;
    if (li->broken)
        return -1;
    /* Read the generation before arriving: once we arrive, the last rank may complete the barrier at
     * any moment, and we must recognise that as "ours completed". */
    uint32_t gen = atomic_load(&sh->generation);
    if (atomic_load(&sh->aborted))
        await_kill();
    /* A rank that has left has finished all its collectives, so a barrier entered after that can never
     * fill up. */
    if (atomic_load(&sh->departed)) {
        li->broken = 1;
        return -1;
    }
    if (atomic_fetch_add(&sh->arrived, 1) + 1 == (uint32_t)sh->np) {
        /* Nobody can arrive for the next barrier before seeing the new generation, so resetting the
         * count first is safe. */
        atomic_store(&sh->arrived, 0);
        atomic_fetch_add(&sh->generation, 1);
        atomic_fetch_add(&sh->wake_seq, 1);
        if (sh->np > 1)
            futex_wake_all(&sh->wake_seq);
        return 0;
    }
    int spins = sh->spin ? LOCAL_SPIN : 0;
    for (;;) {
        uint32_t seq = atomic_load(&sh->wake_seq);
        if (atomic_load(&sh->generation) != gen)
            return 0;
        if (atomic_load(&sh->aborted))
            await_kill();
        if (atomic_load(&sh->departed)) {
            /* The rank that departed may have completed this very barrier just before leaving. */
            if (atomic_load(&sh->generation) != gen)
                return 0;
            li->broken = 1;
            return -1;
        }
        if (spins > 0) {
            spins--;
            cpu_relax();
            continue;
        }
        futex_wait(&sh->wake_seq, seq);
    }
}

/* ---- collectives ------------------------------------------------------------------------------------ */

static unsigned char *bank_base(const struct local_impl *li, unsigned bank)
{
    return li->slots + (size_t)bank * (size_t)li->sh->np * LOCAL_SLOT_BYTES;
}

static unsigned char *slot(const struct local_impl *li, unsigned bank, int rank)
{
    return bank_base(li, bank) + (size_t)rank * LOCAL_SLOT_BYTES;
}

static unsigned next_bank(struct local_impl *li)
{
    unsigned b = li->bank;
    li->bank = (b + 1) % LOCAL_BANKS;
    return b;
}

static void combine_u64(uint64_t *o, const uint64_t *x, size_t n, enum iol_redop op)
{
    switch (op) {
    case IOL_OP_SUM: for (size_t i = 0; i < n; i++) o[i] += x[i]; break;
    case IOL_OP_MIN: for (size_t i = 0; i < n; i++) o[i] = x[i] < o[i] ? x[i] : o[i]; break;
    case IOL_OP_MAX: for (size_t i = 0; i < n; i++) o[i] = x[i] > o[i] ? x[i] : o[i]; break;
    }
}

static void combine_i64(int64_t *o, const int64_t *x, size_t n, enum iol_redop op)
{
    switch (op) {
    case IOL_OP_SUM:
        /* Through uint64 so that an overflow wraps as MPI's does instead of being undefined. */
        for (size_t i = 0; i < n; i++) o[i] = (int64_t)((uint64_t)o[i] + (uint64_t)x[i]);
        break;
    case IOL_OP_MIN: for (size_t i = 0; i < n; i++) o[i] = x[i] < o[i] ? x[i] : o[i]; break;
    case IOL_OP_MAX: for (size_t i = 0; i < n; i++) o[i] = x[i] > o[i] ? x[i] : o[i]; break;
    }
}

static void combine_f64(double *o, const double *x, size_t n, enum iol_redop op)
{
    switch (op) {
    case IOL_OP_SUM: for (size_t i = 0; i < n; i++) o[i] += x[i]; break;
    case IOL_OP_MIN: for (size_t i = 0; i < n; i++) o[i] = x[i] < o[i] ? x[i] : o[i]; break;
    case IOL_OP_MAX: for (size_t i = 0; i < n; i++) o[i] = x[i] > o[i] ? x[i] : o[i]; break;
    }
}

static int local_allreduce(struct iol_comm *c, const void *in, void *out, size_t count, enum iol_dtype dt,
                           enum iol_redop op)
{
    struct local_impl *li = c->impl;
    const size_t esize = 8;   /* every iol_dtype is 8 bytes wide */
    const size_t per_chunk = LOCAL_SLOT_BYTES / esize;
    if (li->broken)
        return -1;
    if ((unsigned)dt > IOL_DT_F64 || (unsigned)op > IOL_OP_MAX)
        return -1;
    for (size_t done = 0; done < count;) {
        size_t n = count - done < per_chunk ? count - done : per_chunk;
        unsigned b = next_bank(li);
        /* The input chunk is copied out before anyone writes the output, which is why in == out works. */
        memcpy(slot(li, b, c->rank), (const unsigned char *)in + done * esize, n * esize);
        if (local_barrier(c) != 0)
            return -1;
        /* Every rank reduces in rank order, so all ranks get bit-identical floating-point results. */
        unsigned char *o = (unsigned char *)out + done * esize;
        memcpy(o, slot(li, b, 0), n * esize);
        for (int r = 1; r < c->size; r++) {
            const void *x = slot(li, b, r);
            switch (dt) {
            case IOL_DT_U64: combine_u64((uint64_t *)o, x, n, op); break;
            case IOL_DT_I64: combine_i64((int64_t *)o, x, n, op); break;
            case IOL_DT_F64: combine_f64((double *)o, x, n, op); break;
            }
        }
        done += n;
    }
    return 0;
}

/* A gather or bcast is refused on a broken communicator, or for a root that names no rank. */
static int rooted_refused(const struct iol_comm *c, int root)
{
    const struct local_impl *li = c->impl;
    return li->broken || root < 0 || root >= c->size;
}

static int local_gather(struct iol_comm *c, const void *in, size_t bytes, void *out, int root)
{
    struct local_impl *li = c->impl;
    if (rooted_refused(c, root))
        return -1;
    for (size_t off = 0; off < bytes;) {
        size_t n = bytes - off < LOCAL_SLOT_BYTES ? bytes - off : LOCAL_SLOT_BYTES;
        unsigned b = next_bank(li);
        if (c->rank != root)
            memcpy(slot(li, b, c->rank), (const unsigned char *)in + off, n);
        if (local_barrier(c) != 0)
            return -1;
        if (c->rank == root) {
            for (int r = 0; r < c->size; r++) {
                unsigned char *dst = (unsigned char *)out + (size_t)r * bytes + off;
                if (r == root)
                    memmove(dst, (const unsigned char *)in + off, n);   /* the root's own part may alias */
                else
                    memcpy(dst, slot(li, b, r), n);
            }
        }
        off += n;
    }
    return 0;
}

static int local_bcast(struct iol_comm *c, void *buf, size_t bytes, int root)
{
    struct local_impl *li = c->impl;
    /* One writer, so the whole bank (every rank's slot, contiguous) is one chunk. */
    const size_t chunk = (size_t)c->size * LOCAL_SLOT_BYTES;
    if (rooted_refused(c, root))
        return -1;
    for (size_t off = 0; off < bytes;) {
        size_t n = bytes - off < chunk ? bytes - off : chunk;
        unsigned b = next_bank(li);
        if (c->rank == root)
            memcpy(bank_base(li, b), (unsigned char *)buf + off, n);
        if (local_barrier(c) != 0)
            return -1;
        if (c->rank != root)
            memcpy((unsigned char *)buf + off, bank_base(li, b), n);
        off += n;
    }
    return 0;
}

static int exit_code_of_abort(int code)
{
    /* 0..2 are ordinary statuses; an abort must read as one to the parent whatever code it was given. */
    if (code < 3)
        return 3;
    return code > 255 ? 255 : code;
}

__attribute__((noreturn)) static void local_abort(struct iol_comm *c, int code)
{
    struct local_impl *li = c->impl;
    /* Peers stop in their collectives; the parent, seeing our status, kills them all. */
    announce(li->sh, &li->sh->aborted);
    fflush(NULL);
    _exit(exit_code_of_abort(code));
}

/* ---- children --------------------------------------------------------------------------------------- */

__attribute__((noreturn)) static void child_main(struct local_shared *sh, int rank, iol_rank_fn fn, void *arg,
                                                 pid_t parent)
{
    /* If the parent dies, nobody would reap us or break a barrier we sleep in: die with it. The check
     * after prctl covers a parent that died before the request was in place. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(exit_code_of_abort(3));
    /* Ranks share the terminal or the output file: line buffering keeps their lines whole and in time. */
    setvbuf(stdout, NULL, _IOLBF, 0);

    struct local_impl li = { .sh = sh, .slots = (unsigned char *)sh + sh->slots_offset, .bank = 0, .broken = 0 };
    struct iol_comm c;
    memset(&c, 0, sizeof c);
    c.kind = "local";
    c.rank = rank;
    c.size = sh->np;
    c.barrier = local_barrier;
    c.allreduce = local_allreduce;
    c.gather = local_gather;
    c.bcast = local_bcast;
    c.abort = local_abort;
    c.impl = &li;
    c.nodes = 1;                  /* true by construction; iol_comm_setup confirms it and adds the host name */
    c.tasks_per_node = sh->np;

    int rv = fn(&c, arg);
    free(c.placement);
    /* Peers still waiting for us in a collective would wait forever: tell them we are gone. */
    announce(sh, &sh->departed);
    fflush(NULL);
    /* fn returns an enum iol_status; anything outside 0..255 is not a status we can pass through. */
    if (rv < 0)
        rv = IOL_ERR_RUNTIME;
    else if (rv > 255)
        rv = 255;
    _exit(rv);
}

/* ---- parent ----------------------------------------------------------------------------------------- */

struct local_child {
    pid_t pid;
    int reaped;
    int killed;              /* we sent it SIGKILL after another rank failed */
};

struct local_run {
    struct local_shared *sh;
    struct local_child *kids;
    int np;
    int running;
    struct iol_local_outcome *out;
};

static void kill_running(struct local_run *run)
{
    announce(run->sh, &run->sh->aborted);
    for (int i = 0; i < run->np; i++) {
        if (!run->kids[i].reaped && !run->kids[i].killed) {
            kill(run->kids[i].pid, SIGKILL);
            run->kids[i].killed = 1;
        }
    }
}

static void note_exit(struct local_run *run, int rank, int wstatus, int lost)
{
    struct local_child *k = &run->kids[rank];
    k->reaped = 1;
    run->running--;
    /* A child may have died without announcing it (a signal, or exit() inside fn). */
    announce(run->sh, &run->sh->departed);

    int code, sig = 0;
    if (lost) {
        /* Someone else reaped it (SIGCHLD ignored, or a foreign waitpid(-1)): its status is unknown. */
        code = IOL_ERR_RUNTIME;
    } else if (WIFSIGNALED(wstatus)) {
        sig = WTERMSIG(wstatus);
        code = 128 + sig;
    } else {
        code = WEXITSTATUS(wstatus);
    }
    if (rank == 0)
        run->out->rank0_status = sig ? -1 : code;
    /* A rank we killed is a consequence of the failure, not a cause: it does not set the outcome. */
    if (k->killed && sig == SIGKILL)
        return;
    if (code > run->out->status)
        run->out->status = code;
    if ((sig != 0 || code > 2) && run->out->failed_rank < 0) {
        run->out->failed_rank = rank;
        run->out->signal = sig;
        /* The others may be waiting in a barrier for this rank: end them rather than hang. */
        kill_running(run);
    }
}

static int rank_of_pid(const struct local_run *run, pid_t pid)
{
    for (int i = 0; i < run->np; i++)
        if (run->kids[i].pid == pid && !run->kids[i].reaped)
            return i;
    return -1;
}

static void reap_rank(struct local_run *run, int rank)
{
    int wstatus = 0;
    pid_t r;
    do
        r = waitpid(run->kids[rank].pid, &wstatus, 0);
    while (r < 0 && errno == EINTR);
    note_exit(run, rank, wstatus, r < 0);
}

/* Waits for every child. While all the caller's exited children are ours, waitid(WNOWAIT) sleeps until one
 * exits and tells us which, without reaping it. Once a child that is not ours shows up, we must leave it
 * (and its status) to the caller, so we fall back to polling our own pids with WNOHANG. */
static void reap_all(struct local_run *run)
{
    int foreign = 0, forwarded = 0;
    long sleep_ns = 1000000;
    while (run->running > 0) {
        /* A signal meant for the job (Ctrl-C, a batch system's SIGTERM to this process only) goes on to every
         * rank, so they stop together and clean up instead of being killed by PR_SET_PDEATHSIG. */
        int sig = iol_interrupt_pending();
        if (sig && !forwarded) {
            forwarded = 1;
            for (int i = 0; i < run->np; i++)
                if (!run->kids[i].reaped) kill(run->kids[i].pid, sig);
        }
        if (!foreign) {
            siginfo_t si;
            memset(&si, 0, sizeof si);
            if (waitid(P_ALL, 0, &si, WEXITED | WNOWAIT) != 0) {
                if (errno != EINTR)
                    foreign = 1;
                continue;
            }
            int rank = rank_of_pid(run, si.si_pid);
            if (rank < 0) {
                foreign = 1;
                continue;
            }
            reap_rank(run, rank);
            continue;
        }
        int found = 0;
        for (int i = 0; i < run->np; i++) {
            if (run->kids[i].reaped)
                continue;
            int wstatus = 0;
            pid_t r = waitpid(run->kids[i].pid, &wstatus, WNOHANG);
            if (r == run->kids[i].pid || (r < 0 && errno == ECHILD)) {
                note_exit(run, i, wstatus, r < 0);
                found = 1;
            }
        }
        if (found) {
            sleep_ns = 1000000;
        } else {
            struct timespec ts = { 0, sleep_ns };
            nanosleep(&ts, NULL);
            if (sleep_ns < 20000000)
                sleep_ns *= 2;
        }
    }
}

/* CPUs we may run on: the affinity mask (taskset, a batch system's cgroup), not the whole machine. */
static int usable_cpus(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

int iol_local_run(int np, iol_rank_fn fn, void *arg, struct iol_local_outcome *out, struct iol_err *err)
{
    if (out == NULL || fn == NULL)
        return iol_err_set(err, IOL_ERR_USAGE, "local run: no rank function or outcome");
    out->status = 0;
    out->failed_rank = -1;
    out->signal = 0;
    out->rank0_status = -1;
    if (np < 1 || np > LOCAL_MAX_NP)
        return iol_err_set(err, IOL_ERR_USAGE, "local run: %d processes requested; must be 1 to %d", np,
                           LOCAL_MAX_NP);

    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0)
        page = 4096;
    size_t header = (sizeof(struct local_shared) + (size_t)page - 1) / (size_t)page * (size_t)page;
    size_t len = header + (size_t)LOCAL_BANKS * (size_t)np * LOCAL_SLOT_BYTES;
    void *region = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (region == MAP_FAILED)
        return iol_err_errno(err, IOL_ERR_RUNTIME, errno, "local run: mmap of %zu bytes for %d ranks", len, np);
    struct local_shared *sh = region;   /* the mapping is zero-filled: counters and flags start at 0 */
    sh->np = np;
    sh->spin = np <= usable_cpus();
    sh->slots_offset = header;

    struct local_child *kids = calloc((size_t)np, sizeof *kids);
    if (kids == NULL) {
        munmap(region, len);
        return iol_err_errno(err, IOL_ERR_RUNTIME, ENOMEM, "local run: %d ranks", np);
    }
    struct local_run run = { .sh = sh, .kids = kids, .np = np, .running = 0, .out = out };

    /* Anything still in our stdio buffers would otherwise be written once by each child as well. */
    fflush(NULL);
    iol_interrupt_install();
    iol_interrupt_share(&sh->interrupted);
    pid_t parent = getpid();
    int rc = 0;
    for (int i = 0; i < np; i++) {
        pid_t pid = fork();
        if (pid == 0)
            child_main(sh, i, fn, arg, parent);
        if (pid < 0) {
            rc = iol_err_errno(err, IOL_ERR_RUNTIME, errno, "local run: fork of rank %d of %d", i, np);
            /* The ranks already started would wait for the missing one in their first barrier. */
            run.np = i;
            kill_running(&run);
            break;
        }
        kids[i].pid = pid;
        run.running++;
    }
    reap_all(&run);
    if (rc != 0) {
        /* The outcome describes ranks we killed ourselves; the error says what really went wrong. */
        out->status = IOL_ERR_RUNTIME;
        out->failed_rank = -1;
        out->signal = 0;
    }
    /* The signal stays known to this process after the region goes. */
    if (sh->interrupted) iol_interrupt_note(sh->interrupted);
    iol_interrupt_share(NULL);
    free(kids);
    munmap(region, len);
    return rc;
}
