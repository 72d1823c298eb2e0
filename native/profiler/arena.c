/* arena.c — the runtime's private memory: mmap'ed blocks handed out by bumping a pointer, never freed.
 *
 * Not malloc: a wrapper may run inside a signal handler (write, open and close are async-signal-safe and
 * programs call them there), and malloc is not. What the runtime keeps is small and lives as long as the
 * process: file entries (~100 bytes per path), descriptor state, per-thread tables. */
#include "rt.h"
#include "sys.h"

#include <sched.h>
#include <sys/mman.h>

#define BLOCK (256u << 10)

static struct iol_lock arena_lock;
static uint8_t *cur;
static size_t left;
static unsigned blocks; /* the first is not populated: most processes never fill it */

/* Bump blocks are populated: the runtime fills them a few bytes per new file, and a page fault per 4 KiB
 * would cost more than the filling. Big allocations (the hash table) are not: most of their pages may never
 * be touched. */
static void *map_block(size_t n, int populate)
{
    void *p = iol_sys_mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | (populate ? MAP_POPULATE : 0),
                           -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void *iol_alloc(size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (n > BLOCK / 4)
        return map_block((n + 4095) & ~(size_t)4095, 0);
    iol_lock(&arena_lock);
    if (n > left) {
        uint8_t *b = map_block(BLOCK, blocks++ > 0);
        if (b == NULL) {
            iol_unlock(&arena_lock);
            return NULL;
        }
        cur = b;
        left = BLOCK;
    }
    void *p = cur;
    cur += n;
    left -= n;
    iol_unlock(&arena_lock);
    return p;
}

/* Per-thread space taken from the arena 64 KiB at a time: the thread's file table pages and per-file state
 * are allocated without the lock. */
void *iol_thread_alloc(struct iol_thread *t, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (n > 16384)
        return iol_alloc(n);
    if (n > t->bump_left) {
        uint8_t *b = iol_alloc(65536);
        if (b == NULL)
            return NULL;
        t->bump = b;
        t->bump_left = 65536;
    }
    void *p = t->bump;
    t->bump += n;
    t->bump_left -= n;
    return p;
}

void iol_arena_after_fork(void)
{
    arena_lock.v = 0;
}

void iol_lock_slow(struct iol_lock *l)
{
    for (unsigned spins = 0;; spins++) {
        if (__atomic_load_n(&l->v, __ATOMIC_RELAXED) == 0 && !__atomic_exchange_n(&l->v, 1, __ATOMIC_ACQUIRE))
            return;
        if (spins >= 64) {
            sched_yield();
            spins = 0;
        } else {
#if defined(__x86_64__)
            __builtin_ia32_pause();
#endif
        }
    }
}
