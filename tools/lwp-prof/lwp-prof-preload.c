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
 * sets it; docs/lwp-prof.rst lists it).  The library removes itself from
 * LD_PRELOAD at start: an exec'd image is not profiled; a child of fork()
 * goes on being profiled into FILE.<pid>.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <x86intrin.h>

#include "lwp-prof-format.h"

#define EXPORT __attribute__((visibility("default")))
#define TOOL_FAILURE 125            /* exit status when profiling cannot start */

/* LWPCB fields (figure 6-1); the event area is at LwpEventOffset. */
#define CB_FLAGS 0
#define CB_BUFFER_SIZE 4
#define CB_BUFFER_BASE 8
#define CB_HEAD 16
#define CB_MISSED 24
#define CB_THRESHOLD 32
#define CB_TAIL 64
#define FLAG_INT (1u << 31)

/* The LWP component of an XSAVE image (figure 7-1). */
#define XS_LWPCB 0
#define XS_HEAD 12
#define SIGFRAME_XSTATE_MAGIC1 0x46505853u

struct lwp_caps {
    uint32_t eax, ebx, ecx, edx;    /* CPUID 8000_001Ch */
    unsigned cb_size;               /* bytes */
    unsigned event_offset;
    unsigned min_ring_records;
    unsigned xsave_offset;          /* CPUID 0Dh.3Eh EBX */
};

struct lwp_thread {
    struct lwp_thread *next;
    pid_t tid;
    uint8_t *cb;
    uint8_t *ring;
    size_t map_size;
    timer_t timer;
    int have_timer;
    volatile sig_atomic_t active;   /* read by the signal handler */
    volatile uint32_t drain_seq;    /* polled by the exiting thread */
    uint32_t drains;
    uint64_t samples;
    uint64_t missed_written;
};

static struct {
    const char *output;
    unsigned event;                 /* 2 = IRE, 3 = BRE */
    uint32_t interval;
    unsigned ring_records;
    unsigned drain_ms;
    int signal;                     /* timer signal */
    int threshold_signal;           /* OS-delivered threshold signal, or 0 */
} cfg;

static struct lwp_caps caps;
static int profiling;
static int out_fd = -1;
static dev_t out_dev;               /* the data file, to notice when a */
static ino_t out_ino;               /* program closed and reused out_fd */
static pid_t owner_pid;
static pthread_key_t thread_key;
static pthread_mutex_t threads_lock = PTHREAD_MUTEX_INITIALIZER;
static struct lwp_thread *threads;
static __thread struct lwp_thread *self __attribute__((tls_model("initial-exec")));

static pid_t gettid_(void)
{
    return (pid_t)syscall(SYS_gettid);
}

static void die(const char *fmt, ...)
{
    va_list ap;

    fputs("lwp-prof: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    _exit(TOOL_FAILURE);
}

static unsigned long env_number(const char *name, unsigned long dflt,
                                unsigned long min, unsigned long max)
{
    const char *s = getenv(name);
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
    const char *s = getenv(name);
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
            v = -1;
            for (int i = 1; i < SIGRTMIN; i++) {
                if (sigabbrev_np(i) && !strcmp(sigabbrev_np(i), s)) {
                    v = i;          /* USR2, PROF, IO, ... */
                }
            }
        }
    }
    if (v <= 0 || v >= NSIG || v == SIGKILL || v == SIGSTOP) {
        die("%s=%s: not a signal that can be caught", name, getenv(name));
    }
    return (int)v;
}

/* ---- capabilities: CPUID 8000_001Ch, as section 3 says software must ---- */

