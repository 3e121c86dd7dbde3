/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * liblwp-prof: following the process tree across exec and spawn.
 *
 * Every exec of the profiled program (execve and its relatives, fexecve,
 * posix_spawn, posix_spawnp) is planned here first (docs/lwp-prof.rst,
 * "Process trees"):
 *  - a dynamically linked x86 program, or a "#!" script whose interpreter
 *    is one (followed as the kernel does), is profiled: on a CPU with LWP
 *    it is exec'd with liblwp-prof in its LD_PRELOAD and the configuration
 *    in its environment; under the emulator it is exec'd as
 *    "qemu-x86_64|qemu-i386 -cpu MODEL -0 ARGV0 -E LD_PRELOAD=... PROGRAM
 *    ARGS", the emulator that matches its ELF class;
 *  - anything else (set-user-ID, set-group-ID or file-capability programs,
 *    statically linked or non-x86 programs) is exec'd exactly as asked,
 *    with liblwp-prof taken out of its LD_PRELOAD;
 *  - what cannot be read is exec'd as asked, so that exec reports the
 *    error it would have.
 * The image that calls exec first closes its profile (its rings drained,
 * "exec" recorded); if the exec fails, profiling resumes.
 *
 * Everything here is vfork-safe: no malloc, one mmap'd arena per plan.
 * With LWP_PROF_INHERIT unset (record --no-inherit) nothing is planned:
 * the library took itself out of LD_PRELOAD at start and exec'd images
 * run unprofiled, as before.
 */
#include "preload.h"
#include <spawn.h>
#include "exec-target.h"

struct arena {
    char *base;
    size_t size, used;
};

static void *arena_alloc(struct arena *a, size_t n)
{
    void *p;

    n = (n + 15) & ~(size_t)15;
    if (!a->base || a->used + n > a->size) {
        return NULL;
    }
    p = a->base + a->used;
    a->used += n;
    return p;
}

static char *arena_cat(struct arena *a, const char *x, const char *y, const char *z)
{
    size_t lx = strlen(x), ly = y ? strlen(y) : 0, lz = z ? strlen(z) : 0;
    char *s = arena_alloc(a, lx + ly + lz + 1);

    if (s) {
        memcpy(s, x, lx);
        if (y) {
            memcpy(s + lx, y, ly);
        }
        if (z) {
            memcpy(s + lx + ly, z, lz);
        }
        s[lx + ly + lz] = 0;
    }
    return s;
}

struct plan {
    const char *path;
    char *const *argv;
    char *const *envp;
    struct arena a;
};

static void plan_free(struct plan *p)
{
    if (p->a.base) {
        munmap(p->a.base, p->a.size);
        p->a.base = NULL;
    }
}

static int is_var(const char *entry, const char *name)
{
    size_t n = strlen(name);

    return !strncmp(entry, name, n) && entry[n] == '=';
}

/* Is this LD_PRELOAD element liblwp-prof (any class, any spelling)? */
static int is_our_library(const char *s, size_t n)
{
    const char *base = s;

    for (size_t i = 0; i < n; i++) {
        if (s[i] == '/') {
            base = s + i + 1;
        }
    }
    return (size_t)(s + n - base) >= 11 && !strncmp(base, "liblwp-prof", 11);
}

/*
 * @value (an LD_PRELOAD value) without liblwp-prof's entries, in the
 * arena, with @first in front if non-NULL.  Returns NULL when nothing is
 * left.
 */
static char *preload_value(struct arena *a, const char *value, const char *first)
{
    size_t len = (value ? strlen(value) : 0) + (first ? strlen(first) : 0) + 2;
    char *out = arena_alloc(a, len), *o = out;
    const char *p = value;

    if (!out) {
        return NULL;
    }
    if (first) {
        o = stpcpy(o, first);
    }
    while (p && *p) {
        size_t n = strcspn(p, " :");
        if (n && !is_our_library(p, n)) {
            if (o != out) {
                *o++ = ':';
            }
            memcpy(o, p, n);
            o += n;
        }
        p += n;
        p += strspn(p, " :");
    }
    *o = 0;
    return o == out ? NULL : out;
}

/*
 * The environment of the new image.  @mode: 0 takes liblwp-prof out of
 * LD_PRELOAD; 1 puts it first and adds what the configuration needs;
 * 2 is 1 without LD_PRELOAD (given to the emulator with -E instead),
 * whose value goes to *@preload.
 */
