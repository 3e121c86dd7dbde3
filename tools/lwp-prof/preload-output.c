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

void open_output(const char *path)
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
    close(out_fd);
    open_output(path);
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
