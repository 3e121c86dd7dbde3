/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The Linux kernel ABI for AMD Lightweight Profiling (docs/lwp-linux.rst),
 * checked from user space in the guest:
 *  - what the kernel makes available: CPUID 8000_001Ch EAX = EDX (LWP_CFG =
 *    all supported features), XCR0[62], the XSAVE component, the cpuinfo
 *    flag and the "LWP" line of /proc/interrupts; COREID = CPU number;
 *  - the threshold signal: arch_prctl(ARCH_LWP_SET_SIGNAL) opts a thread
 *    in and chooses the signal, which arrives with si_code SI_LWP_THRESHOLD
 *    in the thread whose ring filled; a thread that did not opt in gets
 *    nothing and its interrupts are counted on /proc/interrupts LWU;
 *  - fork, pthread_create and exec start with LWP disabled;
 *  - a signal handler starts with LWP disabled, the frame holds the LWP
 *    state, sigreturn restores it (also when the handler edits it validly),
 *    and a crafted LWP component makes sigreturn raise SIGSEGV;
 *  - ptrace reads the component and writes it under the same rules;
 *  - LLWPCB on bad LWPCBs and a ring on read-only or unmapped pages give
 *    SIGSEGV with the faulting address;
 *  - with --exited-owner, in latitude mode: a late threshold interrupt whose
 *    owner has exited is counted on LWU and signals nobody.
 * Expected values come from the LWP specification and the documented ABI.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <elf.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <x86intrin.h>

#include "lwp-linux-test.h"

#define RING_RECORDS 64

static struct lwpcb cb __attribute__((aligned(64)));
static struct lwpcb cb2 __attribute__((aligned(64)));
static struct lwp_record ring[RING_RECORDS] __attribute__((aligned(64)));
static struct lwp_record ring2[RING_RECORDS] __attribute__((aligned(64)));

static void setup_cb(struct lwpcb *c, void *buf, uint32_t size, uint32_t flags,
                     uint32_t interval)
{
    memset(c, 0, sizeof(*c));
    memset(buf, 0, size);
    c->flags = flags;
    c->buffer_size = size;
    c->buffer_base = (uintptr_t)buf;
    for (int e = 0; e < 3; e++) {
        if (flags & (1u << (e + 1))) {
            c->event[e].interval = interval;
            c->event[e].counter = interval;
        }
    }
}

/* Some counted instructions, in user mode and nowhere else. */
static void spin(unsigned long n)
{
    asm volatile("1: dec %0\n\tjnz 1b" : "+r"(n) : : "cc");
}

static pid_t gettid_(void)
{
    return (pid_t)syscall(SYS_gettid);
}

static int file_contains(const char *path, const char *needle)
{
    static char buf[65536];
    FILE *f = fopen(path, "r");
    size_t n;

    if (!f) {
        return 0;
    }
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    return strstr(buf, needle) != NULL;
}

/* ---- what the kernel makes available -------------------------------- */

static void test_available(void)
{
    unsigned a, b, c, d;
    uint32_t lo, hi;

    __cpuid(0x80000001, a, b, c, d);
    report(c & (1u << 15), "CPUID 8000_0001h ECX[15]: LWP");
    __cpuid(0x8000001c, a, b, c, d);
    report(a & 1, "CPUID 8000_001Ch EAX[0]: LWP available (XCR0[62] set)");
    report(a == d, "CPUID 8000_001Ch EAX == EDX (%#x): LWP_CFG makes every supported feature available", a);
    report(a & (1u << 31), "CPUID 8000_001Ch EAX[31]: the threshold interrupt is available");
    asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    report(hi & (1u << 30), "XCR0[62] set");
    __cpuid_count(0xd, 0, a, b, c, d);
    report(b >= 0x3c0, "CPUID 0Dh.0 EBX %#x covers the LWP component (340h + 80h)", b);
    __cpuid_count(0xd, 62, a, b, c, d);
    report(a == 0x80 && b == 0x340, "CPUID 0Dh.3Eh: 80h bytes at 340h");
    report(file_contains("/proc/cpuinfo", " lwp"), "/proc/cpuinfo flags: lwp");
    report(file_contains("/proc/interrupts", "LWP:"), "/proc/interrupts: an LWP threshold interrupt line");
    report(file_contains("/proc/interrupts", "LWU:"),
           "/proc/interrupts: an LWU line (threshold interrupts that signalled nobody)");
}