static void read_caps(void)
{
    unsigned a, b, c, d, max_ext;
    unsigned event_size, max_events;

    __cpuid(0x80000000, max_ext, b, c, d);
    if (max_ext < 0x80000001) {
        die("this CPU has no LWP (no CPUID leaf 8000_0001h); under QEMU run "
            "qemu-lwp's qemu-x86_64 -cpu max");
    }
    __cpuid(0x80000001, a, b, c, d);
    if (!(c & (1u << 15)) || max_ext < 0x8000001C) {
        die("this CPU has no LWP (CPUID 8000_0001h ECX[15] is clear); under "
            "QEMU run qemu-lwp's qemu-x86_64 -cpu max (or qemu-i386)");
    }
    __cpuid(0x8000001C, caps.eax, caps.ebx, caps.ecx, caps.edx);
    if (!(caps.eax & 1)) {
        die("LWP is supported but not available: the operating system has "
            "not enabled it (CPUID 8000_001Ch EAX[0], XCR0[62] clear)");
    }
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
    __cpuid_count(0xD, 62, a, b, c, d);
    caps.xsave_offset = a >= 128 ? b : 0;
}

/* ---- the data file ---- */

/*
 * Programs that close every descriptor (daemons, closefrom) may reuse ours:
 * write only while it is still the data file.  Async-signal-safe.
 */
static int output_ok(void)
{
    struct stat st;

    return out_fd >= 0 && !fstat(out_fd, &st) && st.st_dev == out_dev &&
           st.st_ino == out_ino;
}

static void write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;

    if (!output_ok()) {
        return;
    }
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return;
        }
        p += n;
        len -= (size_t)n;
    }
}

static void open_output(const char *path)
{
    struct lwpprof_file_header h = { .version = LWPPROF_VERSION };
    const char *prog = program_invocation_short_name;

    struct stat st;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);

    if (fd < 0) {
        die("cannot write %s: %s", path, strerror(errno));
    }
    /* Out of the way of programs that expect low descriptors to be free. */
    out_fd = fcntl(fd, F_DUPFD_CLOEXEC, 500);
    if (out_fd < 0) {
        out_fd = fd;
    } else {
        close(fd);
    }
    fstat(out_fd, &st);
    out_dev = st.st_dev;
    out_ino = st.st_ino;
    memcpy(h.magic, LWPPROF_MAGIC, sizeof(h.magic));
    h.header_size = sizeof(h);
    h.event_id = cfg.event;
    h.interval = cfg.interval;
    h.pid = (uint32_t)getpid();
    h.ppid = (uint32_t)getppid();
    h.ptr_bits = sizeof(void *) * 8;
    h.drain = cfg.threshold_signal ? LWPPROF_DRAIN_THRESHOLD : LWPPROF_DRAIN_TIMER;
    h.ring_records = cfg.ring_records;
    h.cb_size = caps.cb_size;
    strncpy(h.program, prog ? prog : "", sizeof(h.program) - 1);
    write_all(out_fd, &h, sizeof(h));
}

#define MAX_MODULES 1024
static struct { uint64_t bias, start; } modules_written[MAX_MODULES];
static unsigned n_modules_written;
static pthread_mutex_t modules_lock = PTHREAD_MUTEX_INITIALIZER;

static int module_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    char exe[4096], buf[sizeof(struct lwpprof_module) + sizeof(exe) + 8];
    struct lwpprof_module *m = (void *)buf;
    const char *name = info->dlpi_name;
    unsigned i;

    (void)size;
    (void)data;
    if (!name || !*name) {
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (n <= 0) {
            return 0;
        }
        exe[n] = 0;
        name = exe;
    }
    if (!strchr(name, '/')) {
        return 0;                       /* the vDSO: no file to read */
    }
    for (i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uint64_t start = info->dlpi_addr + ph->p_vaddr;
        unsigned k;
        size_t len;

        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) {
            continue;
        }
        for (k = 0; k < n_modules_written; k++) {
            if (modules_written[k].bias == info->dlpi_addr &&
                modules_written[k].start == start) {
                break;
            }
        }
        if (k < n_modules_written) {
            continue;
        }
        if (n_modules_written < MAX_MODULES) {
            modules_written[n_modules_written].bias = info->dlpi_addr;
            modules_written[n_modules_written++].start = start;
        }
        len = strlen(name) + 1;
        memset(buf, 0, sizeof(buf));
        memcpy(buf + sizeof(*m), name, len);
        m->b.type = LWPPROF_MODULE;
        m->b.size = (uint32_t)((sizeof(*m) + len + 7) & ~7ul);
        m->bias = info->dlpi_addr;
        m->start = start;
        m->end = start + ph->p_memsz;
        write_all(out_fd, buf, m->b.size);
    }
    return 0;
}