static char **plan_env(struct arena *a, char *const envp[], int mode, const char *comm,
                       char **preload)
{
    size_t n = 0, k = 0;
    const char *old = NULL;
    char **env;
    char *pre;

    for (; envp && envp[n]; n++) {
        if (is_var(envp[n], "LD_PRELOAD")) {
            old = envp[n] + 11;
        }
    }
    env = arena_alloc(a, (n + LWP_PROF_N_VARS + 4) * sizeof(char *));
    if (!env) {
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (is_var(envp[i], "LD_PRELOAD") || is_var(envp[i], "LWP_PROF_COMM")) {
            continue;
        }
        env[k++] = envp[i];
    }
    pre = preload_value(a, old, mode ? cfg.preload_spec : NULL);
    if (pre && mode != 2) {
        env[k++] = arena_cat(a, "LD_PRELOAD=", pre, NULL);
    }
    if (preload) {
        *preload = pre;
    }
    if (mode) {
        /* a program may exec with an environment of its own making */
        for (int v = 0; v < LWP_PROF_N_VARS; v++) {
            const char *saved = cfg.saved_env[v];
            size_t eq;
            int have = 0;

            if (!saved) {
                continue;
            }
            eq = strcspn(saved, "=");
            for (size_t i = 0; i < n && !have; i++) {
                have = !strncmp(envp[i], saved, eq + 1);
            }
            if (!have) {
                env[k++] = (char *)saved;
            }
        }
        if (comm) {
            env[k++] = arena_cat(a, "LWP_PROF_COMM=", comm, NULL);
        }
    }
    env[k] = NULL;
    for (size_t i = 0; i < k; i++) {
        if (!env[i]) {
            return NULL;        /* the arena ran out */
        }
    }
    return env;
}

/* Returns 1 with @p filled in (the caller frees it), 0 to exec as asked. */
static int plan_exec(const char *path, char *const argv[], char *const envp[],
                     struct plan *p)
{
    struct exec_target t;
    size_t argc = 0, envc = 0, bytes = 0;
    const char *qemu, *comm;
    char **av, *pre = NULL;
    size_t k = 0;

    memset(p, 0, sizeof(*p));
    p->path = path;
    p->argv = argv;
    p->envp = envp;
    if (!cfg.inherit || !path || !argv || !argv[0]) {
        return 0;
    }
    exec_resolve(path, &t);
    if (t.kind == EXEC_UNREADABLE || t.kind == EXEC_BAD_SCRIPT) {
        return 0;
    }
    for (; argv[argc]; argc++) {
        continue;
    }
    for (; envp && envp[envc]; envc++) {
        bytes += strlen(envp[envc]) + 1;
    }
    p->a.size = (argc + envc + 64) * sizeof(char *) * 2 + bytes + 4 * PATH_MAX + 65536;
    p->a.size = (p->a.size + 4095) & ~(size_t)4095;
    p->a.base = mmap(NULL, p->a.size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p->a.base == MAP_FAILED) {
        p->a.base = NULL;
        return 0;
    }
    comm = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    qemu = t.bits == 64 ? cfg.qemu64 : cfg.qemu32;
    if (t.kind != EXEC_DYNAMIC || (cfg.emulated && !qemu)) {
        /* not followed: exactly as asked, without liblwp-prof */
        p->envp = plan_env(&p->a, envp, 0, NULL, NULL);
    } else if (!cfg.emulated) {
        /* this CPU has LWP: the kernel follows #!, the preload stays */
        p->envp = plan_env(&p->a, envp, 1, comm, NULL);
    } else {
        p->envp = plan_env(&p->a, envp, 2, comm, &pre);
        av = arena_alloc(&p->a, (argc + t.n_prefix + 16) * sizeof(char *));
        if (!av || !p->envp || !pre) {
            plan_free(p);
            return 0;
        }
        /* t lives on this stack: what the #! lines named is copied */
        av[k++] = (char *)qemu;
        av[k++] = "-cpu";
        av[k++] = (char *)cfg.cpu;
        av[k++] = "-0";
        av[k++] = t.n_prefix ? arena_cat(&p->a, t.prefix[0], NULL, NULL) : argv[0];
        av[k++] = "-E";
        av[k++] = arena_cat(&p->a, "LD_PRELOAD=", pre, NULL);
        av[k++] = arena_cat(&p->a, t.elf, NULL, NULL);
        for (int i = 1; i < t.n_prefix; i++) {
            av[k++] = arena_cat(&p->a, t.prefix[i], NULL, NULL);
        }
        for (size_t i = 1; i < argc; i++) {
            av[k++] = argv[i];
        }
        av[k] = NULL;
        for (size_t i = 0; i < k; i++) {
            if (!av[i]) {
                plan_free(p);   /* the arena ran out */
                return 0;
            }
        }
        p->path = qemu;
        p->argv = av;
    }
    if (!p->envp) {
        plan_free(p);
        return 0;
    }
    return 1;
}