/* COREID: every record names the CPU it was taken on. */
static void test_coreid(void)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set, old;
    int ok = 1;

    sched_getaffinity(0, sizeof(old), &old);
    for (long cpu = 0; cpu < ncpu; cpu++) {
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        if (sched_setaffinity(0, sizeof(set), &set)) {
            ok = 0;
            continue;
        }
        setup_cb(&cb, ring, sizeof(ring), 0, 0);
        llwpcb(&cb);
        __lwpins32(0x1234, 0x5678, 0x9);
        llwpcb(0);
        ok &= cb.head == LWP_RECORD && ring[0].event_id == 255 &&
              ring[0].core_id == cpu && sched_getcpu() == cpu;
        if (!ok) {
            note("cpu %ld: head %u event %u core %u", cpu, cb.head,
                 ring[0].event_id, ring[0].core_id);
        }
    }
    sched_setaffinity(0, sizeof(old), &old);
    report(ok, "LWPINS records carry CoreId = the CPU number on each of %ld CPUs", ncpu);
}

/* ---- the threshold interrupt -------------------------------------------- */

/*
 * The threshold signal: a thread that asked for one with
 * arch_prctl(ARCH_LWP_SET_SIGNAL, sig) gets sig, si_code SI_LWP_THRESHOLD,
 * for each threshold interrupt of its LWP state; nothing reaches a thread
 * that did not ask (Documentation/x86/lwp.rst).  THRESHOLD_SIG is a
 * real-time signal, SIGIO is watched too: neither may arrive unasked.
 */
#define THRESHOLD_SIG (SIGRTMIN + 2)

static volatile int thr_count, thr_signo, thr_code, thr_pid, thr_bad_thread, stray_count;
static volatile pid_t thr_tid;
static unsigned thr_drained;

static void on_threshold(int sig, siginfo_t *si, void *ctx)
{
    (void)ctx;
    if (!thr_tid) {
        stray_count++;
        return;
    }
    thr_count++;
    thr_signo = sig;
    thr_code = si->si_code;
    thr_pid = si->si_pid;
    thr_bad_thread |= gettid_() != thr_tid;
    /* LWP is disabled here; drain the ring. */
    uint32_t head = ((volatile struct lwpcb *)&cb)->head;
    uint32_t tail = cb.tail;
    thr_drained += ((head - tail + sizeof(ring)) % sizeof(ring)) / LWP_RECORD;
    ((volatile struct lwpcb *)&cb)->tail = head;
}

static void *unasked_thread(void *arg)
{
    (void)arg;
    long got = lwp_get_signal();

    setup_cb(&cb2, ring2, sizeof(ring2), (1u << LWP_EV_IRE) | LWP_FLAG_INT, 999);
    cb2.threshold = 8 * LWP_RECORD;
    llwpcb(&cb2);
    spin(400000);
    llwpcb(0);
    return (void *)got;
}

/* IRE with the threshold interrupt over 400,000 instructions of spin(). */
static void profile_with_interrupts(void)
{
    setup_cb(&cb, ring, sizeof(ring), (1u << LWP_EV_IRE) | LWP_FLAG_INT, 999);
    cb.threshold = 8 * LWP_RECORD;
    llwpcb(&cb);
    spin(400000);
    llwpcb(0);
}

