/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * liblwp-prof: preloaded into an unmodified, dynamically linked program,
 * it profiles every thread with AMD Lightweight Profiling (pub. 43724).
 *
 * Each thread gets its own LWPCB and ring buffer (LLWPCB at start, the
 * main thread from a constructor, later threads from an interposed
 * pthread_create).  The rings are drained into the data file
 * (lwp-prof-format.h):
 *  - from a per-thread CPU-time timer signal (LWP_PROF_SIGNAL), since
 *    qemu-x86_64/qemu-i386 offer no threshold interrupt, or
 *  - from the signal an OS delivers for the threshold interrupt
 *    (LWP_PROF_THRESHOLD_SIGNAL), and
 *  - at thread exit, at process exit and before exec.
 * The loaded objects and their load addresses are written at start, when a
 * thread starts or ends, and at the end.
 * A signal handler runs with LWP disabled (Linux gives handlers the initial
 * extended state), so the drain reads the interrupted head offset from the
 * LWP component of the XSAVE image in the signal frame (figure 7-1); the
 * LWPCB's BufferHeadOffset is only flushed at a threshold, SLWPCB or
 * LLWPCB (8.3).  The drain then advances BufferTailOffset, which LWP
 * re-reads when the ring looks full.
 *
 * Configuration comes from the environment (the launcher `lwp-prof record`
 * sets it; docs/lwp-prof.rst lists it).  A child of fork() goes on being
 * profiled into FILE.<pid>; with LWP_PROF_INHERIT set, exec'd and spawned
 * images are profiled too, each into a file of its own (preload-exec.c);
 * without it the library removes itself from LD_PRELOAD at start and
 * exec'd images run unprofiled.
 */
#include "preload.h"

struct preload_config cfg;
struct lwp_caps caps;
int profiling;
pid_t owner_pid;
int owner_is_root;
int forked_child;
pthread_key_t thread_key;
pthread_mutex_t threads_lock = PTHREAD_MUTEX_INITIALIZER;
struct lwp_thread *threads;
__thread struct lwp_thread *self __attribute__((tls_model("initial-exec")));

static pid_t gettid_(void)
{
    return (pid_t)syscall(SYS_gettid);
}

