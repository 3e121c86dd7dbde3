/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * liblwp-prof: draining a thread's ring from a signal handler, and sharing
 * the drain signal with the program.
 */
#include "preload.h"


/*
 * Write the records [tail, head) of @t's ring as one block and hand the
 * space back to LWP.  Async-signal-safe; the caller keeps it from nesting
 * (the drain signal is blocked outside the handler).
 */
void drain(struct lwp_thread *t, uint32_t head)
{
    uint32_t size = cb32(t, CB_BUFFER_SIZE) & CB_SIZE_MASK;
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
struct sigaction program_action;
int program_action_set;
volatile sig_atomic_t exit_drain_requested;

int real_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
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
    if (cfg.threshold_signal && si->si_code == SI_LWP_THRESHOLD) {
        return 1;               /* the OS's threshold interrupt */
    }
    if (!cfg.threshold_signal && si->si_code == SI_TIMER) {
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

void on_drain_signal(int sig, siginfo_t *si, void *uc)
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
int drain_signal(void)
{
    return cfg.threshold_signal ? cfg.threshold_signal : cfg.signal;
}

/* pthread_sigmask is interposed (below); lwp-prof's own calls use libc's. */
int real_sigmask(int how, const sigset_t *set, sigset_t *old)
{
    static int (*real)(int, const sigset_t *, sigset_t *);

    if (!real) {
        real = (int (*)(int, const sigset_t *, sigset_t *))
               dlsym(RTLD_NEXT, "pthread_sigmask");
    }
    return real(how, set, old);
}

void block_drain_signal(sigset_t *old)
{
    sigset_t set;

    sigemptyset(&set);
    sigaddset(&set, drain_signal());
    real_sigmask(SIG_BLOCK, &set, old);
}

void unblock_drain_signal(void)
{
    sigset_t set;

    sigemptyset(&set);
    sigaddset(&set, drain_signal());
    real_sigmask(SIG_UNBLOCK, &set, NULL);
}
