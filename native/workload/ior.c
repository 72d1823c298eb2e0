/* ior.c — the ior workload's run: iterations of write and read phases, each timed from the first rank's open
 * to the last rank's close, with a latency histogram of every transfer, stonewalling with wear-out, and
 * read-back verification. Ranks agree on errors at every step, so a failure on one rank ends the run on
 * all of them with a document that says which rank failed and why. */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/clock.h"
#include "../common/fstype.h"
#include "../common/interrupt.h"
#include "ior_internal.h"
#include "ior_flags.h"
#include "run_doc.h"
#include "run_sync.h"

/* One rank's view of one phase, before the ranks' views are combined. */
struct phase_local {
    uint64_t t[6];              /* open start/end, transfer start/end, close start/end, on rank 0's clock */
    uint64_t bytes, ops;
    uint64_t pairs_done;        /* transfers completed */
    uint64_t pairs_at_deadline;
    int hit;                    /* stopped at the stonewall deadline */
    uint64_t stop_ns;           /* when it stopped issuing, from the transfer start */
    uint64_t t2_local;          /* transfer start on this rank's own clock (progress lines) */
    uint64_t vbytes, verrors, vfirst;   /* verification: bytes checked, bad bytes, first bad offset */
    int evicted;
    struct iol_backend_stats bstats; /* what the backend counted during the transfers (summed over passes) */
    struct iol_hist hist;
};

/* How one pass over a rank's transfers goes. */
struct xfer_plan {
    enum iol_io_op op;
    int data_rank;              /* whose data: decides offsets and the pattern */
    uint64_t start, target;     /* transfers [start, target) */
    uint64_t deadline_ns;       /* local monotonic time to stop issuing at; 0 = none */
    int verify;
    uint64_t key;
    const char *phase;
    int iteration;
};

static int comm_failed(struct ior_run *r)
{
    return iol_err_set(&r->err, IOL_ERR_RUNTIME, "communication with the other ranks failed");
}

/* Every rank calls this at the same point (see run_sync.h). */
static int agree(struct ior_run *r)
{
    int failed = iol_agree(r->comm, &r->err, &r->err_rank);
    if (failed && !r->err_phase) r->err_phase = "setup";
    return failed;
}

static void progress(struct ior_run *r, const struct xfer_plan *pl, const struct phase_local *lp, uint64_t now)
{
    double el = (double)(now - lp->t2_local) / 1e9;
    uint64_t est = lp->bytes * (uint64_t)r->nranks;
    fprintf(stderr,
            "IOLENS-PROGRESS {\"phase\": \"%s\", \"iteration\": %d, \"elapsed_s\": %.3f, \"bytes\": %" PRIu64
            ", \"bw_bytes_per_s\": %.1f, \"estimate\": true}\n",
            pl->phase, pl->iteration, el, est, el > 0 ? (double)est / el : 0.0);
    fflush(stderr);
    r->next_progress_ns = now + 500000000ULL;
}

static void transfer_failed(struct ior_run *r, const struct iol_req *d, const char *what)
{
    if (d->error)
        iol_err_errno(&r->err, IOL_ERR_RUNTIME, d->error, "%s %s at offset %" PRIu64, what, r->cur_path, d->offset);
    else
        iol_err_set(&r->err, IOL_ERR_RUNTIME,
                    "%s %s at offset %" PRIu64 ": moved %" PRId64 " of %zu bytes (is the file shorter than the run expects?)",
                    what, r->cur_path, d->offset, d->result, d->len);
}

/* Issues transfers [pl->start, pl->target) with up to qd in flight; stops early at the deadline.
 * Returns 0, or -1 with r->err set. */