void die(const char *fmt, ...)
{
    va_list ap;

    fputs("lwp-prof: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    _exit(TOOL_FAILURE);
}

/* A configuration variable as the environment had it at start (cfg.saved_env). */
static const char *config_get(const char *name)
{
    size_t n = strlen(name);

    for (int i = 0; i < LWP_PROF_N_VARS; i++) {
        const char *e = cfg.saved_env[i];
        if (e && !strncmp(e, name, n) && e[n] == '=') {
            return e + n + 1;
        }
    }
    return NULL;
}

static unsigned long env_number(const char *name, unsigned long dflt,
                                unsigned long min, unsigned long max)
{
    const char *s = config_get(name);
    char *end;
    unsigned long v;

    if (!s || !*s) {
        return dflt;
    }
    errno = 0;
    v = strtoul(s, &end, 0);
    if (errno || *end || v < min || v > max) {
        die("%s=%s: expected a number from %lu to %lu", name, s, min, max);
    }
    return v;
}

static int env_signal(const char *name, int dflt)
{
    const char *s = config_get(name);
    char *end;
    long v;

    if (!s || !*s) {
        return dflt;
    }
    if (!strncmp(s, "SIG", 3)) {
        s += 3;
    }
    if (!strncmp(s, "RTMIN", 5) || !strncmp(s, "RTMAX", 5)) {
        long off = s[5] ? strtol(s + 5, &end, 10) : 0;
        v = (s[3] == 'I' ? SIGRTMIN : SIGRTMAX) + off;
        if (s[5] && *end) {
            v = -1;
        }
    } else {
        v = strtol(s, &end, 10);
        if (*end || end == s) {
            /* glibc names signal 29 POLL; accept its usual name too */
            v = !strcmp(s, "IO") ? SIGIO : -1;
            for (int i = 1; i < SIGRTMIN; i++) {
                if (sigabbrev_np(i) && !strcmp(sigabbrev_np(i), s)) {
                    v = i;          /* USR2, PROF, IO, ... */
                }
            }
        }
    }
    if (v <= 0 || v >= NSIG || v == SIGKILL || v == SIGSTOP) {
        die("%s=%s: not a signal that can be caught", name, config_get(name));
    }
    return (int)v;
}
/* ---- capabilities: CPUID 8000_001Ch, as section 3 says software must ---- */

/* NULL if this CPU and OS offer LWP, else why not. */
static const char *lwp_missing(void)
{
    unsigned a, b, c, d, max_ext;

    __cpuid(0x80000000, max_ext, b, c, d);
    if (max_ext < 0x80000001) {
        return "this CPU has no LWP (no CPUID leaf 8000_0001h); under QEMU run "
               "qemu-lwp's qemu-x86_64 -cpu max";
    }
    __cpuid(0x80000001, a, b, c, d);
    if (!(c & (1u << 15)) || max_ext < 0x8000001C) {
        return "this CPU has no LWP (CPUID 8000_0001h ECX[15] is clear); under "
               "QEMU run qemu-lwp's qemu-x86_64 -cpu max (or qemu-i386)";
    }
    __cpuid(0x8000001C, a, b, c, d);
    if (!(a & 1)) {
        return "LWP is supported but not available: the operating system has "
               "not enabled it (CPUID 8000_001Ch EAX[0], XCR0[62] clear)";
    }
    return NULL;
}

static void read_caps(void)
{
    unsigned a, b, c, d;
    unsigned event_size, max_events;

    __cpuid(0x8000001C, caps.eax, caps.ebx, caps.ecx, caps.edx);
    caps.cb_size = (caps.ebx & 0xff) * 8;
    event_size = (caps.ebx >> 8) & 0xff;
    max_events = (caps.ebx >> 16) & 0xff;
    caps.event_offset = caps.ebx >> 24;
    caps.min_ring_records = ((caps.ecx >> 16) & 0xff) * 32;
    if (event_size != sizeof(struct lwpprof_record)) {
        die("LwpEventSize is %u bytes (CPUID 8000_001Ch EBX[15:8]); lwp-prof "
            "reads LWP version 1 records of 32 bytes", event_size);
    }
    if (max_events < cfg.event ||
        caps.cb_size < caps.event_offset + 8 * cfg.event) {
        die("the LWPCB described by CPUID 8000_001Ch EBX=%08x has no room for "
            "EventId %u", caps.ebx, cfg.event);
    }
    if (!(caps.eax & (1u << cfg.event))) {
        die("event %s (EventId %u) is not available on this CPU (CPUID "
            "8000_001Ch EAX[%u] is clear)", cfg.event == 2 ? "ire" : "bre",
            cfg.event, cfg.event);
    }
    if (cfg.threshold_signal && !(caps.eax & FLAG_INT)) {
        die("a threshold signal (--threshold-signal, "
            "LWP_PROF_THRESHOLD_SIGNAL) is set but the threshold interrupt is "
            "not available (CPUID 8000_001Ch EAX[31] clear): this OS does not "
            "deliver it; unset it to drain from a timer");
    }
    if (cfg.threshold_signal && syscall(SYS_arch_prctl, ARCH_LWP_GET_SIGNAL, 0L) < 0) {
        die("a threshold signal (--threshold-signal, LWP_PROF_THRESHOLD_SIGNAL) is set "
            "but this kernel does not deliver LWP's threshold interrupt as a signal "
            "(arch_prctl ARCH_LWP_GET_SIGNAL: %s); unset it to drain from a timer",
            strerror(errno));
    }
    __cpuid_count(0xD, 62, a, b, c, d);
    caps.xsave_offset = a >= 128 ? b : 0;
}
/* ---- per-thread sessions ---- */

void start_timer(struct lwp_thread *t)
{
    struct sigevent sev;
    struct itimerspec its;

    if (cfg.threshold_signal) {
        return;
    }
    memset(&sev, 0, sizeof(sev));
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = cfg.signal;
    sev.sigev_value.sival_ptr = TIMER_COOKIE;
    sev._sigev_un._tid = t->tid;    /* sigev_notify_thread_id */
    if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &t->timer)) {
        return;                 /* drained at exit only; MissedEvents tells */
    }
    t->have_timer = 1;
    its.it_interval.tv_sec = cfg.drain_ms / 1000;
    its.it_interval.tv_nsec = (long)(cfg.drain_ms % 1000) * 1000000;
    its.it_value = its.it_interval;
    timer_settime(t->timer, 0, &its, NULL);
}

