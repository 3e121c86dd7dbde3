/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * N threads profile themselves at once, each with its own LWPCB and ring,
 * sampling instructions retired (IRE), through thousands of context
 * switches and, with more than one CPU, migrations.
 *
 * Each thread runs its own copy of a loop written in assembly, so that every
 * user-mode instruction it executes while LWP is enabled is known:
 *
 *     llwpcb %rdi               enable
 *   p0: mov %r13, %rcx          \
 *   p1: add %ecx, %eax  \        |
 *   p2: dec %rcx         > INNER |  OUTER times
 *   p3: jnz p1          /        |
 *   p4: mov $24, %eax            |  sched_yield()
 *   p5: syscall                  |
 *   p6: dec %r12                 |
 *   p7: jnz p0                  /
 *   p8: llwpcb %r8              disable (r8 = 0)
 *
 * A thread's counted instructions form a fixed stream of OUTER * (3 * INNER
 * + 4) instructions: SYSCALL leaves CPL 3 and does not retire there, so it
 * is not counted, nor is LLWPCB (docs/lwp-events.rst).  With interval I, LWP stores a record every I + 1 of
 * them (spec 2.2), so record k must name instruction k * (I + 1) + d of the
 * stream, for one small offset d that LLWPCB's boundary fixes, and there
 * must be exactly as many records as the stream holds periods.  A record
 * naming another thread's code, a lost or extra count across a context
 * switch, a migration or a signal, or state restored from the wrong thread
 * breaks that.
 *
 * The threshold interrupt (SIGIO) drains the ring in a handler, which runs
 * with LWP disabled (no counted instructions), and moves the thread to the
 * next CPU, so that its LWP state is restored on another CPU each time.
 * MissedEvents must stay 0.  sched_yield() in the loop gives the context
 * switches, counted with getrusage(RUSAGE_THREAD).
 *
 *   lwp-linux-threads [threads [outer [inner [interval]]]]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>

#include "lwp-linux-test.h"

#define MAX_THREADS 8
#define RING_RECORDS 64
#define NPOS 9

#define WORK(n)                                                              \
    "\t.text\n\t.p2align 6\n\t.globl work" #n "\n\t.type work" #n ",@function\n" \
    "work" #n ":\n\t"                                                        \
    "push %r12\n\tpush %r13\n\tmov %rsi, %r12\n\tmov %rdx, %r13\n\t"          \
    "xor %r8d, %r8d\n\t"                                                     \
    "llwpcb %rdi\n"                                                          \
    "\t.globl work" #n "_p0\nwork" #n "_p0: mov %r13, %rcx\n"                \
    "\t.globl work" #n "_p1\nwork" #n "_p1: add %ecx, %eax\n"                \
    "\t.globl work" #n "_p2\nwork" #n "_p2: dec %rcx\n"                      \
    "\t.globl work" #n "_p3\nwork" #n "_p3: jnz work" #n "_p1\n"             \
    "\t.globl work" #n "_p4\nwork" #n "_p4: mov $24, %eax\n"                 \
    "\t.globl work" #n "_p5\nwork" #n "_p5: syscall\n"                       \
    "\t.globl work" #n "_p6\nwork" #n "_p6: dec %r12\n"                      \
    "\t.globl work" #n "_p7\nwork" #n "_p7: jnz work" #n "_p0\n"             \
    "\t.globl work" #n "_p8\nwork" #n "_p8: llwpcb %r8\n\t"                  \
    "pop %r13\n\tpop %r12\n\tret\n\t.size work" #n ", .-work" #n "\n"

asm(WORK(0) WORK(1) WORK(2) WORK(3) WORK(4) WORK(5) WORK(6) WORK(7));

#define DECLARE_WORK(n)                                                      \
    void work##n(struct lwpcb *cb, uint64_t outer, uint64_t inner);          \
    extern const char work##n##_p0[], work##n##_p1[], work##n##_p2[],        \
        work##n##_p3[], work##n##_p4[], work##n##_p5[], work##n##_p6[],      \
        work##n##_p7[], work##n##_p8[]
DECLARE_WORK(0); DECLARE_WORK(1); DECLARE_WORK(2); DECLARE_WORK(3);
DECLARE_WORK(4); DECLARE_WORK(5); DECLARE_WORK(6); DECLARE_WORK(7);