static int xfer_loop(struct ior_run *r, struct iol_file *f, const struct xfer_plan *pl, struct phase_local *lp)
{
    const struct ior_cfg *cfg = r->cfg;
    const struct iol_backend *be = r->be;
    const int qd = r->qd, is_write = pl->op == IOL_IO_WRITE;
    const int show = r->info->progress && r->comm->rank == 0;
    /* Collective calls per transfer: -c; the strided datatype's MPI_File_set_view; -Y's MPI_File_sync; HDF5's
     * creation (opening) of a segment's dataset at its first transfer, which at a deadline makes its ranks
     * stop together too, independent transfers or not. */
    const int lockstep = r->lockstep && (cfg->collective || cfg->strided_datatype || (is_write && cfg->fsync_per_write) ||
                                         (pl->deadline_ns && be->collective_segments));
    /* In lockstep the ranks agree whether to stop every `every` rounds (see below): about 4 MiB of each
     * rank's transfers, at most 64 rounds, so a deadline or a signal is honoured within a few MiB. */
    const uint64_t every = cfg->xfer >= (4u << 20) ? 1 : (4u << 20) / cfg->xfer > 64 ? 64 : (4u << 20) / cfg->xfer;
    uint64_t rounds = 0;
    int want_stop = 0, want_hit = 0;
    struct ior_order ord;
    ior_order_init(&ord, cfg, r->nranks, pl->data_rank, r->pairs_total, pl->start);
    /* -O minTimeDuration: the pass starts again from its first transfer until it has run that long, as IOR
     * repeats its loop over the segments; the decision is taken when a pass's last transfer is due. */
    uint64_t target = pl->target;
    const uint64_t min_ns = pl->verify || pl->start ? 0 : (uint64_t)cfg->min_time_s * 1000000000ULL;
    const uint64_t pass_start = iol_now_ns();
    if (min_ns && pl->target) ior_order_wrap(&ord, pl->target);
    const unsigned req_flags = IOL_REQ_SUBMIT_STAMPED | (cfg->single_xfer ? IOL_REQ_SINGLE_ATTEMPT : 0);

    int free_slots[4096], nfree = qd, inflight = 0, stop = 0;
    for (int i = 0; i < qd; i++) free_slots[i] = qd - 1 - i;
    struct iol_req *batch[4096];
    uint64_t issued = pl->start;
    /* The time the last completion was seen: the next request's submit time, so a synchronous backend
     * reads the clock once per transfer (the engine's own few tens of ns between the two count as I/O). */
    uint64_t chain = iol_now_ns();
    /* fio's iodepth_batch_submit: 1 (the default) hands each request over as soon as it is made, which on
     * a virtio disk kept reads flowing better than one call for every slot a reap freed */
    const int per_call = cfg->submit_batch > 0 && cfg->submit_batch < qd ? (int)cfg->submit_batch : qd;

    for (;;) {
        int nsub = 0;
        if (min_ns && !stop && issued == target && pl->target && iol_now_ns() - pass_start < min_ns)
            target += pl->target;
        while (!stop && nfree > 0 && issued < target && nsub < per_call) {
            int slot = free_slots[--nfree];
            struct iol_req *q = &r->reqs[slot];
            q->op = pl->op;
            q->file = f;
            q->buf = r->bufs[slot];
            q->len = cfg->xfer;
            q->offset = ior_order_next(&ord);
            q->tag = (uint64_t)slot;
            q->flags = req_flags;
            q->t_submit_ns = chain;
            if (is_write && r->packet == IOL_PACKET_IOLENS) iol_pattern_apply(&r->pats[slot], q->offset);
            else if (is_write) iol_packet_apply(&r->pkts[slot], q->offset);
            batch[nsub++] = q;
            issued++;
        }
        if (nsub) {
            int n = be->submit(r->bctx, batch, nsub, &r->err);
            if (n != nsub) {
                if (n >= 0) iol_err_set(&r->err, IOL_ERR_RUNTIME, "backend %s accepted %d of %d requests", be->name, n, nsub);
                return -1;
            }
            inflight += nsub;
            if (nsub == per_call && !stop && nfree > 0 && issued < target)
                continue; /* the next batch before looking for completions, as fio fills its queue */
        }
        if (inflight == 0) break;

        /* Wait for at least one completion only when nothing more can be issued. */
        int min = (stop || issued >= target || nfree == 0) ? 1 : 0;
        int n = be->reap(r->bctx, r->done, min, qd, &r->err);
        if (n < 0) return -1;
        uint64_t last = 0;
        int synced = 0;
        for (int i = 0; i < n; i++) {
            struct iol_req *d = r->done[i];
            const int failed = d->error || d->result != (int64_t)d->len;
            if (failed) {
                transfer_failed(r, d, is_write ? "write" : "read");
                stop = 1;
            } else {
                iol_hist_record(&lp->hist, d->t_done_ns - d->t_submit_ns);
                lp->bytes += d->len;
                lp->ops++;
                lp->pairs_done++;
                if (pl->verify) {
                    uint64_t first = UINT64_MAX;
                    uint64_t bad = r->packet == IOL_PACKET_IOLENS
                                       ? iol_pattern_check(d->buf, d->len, d->offset, pl->key, &first)
                                       : iol_packet_check(d->buf, d->len, d->offset, (enum iol_packet)r->packet,
                                                          r->sig, (uint32_t)pl->data_rank, &first);
                    lp->vbytes += d->len;
                    if (bad) {
                        lp->verrors += bad;
                        if (first < lp->vfirst) lp->vfirst = first;
                    }
                }
            }
            /* -Y. In lockstep the fsync is a collective MPI_File_sync: every rank makes one per write, also
             * after a failed one, so that their counts of collective calls stay equal. */
            if (is_write && cfg->fsync_per_write && (!failed || lockstep)) {
                synced = 1;
                if (be->fsync(r->bctx, f, &r->err)) stop = 1;
            }
            last = d->t_done_ns;
            if (last > chain) chain = last;
            free_slots[nfree++] = (int)d->tag;
            inflight--;
        }
        /* -O interIODelay: IOR sleeps after each transfer, inside the phase's transfer time. */
        if (n > 0 && cfg->inter_io_delay_us > 0) {
            iol_sleep_s((double)cfg->inter_io_delay_us * n / 1e6);
            synced = 1;
        }
        /* -Y: a write's latency is the write call alone, as IOR times it; the fsync after it is in the
         * phase's transfer time but must not be counted in the next write's latency. */
        if (synced) chain = iol_now_ns();
        if (!stop && iol_interrupted(r->comm)) {
            iol_note_interrupt(&r->err);
            stop = 1;
        }
        int hit = n > 0 && !stop && pl->deadline_ns && last >= pl->deadline_ns;
        if (lockstep) {
            /* Collective calls: a rank that stopped alone would leave the others waiting in their next call
             * for ever. So a rank's reason to stop (its deadline, an error, a signal) only stops it when the
             * ranks decide together, every `every` rounds (IOR broadcasts rank 0's deadline after each
             * transfer; an allreduce per transfer cost 4/5 of a collective 47008-byte write at 2 ranks):
             * until then it goes on, and every rank makes the same number of calls. */
            want_stop |= stop;
            want_hit |= hit;
            stop = hit = 0;
            if (++rounds % every == 0) {
                int64_t v[2] = {want_stop, want_hit};
                if (r->comm->allreduce(r->comm, v, v, 2, IOL_DT_I64, IOL_OP_MAX)) {
                    comm_failed(r);
                    return -1;
                }
                stop = (int)v[0];
                hit = !stop && v[1];
            }
        }
        if (hit) {
            stop = 1;
            lp->hit = 1;
        }
        if (show && n > 0 && last >= r->next_progress_ns) progress(r, pl, lp, last);
    }
    return r->err.code ? -1 : 0;
}

static uint64_t read_status_file(const char *path, struct iol_err *err)
{
    FILE *fp = fopen(path, "r");
    long long v = -1;
    if (!fp) {
        iol_err_errno(err, IOL_ERR_USAGE, errno, "-O stoneWallingStatusFile: cannot read %s", path);
        return 0;
    }
    if (fscanf(fp, "%lld", &v) != 1 || v < 0) {
        iol_err_set(err, IOL_ERR_USAGE, "-O stoneWallingStatusFile: %s does not hold a transfer count", path);
        v = 0;
    }
    fclose(fp);
    return (uint64_t)v;
}

static int write_status_file(const char *path, uint64_t pairs, struct iol_err *err)
{
    FILE *fp = fopen(path, "w");
    if (!fp) return iol_err_errno(err, IOL_ERR_RUNTIME, errno, "-O stoneWallingStatusFile: cannot write %s", path);
    fprintf(fp, "%" PRIu64, pairs);   /* IOR's format: the bare count */
    return fclose(fp) == 0 ? 0 : iol_err_errno(err, IOL_ERR_RUNTIME, errno, "write %s", path);
}

static int open_flags(const struct ior_run *r, enum iol_io_op op)
{
    int fl = op == IOL_IO_WRITE ? (IOL_O_WRITE | IOL_O_CREATE) : IOL_O_READ;
    if (r->cfg->direct) fl |= IOL_O_DIRECT;
    if (r->cfg->rangelocks) fl |= IOL_O_RANGELOCKS;
    return fl;
}

