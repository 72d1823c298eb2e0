/* runtime.c — start-up (the constructor), the settings read from the environment, and what the runtime
 * passes on to the processes it starts.
 *
 * Environment, read once at start:
 *   IOLENS_PROFILE_DIR       where logs go (default: the working directory at start; exported, absolute,
 *                            so that children which change directory log to the same place)
 *   IOLENS_TRACE=1           also write a TRACE record per call
 *   IOLENS_PROFILE_EXCLUDE   comma-separated path prefixes not recorded (default /proc,/sys,/dev but not
 *                            /dev/shm); the profile directory is always excluded
 *   IOLENS_PROFILE_DEBUG     a file the runtime appends its own error messages to (nothing is ever written
 *                            to the program's stdout or stderr)
 *   SLURM_JOB_ID, PBS_JOBID, LSB_JOBID, else IOLENS_JOB_ID, else an MPI launcher's PMIX_NAMESPACE or
 *                            OMPI_MCA_ess_base_jobid ("mpi-ID"), else one the first process generates
 *   OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK, SLURM_PROCID: the rank
 *   IOLENS_PARENT_LOG        the log of the process that started this one (set by the runtime itself) */
#include "wrap.h"
#include "sys.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct iol_rt iol_g = { .rank = -1 };

/* Variables the runtime puts in its own environment (putenv: the strings are part of environ, so a fork
 * child updates its IOLENS_PARENT_LOG in place, without allocating). */
static char env_parent[300] = "IOLENS_PARENT_LOG=";
#define ENV_PARENT_PREFIX 18
static char env_job[128] = "IOLENS_JOB_ID=";
static char env_dir[PATH_MAX + 32] = "IOLENS_PROFILE_DIR=";

/* The IOLENS_* settings as NAME=value, handed to new images whose environment lacks them (execve with an
 * environment of the program's making that still preloads the runtime). */
#define N_SETTINGS 5
static const char *const setting_names[N_SETTINGS] = { "IOLENS_JOB_ID", "IOLENS_PROFILE_DIR", "IOLENS_TRACE",
                                                        "IOLENS_PROFILE_EXCLUDE", "IOLENS_PROFILE_DEBUG" };
static char *settings[N_SETTINGS];
static char lib_name[256] = "iolens-profile";

char *iol_env_parent(void)
{
    return env_parent;
}

static void copy_setting(int i)
{
    const char *v = getenv(setting_names[i]);
    if (v == NULL)
        return;
    size_t n = strlen(setting_names[i]), m = strlen(v);
    char *s = iol_alloc(n + m + 2);
    if (s == NULL)
        return;
    memcpy(s, setting_names[i], n);
    s[n] = '=';
    memcpy(s + n + 1, v, m + 1);
    settings[i] = s;
}

/* Whether envp loads the runtime (LD_PRELOAD names this library). */
static int preloads_runtime(char *const envp[])
{
    for (char *const *e = envp; *e != NULL; e++)
        if (strncmp(*e, "LD_PRELOAD=", 11) == 0)
            return strstr(*e + 11, lib_name) != NULL;
    return 0;
}

size_t iol_env_count(char *const envp[])
{
    size_t n = 0;
    while (envp != NULL && envp[n] != NULL)
        n++;
    return n;
}

/* The environment of a new image: envp itself, or (when it preloads the runtime but does not carry this
 * process's IOLENS_PARENT_LOG) a copy in space[] with it, and with the settings it lacks. space holds
 * iol_env_count(envp) + N_SETTINGS + 2 entries. Uses no memory but space: it runs in vfork children. */
char *const *iol_exec_env(char *const envp[], char **space)
{
    if (envp == NULL || !preloads_runtime(envp))
        return envp;
    int have[N_SETTINGS] = { 0 };
    size_t k = 0;
    for (char *const *e = envp; *e != NULL; e++) {
        if (*e == env_parent)
            return envp; /* our own environ, already right */
        if (strncmp(*e, env_parent, ENV_PARENT_PREFIX) == 0)
            continue;
        for (int i = 0; i < N_SETTINGS; i++) {
            size_t n = strlen(setting_names[i]);
            if (strncmp(*e, setting_names[i], n) == 0 && (*e)[n] == '=')
                have[i] = 1;
        }
        space[k++] = *e;
    }
    space[k++] = env_parent;
    for (int i = 0; i < N_SETTINGS; i++)
        if (!have[i] && settings[i] != NULL)
            space[k++] = settings[i];
    space[k] = NULL;
    return space;
}

