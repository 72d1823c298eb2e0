/* wrap_exit.c — how a process ends. exit() and a return from main give the exit status (main is reached
 * through __libc_start_main, the one call every dynamically linked program makes before main); the
 * destructor then ends the log cleanly. _exit and _Exit run no destructors: they end the log themselves. */
#include "wrap.h"
#include "sys.h"

static iol_main_fn program_main;

static int main_returns(int argc, char **argv, char **envp)
{
    int r = program_main(argc, argv, envp);
    if (iol_sys_getpid() == iol_g.pid) {
        iol_g.exit_status = r;
        iol_g.exit_known = 1;
    }
    return r;
}

IOL_EXPORT int __libc_start_main(iol_main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                                 void (*rtld_fini)(void), void *stack_end)
{
    program_main = main;
    return IOL_REAL(__libc_start_main)(main_returns, argc, argv, init, fini, rtld_fini, stack_end);
}

IOL_EXPORT void exit(int status)
{
    if (__atomic_load_n(&iol_g.on, __ATOMIC_RELAXED) && iol_sys_getpid() == iol_g.pid) {
        iol_g.exit_status = status;
        iol_g.exit_known = 1;
    }
    IOL_REAL(exit)(status);
    __builtin_unreachable();
}

/* Not when the thread was inside the runtime (a signal handler calling _exit): the log stays raw then, as
 * ending it could wait on a lock the interrupted code holds. iol_finish ignores a vfork child. */
IOL_EXPORT void _exit(int status)
{
    if (iol_tls.guard != IOL_GUARD_IN)
        iol_finish(status, 1);
    IOL_REAL(_exit)(status);
    __builtin_unreachable();
}

IOL_EXPORT void _Exit(int status)
{
    if (iol_tls.guard != IOL_GUARD_IN)
        iol_finish(status, 1);
    IOL_REAL(_Exit)(status);
    __builtin_unreachable();
}