/* libc's definition of an interposed function, looked up once. */
static void *real_fn(void **slot, const char *name)
{
    if (!*slot) {
        *slot = dlsym(RTLD_NEXT, name);
    }
    return *slot;
}

#define REAL(name) ((__typeof__(name) *)real_fn(&real_##name, #name))
static void *real_execve, *real_execv, *real_execvp, *real_execvpe, *real_fexecve,
            *real_posix_spawn, *real_posix_spawnp;

/* exec: finish this image's profile; if exec fails, profile on. */
static void exec_prepare(void)
{
    process_stop(LWPPROF_END_EXEC);
}

/* An exec returned @rc (it failed): profile on; errno as the exec left it. */
static int exec_failed(int rc)
{
    int e = errno;

    if (profiling && getpid() == owner_pid && self && !self->active) {
        __llwpcb(self->cb);
        self->active = 1;
        start_timer(self);
    }
    errno = e;
    return rc;
}

/* execve as planned; if the emulator cannot be run, as asked. */
static int planned_execve(const char *path, char *const argv[], char *const envp[])
{
    struct plan p;

    exec_prepare();
    if (plan_exec(path, argv, envp, &p)) {
        REAL(execve)(p.path, p.argv, p.envp);
        plan_free(&p);
    }
    return exec_failed(REAL(execve)(path, argv, envp));
}

EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    return planned_execve(path, argv, envp);
}

EXPORT int execv(const char *path, char *const argv[])
{
    if (!cfg.inherit) {
        exec_prepare();
        return exec_failed(REAL(execv)(path, argv));
    }
    return planned_execve(path, argv, environ);
}

/*
 * The file execvp would run: PATH searched as glibc does (an empty entry
 * is the current directory), the first regular, executable file found.
 */
static const char *search_path(const char *file, char *buf, size_t size)
{
    const char *path = getenv("PATH");
    const char *p;

    if (strchr(file, '/')) {
        return file;
    }
    if (!path) {
        path = "/bin:/usr/bin";
    }
    for (p = path;; p += strcspn(p, ":") + 1) {
        size_t n = strcspn(p, ":");
        struct stat st;

        if (n + strlen(file) + 2 <= size) {
            memcpy(buf, n ? p : ".", n ? n : 1);
            buf[n ? n : 1] = '/';
            strcpy(buf + (n ? n : 1) + 1, file);
            if (!stat(buf, &st) && S_ISREG(st.st_mode) && !access(buf, X_OK)) {
                return buf;
            }
        }
        if (!p[n]) {
            return NULL;
        }
    }
}

static int planned_execvpe(const char *file, char *const argv[], char *const envp[])
{
    char buf[PATH_MAX];
    const char *path = *file ? search_path(file, buf, sizeof(buf)) : NULL;
    int rc;

    if (!path) {
        /* not found as a regular executable: glibc says why */
        exec_prepare();
        return exec_failed(REAL(execvpe)(file, argv, envp));
    }
    rc = planned_execve(path, argv, envp);
    if (errno == ENOEXEC) {
        /* POSIX: a file that is no executable format runs under the shell */
        size_t argc = 0;
        char **sh;

        while (argv[argc]) {
            argc++;
        }
        sh = alloca((argc + 3) * sizeof(char *));
        sh[0] = "/bin/sh";
        sh[1] = (char *)path;
        for (size_t i = 1; i <= argc; i++) {
            sh[i + 1] = argv[i];
        }
        rc = planned_execve("/bin/sh", sh, envp);
    }
    return rc;
}

