/* procs.c — new processes and new images: fork, _Fork, vfork, clone, posix_spawn(p), the exec family.
 *
 * Every process writes its own log; a log's parent_log names the log of the process that started it:
 *   fork, _Fork, a fork-like clone: the child makes its log at once (the atfork handler, or here);
 *   exec: the old image's log ends with flag 4 and end_ns; the new image finds the old log's name in
 *     IOLENS_PARENT_LOG (the runtime keeps that variable naming its current log) — the exec'ing process
 *     cannot compress its log first, as a failed exec goes on writing to it: the successor does;
 *   posix_spawn, system(), popen(): the child inherits IOLENS_PARENT_LOG;
 *   vfork, a CLONE_VFORK clone: the child runs on the parent's memory until it execs or exits, so every call
 *     it makes passes through untouched (the thread is marked) and its exec only hands the parent's log name
 *     on; the parent, resumed, tells itself from the child by its pid.
 * An environment the program builds for a new image keeps whatever it says, plus IOLENS_PARENT_LOG and the
 * settings when it still preloads the runtime (iol_exec_env). */
#include "wrap.h"
#include "sys.h"

#include <sched.h>
#include <stdarg.h>
#include <string.h>

extern char **environ;

IOL_EXPORT pid_t fork(void)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(fork)();
    int *ep = &errno;
    uint64_t t0 = iol_t0(1);
    pid_t r = iol_real.fork();
    int e = *ep;
    if (r != 0) /* the child made its log in the atfork handler, and counts nothing of the fork */
        iol_acct_meta(t, &(struct iol_meta){ IOL_OP_FORK, -1, IOL_P_FORKS, 0, NULL, 0, 0, IOL_META_POSIX },
                      r < 0, iol_result(r, e), t0);
    *ep = e;
    iol_leave(t);
    return r;
}

/* glibc 2.34's async-signal-safe fork runs no atfork handlers. */
IOL_EXPORT pid_t _Fork(void)
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return IOL_REAL(_Fork)();
    int *ep = &errno;
    uint64_t t0 = iol_t0(1);
    pid_t r = iol_real._Fork();
    int e = *ep;
    if (r == 0)
        iol_after_fork_child();
    else
        iol_acct_meta(t, &(struct iol_meta){ IOL_OP_FORK, -1, IOL_P_FORKS, 0, NULL, 0, 0, IOL_META_POSIX },
                      r < 0, iol_result(r, e), t0);
    *ep = e;
    iol_leave(t);
    return r;
}

/* Called by the vfork entry (vfork_x86_64.S) before it jumps to the C library's vfork; returns where to jump.
 * A function cannot wrap vfork: the child would return through, and overwrite, the frame the parent resumes
 * in. */
void *iol_vfork_prepare(void)
{
    void *real = (void *)IOL_REAL(vfork);
    struct iol_thread *t = &iol_tls;
    if (t->guard == IOL_GUARD_VFORK && iol_enter_slow(t) != NULL) /* resumed after an earlier vfork */
        t->guard = 0;
    if (t->guard == 0 && __atomic_load_n(&iol_g.on, __ATOMIC_RELAXED)) {
        int saved = errno;
        t->guard = IOL_GUARD_IN;
        /* The parent resumes in the program, not here: the call's trace record is written before it, with
         * result 0 (as an exec's is). */
        uint64_t t0 = iol_t0(0);
        iol_acct_meta(t, &(struct iol_meta){ IOL_OP_FORK, -1, IOL_P_FORKS, 0, NULL, 0, 0, IOL_META_POSIX }, 0, 0, t0);
        t->guard = IOL_GUARD_VFORK;
        errno = saved;
    }
    return real;
}

struct clone_start {
    int (*fn)(void *);
    void *arg;
};

/* The first thing a fork-like clone child runs: its log, then the program's function. The child has a copy
 * of the parent's memory, this struct (on the parent's stack) included. When the function returns, the C
 * library ends the child with the exit system call (no destructors): the log is ended here. */
static int clone_child(void *p)
{
    struct clone_start s = *(struct clone_start *)p;
    iol_after_fork_child();
    iol_tls.guard = 0;
    int r = s.fn(s.arg);
    iol_finish(r, 1);
    return r;
}