static void test_threshold_signal(void)
{
    struct sigaction sa = { .sa_sigaction = on_threshold, .sa_flags = SA_SIGINFO };
    long long lwp0, lwu0, lwp1, lwu1;
    sigset_t pending;
    pthread_t t;
    void *ret;

    sigaction(THRESHOLD_SIG, &sa, NULL);
    sigaction(SIGIO, &sa, NULL);

    /* The arch_prctl calls, as documented */
    report(lwp_get_signal() == 0, "ARCH_LWP_GET_SIGNAL: a program starts with no threshold signal");
    errno = 0;
    report(lwp_set_signal(SIGKILL) == -1 && errno == EINVAL, "ARCH_LWP_SET_SIGNAL refuses SIGKILL");
    errno = 0;
    report(lwp_set_signal(SIGSTOP) == -1 && errno == EINVAL, "ARCH_LWP_SET_SIGNAL refuses SIGSTOP");
    errno = 0;
    report(lwp_set_signal(65) == -1 && errno == EINVAL, "ARCH_LWP_SET_SIGNAL refuses 65, not a signal");
    report(lwp_get_signal() == 0, "a refused signal leaves none set");

    /* 1. Not opted in: INT set, interrupts counted on LWU, nobody signalled. */
    lwp0 = proc_interrupts("LWP");
    lwu0 = proc_interrupts("LWU");
    profile_with_interrupts();
    lwp1 = proc_interrupts("LWP");
    lwu1 = proc_interrupts("LWU");
    sigpending(&pending);
    note("not opted in: %lld LWP interrupts, %lld of them signalled nobody (LWU)",
         lwp1 - lwp0, lwu1 - lwu0);
    report(lwp1 - lwp0 >= 1, "a thread that did not opt in still raises the threshold interrupt");
    report(lwu1 - lwu0 == lwp1 - lwp0, "each of its interrupts is counted on /proc/interrupts LWU");
    report(stray_count == 0 && !sigismember(&pending, SIGIO) &&
           !sigismember(&pending, THRESHOLD_SIG),
           "a thread that did not opt in gets no signal, SIGIO or other");

    /* 2. Opted in: THRESHOLD_SIG with SI_LWP_THRESHOLD, drains the ring. */
    report(lwp_set_signal(THRESHOLD_SIG) == 0 && lwp_get_signal() == THRESHOLD_SIG,
           "ARCH_LWP_SET_SIGNAL(SIGRTMIN+2), read back by ARCH_LWP_GET_SIGNAL");
    thr_tid = gettid_();
    lwu0 = proc_interrupts("LWU");
    profile_with_interrupts();
    lwu1 = proc_interrupts("LWU");
    report(cb.flags == ((1u << LWP_EV_IRE) | LWP_FLAG_INT),
           "LLWPCB keeps IRE and INT: both available");
    uint32_t left = ((cb.head - cb.tail + sizeof(ring)) % sizeof(ring)) / LWP_RECORD;
    note("%d threshold signals, %u records drained in the handler, %u left, %llu missed",
         thr_count, thr_drained, left, (unsigned long long)cb.missed);
    report(thr_count >= 50, "threshold interrupts arrive as the chosen signal (%d)", thr_count);
    report(thr_signo == THRESHOLD_SIG && thr_code == SI_LWP_THRESHOLD && thr_pid == 0,
           "siginfo: the chosen signal, si_code SI_LWP_THRESHOLD (0x40), si_pid 0 "
           "(signal %d, code %#x)", thr_signo, thr_code);
    report(!thr_bad_thread, "the signal runs in the thread whose ring filled");
    report(lwu1 == lwu0, "no interrupt of an opted-in thread goes unclaimed (LWU +%lld)",
           lwu1 - lwu0);
    report(cb.missed == 0, "MissedEvents 0: the handler kept up");
    /* 800002 instructions counted (2 per iteration + the call's), period 1000 */
    unsigned total = thr_drained + left;
    report(total >= 799 && total <= 801, "%u IRE records for ~800000 instructions at period 1000", total);

    /*
     * 3. Another thread of the same process, which did not opt in: its
     * interrupts signal nobody, not this opted-in thread.
     */
    thr_count = 0;
    lwp0 = proc_interrupts("LWP");
    lwu0 = proc_interrupts("LWU");
    pthread_create(&t, NULL, unasked_thread, NULL);
    pthread_join(t, &ret);
    lwp1 = proc_interrupts("LWP");
    lwu1 = proc_interrupts("LWU");
    report(ret == NULL, "a new thread starts with no threshold signal (%ld)", (long)ret);
    report(lwp1 - lwp0 >= 1 && lwu1 - lwu0 == lwp1 - lwp0 && thr_count == 0 && stray_count == 0,
           "a thread that did not opt in, beside one that did: %lld interrupts, %lld unclaimed, "
           "%d signals", lwp1 - lwp0, lwu1 - lwu0, thr_count + stray_count);

    report(lwp_set_signal(0) == 0 && lwp_get_signal() == 0, "ARCH_LWP_SET_SIGNAL(0) opts out");
    thr_tid = 0;
    signal(THRESHOLD_SIG, SIG_DFL);
    signal(SIGIO, SIG_DFL);
}