/* Open, transfer, close, with the six timestamps IOR takes. Collective. */
static int run_pass(struct ior_run *r, const struct xfer_plan *pl, struct phase_local *lp)
{
    const struct ior_cfg *cfg = r->cfg;
    struct iol_comm *c = r->comm;
    struct iol_file f;
    int opened = 0;
    /* Check passes read back everything; only the measured phases stop at the deadline. */
    const int stonewalled = cfg->deadline_s > 0 && !pl->verify;
    memset(&f, 0, sizeof f);
    /* IOR's expected aggregate file size, which its MMAP backend gives every file, -F's too */
    f.extent = (uint64_t)r->segments * cfg->block * (uint64_t)r->nranks;
    f.data_rank = pl->data_rank;
    ior_file_path(cfg, cfg->fpp ? pl->data_rank : 0, pl->iteration, r->cur_path, sizeof r->cur_path);
    r->err_phase = pl->phase;

    if (c->barrier(c)) return comm_failed(r);
    lp->t[0] = iol_comm_time(c, iol_now_ns());
    /* A shared file is created by rank 0 before the others open it, as IOR does; a backend whose open is
     * collective (MPI_File_open) has every rank open it together. */
    int creator_first = !cfg->fpp && pl->op == IOL_IO_WRITE && !r->be->collective_open;
    if (!creator_first || c->rank == 0) {
        if (r->be->open(r->bctx, &f, r->cur_path, open_flags(r, pl->op), 0644, &r->err) == 0) opened = 1;
    }
    if (creator_first) {
        if (c->barrier(c)) return comm_failed(r);
        if (c->rank != 0 && r->be->open(r->bctx, &f, r->cur_path, open_flags(r, pl->op), 0644, &r->err) == 0)
            opened = 1;
    }
    if (r->be->collective_open) {
        /* Transfers and close may be collective: either every rank of the file goes on, or none (the rank
         * whose open failed reports why, when the ranks agree after the phase). */
        int64_t ok = opened;
        if (c->allreduce(c, &ok, &ok, 1, IOL_DT_I64, IOL_OP_MIN)) return comm_failed(r);
        if (!ok && opened) {
            struct iol_err cerr = {0, ""};
            r->be->close(r->bctx, &f, &cerr);
            opened = 0;
        }
    }
    lp->t[1] = iol_comm_time(c, iol_now_ns());
    if (cfg->intra_barriers && c->barrier(c)) return comm_failed(r);

    uint64_t t2 = iol_now_ns();
    lp->t[2] = iol_comm_time(c, t2);
    lp->t2_local = t2;
    r->next_progress_ns = t2 + 500000000ULL;
    struct iol_backend_stats before = {0}, after = {0};
    if (r->be->stats) r->be->stats(r->bctx, &before);
    if (opened) {
        struct xfer_plan p = *pl;
        if (stonewalled)
            p.deadline_ns = t2 + (uint64_t)cfg->deadline_s * 1000000000ULL;
        /* --randomPrefill: IOR fills the blocks inside the write's transfer time, before the random writes. */
        int prefill_failed = pl->op == IOL_IO_WRITE && !pl->verify && cfg->random_prefill &&
                             ior_random_prefill(r, &f, pl->data_rank) != 0;
        if (!prefill_failed && xfer_loop(r, &f, &p, lp) == 0) lp->stop_ns = iol_now_ns() - t2;
    }
    lp->pairs_at_deadline = lp->pairs_done + pl->start;
    /* Stonewall wear-out: every rank goes on to the largest count any rank reached. */
    if (stonewalled) {
        uint64_t mine = lp->pairs_at_deadline, maxp = 0;
        int64_t failed = r->err.code != 0, anyfail = 0;
        if (c->allreduce(c, &mine, &maxp, 1, IOL_DT_U64, IOL_OP_MAX)) return comm_failed(r);
        if (c->allreduce(c, &failed, &anyfail, 1, IOL_DT_I64, IOL_OP_MAX)) return comm_failed(r);
        if (cfg->wear_out && !anyfail && opened && mine < maxp) {
            struct xfer_plan p = *pl;
            p.start = mine;
            p.target = maxp;
            p.deadline_ns = 0;
            xfer_loop(r, &f, &p, lp);
        }
    }
    /* -e: IOR fsyncs at the end of its transfer loop (WriteOrRead), so the fsync is in the transfer time
     * (and in IOPS, transfers over that time), each rank right after its own last write, and before the -g
     * barrier that precedes the close. */
    if (opened) {
        /* An interrupted run skips the fsync: writing GBs back could outlast a batch system's grace time,
         * and the file is about to be removed (or kept as a cut-short run's, not a measured one's). */
        int64_t sync = pl->op == IOL_IO_WRITE && cfg->fsync && !r->err.code && !iol_interrupt_pending();
        /* A collective fsync (MPI_File_sync) is made by every rank of the file or by none. */
        if (r->lockstep && c->allreduce(c, &sync, &sync, 1, IOL_DT_I64, IOL_OP_MIN)) sync = 0;
        if (sync) r->be->fsync(r->bctx, &f, &r->err);
    }
    lp->t[3] = iol_comm_time(c, iol_now_ns());
    if (r->be->stats) {
        r->be->stats(r->bctx, &after);
        iol_backend_stats_add_since(&lp->bstats, &after, &before);
    }
    if (cfg->intra_barriers && c->barrier(c)) return comm_failed(r);

    lp->t[4] = iol_comm_time(c, iol_now_ns());
    if (opened) {
        struct iol_err cerr = {0, ""};
        if (r->be->close(r->bctx, &f, &cerr) && !r->err.code) r->err = cerr;
    }
    lp->t[5] = iol_comm_time(c, iol_now_ns());
    return r->err.code ? -1 : 0;
}

static void phase_local_init(struct phase_local *lp)
{
    memset(lp, 0, sizeof *lp);
    lp->vfirst = UINT64_MAX;
    lp->evicted = 1;
    iol_hist_init(&lp->hist);
}

static double span_s(uint64_t start, uint64_t end)
{
    return end > start ? (double)(end - start) / 1e9 : 0.0;
}