IOL_EXPORT int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    void *ptid = va_arg(ap, void *), *tls = va_arg(ap, void *), *ctid = va_arg(ap, void *);
    va_end(ap);
    struct iol_thread *t = &iol_tls;
    int (*real)(int (*)(void *), void *, int, void *, ...) = IOL_REAL(clone);
    /* A thread (shared memory, no vfork wait) or a new TLS: not a process the runtime follows. */
    if (t->guard != 0 || !__atomic_load_n(&iol_g.on, __ATOMIC_RELAXED) ||
        ((flags & CLONE_VM) && !(flags & CLONE_VFORK)) || (flags & (CLONE_SETTLS | CLONE_THREAD)))
        return real(fn, stack, flags, arg, ptid, tls, ctid);
    int *ep = &errno;
    int saved = *ep;
    t->guard = IOL_GUARD_IN;
    uint64_t t0 = iol_t0(1);
    int r;
    if (flags & CLONE_VM) { /* CLONE_VFORK: we resume once the child has exec'ed or exited */
        t->guard = IOL_GUARD_VFORK;
        *ep = saved;
        r = real(fn, stack, flags, arg, ptid, tls, ctid);
    } else {
        struct clone_start s = { fn, arg };
        *ep = saved;
        r = real(clone_child, stack, flags, &s, ptid, tls, ctid);
    }
    int e = *ep;
    t->guard = IOL_GUARD_IN;
    iol_acct_meta(t, &(struct iol_meta){ IOL_OP_FORK, -1, IOL_P_FORKS, 0, NULL, 0, 0, IOL_META_POSIX },
                  r < 0, iol_result(r, e), t0);
    *ep = e;
    t->guard = 0;
    return r;
}

static int spawn(int (*real)(pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
                             char *const[], char *const[]),
                 pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *at,
                 char *const argv[], char *const envp[])
{
    struct iol_thread *t = iol_enter();
    if (t == NULL)
        return real(pid, path, fa, at, argv, envp);
    int *ep = &errno;
    int e0 = *ep;
    char *space[iol_env_count(envp) + 8];
    char *const *env = iol_exec_env(envp, space);
    pid_t child = 0;
    uint64_t t0 = iol_t0(1);
    *ep = e0;
    int r = real(&child, path, fa, at, argv, env);
    int e = *ep;
    if (pid != NULL && r == 0)
        *pid = child;
    iol_acct_meta(t, &(struct iol_meta){ IOL_OP_SPAWN, -1, IOL_P_SPAWNS, 0, NULL, 0, 0, IOL_META_POSIX }, r != 0,
                  r == 0 ? child : -(int64_t)r, t0);
    *ep = e;
    iol_leave(t);
    return r;
}

IOL_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                           const posix_spawnattr_t *at, char *const argv[], char *const envp[])
{
    return spawn(IOL_REAL(posix_spawn), pid, path, fa, at, argv, envp);
}

IOL_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                            const posix_spawnattr_t *at, char *const argv[], char *const envp[])
{
    return spawn(IOL_REAL(posix_spawnp), pid, file, fa, at, argv, envp);
}

/* ---- exec ---- */

struct exec_note {
    struct iol_thread *t; /* NULL: nothing recorded (a vfork child, or the runtime is off) */
    uint64_t t0;
    struct iolp_trace *event;
};

/* Before an exec: this log ends here, unless the exec fails (exec_failed undoes it). */
static struct exec_note exec_begin(void)
{
    struct exec_note n = { NULL, 0, NULL };
    struct iol_thread *t = &iol_tls;
    if (t->guard == IOL_GUARD_VFORK && iol_enter_slow(t) != NULL) /* a parent resumed after vfork */
        t->guard = 0;
    if (t->guard != 0 || !__atomic_load_n(&iol_g.on, __ATOMIC_RELAXED))
        return n; /* includes a vfork child: the parent's log is not ours to end */
    int saved = errno;
    t->guard = IOL_GUARD_IN;
    iol_compress_predecessor();
    n.t = t;
    n.t0 = iol_ticks();
    uint64_t *p = iol_proc(t);
    p[IOL_P_EXECS]++;
    n.event = iol_trace(t, IOL_OP_EXEC, 0, n.t0, n.t0, 0, 0, 0);
    iol_g.hdr->end_ns = iol_ns(iol_g.clk.base, n.t0);
    iol_log_set_flag(IOLP_EXECED);
    errno = saved;
    return n;
}