#define WORK_ENTRY(n)                                                        \
    { work##n, { work##n##_p0, work##n##_p1, work##n##_p2, work##n##_p3,     \
                 work##n##_p4, work##n##_p5, work##n##_p6, work##n##_p7,     \
                 work##n##_p8 } }
static const struct {
    void (*fn)(struct lwpcb *, uint64_t, uint64_t);
    const char *pos[NPOS];
} works[MAX_THREADS] = {
    WORK_ENTRY(0), WORK_ENTRY(1), WORK_ENTRY(2), WORK_ENTRY(3),
    WORK_ENTRY(4), WORK_ENTRY(5), WORK_ENTRY(6), WORK_ENTRY(7),
};

struct thr {
    struct lwpcb cb;
    struct lwp_record ring[RING_RECORDS] __attribute__((aligned(64)));
    int id;
    struct lwp_record *rec;
    unsigned nrec, cap;
    unsigned sigio, bad_sigio, coreid_changes;
    long ncpu;
    int cpu_next;
    long csw;
};

static struct thr thr[MAX_THREADS];
static __thread struct thr *self;
static unsigned long outer = 1500, inner = 100, interval = 996;
static int nthreads = 4;

static void drain(struct thr *t)
{
    volatile struct lwpcb *cb = &t->cb;
    uint32_t head = cb->head, tail = cb->tail;

    while (tail != head) {
        if (t->nrec < t->cap) {
            t->rec[t->nrec] = t->ring[tail / LWP_RECORD];
        }
        t->nrec++;
        tail = (tail + LWP_RECORD) % sizeof(t->ring);
    }
    cb->tail = tail;
}

static void on_sigio(int sig, siginfo_t *si, void *ctx)
{
    struct thr *t = self;
    cpu_set_t set;

    (void)sig;
    (void)ctx;
    if (!t || si->si_code != POLL_IN || si->si_fd != -1) {
        if (t) {
            t->bad_sigio++;
        }
        return;
    }
    t->sigio++;
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
    memset(&t->cb, 0, sizeof(t->cb));
    t->cb.flags = (1u << LWP_EV_IRE) | LWP_FLAG_INT;
    t->cb.buffer_size = sizeof(t->ring);
    t->cb.buffer_base = (uintptr_t)t->ring;
    t->cb.threshold = RING_RECORDS / 4 * LWP_RECORD;
    t->cb.event[LWP_EV_IRE - 1].interval = interval;
    t->cb.event[LWP_EV_IRE - 1].counter = interval;

    works[t->id].fn(&t->cb, outer, inner);

    sigemptyset(&io);
    sigaddset(&io, SIGIO);
    pthread_sigmask(SIG_BLOCK, &io, NULL);
    drain(t);
    getrusage(RUSAGE_THREAD, &ru);
    t->csw = ru.ru_nvcsw + ru.ru_nivcsw;
    return NULL;
}

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

/* The instructions counted per outer iteration: p0, INNER * p1-p3, p4, p6, p7 */
#define STREAM_PERIOD (3 * inner + 4)

/* The position (p0..p7) of counted instruction m (0-based) of the stream. */
static int stream_pos(uint64_t m)
{
    static const int tail[] = { 4, 6, 7 };  /* p5, SYSCALL, is not counted */
    uint64_t r = m % STREAM_PERIOD;

    if (r == 0) {
        return 0;
    }
    if (r <= 3 * inner) {
        return 1 + (int)((r - 1) % 3);
    }
    return tail[r - 3 * inner - 1];
}

static void check_thread(struct thr *t, unsigned *all_ok)
{
    uint64_t period = interval + 1, total = outer * STREAM_PERIOD;
    unsigned own = 0, foreign = 0, bad_event = 0, bad_core = 0;
    int fit = 0, d = 0;

    for (unsigned k = 0; k < t->nrec && k < t->cap; k++) {
        int owner;
        int p = pos_index(t, t->rec[k].ip, &owner);

        own += p >= 0;
        foreign += owner >= 0 && owner != t->id;
        bad_event += t->rec[k].event_id != LWP_EV_IRE;
        bad_core += t->rec[k].core_id >= t->ncpu;
        if (k && t->rec[k].core_id != t->rec[k - 1].core_id) {
            t->coreid_changes++;
        }
    }
    /*
     * One offset d must explain every record.  The architecture gives d = 0
     * (the counter starts at I and a record is stored for the event that
     * makes it negative); the closest offset that fits is taken.
     */
    for (int i = 0; i <= 8 && !fit; i++) {
        int ok = t->nrec <= t->cap && t->nrec > 0;

        d = i % 2 ? -(i + 1) / 2 : i / 2;

        for (unsigned k = 0; k < t->nrec && ok; k++) {
            int64_t m = (int64_t)((k + 1) * period) + d - 1;
            int owner;

            ok = m >= 0 && (uint64_t)m < total &&
                 pos_index(t, t->rec[k].ip, &owner) == stream_pos(m);
        }
        if (ok) {
            /* Exactly as many records as complete periods in the stream. */
            uint64_t want = (uint64_t)((int64_t)total - d) / period;

            fit = t->nrec == want ? 1 : -1;
            if (fit < 0) {
                note("thread %d: offset %d explains the records, but %u of them, not %llu",
                     t->id, d, t->nrec, (unsigned long long)want);
            }
        }
    }
    if (fit != 1 && getenv("LWP_DEBUG")) {
        for (unsigned k = 0; k < t->nrec && k < 12; k++) {
            int owner;
            note("record %u: p%d, stream p%d at d=0", k,
                 pos_index(t, t->rec[k].ip, &owner), stream_pos((k + 1) * period - 1));
        }
    }
    note("thread %d: %u records, %u SIGIO, %ld context switches, %u CoreId changes, offset %d",
         t->id, t->nrec, t->sigio, t->csw, t->coreid_changes, d);
    report(t->nrec > 0 && own == t->nrec && !foreign,
           "thread %d: all %u records carry its own loop's addresses (%u of other threads')",
           t->id, t->nrec, foreign);
    report(!bad_event && !bad_core, "thread %d: IRE records with CoreId < %ld", t->id, t->ncpu);
    report(fit == 1, "thread %d: record k is instruction k*%llu%+d of its stream, "
           "%u records: counts exact", t->id, (unsigned long long)period, d, t->nrec);
    report(t->cb.missed == 0, "thread %d: MissedEvents 0 (%llu)", t->id,
           (unsigned long long)t->cb.missed);
    report(t->sigio > 0 && !t->bad_sigio, "thread %d: %u threshold SIGIOs drained its ring",
           t->id, t->sigio);
    if (t->ncpu > 1) {
        report(t->coreid_changes > 0, "thread %d: profiled on several CPUs (%u CoreId changes)",
               t->id, t->coreid_changes);
    }
    *all_ok &= own == t->nrec && !foreign && fit == 1 && t->cb.missed == 0;
}

int main(int argc, char **argv)
{
    struct sigaction sa = { .sa_sigaction = on_sigio, .sa_flags = SA_SIGINFO };
    pthread_t tid[MAX_THREADS];
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    long csw = 0;
    unsigned all_ok = 1, records = 0;

    setvbuf(stdout, NULL, _IOLBF, 0);
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
    if (nthreads < 1 || nthreads > MAX_THREADS || !outer || !inner || !interval) {
        fprintf(stderr, "usage: %s [threads(1-%d) [outer [inner [interval]]]]\n",
                argv[0], MAX_THREADS);
        return 2;
    }
    sigaction(SIGIO, &sa, NULL);
    for (int i = 0; i < nthreads; i++) {
        struct thr *t = &thr[i];

        t->id = i;
        t->ncpu = ncpu;
        t->cpu_next = (i + 1) % ncpu;
        t->cap = outer * STREAM_PERIOD / (interval + 1) + 64;
        t->rec = calloc(t->cap, sizeof(*t->rec));
        pthread_create(&tid[i], NULL, thread_main, t);
    }
    for (int i = 0; i < nthreads; i++) {
        pthread_join(tid[i], NULL);
    }
    for (int i = 0; i < nthreads; i++) {
        check_thread(&thr[i], &all_ok);
        csw += thr[i].csw;
        records += thr[i].nrec;
    }
    report(csw >= 1000, "%d threads on %ld CPUs: %ld context switches while profiling",
           nthreads, ncpu, csw);
    printf("THREAD-ISOLATION: %d threads, %ld CPUs, %u records, %ld context switches, %s\n",
           nthreads, ncpu, records, csw, all_ok ? "all exact and own" : "FAILED");
    return report_summary("lwp-linux-threads");
}