/* Combines every rank's view into the phase as the job saw it (collective; rank 0 fills ph). */
static int reduce_phase(struct ior_run *r, struct phase_local *lp, struct ior_phase *ph)
{
    struct iol_comm *c = r->comm;
    uint64_t starts[3] = {lp->t[0], lp->t[2], lp->t[4]}, ends[3] = {lp->t[1], lp->t[3], lp->t[5]};
    /* the backend's counters travel after the four sums, as the u64s they are */
    enum { NB = sizeof(struct iol_backend_stats) / sizeof(uint64_t) };
    _Static_assert(sizeof(struct iol_backend_stats) == NB * sizeof(uint64_t), "backend stats are u64 counters");
    uint64_t sums[4 + NB] = {lp->bytes, lp->ops, lp->vbytes, lp->verrors};
    memcpy(sums + 4, &lp->bstats, sizeof lp->bstats);
    uint64_t sw[4] = {lp->pairs_at_deadline, lp->pairs_at_deadline, (uint64_t)lp->hit, lp->stop_ns};
    uint64_t swmin = 0, swmax[3];
    uint64_t vfirst = lp->vfirst;
    int64_t evicted = lp->evicted;
    if (c->allreduce(c, starts, starts, 3, IOL_DT_U64, IOL_OP_MIN) ||
        c->allreduce(c, ends, ends, 3, IOL_DT_U64, IOL_OP_MAX) ||
        c->allreduce(c, sums, sums, 4 + NB, IOL_DT_U64, IOL_OP_SUM) ||
        c->allreduce(c, &sw[0], &swmin, 1, IOL_DT_U64, IOL_OP_MIN) ||
        c->allreduce(c, &sw[1], swmax, 3, IOL_DT_U64, IOL_OP_MAX) ||
        c->allreduce(c, &vfirst, &vfirst, 1, IOL_DT_U64, IOL_OP_MIN) ||
        c->allreduce(c, &evicted, &evicted, 1, IOL_DT_I64, IOL_OP_MIN) || iol_hist_allreduce(c, &lp->hist))
        return comm_failed(r);
    /* The rank whose data holds the first bad byte. */
    int64_t badrank = (lp->vfirst == vfirst && vfirst != UINT64_MAX) ? c->rank : INT64_MAX;
    if (c->allreduce(c, &badrank, &badrank, 1, IOL_DT_I64, IOL_OP_MIN)) return comm_failed(r);
    /* bytes, transfers, transfer time, transfers at the stonewall deadline, open-to-close time */
    enum { PER_RANK = 5 };
    uint64_t mine[PER_RANK] = {lp->bytes, lp->ops, lp->t[3] - lp->t[2], lp->pairs_at_deadline,
                               lp->t[5] > lp->t[0] ? lp->t[5] - lp->t[0] : 0};
    uint64_t *all = c->rank == 0 ? calloc((size_t)r->nranks * PER_RANK, sizeof *all) : NULL;
    if (c->rank == 0 && !all) return iol_err_set(&r->err, IOL_ERR_RUNTIME, "out of memory");
    if (c->gather(c, mine, sizeof mine, all, 0)) {
        free(all);
        return comm_failed(r);
    }
    if (c->rank != 0) return 0;

    ph->bytes = sums[0];
    ph->ops = sums[1];
    ph->open_s = span_s(starts[0], ends[0]);
    ph->xfer_s = span_s(starts[1], ends[1]);
    ph->close_s = span_s(starts[2], ends[2]);
    ph->total_s = span_s(starts[0], ends[2]);
    ph->bw = ph->total_s > 0 ? (double)ph->bytes / ph->total_s : 0;
    ph->ops_per_s = ph->xfer_s > 0 ? (double)ph->ops / ph->xfer_s : 0;
    ph->hist = lp->hist;
    ph->stonewall.active = r->cfg->deadline_s > 0;
    ph->stonewall.hit = swmax[1] != 0;
    ph->stonewall.pairs_min = swmin;
    ph->stonewall.pairs_max = swmax[0];
    ph->stonewall.time_s = (double)swmax[2] / 1e9;
    ph->verify.bytes_checked += sums[2];
    ph->verify.errors += sums[3];
    if (vfirst != UINT64_MAX && ph->verify.first_bad_offset < 0) {
        ph->verify.first_bad_offset = (int64_t)vfirst;
        ph->verify.first_bad_rank = (int)badrank;
    }
    ph->cache.evicted = evicted != 0;
    memcpy(&ph->bstats, sums + 4, sizeof ph->bstats);
    ph->rank_bytes = calloc((size_t)r->nranks, sizeof(uint64_t));
    ph->rank_ops = calloc((size_t)r->nranks, sizeof(uint64_t));
    ph->rank_xfer_s = calloc((size_t)r->nranks, sizeof(double));
    ph->rank_pairs_at_deadline = calloc((size_t)r->nranks, sizeof(uint64_t));
    ph->rank_total_s = calloc((size_t)r->nranks, sizeof(double));
    for (int i = 0; i < r->nranks && ph->rank_bytes && ph->rank_ops && ph->rank_xfer_s && ph->rank_pairs_at_deadline &&
                    ph->rank_total_s;
         i++) {
        ph->rank_bytes[i] = all[i * PER_RANK];
        ph->rank_ops[i] = all[i * PER_RANK + 1];
        ph->rank_xfer_s[i] = (double)all[i * PER_RANK + 2] / 1e9;
        ph->rank_pairs_at_deadline[i] = all[i * PER_RANK + 3];
        ph->rank_total_s[i] = (double)all[i * PER_RANK + 4] / 1e9;
    }
    free(all);
    return 0;
}

/* How many transfers a read pass does: all, or what a stonewalled write recorded. */
static uint64_t read_target(struct ior_run *r)
{
    const struct ior_cfg *cfg = r->cfg;
    /* After a write in this run, read what was written: all of it, or what a stonewalled write reached. */
    if (cfg->write && r->written_pairs_valid) return r->written_pairs;
    if (cfg->status_file[0] && !cfg->write) {
        uint64_t n = read_status_file(cfg->status_file, &r->err);
        if (n > r->pairs_total) {
            iol_err_set(&r->err, IOL_ERR_USAGE, "-O stoneWallingStatusFile: %s says %" PRIu64
                        " transfers but a rank only has %" PRIu64, cfg->status_file, n, r->pairs_total);
            return 0;
        }
        return n;
    }
    if (cfg->wear_out_iterations > 0) return (uint64_t)cfg->wear_out_iterations;
    return r->pairs_total;
}

/* Drops the pages of the file this rank is about to read from the page cache, so a read on the node that
 * wrote the data measures storage, not memory. Returns 1 if they were dropped. */