/*
 * Latitude mode only (lwp-irq-delay, docs/lwp-latitude.rst): a thread that
 * opted in stores one record with a threshold of 0 -- one threshold
 * interrupt -- and exits at once, so that the interrupt often arrives after
 * its owner is gone.  Such an interrupt belongs to no one: the kernel must
 * count it on LWU and signal nobody, not even the main thread, which opted
 * in to the same signal and is the one running when it arrives.
 */
static volatile int late_owner_signals, late_other_signals;
static volatile pid_t late_owner_tid;

static void on_late_threshold(int sig, siginfo_t *si, void *ctx)
{
    (void)sig;
    (void)si;
    (void)ctx;
    if (gettid_() == late_owner_tid) {
        late_owner_signals++;
    } else {
        late_other_signals++;
    }
}

static void *late_owner_thread(void *arg)
{
    (void)arg;
    late_owner_tid = gettid_();
    lwp_set_signal(THRESHOLD_SIG);
    setup_cb(&cb2, ring2, sizeof(ring2), (1u << LWP_EV_IRE) | LWP_FLAG_INT, 999);
    cb2.threshold = 0;
    llwpcb(&cb2);
    spin(700);          /* 1,400 instructions: one record at the 1,000th */
    llwpcb(0);
    return NULL;
}

static void test_exited_owner(void)
{
    struct sigaction sa = { .sa_sigaction = on_late_threshold, .sa_flags = SA_SIGINFO };
    int tries, after_exit = 0, in_owner = 0, raised = 0;

    sigaction(THRESHOLD_SIG, &sa, NULL);
    report(lwp_set_signal(THRESHOLD_SIG) == 0, "the main thread opts in to the same signal");
    for (tries = 0; tries < 200 && after_exit < 3; tries++) {
        long long lwp0 = proc_interrupts("LWP"), lwu0 = proc_interrupts("LWU");
        int owner0 = late_owner_signals;
        pthread_t t;

        pthread_create(&t, NULL, late_owner_thread, NULL);
        pthread_join(t, NULL);
        /*
         * Spin, so that this opted-in thread is current when the interrupt
         * comes: 10^6 instructions late at most, 10^10 bound a lost one.
         */
        for (int i = 0; i < 50000 && proc_interrupts("LWP") == lwp0; i++) {
            spin(100000);
        }
        raised += proc_interrupts("LWP") - lwp0;
        after_exit += proc_interrupts("LWU") - lwu0;
        in_owner += late_owner_signals - owner0;
    }
    note("%d threads, %d threshold interrupts: %d signalled the owner before it "
         "exited, %d arrived after (LWU), %d other signals",
         tries, raised, in_owner, after_exit, late_other_signals);
    report(raised == tries, "one threshold interrupt per thread (%d for %d)", raised, tries);
    report(after_exit >= 1, "interrupts arrived after their owner exited (%d)", after_exit);
    report(late_other_signals == 0,
           "an interrupt whose owner exited signals nobody, not the opted-in thread "
           "that runs (%d signals)", late_other_signals);
    report(in_owner + after_exit <= raised,
           "each interrupt signalled its owner or was counted on LWU, never both");
    lwp_set_signal(0);
    signal(THRESHOLD_SIG, SIG_DFL);
}

/* ---- new tasks --------------------------------------------------------------- */

static void *thread_main(void *arg)
{
    (void)arg;
    uintptr_t at_start = (uintptr_t)slwpcb();

    setup_cb(&cb2, ring2, sizeof(ring2), 0, 0);
    llwpcb(&cb2);
    __lwpins32(1, 2, 3);
    llwpcb(0);
    return (void *)(at_start | (cb2.head == LWP_RECORD ? 0 : 1));
}