/* Not from a signal handler: dl_iterate_phdr takes the loader's lock. */
static void write_modules(void)
{
    pthread_mutex_lock(&modules_lock);
    dl_iterate_phdr(module_cb, NULL);
    pthread_mutex_unlock(&modules_lock);
}

/* ---- draining a ring ---- */

static uint32_t cb32(struct lwp_thread *t, unsigned off)
{
    return *(volatile uint32_t *)(t->cb + off);    /* LWP writes it */
}

static uint64_t cb64(struct lwp_thread *t, unsigned off)
{
    return *(volatile uint64_t *)(t->cb + off);    /* LWP writes it */
}

/*
 * Write the records [tail, head) of @t's ring as one block and hand the
 * space back to LWP.  Async-signal-safe; the caller keeps it from nesting
 * (the drain signal is blocked outside the handler).
 */
static void drain(struct lwp_thread *t, uint32_t head)
{
    uint32_t size = cb32(t, CB_BUFFER_SIZE);
    uint32_t tail = cb32(t, CB_TAIL);
    uint64_t missed = cb64(t, CB_MISSED);
    struct lwpprof_samples h = { .b.type = LWPPROF_SAMPLES };
    struct iovec iov[3];
    int n = 1;
    uint32_t bytes;

    if (head >= size || head % 32 || tail >= size) {
        return;
    }
    if (head >= tail) {
        bytes = head - tail;
        iov[n].iov_base = t->ring + tail;
        iov[n++].iov_len = bytes;
    } else {
        bytes = size - tail + head;
        iov[n].iov_base = t->ring + tail;
        iov[n++].iov_len = size - tail;
        iov[n].iov_base = t->ring;
        iov[n++].iov_len = head;
    }
    t->drains++;
    t->drain_seq++;
    if (!bytes && missed == t->missed_written) {
        return;
    }
    h.b.size = sizeof(h) + bytes;
    h.tid = (uint32_t)t->tid;
    h.count = bytes / 32;
    h.missed = missed;
    iov[0].iov_base = &h;
    iov[0].iov_len = sizeof(h);
    if (!output_ok()) {
        return;                 /* leave them: MissedEvents will tell */
    }
    while (writev(out_fd, iov, n) < 0 && errno == EINTR) {
        continue;
    }
    t->samples += h.count;
    t->missed_written = missed;
    *(volatile uint32_t *)(t->cb + CB_TAIL) = head; /* LWP re-reads it */
}

/*
 * The head offset LWP had when the signal interrupted the thread: from the
 * LWP component of the XSAVE image in the signal frame.
 */
static int frame_head(void *ucv, struct lwp_thread *t, uint32_t *head)
{
    ucontext_t *uc = ucv;
    uint8_t *x = (uint8_t *)uc->uc_mcontext.fpregs;
    uint8_t *lwp;

    if (!x || !caps.xsave_offset) {
        return 0;
    }
#ifdef __i386__
    x += 112;       /* the FXSAVE/XSAVE image follows the FSAVE header */
#endif
    if (((uintptr_t)x & 63) || *(uint32_t *)(x + 464) != SIGFRAME_XSTATE_MAGIC1 ||
        !(*(uint64_t *)(x + 472) >> 62 & 1) ||
        *(uint32_t *)(x + 480) < caps.xsave_offset + 128 ||
        !(*(uint64_t *)(x + 512) >> 62 & 1)) {
        return 0;
    }
    lwp = x + caps.xsave_offset;
    if (*(uint64_t *)(lwp + XS_LWPCB) != (uintptr_t)t->cb) {
        return 0;
    }
    *head = *(uint32_t *)(lwp + XS_HEAD);
    return 1;
}