static int evict_before_read(struct ior_run *r, int data_rank, int iteration)
{
    struct iol_file f;
    char p[IOL_STR_MAX + 64];
    int evicted = 0;
    memset(&f, 0, sizeof f);
    ior_file_path(r->cfg, r->cfg->fpp ? data_rank : 0, iteration, p, sizeof p);
    struct iol_err e = {0, ""};
    if (iol_interrupt_pending()) return 0;   /* writing back dirty pages can take long: not when told to stop */
    /* A handle without a descriptor (MPI-IO, HDF5) cannot drop pages: its file is an ordinary file, whose
     * pages the posix backend drops through the path, as for -a POSIX (ior_phase.cache.via says so). */
    const struct iol_backend *be = r->be->evict ? r->be : &iol_backend_posix;
    struct iol_bctx *ctx = r->be->evict ? r->bctx : NULL;
    memset(&f, 0, sizeof f);
    if (be->open(ctx, &f, p, IOL_O_READ, 0, &e) != 0) return 0;   /* the read pass reports it */
    if (be->evict(ctx, &f, &evicted, &e) != 0) evicted = 0;
    be->close(ctx, &f, &e);
    return evicted;
}

static struct ior_phase *new_phase(struct ior_run *r, const char *name, int iteration, enum iol_io_op op)
{
    if (r->comm->rank != 0) return NULL;
    struct ior_phase *ph = &r->phases[r->nphases++];
    memset(ph, 0, sizeof *ph);
    ph->name = name;
    ph->iteration = iteration;
    ph->verify.first_bad_offset = -1;
    ph->verify.first_bad_rank = -1;
    ph->cache.o_direct = r->cfg->direct;
    ph->cache.is_read = op == IOL_IO_READ;
    ph->began_wall_ns = iol_wall_ns();
    return ph;
}

static int c_allreduce_sum(struct ior_run *r, uint64_t *v)
{
    return r->comm->allreduce(r->comm, v, v, 1, IOL_DT_U64, IOL_OP_SUM) ? comm_failed(r) : 0;
}

/* A verification pass: read back `pairs` transfers of data_rank's data and compare every byte. Untimed in
 * the phase's figures, as IOR's check passes are; only its verification counts are kept. */
static int check_pass(struct ior_run *r, int data_rank, uint64_t pairs, int iteration, const char *phase,
                      struct ior_phase *ph)
{
    if (strcmp(phase, "write-check") == 0 && ior_time_over(r)) return 0;   /* -T, as IOR checks before -W */
    struct phase_local lp;
    phase_local_init(&lp);
    struct xfer_plan pl = {IOL_IO_READ, data_rank, 0, pairs, 0, 1,
                           iol_pattern_key((uint64_t)r->cfg->seed, data_rank), phase, iteration};
    run_pass(r, &pl, &lp);
    if (agree(r)) return -1;
    struct ior_phase tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.verify.first_bad_offset = -1;
    tmp.verify.first_bad_rank = -1;
    int rc = reduce_phase(r, &lp, &tmp);
    /* Every rank must know, so none of them removes the evidence. */
    uint64_t bad = lp.verrors;
    if (rc == 0 && c_allreduce_sum(r, &bad) == 0 && bad) r->verify_failed = 1;
    if (ph && rc == 0) {
        ph->verify = tmp.verify;
        ph->verify.active = 1;
    }
    free(tmp.rank_bytes);
    free(tmp.rank_ops);
    free(tmp.rank_xfer_s);
    free(tmp.rank_pairs_at_deadline);
    free(tmp.rank_total_s);
    return rc;
}

/* After a phase's transfers: the ranks agree, then combine what they did, also when the phase failed or was
 * interrupted (what was moved until the stop is reported, marked cut short, rather than a row of zeros).
 * Returns 0 when the phase completed, -1 when the run stops here. */
static int finish_phase(struct ior_run *r, struct phase_local *lp, struct ior_phase *ph, FILE *text)
{
    int failed = agree(r);
    const char *phase = r->err_phase;
    /* reduce_phase is collective: after a failure every rank is here too (they agreed), unless the
     * communicator itself broke, and then it fails at once. */
    int reduced = reduce_phase(r, lp, ph) == 0;
    r->err_phase = phase;
    if (!failed) return agree(r) ? -1 : 0;
    if (reduced && ph) {
        ph->cut_short = 1;
        if (text) ior_report_text_phase(text, r, ph);
    }
    return -1;
}

/* Bytes at the deadline (collective): every rank's count times the transfer size, for reads as for writes. */
static int stonewall_bytes(struct ior_run *r, const struct phase_local *lp, struct ior_phase *ph)
{
    uint64_t at_deadline = lp->pairs_at_deadline * r->cfg->xfer;
    if (r->comm->allreduce(r->comm, &at_deadline, &at_deadline, 1, IOL_DT_U64, IOL_OP_SUM)) return comm_failed(r);
    if (ph) ph->stonewall.bytes_at_deadline = at_deadline;
    return 0;
}

static int do_write(struct ior_run *r, int it, FILE *text)
{
    const struct ior_cfg *cfg = r->cfg;
    struct iol_comm *c = r->comm;
    r->err_phase = "write";
    if (ior_time_over(r)) return 0;   /* -T: no new phase after the time limit */
    /* -d: IOR waits before every write and read phase (the first too), outside the phase's times. */
    if (cfg->delay_s > 0) iol_sleep_s(cfg->delay_s);
    ior_prepare_write(r, it, &r->err);
    r->files_may_exist = 1;
    if (agree(r)) return -1;

    struct ior_phase *ph = new_phase(r, "write", it, IOL_IO_WRITE);
    struct phase_local lp;
    phase_local_init(&lp);
    uint64_t key = iol_pattern_key((uint64_t)cfg->seed, c->rank);
    for (int i = 0; i < r->qd; i++) {
        if (r->packet == IOL_PACKET_IOLENS) iol_pattern_init(&r->pats[i], r->bufs[i], cfg->xfer, key);
        else iol_packet_init(&r->pkts[i], r->bufs[i], cfg->xfer, (enum iol_packet)r->packet, r->sig, (uint32_t)c->rank);
    }
    /* -O stoneWallingWearOutIterations=N in a write: IOR stops every rank's write after N transfers (a
     * stonewall by count), and what follows in the run (-W, -r) covers those N. */
    uint64_t target = r->pairs_total;
    if (cfg->wear_out_iterations > 0 && (uint64_t)cfg->wear_out_iterations < target)
        target = (uint64_t)cfg->wear_out_iterations;
    struct xfer_plan pl = {IOL_IO_WRITE, c->rank, 0, target, 0, 0, key, "write", it};
    run_pass(r, &pl, &lp);
    if (finish_phase(r, &lp, ph, text) || stonewall_bytes(r, &lp, ph)) return -1;
    if (ior_check_outliers(r, "write", lp.t) || agree(r)) return -1;

    /* What every rank wrote at least (all the same after wear-out): what a read in this run may ask for. */
    uint64_t done = lp.pairs_done;
    /* -O minTimeDuration repeats passes: what the file holds is at most one pass */
    if (done > r->pairs_total) done = r->pairs_total;
    if (c->allreduce(c, &done, &r->written_pairs, 1, IOL_DT_U64, IOL_OP_MIN)) return comm_failed(r);
    r->written_pairs_valid = 1;

    /* With wear-out (ior_validate insists) every rank wrote this many transfers: what a later read may ask. */
    if (cfg->status_file[0] && c->rank == 0) write_status_file(cfg->status_file, r->written_pairs, &r->err);
    if (agree(r)) return -1;
    if (cfg->check_write) {
        int check_rank = (c->rank + r->check_rank_shift) % r->nranks;
        if (check_pass(r, check_rank, r->written_pairs, it, "write-check", ph)) return -1;
    }
    if (ph && text) ior_report_text_phase(text, r, ph);
    return 0;
}