static void test_new_tasks(void)
{
    pthread_t t;
    void *ret;
    int status;
    pid_t pid;

    setup_cb(&cb, ring, sizeof(ring), 0, 0);
    llwpcb(&cb);

    pthread_create(&t, NULL, thread_main, NULL);
    pthread_join(t, &ret);
    report(ret == NULL, "a new thread starts with LWP disabled and gets its own LWPCB");
    report(slwpcb() == &cb, "the creating thread keeps its LWPCB");
    report(cb.head == 0, "the new thread's records went to its own ring only");

    lwp_set_signal(SIGRTMIN + 3);
    pid = fork();
    if (pid == 0) {
        int child_ok = slwpcb() == NULL && lwp_get_signal() == 0;
        __lwpins32(1, 2, 3);       /* LWP disabled: stores nothing */
        _exit(child_ok && cb.head == 0 ? 0 : 1);
    }
    waitpid(pid, &status, 0);
    report(WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "a forked child starts with LWP disabled and no threshold signal");
    report(slwpcb() == &cb, "the parent keeps LWP after fork");
    __lwpins32(1, 2, 3);
    void *now = slwpcb();
    llwpcb(0);
    report(now == &cb && cb.head == LWP_RECORD, "the parent's ring got its LWPINS");

    setup_cb(&cb, ring, sizeof(ring), 0, 0);
    pid = fork();
    if (pid == 0) {
        llwpcb(&cb);
        lwp_set_signal(SIGRTMIN + 3);
        execl("/proc/self/exe", "lwp-linux-abi", "--exec-check", (char *)NULL);
        _exit(2);
    }
    waitpid(pid, &status, 0);
    report(WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "a program starts with LWP disabled and no threshold signal after exec "
           "(status %#x)", status);
    lwp_set_signal(0);
}

/* ---- signal delivery and sigreturn -------------------------------------------- */

enum frame_action {
    FRAME_KEEP,
    FRAME_DISABLE,          /* LWPCBAddress 0: valid, LWP off after sigreturn */
    FRAME_CLEAR_BV,         /* XSTATE_BV[62] clear: valid, LWP off */
    FRAME_OTHER_RING,       /* a valid other LWPCB and ring */
    FRAME_HANDLER_SESSION,  /* the handler profiles itself into cb2 */
    FRAME_BAD = 16,
    FRAME_RESERVED = FRAME_BAD, /* a reserved byte set */
    FRAME_FLAGS_BIT0,       /* reserved Flags bit 0 */
    FRAME_SIZE_HIGH,        /* BufferSize bits 31:28 */
    FRAME_KERNEL_CB,        /* LWPCB at a kernel address */
    FRAME_KERNEL_RING,      /* ring at a kernel address */
    FRAME_NONCANONICAL_CB,
    FRAME_RING_PAST_TOP,    /* ring crossing the top of user space */
    FRAME_END,
};

static volatile int frame_action;
static volatile uintptr_t in_handler_cb = 1;
static struct lwp_xstate frame_lwp;
static uint64_t frame_bv;

