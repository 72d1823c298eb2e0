/* trace.c — one TRACE record per call (IOLENS_TRACE=1), appended to the thread's own chunk.
 *
 * A full chunk is unmapped (its records are in the file) and the thread takes a new one, so the process's
 * memory stays bounded while the log grows. When the log cannot grow (file system full, address space
 * exhausted), the event is counted in trace_dropped and flag 16 is set: never lost silently. */
#include "wrap.h"

static void dropped(void)
{
    uint64_t n = __atomic_add_fetch(&iol_g.hdr->trace_dropped, 1, __ATOMIC_RELAXED);
    if (n == 1)
        iol_log_set_flag(IOLP_TRACE_CUT);
}

static struct iolp_chunk *next_chunk(struct iol_thread *t)
{
    /* After a failure, try again only every 1024 events: growing a full file system costs a syscall. */
    static uint64_t fail_at;
    uint64_t lost = __atomic_load_n(&iol_g.hdr->trace_dropped, __ATOMIC_RELAXED);
    if (lost != 0 && lost - __atomic_load_n(&fail_at, __ATOMIC_RELAXED) < 1024)
        return NULL;
    iol_proc(t);
    iol_lock(&iol_g.lock);
    struct iolp_chunk *c = iol_chunk_new(IOLP_TRACE, t->index - 1, sizeof(struct iolp_trace));
    iol_unlock(&iol_g.lock);
    if (c == NULL) {
        __atomic_store_n(&fail_at, lost, __ATOMIC_RELAXED);
        return NULL;
    }
    if (t->trace != NULL)
        iol_chunk_release(t->trace);
    t->trace = c;
    return c;
}

struct iolp_trace *iol_trace_add(struct iol_thread *t, int op, uint32_t file_id, uint64_t t0, uint64_t t1, uint64_t off,
               uint64_t size, int64_t result)
{
    struct iolp_chunk *c = t->trace;
    if (c == NULL || c->used + sizeof(struct iolp_trace) > IOLP_CHUNK_ROOM) {
        c = next_chunk(t);
        if (c == NULL) {
            dropped();
            return NULL;
        }
    }
    struct iolp_trace *e = (struct iolp_trace *)((uint8_t *)c + IOLP_CHUNK_HEAD + c->used);
    e->start_ns = iol_ns(iol_g.clk.base, t0);
    e->dur_ns = iol_ns(t0, t1);
    e->offset = off;
    e->size = size;
    e->file_id = file_id;
    e->op = (uint16_t)op;
    e->thread = (uint16_t)(t->index - 1);
    e->result = result;
    __atomic_store_n(&c->used, c->used + sizeof *e, __ATOMIC_RELEASE);
    return e;
}
