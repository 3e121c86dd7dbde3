/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * N threads profile themselves at once, each with its own LWPCB and ring,
 * sampling instructions retired (IRE), through thousands of context
 * switches and, with more than one CPU, migrations.
 *
 * Each thread runs its own copy of a loop written in assembly, so that every
 * user-mode instruction it executes while LWP is enabled is known:
 *
 *     llwpcb %rdi               enable (r12 = 0 rounds done, r9 = &limit)
 *   p0: mov %r13, %rcx          \
 *   p1: add %ecx, %eax  \        |
 *   p2: dec %rcx         > INNER |  one round, until
 *   p3: jnz p1          /        |  rounds >= *limit
 *   p4: mov $24, %eax            |  sched_yield()
 *   p5: syscall                  |
 *   p6: inc %r12                 |  rounds done
 *   p7: cmp (%r9), %r12          |
 *   p8: jb p0                   /
 *   p9: llwpcb %r8              disable (r8 = 0); returns the rounds
 *
 * A thread's counted instructions form a fixed stream of ROUNDS * (3 * INNER
 * + 5) instructions: SYSCALL leaves CPL 3 and does not retire there, so it
 * is not counted, nor is LLWPCB (docs/lwp-events.rst).  With interval I, LWP
 * stores a record every I + 1 of them (spec 2.2), so record k must name
 * instruction k * (I + 1) + d of the stream, for one small offset d that
 * LLWPCB's boundary fixes, and there must be exactly as many records as the
 * stream holds periods.  A record naming another thread's code, a lost or
 * extra count across a context switch, a migration or a signal, or state
 * restored from the wrong thread breaks that.  Each record is checked as it
 * is drained, against every candidate offset, so a run of any length needs
 * no room for its records; the expected count comes from the rounds the
 * thread actually ran.
 *
 * Each thread opts in to the threshold signal with its own choice of
 * signal (arch_prctl(ARCH_LWP_SET_SIGNAL): SIGIO for even threads,
 * SIGRTMIN+1 for odd ones, Documentation/x86/lwp.rst), which drains the
 * ring in a handler, which runs with LWP disabled (no counted
 * instructions), and moves the thread to the next CPU, so that its LWP
 * state is restored on another CPU each time.  MissedEvents must stay 0.
 * sched_yield() in the loop gives the context switches, counted with
 * getrusage(RUSAGE_THREAD).
 *
 * -b N: bystanders.  N processes that never use LWP and handle no signal
 * (SIGIO's and SIGRTMIN+1's default action terminates them; half of them
 * block every signal instead and check that none is pending) ping-pong
 * bytes over pipes in pairs, with sched_yield(), from before the first LWP
 * thread starts until after the last one ends, so that the CPUs switch
 * between LWP threads and processes that must never see an LWP threshold
 * signal: a threshold interrupt taken late, after a context switch, must
 * still reach the thread whose ring filled (patches/linux 0004).  Each
 * must exit with status 0 after its last round trip.
 *
 *   lwp-linux-threads [-l] [-b bystanders] [threads [rounds [inner [interval]]]]
 *
 * rounds 0: every thread runs until the harness says stop on the program's
 * standard input, the guest's serial console: a BREAK on the line (QMP
 * chardev-send-break, read as a NUL byte: tests/linux/migrate_linux.py,
 * tests/libvirt/test_libvirt.py) or the byte 'q'.  So a run overlaps whatever
 * the harness does for as long as it takes, on a fast machine or a loaded
 * one; each thread then finishes the round it is in, and runs at least
 * MIN_ROUNDS in all.  While it waits the program prints 'progress: N records' whenever
 * the records drained so far have grown, at most about twice a second.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <termios.h>

#include "lwp-linux-test.h"

#define MAX_THREADS 8
#define RING_RECORDS 64
#define NPOS 10
/* The offsets d tried, in order: 0, -1, 1, -2, 2, ... */
#define NOFFSETS 9
#define OFFSET(i) ((i) % 2 ? -((i) + 1) / 2 : (i) / 2)
/* Rounds 0 (until stopped): no thread stops before this many rounds. */
#define MIN_ROUNDS 1500
/* Records kept for the LWP_DEBUG listing. */
#define FIRST_RECORDS 12