static int do_read(struct ior_run *r, int it, FILE *text)
{
    const struct ior_cfg *cfg = r->cfg;
    struct iol_comm *c = r->comm;
    r->err_phase = "read";
    if (ior_time_over(r)) return 0;   /* -T */
    int shift = r->read_rank_shift;
    if (cfg->reorder_random) ior_random_shift(r, it, &shift);
    if (cfg->reorder_random && it == 0 && c->gather(c, &shift, sizeof shift, r->read_shift_log, 0)) return comm_failed(r);
    int data_rank = (c->rank + shift) % r->nranks;
    uint64_t target = read_target(r);
    if (agree(r)) return -1;

    struct ior_phase *ph = new_phase(r, "read", it, IOL_IO_READ);
    int evict = !cfg->direct && !cfg->keep_cache && r->be->does_io;
    struct phase_local lp;
    phase_local_init(&lp);
    if (c->barrier(c)) return comm_failed(r);
    if (evict && r->info->progress && c->rank == 0) {
        /* Writing back dirty pages can take long; say what the run is doing meanwhile. */
        fprintf(stderr, "IOLENS-PROGRESS {\"phase\": \"evict-cache\", \"iteration\": %d}\n", it);
        fflush(stderr);
    }
    lp.evicted = evict ? evict_before_read(r, data_rank, it) : 0;
    if (evict && !cfg->fpp && r->nranks > 1) {
        /* On a shared file the ranks drop the same pages at once, and the kernel skips a page another rank's
         * drop holds locked: a rank may see pages left that the other rank is about to drop. Once every
         * rank's drop is done (and every dirty page written), a rank that saw some left drops and looks again. */
        if (c->barrier(c)) return comm_failed(r);
        if (!lp.evicted) lp.evicted = evict_before_read(r, data_rank, it);
    }
    if (cfg->delay_s > 0) iol_sleep_s(cfg->delay_s);   /* -d, as before a write */
    struct xfer_plan pl = {IOL_IO_READ, data_rank, 0, target, 0, 0, 0, "read", it};
    run_pass(r, &pl, &lp);
    if (ph) {
        ph->cache.evict_requested = evict;
        ph->cache.via = !evict ? NULL : r->be->evict ? "backend" : "posix";
    }
    if (finish_phase(r, &lp, ph, text) || stonewall_bytes(r, &lp, ph)) return -1;
    if (ior_check_outliers(r, "read", lp.t) || agree(r)) return -1;
    if (ph) {
        if (cfg->direct)
            ph->cache.note = NULL;
        else if (!r->be->does_io)
            ph->cache.note = "the null backend does no I/O";
        else if (!evict)
            ph->cache.note = "the page cache was kept (--keep-cache): this read may be served from memory";
        else if (!ph->cache.evicted)
            ph->cache.note = strcmp(r->fs_type, "tmpfs") == 0 || strcmp(r->fs_type, "ramfs") == 0
                                 ? "the file system keeps file data in memory (tmpfs): this read measures memory"
                                 : "the file's pages could not be dropped from the page cache: this read may be "
                                   "served from memory";
    }
    if (cfg->check_read) {
        if (check_pass(r, data_rank, target, it, "read-check", ph)) return -1;
    }
    if (ph && text) ior_report_text_phase(text, r, ph);
    return 0;
}

static void write_document(struct ior_run *r, int early);

/* Every rank removes its file of iteration `it` (if iolens created it; with `unlink_files` 0 none), then
 * rank 0 drops the names of what no longer exists from the ledger. */
static int remove_files(struct ior_run *r, int it, int unlink_files, struct iol_err *err)
{
    struct iol_comm *c = r->comm;
    if (c->barrier(c)) return comm_failed(r);
    if (unlink_files && (r->cfg->fpp || c->rank == 0) && ior_remove_file(r, c->rank, it, err) == 1)
        r->cleanup.removed++;
    if (c->barrier(c)) return comm_failed(r);
    if (c->rank == 0 && r->be->does_io) ior_forget_removed(r->cfg, r->nranks, it, err);
    return 0;
}

/* A run that failed (or was interrupted) still removes what it created, unless -k, so a Ctrl-C leaves no
 * test files behind. After a verification failure the files stay: they are the evidence. Either way the
 * ledger forgets the names of files the run meant to create and never did. The ranks reach this together
 * (they agreed on the error), unless the communicator itself broke. */
static void cleanup_after_failure(struct ior_run *r)
{
    struct iol_err e = {0, ""};
    int reps = r->cfg->multi_file ? (int)r->cfg->reps : 1;
    int unlink_files = !r->cfg->keep && !r->verify_failed;
    r->cleanup.state = unlink_files ? IOL_CLEANUP_PENDING : IOL_CLEANUP_KEPT;
    /* A launcher may kill the ranks soon after its signal (Open MPI's mpirun sends SIGKILL one second after
     * its SIGTERM): the document goes out first, saying the cleanup is pending, and is written again once
     * it is done. */
    if (unlink_files && iol_interrupt_pending() && r->comm->rank == 0) write_document(r, 1);
    for (int it = 0; it < reps; it++)
        if (remove_files(r, it, unlink_files, &e)) return;
    if (unlink_files) r->cleanup.state = IOL_CLEANUP_DONE;
}

/* -s -1: as many segments as the file to read holds (the smallest over the ranks, so none reads past
 * the end), as IOR does for the IO500 random-read phase. */
