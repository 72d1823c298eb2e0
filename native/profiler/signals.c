/* signals.c — recording that a signal ended the process (flag 2, the signal, end_ns) without changing what
 * the program sees or does.
 *
 * For each signal whose default action ends the process and whose disposition is the default, the runtime
 * installs a handler; the program, through the wrapped sigaction/signal family, still sees (and sets) its
 * own disposition: while it leaves a signal at SIG_DFL the runtime's handler stands in, reporting the
 * disposition the program last set; when it sets a handler or SIG_IGN, that goes to the kernel and the
 * runtime steps aside; setting SIG_DFL again brings the runtime's handler back. The handler records, restores
 * the default action and lets the signal act: a fault (SIGSEGV from a bad access) by returning to the
 * faulting instruction, which faults again; any other by re-sending the signal to the thread with it
 * unblocked, so the process ends inside the handler and never returns to code that would see an EINTR.
 * The exit status the parent sees is the same: killed by that signal, with a core dump if the default makes
 * one. exec resets handled signals to the default, as it would have been. SIGKILL cannot be caught: the log
 * of a killed process simply has no end flag. */
#include "wrap.h"
#include "sys.h"

#include <signal.h>
#include <string.h>

static const int fatal_signals[] = { SIGHUP,  SIGINT,  SIGQUIT,   SIGILL,  SIGTRAP, SIGABRT, SIGBUS, SIGFPE,
                                     SIGUSR1, SIGSEGV, SIGUSR2,   SIGPIPE, SIGALRM, SIGTERM, SIGXCPU,
                                     SIGXFSZ, SIGVTALRM, SIGPROF, SIGIO, SIGSYS,
#ifdef SIGSTKFLT
                                     SIGSTKFLT,
#endif
#ifdef SIGPWR
                                     SIGPWR,
#endif
};

#define NSIGS 65
static struct {
    uint8_t managed; /* a signal whose default ends the process */
    uint8_t ours;    /* the kernel has the runtime's handler; the program's disposition is `view` */
    struct sigaction view;
} sigs[NSIGS];
static struct iol_lock sig_lock;
/* The runtime's handler as the signal() family reports a previous handler (the same word, read through the
 * sa_handler side of the union: no cast between function types). */
static __sighandler_t ours_as_handler;

static int is_fault(int sig)
{
    return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGTRAP || sig == SIGSYS;
}

static void on_fatal(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    int saved = errno;
    if (__atomic_load_n(&iol_g.on, __ATOMIC_ACQUIRE) && iol_sys_getpid() == iol_g.pid) {
        struct iolp_header *h = iol_g.hdr;
        h->exit_signal = sig;
        h->end_ns = iol_ns(iol_g.clk.base, iol_ticks());
        iol_log_set_flag(IOLP_SIGNALED);
    }
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    iol_real.sigaction(sig, &dfl, NULL);
    if (is_fault(sig) && si != NULL && si->si_code > 0) { /* raised by the instruction: it runs again */
        errno = saved;
        return;
    }
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &one, NULL, _NSIG / 8);
    syscall(SYS_tgkill, iol_sys_getpid(), iol_sys_gettid(), sig);
    errno = saved;
}

static void our_action(struct sigaction *sa)
{
    memset(sa, 0, sizeof *sa);
    sa->sa_sigaction = on_fatal;
    sa->sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa->sa_mask);
}

void iol_signals_init(void)
{
    struct sigaction ours;
    our_action(&ours);
    ours_as_handler = ours.sa_handler;
    for (size_t i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++) {
        int s = fatal_signals[i];
        struct sigaction cur;
        if (s <= 0 || s >= NSIGS || iol_real.sigaction(s, NULL, &cur) != 0)
            continue;
        sigs[s].managed = 1;
        if (cur.sa_handler == SIG_DFL && iol_real.sigaction(s, &ours, NULL) == 0) {
            sigs[s].view = cur;
            sigs[s].ours = 1;
        }
    }
}