#define WORK(n)                                                              \
    "\t.text\n\t.p2align 6\n\t.globl work" #n "\n\t.type work" #n ",@function\n" \
    "work" #n ":\n\t"                                                        \
    "push %r12\n\tpush %r13\n\txor %r12d, %r12d\n\tmov %rdx, %r13\n\t"     \
    "mov %rsi, %r9\n\txor %r8d, %r8d\n\t"                                    \
    "llwpcb %rdi\n"                                                          \
    "\t.globl work" #n "_p0\nwork" #n "_p0: mov %r13, %rcx\n"                \
    "\t.globl work" #n "_p1\nwork" #n "_p1: add %ecx, %eax\n"                \
    "\t.globl work" #n "_p2\nwork" #n "_p2: dec %rcx\n"                      \
    "\t.globl work" #n "_p3\nwork" #n "_p3: jnz work" #n "_p1\n"             \
    "\t.globl work" #n "_p4\nwork" #n "_p4: mov $24, %eax\n"                 \
    "\t.globl work" #n "_p5\nwork" #n "_p5: syscall\n"                       \
    "\t.globl work" #n "_p6\nwork" #n "_p6: inc %r12\n"                      \
    "\t.globl work" #n "_p7\nwork" #n "_p7: cmp (%r9), %r12\n"               \
    "\t.globl work" #n "_p8\nwork" #n "_p8: jb work" #n "_p0\n"              \
    "\t.globl work" #n "_p9\nwork" #n "_p9: llwpcb %r8\n\t"                  \
    "mov %r12, %rax\n\tpop %r13\n\tpop %r12\n\tret\n\t.size work" #n ", .-work" #n "\n"

asm(WORK(0) WORK(1) WORK(2) WORK(3) WORK(4) WORK(5) WORK(6) WORK(7));

#define DECLARE_WORK(n)                                                      \
    uint64_t work##n(struct lwpcb *cb, const volatile uint64_t *limit,       \
                     uint64_t inner);                                        \
    extern const char work##n##_p0[], work##n##_p1[], work##n##_p2[],        \
        work##n##_p3[], work##n##_p4[], work##n##_p5[], work##n##_p6[],      \
        work##n##_p7[], work##n##_p8[], work##n##_p9[]
DECLARE_WORK(0); DECLARE_WORK(1); DECLARE_WORK(2); DECLARE_WORK(3);
DECLARE_WORK(4); DECLARE_WORK(5); DECLARE_WORK(6); DECLARE_WORK(7);