/*
 * The program may use the drain signal too: its sigaction()/signal() calls
 * for it are recorded here (interposed below), and a signal that is not
 * lwp-prof's (not our timer's, not our exit-time request) goes to the
 * program's handler, or gets the default action.
 */
#define TIMER_COOKIE ((void *)0x4c575046)
static struct sigaction program_action;
static int program_action_set;
static volatile sig_atomic_t exit_drain_requested;  /* for the handler */
static int real_sigmask(int how, const sigset_t *set, sigset_t *old);

static int real_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    static int (*real)(int, const struct sigaction *, struct sigaction *);

    if (!real) {
        real = (int (*)(int, const struct sigaction *, struct sigaction *))
               dlsym(RTLD_NEXT, "sigaction");
    }
    return real(sig, act, old);
}

static int signal_is_ours(const siginfo_t *si)
{
    if (cfg.threshold_signal) {
        return 1;               /* the OS's threshold interrupt */
    }
    if (si->si_code == SI_TIMER) {
        return si->si_value.sival_ptr == TIMER_COOKIE;
    }
    return si->si_code == SI_TKILL && si->si_pid == owner_pid && exit_drain_requested;
}

static void forward_to_program(int sig, siginfo_t *si, void *ucv)
{
    ucontext_t *uc = ucv;
    struct sigaction pa = program_action;
    sigset_t mask, one;

    sigemptyset(&one);
    sigaddset(&one, sig);
    if (program_action_set && pa.sa_handler == SIG_IGN) {
        return;
    }
    if (!program_action_set || pa.sa_handler == SIG_DFL) {
        struct sigaction dfl, ours;

        memset(&dfl, 0, sizeof(dfl));
        dfl.sa_handler = SIG_DFL;
        real_sigaction(sig, &dfl, &ours);
        raise(sig);             /* pending until unblocked: the default action */
        real_sigmask(SIG_UNBLOCK, &one, NULL);
        real_sigmask(SIG_BLOCK, &one, NULL);
        real_sigaction(sig, &ours, NULL);
        return;
    }
    if (pa.sa_flags & SA_RESETHAND) {
        program_action.sa_handler = SIG_DFL;
        program_action.sa_flags &= ~SA_SIGINFO;
    }
    /* the mask the program's handler would have run with */
    mask = uc->uc_sigmask;
    for (int i = 1; i < NSIG; i++) {
        if (sigismember(&pa.sa_mask, i) == 1) {
            sigaddset(&mask, i);
        }
    }
    if (!(pa.sa_flags & SA_NODEFER)) {
        sigaddset(&mask, sig);
    }
    real_sigmask(SIG_SETMASK, &mask, NULL);
    if (pa.sa_flags & SA_SIGINFO) {
        pa.sa_sigaction(sig, si, ucv);
    } else {
        pa.sa_handler(sig);
    }
}

static void on_drain_signal(int sig, siginfo_t *si, void *uc)
{
    struct lwp_thread *t = self;
    int saved = errno;
    uint32_t head;

    if (!signal_is_ours(si)) {
        forward_to_program(sig, si, uc);
        errno = saved;
        return;
    }
    if (t && t->active) {
        if (frame_head(uc, t, &head)) {
            drain(t, head);
        } else if (cfg.threshold_signal) {
            /* A threshold always flushes the head to the LWPCB (8.3). */
            drain(t, cb32(t, CB_HEAD));
        }
    }
    errno = saved;
}

/* The drain signal this process uses. */
static int drain_signal(void)
{
    return cfg.threshold_signal ? cfg.threshold_signal : cfg.signal;
}