static void on_usr1(int sig, siginfo_t *si, void *ctx)
{
    ucontext_t *uc = ctx;
    /* The XSAVE area: after the 112-byte FSAVE header in a 32-bit frame */
    uint8_t *xs = (uint8_t *)uc->uc_mcontext.fpregs + (sizeof(long) == 4 ? 112 : 0);
    struct lwp_xstate *lwp = (struct lwp_xstate *)(xs + LWP_XSTATE_OFFSET);
    uint64_t *bv = (uint64_t *)(xs + XSTATE_BV_OFFSET);

    (void)sig;
    (void)si;
    in_handler_cb = (uintptr_t)slwpcb();
    frame_bv = *bv;
    if (frame_action == FRAME_HANDLER_SESSION) {
        llwpcb(&cb2);
        __lwpins32(7, 8, 9);
        in_handler_cb = (uintptr_t)slwpcb();  /* also flushes cb2's head */
    }
    memcpy(&frame_lwp, lwp, sizeof(frame_lwp));
    switch (frame_action) {
    case FRAME_DISABLE:
        lwp->lwpcb_addr = 0;
        break;
    case FRAME_CLEAR_BV:
        *bv &= ~XFEATURE_MASK_LWP;
        break;
    case FRAME_OTHER_RING:
        /* What LLWPCB of cb2 would have set up (ring2, head 0). */
        lwp->lwpcb_addr = (uintptr_t)&cb2;
        lwp->buffer_base = (uintptr_t)ring2;
        lwp->buffer_size = sizeof(ring2);
        lwp->head = 0;
        break;
    case FRAME_RESERVED:
        lwp->reserved[17] = 1;
        break;
    case FRAME_FLAGS_BIT0:
        lwp->flags |= 1;
        break;
    case FRAME_SIZE_HIGH:
        lwp->buffer_size |= 1u << 28;
        break;
    case FRAME_KERNEL_CB:
        lwp->lwpcb_addr = 0xffffffff81000000ull;
        break;
    case FRAME_KERNEL_RING:
        lwp->buffer_base = 0xffff888000000000ull;
        break;
    case FRAME_NONCANONICAL_CB:
        lwp->lwpcb_addr = 0x8000000000000000ull;
        break;
    case FRAME_RING_PAST_TOP:
        /* The last page of 5-level user space (57-bit linear addresses). */
        lwp->buffer_base = 0x00fffffffffff000ull;
        lwp->buffer_size = 0x100000;
        break;
    }
}

static const char *const bad_frame_name[] = {
    "a reserved byte", "reserved Flags bit 0", "BufferSize bits 31:28",
    "LWPCBAddress in the kernel", "BufferBase in the kernel",
    "a non-canonical LWPCBAddress", "a ring crossing the top of user space (even with LA57)",
};

static void test_signals(void)
{
    struct sigaction sa = { .sa_sigaction = on_usr1, .sa_flags = SA_SIGINFO };

    sigaction(SIGUSR1, &sa, NULL);

    setup_cb(&cb, ring, sizeof(ring), 0, 0);
    llwpcb(&cb);
    frame_action = FRAME_KEEP;
    raise(SIGUSR1);
    report(in_handler_cb == 0, "a signal handler starts with LWP disabled");
    report((frame_bv & XFEATURE_MASK_LWP) && frame_lwp.lwpcb_addr == (uintptr_t)&cb &&
           frame_lwp.buffer_base == (uintptr_t)ring &&
           frame_lwp.buffer_size == sizeof(ring),
           "the signal frame holds the thread's LWP state (XSTATE_BV[62], LWPCB, ring)");
    report(slwpcb() == &cb, "sigreturn restores LWP");
    __lwpins32(1, 2, 3);
    report((llwpcb(0), cb.head == LWP_RECORD), "and records go on into the same ring");

    setup_cb(&cb, ring, sizeof(ring), 0, 0);
    llwpcb(&cb);
    frame_action = FRAME_DISABLE;
    raise(SIGUSR1);
    report(slwpcb() == NULL, "LWPCBAddress 0 in the frame: LWP disabled after sigreturn");

    llwpcb(&cb);
    frame_action = FRAME_CLEAR_BV;
    raise(SIGUSR1);
    report(slwpcb() == NULL, "XSTATE_BV[62] clear in the frame: LWP disabled after sigreturn");

    setup_cb(&cb, ring, sizeof(ring), 0, 0);
    setup_cb(&cb2, ring2, sizeof(ring2), 0, 0);
    llwpcb(&cb2);       /* cb2 as LLWPCB leaves it, then cb */
    llwpcb(&cb);
    frame_action = FRAME_OTHER_RING;
    raise(SIGUSR1);
    __lwpins32(1, 2, 3);
    void *now = slwpcb();
    llwpcb(0);
    report(now == &cb2 && cb2.head == LWP_RECORD && ring2[0].event_id == 255 &&
           cb.head == 0, "a valid LWP state written into the frame is what sigreturn loads");

    setup_cb(&cb, ring, sizeof(ring), 0, 0);
    setup_cb(&cb2, ring2, sizeof(ring2), 0, 0);
    llwpcb(&cb);
    frame_action = FRAME_HANDLER_SESSION;
    raise(SIGUSR1);
    now = slwpcb();
    __lwpins32(1, 2, 3);
    llwpcb(0);
    report(in_handler_cb == (uintptr_t)&cb2 && cb2.head == LWP_RECORD &&
           ring2[0].event_id == 255 && ring2[0].data1 == 8,
           "a handler can profile itself with its own LWPCB");
    report(now == &cb && cb.head == LWP_RECORD && cb2.head == LWP_RECORD,
           "sigreturn ends the handler's session and resumes the interrupted one");

    for (int a = FRAME_BAD; a < FRAME_END; a++) {
        int status;
        pid_t pid = fork();

        if (pid == 0) {
            setup_cb(&cb, ring, sizeof(ring), 1u << LWP_EV_IRE, 99);
            llwpcb(&cb);
            frame_action = a;
            raise(SIGUSR1);
            _exit(0);   /* sigreturn accepted the frame */
        }
        waitpid(pid, &status, 0);
        report(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV,
               "sigreturn with %s in the LWP component: SIGSEGV (status %#x)",
               bad_frame_name[a - FRAME_BAD], status);
    }
    signal(SIGUSR1, SIG_DFL);
}

