/* SPDX-License-Identifier: GPL-2.0-or-later */
/* liblwp-prof: the data file (lwp-prof-format.h) and the module list. */
#include "preload.h"

int out_fd = -1;
static dev_t out_dev;               /* the data file, to notice when a */
static ino_t out_ino;               /* program closed and reused out_fd */

/*
 * Programs that close every descriptor (daemons, closefrom) may reuse ours:
 * write only while it is still the data file.  Async-signal-safe.
 */
int output_ok(void)
{
    struct stat st;

    return out_fd >= 0 && !fstat(out_fd, &st) && st.st_dev == out_dev &&
           st.st_ino == out_ino;
}

void write_all(int fd, const void *buf, size_t len)
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

/* The process block: who this image is (lwp-prof-format.h). */
static void write_process(int forked)
{
    static char buf[sizeof(struct lwpprof_process) + 8192 + 8];
    struct lwpprof_process *p = (void *)buf;
    ssize_t n = 0, r;
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);

    memset(buf, 0, sizeof(buf));
    while (fd >= 0 && n < 8192 &&
           (r = read(fd, buf + sizeof(*p) + n, 8192 - (size_t)n)) > 0) {
        n += r;
    }
    if (fd >= 0) {
        close(fd);
    }
    p->b.type = LWPPROF_PROCESS;
    p->b.size = (uint32_t)((sizeof(*p) + (size_t)n + 7) & ~7ul);
    p->pid = (uint32_t)getpid();
    p->ppid = (uint32_t)getppid();
    p->flags = (owner_is_root ? LWPPROF_PROC_ROOT : 0) | (forked ? LWPPROF_PROC_FORKED : 0);
    p->cmdline_size = (uint32_t)n;
    p->session = cfg.session;
    memcpy(p->comm, cfg.comm, strnlen(cfg.comm, sizeof(p->comm) - 1));
    write_all(out_fd, buf, p->b.size);
}

/*
 * Open the data file: @path itself (the root: truncated), or with
 * @exclusive the first of PATH, PATH.1, PATH.2, ... that does not exist.
 */
void open_output(const char *path, int exclusive)
{
    struct lwpprof_file_header h = { .version = LWPPROF_VERSION };
    const char *prog = cfg.comm[0] ? cfg.comm : program_invocation_short_name;
    char name[PATH_MAX + 16];
    struct stat st;
    int fd, n = 0;

    snprintf(name, sizeof(name), "%s", path);
    for (;;) {
        fd = open(name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC |
                  (exclusive ? O_EXCL : O_TRUNC), 0644);
        if (fd >= 0 || !exclusive || errno != EEXIST || ++n > 100000) {
            break;
        }
        snprintf(name, sizeof(name), "%s.%d", path, n);
    }
    if (fd < 0) {
        if (!owner_is_root) {
            out_fd = -1;        /* never break a child: it runs unprofiled */
            return;
        }
        die("cannot write %s: %s", name, strerror(errno));
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
    write_process(exclusive && forked_child);
}

#define MAX_MODULES 1024
static struct { uint64_t bias, start; } modules_written[MAX_MODULES];
static unsigned n_modules_written;
static pthread_mutex_t modules_lock = PTHREAD_MUTEX_INITIALIZER;

static int module_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    /* static, under modules_lock: threads may have small stacks */
    static char exe[4096], resolved[PATH_MAX];
    static char buf[sizeof(struct lwpprof_module) + PATH_MAX + sizeof(exe) + 8];
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
    if (name[0] != '/' && realpath(name, resolved)) {
        name = resolved;                /* dlopen("./x.so"): report may run elsewhere */
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

/*
 * Not from a signal handler: dl_iterate_phdr takes the loader's lock.
 * Called at start, when a thread starts or ends, and at the end, which
 * catches what dlopen loaded; dlopen itself is not interposed, since glibc
 * finds the caller's RUNPATH from its return address.
 */
void write_modules(void)
{
    pthread_mutex_lock(&modules_lock);
    dl_iterate_phdr(module_cb, NULL);
    pthread_mutex_unlock(&modules_lock);
}

/* In a child of fork(): a data file of its own, with every module again. */
void output_reopen_after_fork(const char *path)
{
    pthread_mutex_init(&modules_lock, NULL);
    n_modules_written = 0;
    if (out_fd >= 0) {
        close(out_fd);
    }
    open_output(path, 1);
}

void write_thread_block(struct lwp_thread *t)
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

void write_end(uint32_t reason)
{
    struct lwpprof_end e = { .b = { LWPPROF_END, sizeof(e) }, .reason = reason };

    write_all(out_fd, &e, sizeof(e));
}