/* pthread_sigmask is interposed (below); lwp-prof's own calls use libc's. */
static int real_sigmask(int how, const sigset_t *set, sigset_t *old)
{
    static int (*real)(int, const sigset_t *, sigset_t *);

    if (!real) {
        real = (int (*)(int, const sigset_t *, sigset_t *))
               dlsym(RTLD_NEXT, "pthread_sigmask");
    }
    return real(how, set, old);
}

static void block_drain_signal(sigset_t *old)
{
    sigset_t set;

    sigemptyset(&set);
    sigaddset(&set, drain_signal());
    real_sigmask(SIG_BLOCK, &set, old);
}

static void unblock_drain_signal(void)
{
    sigset_t set;

    sigemptyset(&set);
    sigaddset(&set, drain_signal());
    real_sigmask(SIG_UNBLOCK, &set, NULL);
}

/* ---- per-thread sessions ---- */

static void start_timer(struct lwp_thread *t)
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

static struct lwp_thread *thread_begin(int check_interval)
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
    *(uint32_t *)(t->cb + CB_BUFFER_SIZE) = (uint32_t)ring_bytes;
    *(uint64_t *)(t->cb + CB_BUFFER_BASE) = (uintptr_t)t->ring;
    ev = t->cb + caps.event_offset + 8 * (cfg.event - 1);
    *(uint32_t *)ev = cfg.interval;
    *(uint32_t *)(ev + 4) = cfg.interval;

    pthread_mutex_lock(&threads_lock);
    t->next = threads;
    threads = t;
    pthread_mutex_unlock(&threads_lock);
    self = t;

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

/*
 * New objects (dlopen) are recorded when a thread starts or stops and at
 * the end; dlopen itself is not interposed, since glibc finds the
 * caller's RUNPATH from its return address.
 */

static void write_thread_block(struct lwp_thread *t)
{
    struct lwpprof_thread b = {
        .b = { LWPPROF_THREAD, sizeof(b) },
        .tid = (uint32_t)t->tid,
        .drains = t->drains,
        .samples = t->samples,
        .missed = cb64(t, CB_MISSED),
    };

    write_all(out_fd, &b, sizeof(b));
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

static void write_end(uint32_t reason)
{
    struct lwpprof_end e = { .b = { LWPPROF_END, sizeof(e) }, .reason = reason };

    write_all(out_fd, &e, sizeof(e));
}

/* This process image stops profiling (exit, or exec). */
static void process_stop(uint32_t reason)
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
    for (t = threads; t; t = next) {
        next = t->next;
        munmap(t, t->map_size);
    }
    threads = NULL;
    self = NULL;
    pthread_mutex_init(&threads_lock, NULL);
    pthread_mutex_init(&modules_lock, NULL);
    n_modules_written = 0;
    close(out_fd);
    snprintf(path, sizeof(path), "%s.%d", cfg.output, (int)owner_pid);
    open_output(path);
    write_modules();
    t = thread_begin(0);
    if (t) {
        pthread_setspecific(thread_key, t);
    }
    unblock_drain_signal();
}

static void __attribute__((constructor)) lwp_prof_init(void)
{
    const char *ev = getenv("LWP_PROF_EVENT");
    struct sigaction sa;
    unsigned long dflt_ring;

    unpreload_self();
    cfg.output = getenv("LWP_PROF_OUTPUT");
    if (!cfg.output || !*cfg.output) {
        cfg.output = "lwp-prof.data";
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
    open_output(cfg.output);
    write_modules();
    profiling = 1;
    /* pthread_exit() of the main thread stops its session too */
    pthread_setspecific(thread_key, thread_begin(1));
}

static void __attribute__((destructor)) lwp_prof_fini(void)
{
    process_stop(LWPPROF_END_EXIT);
    profiling = 0;
}

/* ---- interposed functions ---- */

struct start_args {
    void *(*fn)(void *);
    void *arg;
};

static void *thread_trampoline(void *p)
{
    struct start_args a = *(struct start_args *)p;
    struct lwp_thread *t;

    free(p);
    /* Creators often block every signal around pthread_create (xz does). */
    unblock_drain_signal();
    write_modules();
    t = thread_begin(0);
    if (t) {
        pthread_setspecific(thread_key, t);
    }
    return a.fn(a.arg);
}

EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr,
                          void *(*fn)(void *), void *arg)
{
    static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    struct start_args *a;
    int rc;

    if (!real) {
        real = dlsym(RTLD_NEXT, "pthread_create");
    }
    a = profiling ? malloc(sizeof(*a)) : NULL;
    if (!a) {
        return real(th, attr, fn, arg);
    }
    a->fn = fn;
    a->arg = arg;
    rc = real(th, attr, thread_trampoline, a);
    if (rc) {
        free(a);
    }
    return rc;
}