/* ---- ptrace ------------------------------------------------------------------------ */

/*
 * A tracer reads the LWP component with PTRACE_GETREGSET(NT_X86_XSTATE) and
 * may write it back edited; the kernel applies sigreturn's rules.
 */
static void test_ptrace(void)
{
    static uint8_t xs[8192] __attribute__((aligned(64)));
    struct iovec iov = { .iov_base = xs, .iov_len = sizeof(xs) };
    struct lwp_xstate *lwp = (struct lwp_xstate *)(xs + LWP_XSTATE_OFFSET);
    int status, got, bad, good;
    pid_t pid = fork();

    if (pid == 0) {
        setup_cb(&cb, ring, sizeof(ring), 0, 0);
        llwpcb(&cb);
        ptrace(PTRACE_TRACEME, 0, NULL, NULL);
        raise(SIGSTOP);
        /* The tracer set LWPCBAddress 0: LWP is off now. */
        _exit(slwpcb() == NULL ? 0 : 1);
    }
    waitpid(pid, &status, 0);
    got = ptrace(PTRACE_GETREGSET, pid, (void *)NT_X86_XSTATE, &iov) == 0 &&
          (*(uint64_t *)(xs + XSTATE_BV_OFFSET) & XFEATURE_MASK_LWP) &&
          lwp->lwpcb_addr == (uintptr_t)&cb && lwp->buffer_base == (uintptr_t)ring;
    report(got, "PTRACE_GETREGSET NT_X86_XSTATE: the tracee's LWP state at 340h");

    lwp->reserved[3] = 0xff;
    errno = 0;
    bad = ptrace(PTRACE_SETREGSET, pid, (void *)NT_X86_XSTATE, &iov) == -1 && errno == EINVAL;
    report(bad, "PTRACE_SETREGSET with a reserved byte set in the LWP component: EINVAL");
    lwp->reserved[3] = 0;
    lwp->lwpcb_addr = 0xffffffff81000000ull;
    errno = 0;
    bad = ptrace(PTRACE_SETREGSET, pid, (void *)NT_X86_XSTATE, &iov) == -1 && errno == EINVAL;
    report(bad, "PTRACE_SETREGSET with a kernel LWPCBAddress: EINVAL");
    lwp->lwpcb_addr = 0;
    good = ptrace(PTRACE_SETREGSET, pid, (void *)NT_X86_XSTATE, &iov) == 0;
    ptrace(PTRACE_CONT, pid, NULL, NULL);
    waitpid(pid, &status, 0);
    report(good && WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "PTRACE_SETREGSET with LWPCBAddress 0: accepted, the tracee runs with LWP off");
}

/* ---- faults ------------------------------------------------------------------------ */

static volatile uintptr_t fault_lo, fault_hi;
static volatile int fault_code;

static void on_segv(int sig, siginfo_t *si, void *ctx)
{
    uintptr_t a = (uintptr_t)si->si_addr;

    (void)sig;
    (void)ctx;
    _exit(a >= fault_lo && a < fault_hi && (!fault_code || si->si_code == fault_code) ? 42 : 43);
}

