/* aside.c — the runtime's own file work, done where the program cannot see it.
 *
 * The runtime needs descriptors now and then: to create and grow its log (fallocate and mmap need one), to
 * compress it at the end, to read the mount table, to append to the debug file. A descriptor in the
 * program's table is visible however it is placed: it answers fcntl, shows in /proc/self/fd, takes a number
 * under a low RLIMIT_NOFILE (shifting every number the program gets after it), meets close_range and dup2,
 * and while it is open another thread's open() gets another number or EMFILE.
 *
 * So this work runs on a short-lived thread with a descriptor table of its own: the thread shares the
 * process's memory (a mapping it makes is the process's), empties its own table at once
 * (close_range(CLOSE_RANGE_UNSHARE) copies none of the program's descriptors), does the work, closes what it
 * opened and exits. The calling thread waits for it to end (a futex the kernel clears at its exit) with every
 * signal blocked, so the helper is never chosen to run a handler of the program, and nothing of the program
 * runs on the calling thread meanwhile.
 * Nothing is left open: the log lives in its mappings only.
 *
 * The helper runs on the caller's thread-local storage (no CLONE_SETTLS): the caller is stopped, so the
 * helper is, for that time, the same thread to the runtime (its guard is set: wrapped calls pass through).
 * Cost: one thread creation, ~20 us, when the log grows by a window of chunks (not per call), at start, at
 * exit, and once for the mount table. */
#include "rt.h"
#include "sys.h"

#include <errno.h>
#include <linux/futex.h>
#include <linux/close_range.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>

#include "real.h"

#define STACK_SIZE (256u << 10)
#define GUARD_SIZE 4096u

static struct iol_lock aside_lock;
static uint8_t *stack_top;

struct aside_call {
    int (*fn)(void *);
    void *arg;
    int rc;
};

static int helper(void *p)
{
    struct aside_call *c = p;
    /* A table of its own, empty. Before Linux 5.9 (no CLOSE_RANGE_UNSHARE), unshare gives a private copy:
     * numbers the helper takes there are still not the program's. Without either it does nothing. */
    if (syscall(SYS_close_range, 0u, ~0u, CLOSE_RANGE_UNSHARE) != 0 && syscall(SYS_unshare, CLONE_FILES) != 0) {
        c->rc = -ENOSYS;
        return 0;
    }
    c->rc = c->fn(c->arg);
    return 0;
}

/* A system call that never touches errno: the helper runs on this thread's storage, errno included, and
 * must not see it change while it works. (The runtime is built for x86_64 only.) */
static inline long raw_futex_wait(int *addr, int val)
{
    long r;
    register long r10 __asm__("r10") = 0; /* no timeout */
    __asm__ volatile("syscall"
                     : "=a"(r)
                     : "0"((long)SYS_futex), "D"(addr), "S"((long)FUTEX_WAIT), "d"((long)val), "r"(r10)
                     : "rcx", "r11", "memory");
    return r;
}

/* The helper's flags: a thread as a threads library makes one (the form tools such as valgrind support),
 * less CLONE_SETTLS. The kernel writes its id at *tid before it runs and clears it (and wakes a futex
 * waiter) when it exits. */
#define HELPER_FLAGS \
    (CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM | CLONE_PARENT_SETTID | \
     CLONE_CHILD_CLEARTID)

int iol_aside(int (*fn)(void *), void *arg)
{
    struct iol_thread *t = &iol_tls;
    if (t->aside) /* already on the helper (fn called iol_debug) */
        return fn(arg);
    int saved = errno;
    iol_lock(&aside_lock);
    if (stack_top == NULL) {
        uint8_t *s = iol_sys_mmap(NULL, STACK_SIZE + GUARD_SIZE, PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (s == MAP_FAILED) {
            iol_unlock(&aside_lock);
            errno = saved;
            return -ENOMEM;
        }
        syscall(SYS_mprotect, s, GUARD_SIZE, PROT_NONE); /* an overflow faults instead of writing below */
        stack_top = s + STACK_SIZE + GUARD_SIZE;
    }
    struct aside_call c = { fn, arg, -ENOSYS };
    uint64_t all = ~(uint64_t)0, old = 0;
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &old, sizeof all);
    t->aside = 1;
    int tid_word = 0;
    int tid = iol_real.clone(helper, stack_top, HELPER_FLAGS, &c, &tid_word, NULL, &tid_word);
    int e = errno;
    if (tid > 0) {
        /* From here until the helper is gone this thread touches neither its storage nor its stack
         * frame's neighbours: only the raw futex wait. */
        int v;
        while ((v = __atomic_load_n(&tid_word, __ATOMIC_ACQUIRE)) != 0)
            raw_futex_wait(&tid_word, v);
    }
    t->aside = 0;
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, sizeof old);
    iol_unlock(&aside_lock);
    errno = saved;
    return tid < 0 ? -e : c.rc;
}

void iol_aside_after_fork(void)
{
    aside_lock.v = 0;
    iol_tls.aside = 0;
}