static int segments_from_file(struct ior_run *r)
{
    const struct ior_cfg *cfg = r->cfg;
    struct iol_comm *c = r->comm;
    int data_rank = (c->rank + r->read_rank_shift) % c->size;
    char p[IOL_STR_MAX + 64];
    ior_file_path(cfg, cfg->fpp ? data_rank : 0, 0, p, sizeof p);
    uint64_t segs = 1;
    struct stat st;
    if (r->err.code) {
        segs = 0;
    } else if (r->be->does_io) {
        if (r->be->stat(r->bctx, p, &st, &r->err)) segs = 0;
        else segs = (uint64_t)st.st_size / (cfg->block * (cfg->fpp ? 1 : (uint64_t)c->size));
    }
    if (c->allreduce(c, &segs, &segs, 1, IOL_DT_U64, IOL_OP_MIN)) return comm_failed(r);
    if (segs == 0 && !r->err.code)
        return iol_err_set(&r->err, IOL_ERR_USAGE, "-s -1: %s holds less than one segment of %llu bytes (-b)", p,
                           (unsigned long long)cfg->block);
    r->segments = (int64_t)segs;
    return r->err.code ? -1 : 0;
}

static int setup(struct ior_run *r)
{
    const struct ior_cfg *cfg = r->cfg;
    struct iol_comm *c = r->comm;
    r->nranks = c->size;
    r->be = iol_backend_find(cfg->api);
    r->qd = (int)cfg->queue_depth;
    r->xfers_per_block = cfg->block / cfg->xfer;
    /* No early return before segments_from_file: it is collective, every rank must reach it. */
    struct iol_backend_opts bo;
    memset(&bo, 0, sizeof bo);
    if (r->be->needs_mpi) {
        bo.mpi.comm = iol_comm_mpi_handle(c);
        bo.mpi.file_per_proc = cfg->fpp;
        bo.mpi.collective = cfg->collective;
        bo.mpi.file_view = cfg->file_view;
        bo.mpi.preallocate = cfg->preallocate;
        bo.mpi.strided_datatype = cfg->strided_datatype;
        bo.mpi.hints_file = cfg->hints_file;
        bo.mpi.show_hints = cfg->show_hints;
        bo.mpi.hints_out = c->rank == 0 && cfg->show_hints ? r->text : NULL;
        bo.mpi.xfer = cfg->xfer;
        bo.mpi.block = cfg->block;
        bo.mpi.segments = cfg->segments;
        bo.mpi.nranks = c->size;
        r->lockstep = r->be->collective_open && !cfg->fpp;
        bo.hdf5.alignment = cfg->hdf5_alignment;
        bo.hdf5.no_fill = cfg->hdf5_no_fill;
        bo.hdf5.collective_metadata = cfg->hdf5_collective_metadata;
    }
    bo.mmap_advice = (cfg->mmap_madv_pattern ? IOL_MMAP_MADV_PATTERN : 0) | (cfg->random ? IOL_MMAP_RANDOM : 0) |
                     (cfg->mmap_madv_dont_need ? IOL_MMAP_MADV_DONT_NEED : 0);
    iol_backend_ctx_open(r->be, &r->bctx, r->qd, &bo, &r->err);
    r->tasks_per_node = cfg->tasks_per_node > 0 ? (int)cfg->tasks_per_node : c->tasks_per_node;
    /* IOR's -C: read the data of a rank on another node. One node away is tasks-on-node-0 ranks when ranks
     * fill a node before the next (block mapping), 1 rank when they go round-robin over the nodes; reads
     * move Q nodes away, the -W check pass two (as IOR's). */
    int node_step = c->block_mapping ? r->tasks_per_node : 1;
    r->read_rank_shift = cfg->reorder ? (int)(((int64_t)node_step * cfg->task_offset) % r->nranks) : 0;
    r->check_rank_shift = cfg->reorder ? (int)(((int64_t)node_step * 2) % r->nranks) : 0;
    r->segments = cfg->segments;
    if (r->segments < 0) segments_from_file(r);
    if (r->err.code) return -1;
    r->pairs_total = (uint64_t)r->segments * r->xfers_per_block;
    char dir[IOL_STR_MAX], base[IOL_STR_MAX];
    ior_split_path(cfg->path, dir, sizeof dir, base, sizeof base);
    snprintf(r->fs_type, sizeof r->fs_type, "%s", r->be->does_io ? iol_fs_type(dir) : "none");

    r->bufs = calloc((size_t)r->qd, sizeof *r->bufs);
    r->reqs = calloc((size_t)r->qd, sizeof *r->reqs);
    r->done = calloc((size_t)r->qd, sizeof *r->done);
    r->pats = calloc((size_t)r->qd, sizeof *r->pats);
    r->pkts = calloc((size_t)r->qd, sizeof *r->pkts);
    if (c->rank == 0 && cfg->reorder_random) r->read_shift_log = calloc((size_t)r->nranks, sizeof *r->read_shift_log);
    if (c->rank == 0 && cfg->reorder_random) r->read_shift_n = r->nranks;
    if (!r->bufs || !r->reqs || !r->done || !r->pats || !r->pkts || (c->rank == 0 && cfg->reorder_random && !r->read_shift_log))
        return iol_err_set(&r->err, IOL_ERR_RUNTIME, "out of memory");
    /* -l and -G: the packet IOR would write; the signature is -G's value as IOR's 32-bit unsigned. */
    r->packet = iol_packet_parse(cfg->packet);
    r->sig = (uint32_t)cfg->seed;
    if (ior_hog_memory(r)) return -1;
    for (int i = 0; i < r->qd; i++) {
        size_t len = (cfg->xfer + IOL_DIRECT_ALIGN - 1) / IOL_DIRECT_ALIGN * IOL_DIRECT_ALIGN;
        if (posix_memalign(&r->bufs[i], IOL_DIRECT_ALIGN, len) != 0)
            return iol_err_set(&r->err, IOL_ERR_RUNTIME, "cannot allocate %zu bytes for a transfer buffer", len);
        memset(r->bufs[i], 0, len);
    }
    /* Backends that can pin buffers (io_uring's fixed buffers) get them once, here; the others have no
     * such entry. A backend that declines still takes the same buffers, only the slower way. */
    if (r->be->register_buffers) {
        size_t len = (cfg->xfer + IOL_DIRECT_ALIGN - 1) / IOL_DIRECT_ALIGN * IOL_DIRECT_ALIGN;
        if (r->be->register_buffers(r->bctx, r->bufs, r->qd, len, &r->err) < 0) return -1;
    }
    if (c->rank == 0) {
        r->phases = calloc((size_t)cfg->reps * 2, sizeof *r->phases);
        r->remove_s = calloc((size_t)cfg->reps, sizeof *r->remove_s);
        if (!r->phases || !r->remove_s) return iol_err_set(&r->err, IOL_ERR_RUNTIME, "out of memory");
    }
    return 0;
}