EXPORT int execvp(const char *file, char *const argv[])
{
    if (!cfg.inherit) {
        exec_prepare();
        return exec_failed(REAL(execvp)(file, argv));
    }
    return planned_execvpe(file, argv, environ);
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    if (!cfg.inherit) {
        exec_prepare();
        return exec_failed(REAL(execvpe)(file, argv, envp));
    }
    return planned_execvpe(file, argv, envp);
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    /* the emulator reads the program through /proc/self/fd/N after the
     * exec: only a descriptor that survives it can be followed */
    if (cfg.inherit && fcntl(fd, F_GETFD) == 0) {
        char path[64];
        struct plan p;

        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        if (plan_exec(path, argv, envp, &p)) {
            exec_prepare();
            REAL(execve)(p.path, p.argv, p.envp);
            plan_free(&p);
            exec_failed(-1);
        }
    }
    exec_prepare();
    return exec_failed(REAL(fexecve)(fd, argv, envp));
}

/* execl, execlp, execle: collect the arguments and go through the above. */
#define COLLECT_ARGS(first, ap, argv) \
    do { \
        size_t n_ = 1; \
        va_list c_; \
        va_copy(c_, ap); \
        while (va_arg(c_, char *)) { \
            n_++; \
        } \
        va_end(c_); \
        argv = alloca((n_ + 1) * sizeof(char *)); \
        argv[0] = (char *)(first); \
        for (size_t i_ = 1; i_ <= n_; i_++) { \
            argv[i_] = va_arg(ap, char *); \
        } \
    } while (0)

EXPORT int execl(const char *path, const char *arg, ...)
{
    char **argv;
    va_list ap;

    va_start(ap, arg);
    COLLECT_ARGS(arg, ap, argv);
    va_end(ap);
    return execve(path, argv, environ);
}

EXPORT int execlp(const char *file, const char *arg, ...)
{
    char **argv;
    va_list ap;

    va_start(ap, arg);
    COLLECT_ARGS(arg, ap, argv);
    va_end(ap);
    return execvp(file, argv);
}

EXPORT int execle(const char *path, const char *arg, ...)
{
    char **argv, **envp;
    va_list ap;

    va_start(ap, arg);
    COLLECT_ARGS(arg, ap, argv);
    envp = va_arg(ap, char **);
    va_end(ap);
    return execve(path, argv, envp);
}

/*
 * posix_spawn runs its child with glibc's internal execve, which no
 * preload reaches: plan it here, in the parent.  (system() and popen()
 * spawn /bin/sh that way too; that shell, started on the host CPU with
 * liblwp-prof in LD_PRELOAD, is re-run under the emulator by the
 * library's constructor: lwp-prof-preload.c.)
 */
EXPORT int posix_spawn(pid_t *pid, const char *path,
                       const posix_spawn_file_actions_t *fa,
                       const posix_spawnattr_t *attr, char *const argv[],
                       char *const envp[])
{
    struct plan p;
    int rc;

    if (plan_exec(path, argv, envp, &p)) {
        rc = REAL(posix_spawn)(pid, p.path, fa, attr, p.argv, p.envp);
        plan_free(&p);
        if (rc != ENOENT && rc != EACCES) {
            return rc;
        }
    }
    return REAL(posix_spawn)(pid, path, fa, attr, argv, envp);
}

EXPORT int posix_spawnp(pid_t *pid, const char *file,
                        const posix_spawn_file_actions_t *fa,
                        const posix_spawnattr_t *attr, char *const argv[],
                        char *const envp[])
{
    char buf[PATH_MAX];
    const char *path = cfg.inherit && *file ? search_path(file, buf, sizeof(buf)) : NULL;
    struct plan p;
    int rc;

    if (path && plan_exec(path, argv, envp, &p)) {
        rc = REAL(posix_spawn)(pid, p.path, fa, attr, p.argv, p.envp);
        plan_free(&p);
        if (rc != ENOENT && rc != EACCES) {
            return rc;
        }
    }
    return REAL(posix_spawnp)(pid, file, fa, attr, argv, envp);
}

/*
 * system() and popen() spawn /bin/sh with glibc's internal posix_spawn,
 * which no preload reaches, from the environment: give them one with
 * liblwp-prof and its configuration for the time of the call (the
 * program's own environment has neither).  The shell, started on the host
 * CPU under an emulated tree, is then re-run under the emulator by the
 * library's constructor (below).
 */