/* The lock orders the program's threads. The signal mask is left alone (sigset reads and changes it), so a
 * handler that calls sigaction on a thread already inside this code goes ahead without the lock rather than
 * wait for itself. */
static __thread int sig_depth __attribute__((tls_model("initial-exec")));

/* A fork child: whatever thread held the lock does not exist there. */
void iol_signals_after_fork(void)
{
    sig_lock.v = 0;
}

static void enter(void)
{
    if (sig_depth++ == 0)
        iol_lock(&sig_lock);
}

static void leave(void)
{
    if (--sig_depth == 0)
        iol_unlock(&sig_lock);
}

/* After the kernel took the program's SIG_DFL (with its flags and mask): remember that as the view and put
 * the runtime's handler in its place. */
static void stand_in(int sig)
{
    struct sigaction ours;
    our_action(&ours);
    if (iol_real.sigaction(sig, NULL, &sigs[sig].view) == 0 && iol_real.sigaction(sig, &ours, NULL) == 0)
        sigs[sig].ours = 1;
}

IOL_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (sig <= 0 || sig >= NSIGS || !sigs[sig].managed)
        return IOL_REAL(sigaction)(sig, act, old);
    enter();
    struct sigaction prev, now;
    int r = 0, e = errno;
    if (act == NULL) {
        if (sigs[sig].ours)
            prev = sigs[sig].view;
        else if ((r = iol_real.sigaction(sig, NULL, &prev)) != 0)
            e = errno;
    } else {
        now = *act; /* act and old may be the same struct */
        int was_ours = sigs[sig].ours;
        if ((r = iol_real.sigaction(sig, &now, &prev)) != 0) {
            e = errno;
        } else {
            if (was_ours)
                prev = sigs[sig].view;
            sigs[sig].ours = 0;
            if (now.sa_handler == SIG_DFL)
                stand_in(sig);
        }
    }
    leave();
    if (r == 0 && old != NULL)
        *old = prev;
    errno = e;
    return r;
}

/* signal, sysv_signal, bsd_signal, sigset: the C library sets the disposition its way; the runtime only
 * reports the program's previous one and stands in again for SIG_DFL. */
static __sighandler_t signal_like(__sighandler_t (*real)(int, __sighandler_t), int sig, __sighandler_t h)
{
    if (sig <= 0 || sig >= NSIGS || !sigs[sig].managed || real == NULL)
        return real != NULL ? real(sig, h) : SIG_ERR;
    enter();
    int was_ours = sigs[sig].ours;
    __sighandler_t prev = real(sig, h);
    int e = errno;
    if (prev != SIG_ERR && was_ours && (prev == ours_as_handler || h != SIG_HOLD)) {
        if (prev == ours_as_handler)
            prev = sigs[sig].view.sa_handler;
        if (h != SIG_HOLD) {
            sigs[sig].ours = 0;
            if (h == SIG_DFL)
                stand_in(sig);
        }
    } else if (prev != SIG_ERR && h == SIG_DFL) {
        stand_in(sig);
    }
    leave();
    errno = e;
    return prev;
}

IOL_EXPORT __sighandler_t signal(int sig, __sighandler_t h)
{
    return signal_like(IOL_REAL(signal), sig, h);
}

IOL_EXPORT __sighandler_t sysv_signal(int sig, __sighandler_t h)
{
    return signal_like(IOL_REAL(sysv_signal), sig, h);
}

IOL_EXPORT __sighandler_t __sysv_signal(int sig, __sighandler_t h)
{
    return signal_like(IOL_REAL(__sysv_signal), sig, h);
}

IOL_EXPORT __sighandler_t bsd_signal(int sig, __sighandler_t h)
{
    return signal_like(IOL_REAL(bsd_signal), sig, h);
}

IOL_EXPORT __sighandler_t sigset(int sig, __sighandler_t h)
{
    return signal_like(IOL_REAL(sigset), sig, h);
}