static void teardown(struct ior_run *r)
{
    if (r->bctx) r->be->ctx_close(r->bctx);
    for (int i = 0; r->bufs && i < r->qd; i++) free(r->bufs[i]);
    free(r->bufs);
    free(r->reqs);
    free(r->done);
    free(r->pats);
    free(r->pkts);
    free(r->read_shift_log);
    free(r->hog);
    for (int i = 0; i < r->nphases; i++) {
        free(r->phases[i].rank_bytes);
        free(r->phases[i].rank_ops);
        free(r->phases[i].rank_xfer_s);
        free(r->phases[i].rank_pairs_at_deadline);
        free(r->phases[i].rank_total_s);
    }
    free(r->phases);
    free(r->remove_s);
}

/* A non-zero verification count fails the run, as a silent data error is the worst result a benchmark
 * can give. */
static void verification_verdict(struct ior_run *r)
{
    for (int i = 0; i < r->nphases && !r->err.code; i++) {
        const struct ior_verify *v = &r->phases[i].verify;
        if (v->errors)
            iol_err_set(&r->err, IOL_ERR_RUNTIME,
                        "%s check, iteration %d: %" PRIu64 " bytes differ from what was written; first at offset %"
                        PRId64 " (data of rank %d)%s", r->phases[i].name, r->phases[i].iteration, v->errors,
                        v->first_bad_offset, v->first_bad_rank, r->cfg->keep ? "" : "; the files are kept for inspection");
        if (r->err.code) {
            r->err_rank = v->first_bad_rank;
            r->err_phase = strcmp(r->phases[i].name, "write") == 0 ? "write-check" : "read-check";
        }
    }
}

/* The document (--json). IOR's own layouts (-O summaryFormat, summaryFile) are written from it by `iolens
 * ior` (python/iolens/report/ior_classic.py). `early`: written before the cleanup of a cut-short run (and
 * rewritten after it). */
static void write_document(struct ior_run *r, int early)
{
    const char *path = r->info->json_path[0] ? r->info->json_path : NULL;
    if (!path || (early && strcmp(path, "-") == 0)) return;
    struct iol_doc d;
    struct iol_err e = {0, ""};
    if (iol_doc_open(&d, path, &e) == 0) {
        iol_doc_header(&d.json, "ior", r->info, r->comm, r->nranks);
        ior_report_json(&d.json, r);
        ior_flags_json(&d.json, r);
        iol_doc_cleanup(&d.json, &r->cleanup);
        iol_doc_status(&d.json, &r->err, r->err_rank, r->err.code ? r->err_phase : NULL);
        iol_doc_commit(&d, &e);
    }
    if (e.code) fprintf(stderr, "iolens-bench: error: %s\n", e.msg);
}

int ior_run(const struct ior_cfg *cfg, struct iol_comm *comm, const struct iol_run_info *info)
{
    struct ior_run run;
    struct ior_run *r = &run;
    memset(r, 0, sizeof *r);
    r->comm = comm;
    r->info = info;
    r->err_rank = -1;
    r->start_ns = iol_now_ns();
    /* -y: this process's files live under the mount point of its socket (IOR's <-o><socket>/data). */
    struct ior_cfg *own = NULL;
    if (cfg->dual_mount && (own = malloc(sizeof *own)) != NULL) {
        *own = *cfg;
        ior_dual_mount_path(own);
        cfg = own;
    }
    r->cfg = cfg;

    FILE *text = NULL;
    if (comm->rank == 0 && !info->quiet) text = stdout;
    r->text = text;

    if (iol_comm_setup(comm, &r->err) == 0) setup(r);
    r->err_phase = "setup";
    int failed = agree(r);

    if (text) ior_report_text_begin(text, r);

    /* --remove-only: the files iolens created under -o's names, for a run that kept them with -k or was
     * killed: every name the ledger lists, whatever rank count or layout made it (ior_remove_listed). */
    if (!failed && cfg->remove_only) {
        r->err_phase = "cleanup";
        if (comm->rank == 0 && r->be->does_io)
            ior_remove_listed(cfg, &r->cleanup.removed, &r->cleanup.missing, &r->err);
        r->cleanup.state = IOL_CLEANUP_DONE;
        if (text && !r->err.code)
            fprintf(text, "\nRemoved %" PRIu64 " file(s) iolens had created at %s; %" PRIu64 " listed file(s) were "
                    "already gone (skipped)\n", r->cleanup.removed, cfg->path, r->cleanup.missing);
        agree(r);
    }
    for (int it = 0; !failed && !cfg->remove_only && it < cfg->reps; it++) {
        if (cfg->write && do_write(r, it, text)) break;
        if (cfg->read && do_read(r, it, text)) break;
        if (!cfg->keep && !r->verify_failed) {
            /* Timed as IOR's "remove" line: from before the first barrier to after the last. */
            uint64_t t0 = iol_now_ns();
            if (remove_files(r, it, 1, &r->err) || agree(r)) break;
            if (r->remove_s) r->remove_s[r->nremoves++] = (double)(iol_now_ns() - t0) / 1e9;
        }
    }
    failed = r->err.code != 0;
    if (failed && r->files_may_exist && r->be->does_io) cleanup_after_failure(r);
    /* Files removed by every rank, for the document. */
    if (r->cleanup.state != IOL_CLEANUP_NONE && !cfg->remove_only) {
        uint64_t n = r->cleanup.removed;
        if (comm->allreduce(comm, &n, &r->cleanup.removed, 1, IOL_DT_U64, IOL_OP_SUM)) r->cleanup.removed = n;
    } else if (!cfg->keep && !failed && !cfg->remove_only && r->be->does_io) {
        uint64_t n = r->cleanup.removed;
        if (comm->allreduce(comm, &n, &r->cleanup.removed, 1, IOL_DT_U64, IOL_OP_SUM) == 0)
            r->cleanup.state = IOL_CLEANUP_DONE;
    }
    if (comm->rank == 0) {
        verification_verdict(r);
        if (text) ior_report_text_end(text, r);
        write_document(r, 0);
        if (r->err.code) fprintf(stderr, "iolens-bench: error: %s\n", r->err.msg);
    }
    int status = r->err.code ? r->err.code : IOL_OK;
    /* Every rank returns the job's status, so a launcher sees the same exit code from all of them. */
    int64_t s = status, worst = status;
    if (comm->allreduce(comm, &s, &worst, 1, IOL_DT_I64, IOL_OP_MAX) == 0) status = (int)worst;
    teardown(r);
    free(own);
    return status;
}