enum fault_case { RING_READONLY, RING_UNMAPPED, CB_READONLY, CB_UNMAPPED, CB_KERNEL,
                  CB_NONCANONICAL, RING_KERNEL, FAULT_END };
static const char *const fault_name[] = {
    "a ring on read-only pages: SIGSEGV SEGV_ACCERR in the ring",
    "a ring on unmapped pages: SIGSEGV SEGV_MAPERR in the ring",
    "LLWPCB of a read-only LWPCB: SIGSEGV SEGV_ACCERR at the LWPCB",
    "LLWPCB of an unmapped LWPCB: SIGSEGV SEGV_MAPERR at the LWPCB",
    "LLWPCB of a kernel address: SIGSEGV at that address",
    "LLWPCB of a non-canonical address: SIGSEGV",
    "a ring at a kernel address: SIGSEGV at the ring",
};

static void fault_child(int c)
{
    struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO };
    size_t pg = 4096;
    uint8_t *mem = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct lwpcb *c1 = (struct lwpcb *)mem;
    uint8_t *r = mem + 2 * pg;

    sigaction(SIGSEGV, &sa, NULL);
    setup_cb(c1, r, 2 * pg, 1u << LWP_EV_IRE, 9);
    fault_code = 0;
    switch (c) {
    case RING_READONLY:
    case RING_UNMAPPED:
        llwpcb(c1);
        fault_lo = (uintptr_t)r;
        fault_hi = fault_lo + 2 * pg;
        fault_code = c == RING_READONLY ? SEGV_ACCERR : SEGV_MAPERR;
        if (c == RING_READONLY) {
            mprotect(r, 2 * pg, PROT_READ);
        } else {
            munmap(r, 2 * pg);
        }
        spin(1000);
        break;
    case CB_READONLY:
    case CB_UNMAPPED:
        fault_lo = (uintptr_t)c1;
        fault_hi = fault_lo + pg;
        fault_code = c == CB_READONLY ? SEGV_ACCERR : SEGV_MAPERR;
        if (c == CB_READONLY) {
            mprotect(c1, pg, PROT_READ);
        } else {
            munmap(c1, pg);
        }
        llwpcb(c1);
        break;
#ifdef __x86_64__
    case CB_KERNEL:
        fault_lo = 0xffffffff81000000ull;
        fault_hi = fault_lo + 0x1000;
        llwpcb((void *)fault_lo);
        break;
    case CB_NONCANONICAL:
        fault_lo = 0;
        fault_hi = 1;       /* #GP: si_addr 0 */
        llwpcb((void *)0x8000000000000000ull);
        break;
    case RING_KERNEL:
        c1->buffer_base = 0xffff888000000000ull;
        fault_lo = c1->buffer_base;
        fault_hi = fault_lo + 2 * pg;
        llwpcb(c1);
        spin(1000);
        break;
#endif
    }
    _exit(0);   /* no fault */
}

static void test_faults(void)
{
    for (int c = 0; c < FAULT_END; c++) {
        int status;
        pid_t pid;

        if (sizeof(long) == 4 && (c == CB_KERNEL || c == CB_NONCANONICAL || c == RING_KERNEL)) {
            /* A 32-bit program has neither kernel nor non-canonical addresses. */
            note("32-bit: not applicable: %s", fault_name[c]);
            continue;
        }
        pid = fork();

        if (pid == 0) {
            fault_child(c);
        }
        waitpid(pid, &status, 0);
        report(WIFEXITED(status) && WEXITSTATUS(status) == 42, "%s (status %#x)",
               fault_name[c], status);
    }
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--exec-check")) {
        return slwpcb() == NULL && lwp_get_signal() == 0 ? 0 : 1;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 1 && !strcmp(argv[1], "--exited-owner")) {
        test_exited_owner();
        return report_summary("lwp-linux-abi --exited-owner");
    }
    test_available();
    test_coreid();
    test_threshold_signal();
    test_new_tasks();
    test_signals();
    test_ptrace();
    test_faults();
    return report_summary(sizeof(long) == 4 ? "lwp-linux-abi (32-bit)" : "lwp-linux-abi");
}