static char **swap_environ(struct arena *a)
{
    size_t envc = 0, bytes = 0;
    char **env, **old = environ;

    if (!cfg.inherit) {
        return NULL;
    }
    for (; environ && environ[envc]; envc++) {
        bytes += strlen(environ[envc]) + 1;
    }
    a->used = 0;
    a->size = ((envc + 64) * sizeof(char *) + bytes + 65536 + 4095) & ~4095ul;
    a->base = mmap(NULL, a->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (a->base == MAP_FAILED) {
        a->base = NULL;
        return NULL;
    }
    env = plan_env(a, environ, 1, "sh", NULL);
    if (!env) {
        munmap(a->base, a->size);
        a->base = NULL;
        return NULL;
    }
    environ = env;
    return old;
}

static void restore_environ(struct arena *a, char **old)
{
    if (old) {
        environ = old;
        munmap(a->base, a->size);
    }
}

static void *real_system, *real_popen;

EXPORT int system(const char *cmd)
{
    struct arena a = { 0 };
    char **old = cmd ? swap_environ(&a) : NULL;
    int rc = REAL(system)(cmd);
    int e = errno;

    restore_environ(&a, old);
    errno = e;
    return rc;
}

EXPORT FILE *popen(const char *cmd, const char *mode)
{
    struct arena a = { 0 };
    char **old = swap_environ(&a);
    FILE *f = REAL(popen)(cmd, mode);
    int e = errno;

    restore_environ(&a, old);
    errno = e;
    return f;
}

/*
 * The constructor's last resort (lwp-prof-preload.c): this image was
 * started on a CPU without LWP -- by system() or popen(), above, or by
 * anything else that execs with liblwp-prof in the environment's
 * LD_PRELOAD without going through the functions here.  Run it again from the start under the emulator, with the
 * arguments and executable the kernel gave it.  Returns if it cannot.
 */
void reexec_under_emulator(void)
{
    static char cmdline[65536], exe[PATH_MAX], comm[64], pidbuf[64];
    const char *qemu = sizeof(void *) == 8 ? cfg.qemu64 : cfg.qemu32;
    char **av, **env, *pre = NULL;
    struct arena a;
    ssize_t n, len = 0;
    size_t argc = 0, envc = 0, k = 0;
    int fd;

    if (!cfg.inherit || !qemu || getauxval(AT_SECURE) || cfg.reexec_pid == (long)getpid()) {
        return;                 /* it came back without LWP: run unprofiled */
    }
    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (n <= 0 || fd < 0) {
        if (fd >= 0) {
            close(fd);
        }
        return;
    }
    exe[n] = 0;
    while ((n = read(fd, cmdline + len, sizeof(cmdline) - 1 - (size_t)len)) > 0) {
        len += n;
    }
    close(fd);
    if (len <= 0 || len >= (ssize_t)sizeof(cmdline) - 1 || access(exe, R_OK | X_OK)) {
        return;                 /* too long to be sure of, or deleted */
    }
    cmdline[len] = 0;
    fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        n = read(fd, comm, sizeof(comm) - 1);
        close(fd);
        comm[n > 0 ? n : 0] = 0;
        comm[strcspn(comm, "\n")] = 0;
    }
    for (ssize_t i = 0; i < len; i++) {
        argc += !cmdline[i];
    }
    for (; environ[envc]; envc++) {
        continue;
    }
    a.size = ((argc + envc + 32) * sizeof(char *) + 3 * PATH_MAX + 8192 + 4095) & ~4095ul;
    a.used = 0;
    a.base = mmap(NULL, a.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (a.base == MAP_FAILED) {
        return;
    }
    env = plan_env(&a, environ, 2, NULL, &pre);
    av = arena_alloc(&a, (argc + 16) * sizeof(char *));
    if (!env || !av || !pre) {
        munmap(a.base, a.size);
        return;
    }
    snprintf(pidbuf, sizeof(pidbuf), "LWP_PROF_REEXEC=%ld", (long)getpid());
    av[k++] = (char *)qemu;
    av[k++] = "-cpu";
    av[k++] = (char *)cfg.cpu;
    av[k++] = "-0";
    av[k++] = cmdline;
    av[k++] = "-E";
    av[k++] = arena_cat(&a, "LD_PRELOAD=", pre, NULL);
    av[k++] = "-E";
    av[k++] = pidbuf;
    if (*comm) {
        av[k++] = "-E";
        av[k++] = arena_cat(&a, "LWP_PROF_COMM=", comm, NULL);
    }
    av[k++] = exe;
    for (char *s = cmdline + strlen(cmdline) + 1; s < cmdline + len; s += strlen(s) + 1) {
        av[k++] = s;
    }
    av[k] = NULL;
    if (av[6] && (!*comm || av[10])) {
        REAL(execve)(qemu, av, env);
    }
    munmap(a.base, a.size);
}