/*
 * A thread that blocks every signal (worker threads often do) would never
 * drain: the drain signal stays unblocked while the thread is profiled.
 */
static const sigset_t *without_drain_signal(int how, const sigset_t *set, sigset_t *copy)
{
    if (!profiling || !set || how == SIG_UNBLOCK || !self || !self->active ||
        !sigismember(set, drain_signal())) {
        return set;
    }
    *copy = *set;
    sigdelset(copy, drain_signal());
    return copy;
}

EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
    sigset_t copy;

    return real_sigmask(how, without_drain_signal(how, set, &copy), old);
}

EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
    static int (*real)(int, const sigset_t *, sigset_t *);
    sigset_t copy;

    if (!real) {
        real = (int (*)(int, const sigset_t *, sigset_t *))
               dlsym(RTLD_NEXT, "sigprocmask");
    }
    return real(how, without_drain_signal(how, set, &copy), old);
}

EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (!profiling || sig != drain_signal()) {
        return real_sigaction(sig, act, old);
    }
    if (old) {
        if (program_action_set) {
            *old = program_action;
        } else {
            memset(old, 0, sizeof(*old));
            old->sa_handler = SIG_DFL;
        }
    }
    if (act) {
        program_action = *act;
        program_action_set = 1;
    }
    return 0;
}

/* glibc's signal() calls its internal sigaction, not the interposed one. */
EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
    static sighandler_t (*real)(int, sighandler_t);
    struct sigaction sa, old;

    if (!profiling || sig != drain_signal()) {
        if (!real) {
            real = (sighandler_t (*)(int, sighandler_t))dlsym(RTLD_NEXT, "signal");
        }
        return real(sig, handler);
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = handler;
    sa.sa_flags = SA_RESTART;
    sigaction(sig, &sa, &old);
    return old.sa_handler;
}

/* exec: finish this image's profile; if exec fails, profile on. */
static void exec_prepare(void)
{
    process_stop(LWPPROF_END_EXEC);
}

static void exec_failed(void)
{
    if (profiling && getpid() == owner_pid && self && !self->active) {
        __llwpcb(self->cb);
        self->active = 1;
        start_timer(self);
    }
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
static void *real_execve, *real_execv, *real_execvp, *real_execvpe, *real_fexecve;

EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    int rc, e;

    exec_prepare();
    rc = REAL(execve)(path, argv, envp);
    e = errno;
    exec_failed();
    errno = e;
    return rc;
}

EXPORT int execv(const char *path, char *const argv[])
{
    int rc, e;

    exec_prepare();
    rc = REAL(execv)(path, argv);
    e = errno;
    exec_failed();
    errno = e;
    return rc;
}

EXPORT int execvp(const char *file, char *const argv[])
{
    int rc, e;

    exec_prepare();
    rc = REAL(execvp)(file, argv);
    e = errno;
    exec_failed();
    errno = e;
    return rc;
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    int rc, e;

    exec_prepare();
    rc = REAL(execvpe)(file, argv, envp);
    e = errno;
    exec_failed();
    errno = e;
    return rc;
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    int rc, e;

    exec_prepare();
    rc = REAL(fexecve)(fd, argv, envp);
    e = errno;
    exec_failed();
    errno = e;
    return rc;
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