#define WORK_ENTRY(n)                                                        \
    { work##n, { work##n##_p0, work##n##_p1, work##n##_p2, work##n##_p3,     \
                 work##n##_p4, work##n##_p5, work##n##_p6, work##n##_p7,     \
                 work##n##_p8, work##n##_p9 } }
static const struct {
    uint64_t (*fn)(struct lwpcb *, const volatile uint64_t *, uint64_t);
    const char *pos[NPOS];
} works[MAX_THREADS] = {
    WORK_ENTRY(0), WORK_ENTRY(1), WORK_ENTRY(2), WORK_ENTRY(3),
    WORK_ENTRY(4), WORK_ENTRY(5), WORK_ENTRY(6), WORK_ENTRY(7),
};

struct thr {
    struct lwpcb cb;
    struct lwp_record ring[RING_RECORDS] __attribute__((aligned(64)));
    int id;
    /* Checked as drained (drain()): */
    unsigned nrec, own, foreign, bad_event, bad_core, coreid_changes;
    int last_core;
    unsigned char offset_ok[NOFFSETS];   /* offset OFFSET(i) explains them all */
    struct lwp_record first[FIRST_RECORDS];
    unsigned sigio, bad_sigio, below_threshold;
    /* CPUID 8000_001Ch EAX at the start, and how often it differed since */
    uint32_t eax0;
    unsigned bad_eax;
    int sig;
    long sig_readback;
    long ncpu;
    int cpu_next;
    uint64_t rounds;
    uint64_t skipped;       /* periods missed (MissedEvents) before the next record */
    uint64_t missed_seen;   /* MissedEvents at the last drain */
    long csw;
};

static struct thr thr[MAX_THREADS];
static __thread struct thr *self;
static unsigned long outer = 1500, inner = 100, interval = 996;
static int nthreads = 4;
/*
 * -l: QEMU's latitude mode (docs/lwp-latitude.rst) delivers threshold
 * interrupts late, so a drain can come after the ring filled.  What the
 * spec still guarantees is checked: every period of the stream is a record
 * or counted in MissedEvents, the records in order.  MissedEvents 0 is
 * asked of exact mode only.
 */
static int latitude;
/* Rounds each thread runs up to; lowered to MIN_ROUNDS when told to stop. */
static volatile uint64_t round_limit;
/*
 * Every thread is runnable before any starts its rounds, so each
 * sched_yield() finds another thread to switch to on a fast machine too:
 * otherwise the first threads can be done before the last ones start.
 */
static pthread_barrier_t start_line;

/* The instructions counted per round: p0, INNER * p1-p3, p4, p6, p7, p8 */
#define STREAM_PERIOD (3 * inner + 5)

/* The position (p0..p8) of counted instruction m (0-based) of the stream. */
static int stream_pos(uint64_t m)
{
    static const int tail[] = { 4, 6, 7, 8 };  /* p5, SYSCALL, is not counted */
    uint64_t r = m % STREAM_PERIOD;

    if (r == 0) {
        return 0;
    }
    if (r <= 3 * inner) {
        return 1 + (int)((r - 1) % 3);
    }
    return tail[r - 3 * inner - 1];
}

/* The position of @ip in thread @t's own loop, or -1 (*owner: whose loop). */
static int pos_index(const struct thr *t, uint64_t ip, int *owner)
{
    *owner = -1;
    for (int w = 0; w < MAX_THREADS; w++) {
        for (int p = 0; p < NPOS; p++) {
            if (ip == (uintptr_t)works[w].pos[p]) {
                *owner = w;
                return w == t->id ? p : -1;
            }
        }
    }
    return -1;
}

/* Record number t->nrec: does it fit the stream, for each offset? */
static void check_record(struct thr *t, const struct lwp_record *r)
{
    uint64_t period = interval + 1;
    /* Its period: the events missed while the ring was full came before. */
    uint64_t k = t->nrec + t->skipped;
    int owner;
    int p = pos_index(t, r->ip, &owner);

    t->own += p >= 0;
    t->foreign += owner >= 0 && owner != t->id;
    t->bad_event += r->event_id != LWP_EV_IRE;
    t->bad_core += r->core_id >= t->ncpu;
    if (k && r->core_id != t->last_core) {
        t->coreid_changes++;
    }
    t->last_core = r->core_id;
    for (int i = 0; i < NOFFSETS; i++) {
        int64_t m = (int64_t)((k + 1) * period) + OFFSET(i) - 1;

        t->offset_ok[i] &= m >= 0 && p >= 0 && p == stream_pos(m);
    }
    if (k < FIRST_RECORDS) {
        t->first[k] = *r;
    }
    t->nrec++;
}

static void drain(struct thr *t)
{
    volatile struct lwpcb *cb = &t->cb;
    uint32_t head = cb->head, tail = cb->tail;

    while (tail != head) {
        check_record(t, &t->ring[tail / LWP_RECORD]);
        tail = (tail + LWP_RECORD) % sizeof(t->ring);
    }
    /*
     * Events are missed only while the ring is full, so after every record
     * it holds: they skip periods after these, before the next record.
     */
    t->skipped += cb->missed - t->missed_seen;
    t->missed_seen = cb->missed;
    cb->tail = tail;
}

static uint32_t lwp_cpuid_eax(void)
{
    uint32_t a, b, c, d;

    __cpuid(0x8000001c, a, b, c, d);
    (void)b, (void)c, (void)d;
    return a;
}

static void on_threshold(int sig, siginfo_t *si, void *ctx)
{
    struct thr *t = self;
    cpu_set_t set;
    uint32_t used;

    (void)ctx;
    if (!t || si->si_code != SI_LWP_THRESHOLD || sig != t->sig) {
        if (t) {
            t->bad_sigio++;
        }
        return;
    }
    t->sigio++;
    /*
     * EAX is what LWP_CFG makes available (spec 3.3): the kernel's choice,
     * never another's (a hypervisor's guest, when this runs on a host).
     */
    t->bad_eax += lwp_cpuid_eax() != t->eax0;
    /* A hint only (Documentation/x86/lwp.rst); exact mode: never below. */
    used = (t->cb.head - t->cb.tail + sizeof(t->ring)) % sizeof(t->ring);
    t->below_threshold += used < t->cb.threshold;
    drain(t);
    /* Move on: the LWP state is restored on another CPU after sigreturn. */
    if (t->ncpu > 1) {
        CPU_ZERO(&set);
        CPU_SET(t->cpu_next, &set);
        t->cpu_next = (t->cpu_next + 1) % t->ncpu;
        sched_setaffinity(0, sizeof(set), &set);
    }
}

static void *thread_main(void *arg)
{
    struct thr *t = arg;
    struct rusage ru;
    sigset_t io;

    self = t;
    t->eax0 = lwp_cpuid_eax();
    t->sig_readback = lwp_set_signal(t->sig) ? -1 : lwp_get_signal();
    memset(&t->cb, 0, sizeof(t->cb));
    t->cb.flags = (1u << LWP_EV_IRE) | LWP_FLAG_INT;
    t->cb.buffer_size = sizeof(t->ring);
    t->cb.buffer_base = (uintptr_t)t->ring;
    t->cb.threshold = RING_RECORDS / 4 * LWP_RECORD;
    t->cb.event[LWP_EV_IRE - 1].interval = interval;
    t->cb.event[LWP_EV_IRE - 1].counter = interval;

    pthread_barrier_wait(&start_line);
    /* Switches from here on only: not the wait at the start line. */
    getrusage(RUSAGE_THREAD, &ru);
    t->csw = -(ru.ru_nvcsw + ru.ru_nivcsw);
    t->rounds = works[t->id].fn(&t->cb, &round_limit, inner);

    sigemptyset(&io);
    sigaddset(&io, t->sig);
    pthread_sigmask(SIG_BLOCK, &io, NULL);
    drain(t);
    getrusage(RUSAGE_THREAD, &ru);
    t->csw += ru.ru_nvcsw + ru.ru_nivcsw;
    return NULL;
}

static void check_thread(struct thr *t, unsigned *all_ok)
{
    uint64_t period = interval + 1, total = t->rounds * STREAM_PERIOD;
    int fit = 0, d = 0;

    /*
     * One offset d must explain every record.  The architecture gives d = 0
     * (the counter starts at I and a record is stored for the event that
     * makes it negative); the closest offset that fits is taken, and there
     * must be exactly as many records as complete periods in the stream of
     * the rounds this thread ran.
     */
    for (int pass = 0; pass < 2 && fit != 1; pass++) {
        for (int i = 0; i < NOFFSETS && fit != 1; i++) {
            uint64_t want = (uint64_t)((int64_t)total - OFFSET(i)) / period;

            if (!t->offset_ok[i] || !t->nrec || (pass == 0 && t->nrec + t->skipped != want)) {
                continue;
            }
            d = OFFSET(i);
            fit = t->nrec + t->skipped == want ? 1 : -1;
            if (fit < 0) {
                note("thread %d: offset %d explains the records, but %u of them and %llu "
                     "missed, not %llu", t->id, d, t->nrec, (unsigned long long)t->skipped,
                     (unsigned long long)want);
            }
        }
    }
    if (fit != 1 && getenv("LWP_DEBUG")) {
        for (unsigned k = 0; k < t->nrec && k < FIRST_RECORDS; k++) {
            int owner;
            note("record %u: p%d, stream p%d at d=0", k,
                 pos_index(t, t->first[k].ip, &owner), stream_pos((k + 1) * period - 1));
        }
    }
    note("thread %d: %llu rounds, %u records, %u threshold signals (%u with the ring "
         "below the threshold), %ld context switches, %u CoreId changes, offset %d", t->id,
         (unsigned long long)t->rounds, t->nrec, t->sigio, t->below_threshold, t->csw,
         t->coreid_changes, d);
    report(t->sig_readback == t->sig, "thread %d: opted in to signal %d (ARCH_LWP_GET_SIGNAL %ld)",
           t->id, t->sig, t->sig_readback);
    report(t->nrec > 0 && t->own == t->nrec && !t->foreign,
           "thread %d: all %u records carry its own loop's addresses (%u of other threads')",
           t->id, t->nrec, t->foreign);
    report(!t->bad_event && !t->bad_core, "thread %d: IRE records with CoreId < %ld",
           t->id, t->ncpu);
    report(fit == 1, "thread %d: record k is instruction k*%llu%+d of its stream of "
           "%llu rounds, %u records and %llu missed: counts exact", t->id,
           (unsigned long long)period, d, (unsigned long long)t->rounds, t->nrec,
           (unsigned long long)t->skipped);
    if (latitude) {
        note("thread %d: MissedEvents %llu (0 asked of exact mode only)", t->id,
             (unsigned long long)t->cb.missed);
    } else {
        report(t->cb.missed == 0, "thread %d: MissedEvents 0 (%llu)", t->id,
               (unsigned long long)t->cb.missed);
    }
    report(!t->bad_eax, "thread %d: CPUID 8000_001Ch EAX %#x (LWP_CFG's features) at each of "
           "its threshold signals (%u differed)", t->id, t->eax0, t->bad_eax);
    if (!latitude) {
        /*
         * Exact mode raises the interrupt at the record that fills the ring
         * to the threshold, and the handler runs before the thread stores
         * another: a signal that finds the ring below it is an interrupt
         * that was not this thread's.
         */
        report(!t->below_threshold, "thread %d: every threshold signal found its ring at the "
               "threshold (%u below it)", t->id, t->below_threshold);
    }
    if (latitude) {
        /*
         * A threshold met while another thread's late interrupt is pending
         * joins it, and a ring that fills meanwhile raises no more (table
         * 6-1): a thread may see none, and drain at its end.
         */
        report(!t->bad_sigio, "thread %d: %u threshold signals (%d, si_code SI_LWP_THRESHOLD) "
               "drained its ring, %u others (at least one asked of exact mode only)", t->id,
               t->sigio, t->sig, t->bad_sigio);
    } else {
        report(t->sigio > 0 && !t->bad_sigio, "thread %d: %u threshold signals (%d, si_code "
               "SI_LWP_THRESHOLD) drained its ring, %u others", t->id, t->sigio, t->sig,
               t->bad_sigio);
    }
    if (t->ncpu > 1 && latitude) {
        /*
         * A thread moves to the next CPU when its threshold signal comes;
         * a signal a millisecond late may come after its last record.
         */
        note("thread %d: %u CoreId changes (several CPUs asked of exact mode only)",
             t->id, t->coreid_changes);
    } else if (t->ncpu > 1) {
        report(t->coreid_changes > 0, "thread %d: profiled on several CPUs (%u CoreId changes)",
               t->id, t->coreid_changes);
    }
    *all_ok &= t->own == t->nrec && !t->foreign && fit == 1 && (latitude || !t->cb.missed);
}

/*
 * Rounds 0: wait for a BREAK (a NUL byte) or 'q' on standard input (the
 * serial console), printing the progress of the records drained meanwhile;
 * then let every thread end its round, after MIN_ROUNDS at least.
 */
static void wait_for_stop(void)
{
    struct termios saved, raw;
    int tty = tcgetattr(0, &saved) == 0;
    unsigned last = 0;
    const char *why = NULL;

    if (tty) {
        /*
         * Byte by byte, no echo; a BREAK is read as a NUL byte (no SIGINT,
         * not ignored, not marked).
         */
        raw = saved;
        raw.c_lflag &= ~(ICANON | ECHO | ISIG);
        raw.c_iflag &= ~(IGNBRK | BRKINT | PARMRK);
        raw.c_cc[VMIN] = 1;
        raw.c_cc[VTIME] = 0;
        tcsetattr(0, TCSANOW, &raw);
    }
    while (!why) {
        struct pollfd pfd = { .fd = 0, .events = POLLIN };
        int n = poll(&pfd, 1, 500);
        unsigned records = 0;

        for (int i = 0; i < nthreads; i++) {
            records += ((volatile struct thr *)&thr[i])->nrec;
        }
        if (records != last) {
            printf("progress: %u records\n", records);
            last = records;
        }
        if (n < 0 && errno != EINTR) {
            why = "poll on standard input failed";
        } else if (n > 0) {
            char buf[64];
            ssize_t got = read(0, buf, sizeof(buf));

            if (got == 0) {
                why = "end of standard input";
            } else if (got < 0 && errno != EINTR && errno != EAGAIN) {
                why = "read error on standard input";
            }
            for (ssize_t i = 0; i < got; i++) {
                if (buf[i] == '\0') {
                    why = "a BREAK (NUL byte) on standard input";
                } else if (buf[i] == 'q') {
                    why = "'q' on standard input";
                }
            }
        }
    }
    if (tty) {
        tcsetattr(0, TCSANOW, &saved);
    }
    round_limit = MIN_ROUNDS;
    note("stop: %s; each thread ends its round (at least %d rounds)", why, MIN_ROUNDS);
}

/* ---- bystanders: processes that never use LWP ------------------------------ */

#define MAX_BYSTANDERS 16

struct bystanders {
    volatile int stop;
    volatile unsigned long trips[MAX_BYSTANDERS];
};

static struct bystanders *by;
static pid_t by_pid[MAX_BYSTANDERS];
static int nbystanders;

/*
 * Bystander @i of a pair: the even one sends a byte and waits for the
 * answer until told to stop, then sends 'x'; the odd one answers each byte
 * until 'x'.  Bystanders 0-1, 4-5, ... keep every default signal action;
 * 2-3, 6-7, ... block every signal and fail if one is pending at the end.
 */
static int bystander(int i, int to, int from)
{
    int blocker = (i / 2) % 2;
    sigset_t all, pending;
    char c = 'p';

    if (blocker) {
        sigfillset(&all);
        sigprocmask(SIG_BLOCK, &all, NULL);
    }
    for (;;) {
        if (i % 2 == 0) {
            c = by->stop ? 'x' : 'p';
            if (write(to, &c, 1) != 1 || (c != 'x' && read(from, &c, 1) != 1)) {
                return 2;
            }
        } else if (read(from, &c, 1) != 1 || (c != 'x' && write(to, &c, 1) != 1)) {
            return 2;
        }
        if (c == 'x') {
            break;
        }
        by->trips[i]++;
        sched_yield();
    }
    if (slwpcb() != NULL) {
        return 3;
    }
    if (blocker) {
        sigpending(&pending);
        for (int sig = 1; sig < NSIG; sig++) {
            if (sigismember(&pending, sig) == 1) {
                return 100 + sig;
            }
        }
    }
    return 0;
}

static void start_bystanders(void)
{
    by = mmap(NULL, sizeof(*by), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (by == MAP_FAILED) {
        perror("mmap");
        exit(2);
    }
    for (int i = 0; i < nbystanders; i += 2) {
        int ab[2], ba[2];

        if (pipe(ab) || pipe(ba)) {
            perror("pipe");
            exit(2);
        }
        for (int k = 0; k < 2; k++) {
            by_pid[i + k] = fork();
            if (by_pid[i + k] == 0) {
                /*
                 * Only its own ends: if the other one dies (a stray
                 * threshold signal's default action), the read sees EOF
                 * and the pair ends, judged, instead of waiting forever.
                 */
                close(k ? ab[1] : ba[1]);
                close(k ? ba[0] : ab[0]);
                _exit(bystander(i + k, k ? ba[1] : ab[1], k ? ab[0] : ba[0]));
            }
        }
        close(ab[0]);
        close(ab[1]);
        close(ba[0]);
        close(ba[1]);
    }
}

/* After the last LWP thread ended: stop the bystanders and judge them. */
static void stop_bystanders(void)
{
    int clean = 0, ran = 0;

    by->stop = 1;
    for (int i = 0; i < nbystanders; i++) {
        int status;

        waitpid(by_pid[i], &status, 0);
        if (WIFSIGNALED(status)) {
            note("bystander %d: killed by signal %d after %lu round trips", i, WTERMSIG(status),
                 by->trips[i]);
        } else if (WEXITSTATUS(status) >= 100) {
            note("bystander %d: signal %d was pending", i, WEXITSTATUS(status) - 100);
        } else if (WEXITSTATUS(status)) {
            note("bystander %d: exit status %d", i, WEXITSTATUS(status));
        }
        clean += WIFEXITED(status) && WEXITSTATUS(status) == 0;
        ran += by->trips[i] > 0;
    }
    note("bystanders: %lu round trips of bystander 0", by->trips[0]);
    report(clean == nbystanders, "%d bystander processes that never used LWP: none received "
           "a signal or died (%d clean exits)", nbystanders, clean);
    report(ran == nbystanders, "every bystander ran beside the LWP threads (%d)", ran);
}

int main(int argc, char **argv)
{
    struct sigaction sa = { .sa_sigaction = on_threshold, .sa_flags = SA_SIGINFO };
    pthread_t tid[MAX_THREADS];
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    long csw = 0;
    int switched = 0;
    unsigned all_ok = 1, rounds_ok = 1, records = 0;
    uint64_t rounds = 0;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 1 && !strcmp(argv[1], "-l")) {
        latitude = 1;
        argv++;
        argc--;
    }
    if (argc > 2 && !strcmp(argv[1], "-b")) {
        nbystanders = atoi(argv[2]);
        if (nbystanders < 0 || nbystanders > MAX_BYSTANDERS || nbystanders % 2) {
            fprintf(stderr, "%s: -b takes an even number up to %d\n", argv[0], MAX_BYSTANDERS);
            return 2;
        }
        argv += 2;
        argc -= 2;
    }
    if (argc > 1) {
        nthreads = atoi(argv[1]);
    }
    if (argc > 2) {
        outer = strtoul(argv[2], NULL, 0);
    }
    if (argc > 3) {
        inner = strtoul(argv[3], NULL, 0);
    }
    if (argc > 4) {
        interval = strtoul(argv[4], NULL, 0);
    }
    if (nthreads < 1 || nthreads > MAX_THREADS || !inner || !interval) {
        fprintf(stderr, "usage: %s [threads(1-%d) [rounds (0: until BREAK or 'q' on stdin) [inner "
                "[interval]]]]\n", argv[0], MAX_THREADS);
        return 2;
    }
    round_limit = outer ? outer : UINT64_MAX;
    if (!outer) {
        note("%d threads run until a BREAK or 'q' on standard input", nthreads);
    }
    if (nbystanders) {
        start_bystanders();     /* before the handlers: they have none */
    }
    sigaction(SIGIO, &sa, NULL);
    sigaction(SIGRTMIN + 1, &sa, NULL);
    pthread_barrier_init(&start_line, NULL, nthreads);
    for (int i = 0; i < nthreads; i++) {
        struct thr *t = &thr[i];

        t->id = i;
        t->sig = i % 2 ? SIGRTMIN + 1 : SIGIO;
        t->ncpu = ncpu;
        t->cpu_next = (i + 1) % ncpu;
        memset(t->offset_ok, 1, sizeof(t->offset_ok));
        pthread_create(&tid[i], NULL, thread_main, t);
    }
    if (!outer) {
        wait_for_stop();
    }
    for (int i = 0; i < nthreads; i++) {
        pthread_join(tid[i], NULL);
    }
    if (nbystanders) {
        stop_bystanders();
    }
    for (int i = 0; i < nthreads; i++) {
        check_thread(&thr[i], &all_ok);
        csw += thr[i].csw;
        records += thr[i].nrec;
        rounds += thr[i].rounds;
        rounds_ok &= outer ? thr[i].rounds == outer : thr[i].rounds >= MIN_ROUNDS;
    }
    if (outer) {
        report(rounds_ok, "every thread ran its %lu rounds", outer);
    } else {
        report(rounds_ok, "every thread ran until told to stop, %d rounds at least",
               MIN_ROUNDS);
    }
    /*
     * How many switches a run gets depends on the machine's speed; that
     * every thread was switched out does not: each one moves itself to
     * another CPU in its signal handler, and yields with more threads than
     * CPUs runnable from the start line on.
     */
    for (int i = 0; i < nthreads; i++) {
        switched += thr[i].csw > 0;
    }
    report(switched == nthreads, "%d threads on %ld CPUs: each switched out while profiling "
           "(%d of them; %ld context switches)", nthreads, ncpu, switched, csw);
    printf("THREAD-ISOLATION: %d threads, %ld CPUs, %llu rounds, %u records, "
           "%ld context switches, %s\n", nthreads, ncpu, (unsigned long long)rounds, records,
           csw, all_ok ? "all exact and own" : "FAILED");
    return report_summary("lwp-linux-threads");
}