static void sanitize(char *dst, const char *src, size_t cap)
{
    size_t i = 0;
    for (; src[i] != '\0' && i + 1 < cap; i++)
        dst[i] = (src[i] == '/' || src[i] == ' ' || src[i] == '\n' || src[i] == '\t') ? '_' : src[i];
    dst[i] = '\0';
}

/* The id an MPI launcher gives the ranks of one launch: PMIx's namespace (Open MPI 4 and 5, PRRTE, srun
 * --mpi=pmix), else Open MPI's own job id (its ORTE launches without PMIx). NULL when neither is set. */
static const char *mpi_launch_id(void)
{
    static const char *const vars[] = { "PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid" };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v != NULL && v[0] != '\0')
            return v;
    }
    return NULL;
}

static void set_job_id(void)
{
    static const char *const sched[] = { "SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID", "IOLENS_JOB_ID" };
    const char *id = NULL, *from = NULL;
    for (size_t i = 0; i < sizeof sched / sizeof sched[0] && id == NULL; i++) {
        const char *v = getenv(sched[i]);
        if (v != NULL && v[0] != '\0')
            id = v, from = sched[i];
    }
    /* The tasks of an LSF job array share LSB_JOBID and differ by LSB_JOBINDEX (0 outside an array): the job
     * id is then LSF's own "ID[INDEX]", so that tasks do not merge. (A Slurm array task has a SLURM_JOB_ID of
     * its own; a PBS subjob's PBS_JOBID holds its index.) */
    const char *index = getenv("LSB_JOBINDEX");
    if (id != NULL && strcmp(from, "LSB_JOBID") == 0 && index != NULL && index[0] != '\0' && strcmp(index, "0") != 0) {
        snprintf(iol_g.job_id, sizeof iol_g.job_id, "%s[%s]", id, index);
    } else if (id != NULL) {
        iol_strlcpy(iol_g.job_id, id, sizeof iol_g.job_id);
    } else if ((id = mpi_launch_id()) != NULL) {
        /* Ranks an MPI launcher started outside a batch system (`mpirun -x LD_PRELOAD=...`, as Darshan users
         * run): each would otherwise name a job of its own, the launcher's id puts them in one. */
        snprintf(iol_g.job_id, sizeof iol_g.job_id, "mpi-%s", id);
        snprintf(env_job + 14, sizeof env_job - 14, "%s", iol_g.job_id);
        putenv(env_job);
    } else {
        /* The first profiled process of a job names it, and its children inherit the name. */
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        char stamp[32];
        strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%S", &tm);
        snprintf(iol_g.job_id, sizeof iol_g.job_id, "iolens-%s-%d", stamp, iol_g.pid);
        snprintf(env_job + 14, sizeof env_job - 14, "%s", iol_g.job_id);
        putenv(env_job);
    }
    sanitize(iol_g.job_file, iol_g.job_id, sizeof iol_g.job_file);
}

static void set_rank(void)
{
    static const char *const vars[] = { "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID" };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        char *end;
        if (v != NULL && v[0] != '\0') {
            long r = strtol(v, &end, 10);
            if (*end == '\0' && r >= 0) {
                iol_g.rank = r;
                return;
            }
        }
    }
    iol_g.rank = -1;
}

static int set_dir(void)
{
    const char *d = getenv("IOLENS_PROFILE_DIR");
    char buf[PATH_MAX];
    long n;
    if (d != NULL && d[0] != '\0') {
        n = iol_path_abs(AT_FDCWD, d, buf);
    } else {
        n = iol_sys_getcwd(buf, sizeof buf) > 0 && buf[0] == '/' ? (long)strlen(buf) : -1;
    }
    if (n <= 0)
        return -1;
    memcpy(iol_g.dir, buf, (size_t)n + 1);
    iol_g.dir_len = (size_t)n;
    if (d == NULL || strcmp(d, buf) != 0) {
        snprintf(env_dir + 19, sizeof env_dir - 19, "%s", buf);
        putenv(env_dir);
    }
    return 0;
}

static void find_lib_name(void)
{
    Dl_info info;
    if (dladdr((void *)&iol_g, &info) != 0 && info.dli_fname != NULL) {
        const char *slash = strrchr(info.dli_fname, '/');
        iol_strlcpy(lib_name, slash != NULL ? slash + 1 : info.dli_fname, sizeof lib_name);
    }
}

/* ---- fork ---- */

static __thread int guard_at_fork __attribute__((tls_model("initial-exec")));