static void exec_failed(struct exec_note *n, int err)
{
    if (n->t == NULL)
        return;
    uint64_t t1 = iol_ticks();
    iol_log_clear_flag(IOLP_EXECED);
    iol_g.hdr->end_ns = 0;
    uint64_t *p = iol_proc(n->t);
    p[IOL_P_EXECS]--;
    p[IOL_P_ERRORS]++;
    p[IOL_P_META_TIME] += iol_ns(n->t0, t1);
    if (n->event != NULL) {
        n->event->dur_ns = iol_ns(n->t0, t1);
        n->event->result = -(int64_t)err;
    }
    iol_leave(n->t);
}

IOL_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    char *space[iol_env_count(envp) + 8];
    char *const *env = iol_exec_env(envp, space);
    struct exec_note n = exec_begin();
    int r = IOL_REAL(execve)(path, argv, env);
    int e = errno;
    exec_failed(&n, e);
    errno = e;
    return r;
}

IOL_EXPORT int execv(const char *path, char *const argv[])
{
    return execve(path, argv, environ);
}

IOL_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    char *space[iol_env_count(envp) + 8];
    char *const *env = iol_exec_env(envp, space);
    struct exec_note n = exec_begin();
    int r = IOL_REAL(execvpe)(file, argv, env);
    int e = errno;
    exec_failed(&n, e);
    errno = e;
    return r;
}

IOL_EXPORT int execvp(const char *file, char *const argv[])
{
    return execvpe(file, argv, environ);
}

IOL_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    char *space[iol_env_count(envp) + 8];
    char *const *env = iol_exec_env(envp, space);
    struct exec_note n = exec_begin();
    int r = IOL_REAL(fexecve)(fd, argv, env);
    int e = errno;
    exec_failed(&n, e);
    errno = e;
    return r;
}

IOL_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
    if (IOL_REAL(execveat) == NULL) {
        errno = ENOSYS;
        return -1;
    }
    char *space[iol_env_count(envp) + 8];
    char *const *env = iol_exec_env(envp, space);
    struct exec_note n = exec_begin();
    int r = iol_real.execveat(dirfd, path, argv, env, flags);
    int e = errno;
    exec_failed(&n, e);
    errno = e;
    return r;
}

/* execl, execlp, execle: the arguments into an array (on the stack: this may run in a vfork child). */
static size_t count_args(va_list ap)
{
    size_t n = 1;
    while (va_arg(ap, char *) != NULL)
        n++;
    return n;
}

IOL_EXPORT int execl(const char *path, const char *arg, ...)
{
    va_list ap, cp;
    va_start(ap, arg);
    va_copy(cp, ap);
    size_t n = count_args(cp);
    va_end(cp);
    char *argv[n + 1];
    argv[0] = (char *)arg;
    for (size_t i = 1; i <= n; i++)
        argv[i] = va_arg(ap, char *);
    va_end(ap);
    return execve(path, argv, environ);
}

IOL_EXPORT int execlp(const char *file, const char *arg, ...)
{
    va_list ap, cp;
    va_start(ap, arg);
    va_copy(cp, ap);
    size_t n = count_args(cp);
    va_end(cp);
    char *argv[n + 1];
    argv[0] = (char *)arg;
    for (size_t i = 1; i <= n; i++)
        argv[i] = va_arg(ap, char *);
    va_end(ap);
    return execvpe(file, argv, environ);
}

IOL_EXPORT int execle(const char *path, const char *arg, ...)
{
    va_list ap, cp;
    va_start(ap, arg);
    va_copy(cp, ap);
    size_t n = count_args(cp);
    va_end(cp);
    char *argv[n + 1];
    argv[0] = (char *)arg;
    for (size_t i = 1; i <= n; i++)
        argv[i] = va_arg(ap, char *);
    char *const *envp = va_arg(ap, char *const *);
    va_end(ap);
    return execve(path, argv, envp);
}