struct lwp_thread *thread_begin(int check_interval)
{
    size_t ring_bytes = (size_t)cfg.ring_records * 32;
    size_t head_bytes = (sizeof(struct lwp_thread) + 63) & ~(size_t)63;
    size_t cb_bytes = (caps.cb_size + 4095) & ~(size_t)4095;
    size_t map = ((head_bytes + 4095) & ~(size_t)4095) + cb_bytes + ring_bytes;
    uint8_t *mem = mmap(NULL, map, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct lwp_thread *t;
    uint8_t *ev;
    uint32_t flags = 1u << cfg.event;

    if (mem == MAP_FAILED) {
        return NULL;
    }
    t = (struct lwp_thread *)mem;
    t->map_size = map;
    t->cb = mem + ((head_bytes + 4095) & ~(size_t)4095);
    t->ring = t->cb + cb_bytes;
    t->tid = gettid_();
    if (cfg.threshold_signal) {
        flags |= FLAG_INT;
        *(uint32_t *)(t->cb + CB_THRESHOLD) = (uint32_t)(ring_bytes / 2) & ~31u;
    }
    *(uint32_t *)(t->cb + CB_FLAGS) = flags;
    *(uint32_t *)(t->cb + CB_BUFFER_SIZE) = (uint32_t)ring_bytes | cfg.random << 28;
    *(uint64_t *)(t->cb + CB_BUFFER_BASE) = (uintptr_t)t->ring;
    ev = t->cb + caps.event_offset + 8 * (cfg.event - 1);
    *(uint32_t *)ev = cfg.interval;
    *(uint32_t *)(ev + 4) = cfg.interval;

    pthread_mutex_lock(&threads_lock);
    t->next = threads;
    threads = t;
    pthread_mutex_unlock(&threads_lock);
    self = t;

    /* Each thread asks for its own threshold signal, before it can cross. */
    if (cfg.threshold_signal &&
        syscall(SYS_arch_prctl, ARCH_LWP_SET_SIGNAL, (long)cfg.threshold_signal)) {
        die("arch_prctl(ARCH_LWP_SET_SIGNAL, %d) failed: %s", cfg.threshold_signal,
            strerror(errno));
    }
    __llwpcb(t->cb);
    if (!(cb32(t, CB_FLAGS) & (1u << cfg.event))) {
        __llwpcb(NULL);
        die("LLWPCB did not enable EventId %u (LWPCB.Flags %08x after LLWPCB)",
            cfg.event, cb32(t, CB_FLAGS));
    }
    if (check_interval &&
        cb32(t, caps.event_offset + 8 * (cfg.event - 1)) != cfg.interval) {
        uint32_t min = cb32(t, caps.event_offset + 8 * (cfg.event - 1));
        __llwpcb(NULL);
        die("interval %u is below the minimum %u this CPU imposes on %s "
            "(LLWPCB wrote EventInterval%u back as %u)", cfg.interval, min,
            cfg.event == 2 ? "ire" : "bre", cfg.event, min);
    }
    t->active = 1;
    start_timer(t);
    return t;
}

/* Stop @t (the calling thread's session), drain it, report it. */
static void thread_stop(struct lwp_thread *t)
{
    sigset_t old;

    block_drain_signal(&old);
    if (t->active) {
        t->active = 0;
        __slwpcb();             /* flushes BufferHeadOffset to the LWPCB */
        __llwpcb(NULL);
        if (t->have_timer) {
            timer_delete(t->timer);
            t->have_timer = 0;
        }
        drain(t, cb32(t, CB_HEAD));
        write_thread_block(t);
    }
    real_sigmask(SIG_SETMASK, &old, NULL);
}

static void thread_forget(struct lwp_thread *t)
{
    struct lwp_thread **p;

    pthread_mutex_lock(&threads_lock);
    for (p = &threads; *p; p = &(*p)->next) {
        if (*p == t) {
            *p = t->next;
            break;
        }
    }
    pthread_mutex_unlock(&threads_lock);
    if (self == t) {
        self = NULL;
    }
    munmap(t, t->map_size);
}

static void thread_key_destructor(void *p)
{
    struct lwp_thread *t = p;

    if (t && t == self) {
        thread_stop(t);
        thread_forget(t);
        write_modules();
    }
}

/*
 * The other threads drain their own rings when signalled (only a thread's
 * signal frame holds its current head).  Wait for each, up to a second.
 */
static void drain_other_threads(void)
{
    int sig = drain_signal();
    struct lwp_thread *t;

    pthread_mutex_lock(&threads_lock);
    exit_drain_requested = 1;
    for (t = threads; t; t = t->next) {
        uint32_t seq = t->drain_seq;
        int waited;

        if (t == self || !t->active) {
            continue;
        }
        if (syscall(SYS_tgkill, owner_pid, t->tid, sig)) {
            continue;
        }
        for (waited = 0; waited < 1000 && t->drain_seq == seq; waited++) {
            struct timespec ts = { 0, 1000000 };
            nanosleep(&ts, NULL);
        }
    }
    exit_drain_requested = 0;
    pthread_mutex_unlock(&threads_lock);
}


/* This process image stops profiling (exit, or exec). */
void process_stop(uint32_t reason)
{
    if (!profiling || getpid() != owner_pid) {
        return;                 /* e.g. a vfork child sharing our memory */
    }
    if (self) {
        thread_stop(self);
    }
    drain_other_threads();
    write_modules();
    write_end(reason);
}
/*
 * _exit() (shells end with it; so do children of fork that must not flush
 * their parent's stdio): close the profile without what may take a lock
 * an interrupted thread holds -- no module list (the one written at start
 * and at thread starts and ends stands), the other threads drained only if
 * their list is free.  exit() calls glibc's internal _exit after the
 * destructors, not this one.
 */
static void process_stop_at_exit_call(void)
{
    if (!profiling || getpid() != owner_pid) {
        return;
    }
    if (self) {
        thread_stop(self);
    }
    if (!pthread_mutex_trylock(&threads_lock)) {
        pthread_mutex_unlock(&threads_lock);
        drain_other_threads();
    }
    write_end(LWPPROF_END_EXIT);
    profiling = 0;
}

EXPORT void _exit(int status)
{
    process_stop_at_exit_call();
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}

EXPORT void _Exit(int status)
{
    _exit(status);
}

/* ---- set-up ---- */

/* Exec'd images are not profiled: take ourselves out of LD_PRELOAD. */
static void unpreload_self(void)
{
    const char *pre = getenv("LD_PRELOAD");
    Dl_info info;
    char *copy, *out, *tok, *save = NULL;
    const char *me;

    if (!pre || !dladdr((void *)unpreload_self, &info) || !info.dli_fname) {
        return;
    }
    me = strrchr(info.dli_fname, '/') ? strrchr(info.dli_fname, '/') + 1
                                      : info.dli_fname;
    copy = strdup(pre);
    out = calloc(1, strlen(pre) + 1);
    if (!copy || !out) {
        return;
    }
    for (tok = strtok_r(copy, " :", &save); tok; tok = strtok_r(NULL, " :", &save)) {
        const char *base = strrchr(tok, '/') ? strrchr(tok, '/') + 1 : tok;
        if (!strcmp(base, me)) {
            continue;
        }
        if (*out) {
            strcat(out, ":");
        }
        strcat(out, tok);
    }
    if (*out) {
        setenv("LD_PRELOAD", out, 1);
    } else {
        unsetenv("LD_PRELOAD");
    }
    free(copy);
    free(out);
}

static void atfork_prepare(void)
{
    if (profiling) {
        block_drain_signal(NULL);
    }
}

static void atfork_parent(void)
{
    if (profiling) {
        unblock_drain_signal();
    }
}

/*
 * The child of fork() starts with LWP disabled (spec 8.4) and only the
 * forking thread: it profiles itself afresh into FILE.<pid>.
 */
static void atfork_child(void)
{
    char path[4096];
    struct lwp_thread *t, *next;

    if (!profiling) {
        return;
    }
    owner_pid = getpid();
    owner_is_root = 0;
    forked_child = 1;
    for (t = threads; t; t = next) {
        next = t->next;
        munmap(t, t->map_size);
    }
    threads = NULL;
    self = NULL;
    pthread_mutex_init(&threads_lock, NULL);
    snprintf(path, sizeof(path), "%s.%d", cfg.output, (int)owner_pid);
    output_reopen_after_fork(path);
    if (out_fd < 0) {
        profiling = 0;          /* cannot write: unprofiled, never broken */
        return;
    }
    write_modules();
    t = thread_begin(0);
    if (t) {
        pthread_setspecific(thread_key, t);
    }
    unblock_drain_signal();
}

/* The configuration variables children get back if their environment lacks them. */
static const char *const config_vars[] = {
    "LWP_PROF_OUTPUT", "LWP_PROF_EVENT", "LWP_PROF_INTERVAL", "LWP_PROF_RING",
    "LWP_PROF_RANDOM", "LWP_PROF_DRAIN_MS", "LWP_PROF_SIGNAL",
    "LWP_PROF_THRESHOLD_SIGNAL", "LWP_PROF_INHERIT", "LWP_PROF_QEMU64",
    "LWP_PROF_QEMU32", "LWP_PROF_CPU", "LWP_PROF_PRELOAD", "LWP_PROF_SESSION",
};

/* Read and remove a variable meant for this image only. */
static const char *take_env(const char *name, char *buf, size_t size)
{
    const char *v = getenv(name);

    if (!v) {
        return NULL;
    }
    snprintf(buf, size, "%s", v);
    unsetenv(name);
    return buf;
}

static void read_tree_config(void)
{
    static char root_buf[32], comm_buf[64], reexec_buf[32];
    const char *root = take_env("LWP_PROF_ROOT", root_buf, sizeof(root_buf));
    const char *comm = take_env("LWP_PROF_COMM", comm_buf, sizeof(comm_buf));
    const char *reexec = take_env("LWP_PROF_REEXEC", reexec_buf, sizeof(reexec_buf));
    const char *s;
    unsigned n = 0;

    for (unsigned i = 0; i < sizeof(config_vars) / sizeof(config_vars[0]); i++) {
        const char *v = getenv(config_vars[i]);
        size_t len;
        char *e;

        if (!v || n >= LWP_PROF_N_VARS) {
            continue;
        }
        len = strlen(config_vars[i]) + strlen(v) + 2;
        e = malloc(len);
        if (e) {
            snprintf(e, len, "%s=%s", config_vars[i], v);
            cfg.saved_env[n++] = e;
        }
    }
    cfg.reexec_pid = reexec ? atol(reexec) : 0;
    cfg.inherit = (s = config_get("LWP_PROF_INHERIT")) && !strcmp(s, "1");
    if (cfg.inherit) {
        owner_is_root = root && atol(root) == (long)getpid();
    } else {
        owner_is_root = 1;      /* --no-inherit, or the variables set by hand */
    }
    cfg.qemu64 = (s = config_get("LWP_PROF_QEMU64")) && *s ? s : NULL;
    cfg.qemu32 = (s = config_get("LWP_PROF_QEMU32")) && *s ? s : NULL;
    cfg.emulated = cfg.qemu64 || cfg.qemu32;
    cfg.cpu = (s = config_get("LWP_PROF_CPU")) && *s ? s : "max";
    cfg.preload_spec = config_get("LWP_PROF_PRELOAD");
    cfg.session = (s = config_get("LWP_PROF_SESSION")) ? strtoull(s, NULL, 0) : 0;
    if (cfg.inherit && (!cfg.preload_spec || !*cfg.preload_spec)) {
        cfg.inherit = 0;        /* nothing to give children */
    }
    if (comm && *comm) {
        snprintf(cfg.comm, sizeof(cfg.comm), "%s", comm);
    } else {
        const char *a0 = program_invocation_name ? program_invocation_name : "";
        const char *b = strrchr(a0, '/');
        snprintf(cfg.comm, sizeof(cfg.comm), "%s", b ? b + 1 : a0);
    }
}

static void __attribute__((constructor)) lwp_prof_init(void)
{
    const char *ev;
    const char *missing;
    struct sigaction sa;
    unsigned long dflt_ring;

    read_tree_config();
    /*
     * The program sees the environment it would have had: liblwp-prof out
     * of LD_PRELOAD, no LWP_PROF_* (the configuration is kept in cfg; the
     * exec, spawn, system and popen of preload-exec.c give it to children).
     */
    unpreload_self();
    for (unsigned i = 0; i < sizeof(config_vars) / sizeof(config_vars[0]); i++) {
        unsetenv(config_vars[i]);
    }
    missing = lwp_missing();
    if (missing) {
        if (owner_is_root) {
            die("%s", missing);
        }
        /*
         * A descendant started on a CPU without LWP (by a path no
         * interposed exec saw): run it again under the emulator; if that
         * cannot be done, it runs unprofiled, as it would without us.
         */
        reexec_under_emulator();
        cfg.inherit = 0;
        return;
    }
    ev = config_get("LWP_PROF_EVENT");
    cfg.output = config_get("LWP_PROF_OUTPUT");
    if (!cfg.output || !*cfg.output) {
        cfg.output = "lwp-prof.data";
    }
    if (cfg.output[0] != '/') {
        /* children of fork() write FILE.<pid> here even after a chdir */
        char cwd[4096];
        static char abs_output[8192];

        if (getcwd(cwd, sizeof(cwd))) {
            snprintf(abs_output, sizeof(abs_output), "%s/%s", cwd, cfg.output);
            cfg.output = abs_output;
        }
    }
    if (!ev || !*ev || !strcmp(ev, "ire")) {
        cfg.event = 2;
    } else if (!strcmp(ev, "bre")) {
        cfg.event = 3;
    } else {
        die("LWP_PROF_EVENT=%s: expected ire or bre", ev);
    }
    cfg.interval = (uint32_t)env_number("LWP_PROF_INTERVAL", 65535, 1, (1u << 25) - 1);
    cfg.drain_ms = (unsigned)env_number("LWP_PROF_DRAIN_MS", 10, 1, 10000);
    cfg.random = (unsigned)env_number("LWP_PROF_RANDOM", 0, 0, 15);
    cfg.signal = env_signal("LWP_PROF_SIGNAL", SIGRTMAX - 8);
    cfg.threshold_signal = env_signal("LWP_PROF_THRESHOLD_SIGNAL", 0);
    read_caps();
    /*
     * Room for four drain periods at 3e9 events/s (faster than any LWP
     * part, far faster than TCG), at least LwpMinBufferSize.
     */
    dflt_ring = (unsigned long)(4 * 3e9 * cfg.drain_ms / 1000 / (cfg.interval + 1.0));
    dflt_ring = dflt_ring < 1024 ? 1024 : dflt_ring > (1ul << 19) ? 1ul << 19 : dflt_ring;
    cfg.ring_records = (unsigned)env_number("LWP_PROF_RING", dflt_ring, 1, 1ul << 22);
    if (cfg.ring_records < caps.min_ring_records) {
        die("LWP_PROF_RING=%u records is below LwpMinBufferSize (%u records, "
            "CPUID 8000_001Ch ECX[23:16])", cfg.ring_records, caps.min_ring_records);
    }

    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_drain_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&sa.sa_mask);
    real_sigaction(drain_signal(), &sa, NULL);
    pthread_key_create(&thread_key, thread_key_destructor);
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);

    owner_pid = getpid();
    if (owner_is_root) {
        open_output(cfg.output, 0);
    } else {
        char path[8192];

        snprintf(path, sizeof(path), "%s.%d", cfg.output, (int)owner_pid);
        open_output(path, 1);
        if (out_fd < 0) {
            cfg.inherit = 0;
            return;             /* cannot write: unprofiled, never broken */
        }
    }
    write_modules();
    profiling = 1;
    unblock_drain_signal();     /* a mask inherited across exec may block it */
    /* pthread_exit() of the main thread stops its session too */
    pthread_setspecific(thread_key, thread_begin(1));
}

static void __attribute__((destructor)) lwp_prof_fini(void)
{
    process_stop(LWPPROF_END_EXIT);
    profiling = 0;
}