/* A fork child (fork, _Fork, a fork-like clone): its own log, linked to the parent's. Only the forking
 * thread exists here; whatever the others held (our lock included) is reset. */
void iol_after_fork_child(void)
{
    iol_signals_after_fork();
    iol_mmap_after_fork();
    iol_aside_after_fork();
    if (!__atomic_load_n(&iol_g.on, __ATOMIC_RELAXED))
        return;
    struct iolp_header *old_hdr = iol_g.hdr;
    char parent[256];
    iol_strlcpy(parent, iol_g.log_name, sizeof parent);
    iol_g.pid = iol_sys_getpid();
    iol_g.lock.v = 0;
    iol_arena_after_fork();
    iol_g.nthreads = 0;
    iol_g.exit_known = 0;
    iol_g.prev_log[0] = '\0';
    iol_thread_reset(&iol_tls);
    int err = iol_log_create(parent);
    iol_sys_munmap(old_hdr, IOLP_HEADER_SIZE);
    if (err != 0) {
        __atomic_store_n(&iol_g.on, 0, __ATOMIC_RELEASE);
        return;
    }
    snprintf(env_parent + ENV_PARENT_PREFIX, sizeof env_parent - ENV_PARENT_PREFIX, "%s", iol_g.log_name);
}

/* Around fork (whoever calls it: the fork wrapper, daemon(), forkpty()…): calls made by other fork handlers
 * pass through, so that nothing a child does lands in its parent's log before the child has its own. */
static void at_prepare(void)
{
    guard_at_fork = iol_tls.guard;
    iol_tls.guard = IOL_GUARD_IN;
}
static void at_parent(void)
{
    iol_tls.guard = guard_at_fork;
}
static void at_child(void)
{
    iol_after_fork_child();
    iol_tls.guard = guard_at_fork;
}

struct iol_thread *iol_enter_slow(struct iol_thread *t)
{
    /* After vfork the parent resumes with the mark still set: its pid tells it from the child. */
    if (t->guard == IOL_GUARD_VFORK && __atomic_load_n(&iol_g.on, __ATOMIC_RELAXED) && iol_sys_getpid() == iol_g.pid) {
        t->guard = IOL_GUARD_IN;
        return t;
    }
    return NULL;
}


__attribute__((constructor)) static void iol_start(int argc, char **argv, char **envp)
{
    (void)envp;
    int saved = errno;
    iol_tls.guard = IOL_GUARD_IN;
    iol_real_resolve();
    iol_g.pid = iol_sys_getpid();
    const char *dbg = getenv("IOLENS_PROFILE_DEBUG");
    if (dbg != NULL)
        iol_strlcpy(iol_g.debug_path, dbg, sizeof iol_g.debug_path);
    uint64_t mono, wall;
    iol_clock_start(&mono, &wall);
    iol_cwd_refresh();
    if (set_dir() != 0) {
        iol_debug("no profile directory (IOLENS_PROFILE_DIR unset and no working directory): not profiling");
        goto out;
    }
    set_job_id();
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    iol_strlcpy(iol_g.host, host, sizeof iol_g.host);
    sanitize(iol_g.host_file, host, sizeof iol_g.host_file);
    set_rank();
    const char *tr = getenv("IOLENS_TRACE");
    iol_g.trace = tr != NULL && tr[0] != '\0' && strcmp(tr, "0") != 0;
    iol_exclude_init(getenv("IOLENS_PROFILE_EXCLUDE"));
    for (int i = 0; i < N_SETTINGS; i++)
        copy_setting(i);
    find_lib_name();
    iol_fdtab_init();
    if (iol_files_init() != 0)
        goto out;
    const char *parent = getenv("IOLENS_PARENT_LOG");
    iol_strlcpy(iol_g.prev_log, parent != NULL ? parent : "", sizeof iol_g.prev_log);
    extern void iol_log_identity(int argc, char **argv);
    iol_log_identity(argc, argv);
    if (iol_log_create(iol_g.prev_log) != 0)
        goto out;
    snprintf(env_parent + ENV_PARENT_PREFIX, sizeof env_parent - ENV_PARENT_PREFIX, "%s", iol_g.log_name);
    putenv(env_parent);
    iol_signals_init();
    pthread_atfork(at_prepare, at_parent, at_child);
    iol_clock_calibrate();
    __atomic_store_n(&iol_g.on, 1, __ATOMIC_RELEASE);
out:
    iol_tls.guard = 0;
    errno = saved;
}

__attribute__((destructor)) static void iol_stop(void)
{
    iol_finish(iol_g.exit_status, iol_g.exit_known);
}
