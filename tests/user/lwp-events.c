/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * linux-user: exactness of the LWP hardware events (docs/lwp-events.rst).
 * An assembly loop with conditional, relative and absolute branches, LWPVAL,
 * LWPINS and a raw getpid system call (syscall / int $0x80) runs in an LWP
 * session; its records and flushed counters must be exactly what the path
 * of the loop implies (tests/guest/lib/lwp-trace.h computes them from the
 * instructions' addresses).  The system call is not counted.
 */
#include <cpuid.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int tests, failures;

static void report(int pass, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void report(int pass, const char *fmt, ...)
{
    va_list ap;

    printf("%s: ", pass ? "PASS" : "FAIL");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    tests++;
    failures += !pass;
}

#include "../guest/lib/lwp-trace.h"

#define RING_BYTES 4096
#define NSLOTS (RING_BYTES / 32)

/* Shared with the program (offsets used in the assembly below). */
struct prog_args {
    uint32_t cb;                /* 0 */
    uint32_t iters;             /* 4 */
    uint32_t pid;               /* 8: what getpid returned */
    uint32_t slw_ret;           /* 12 */
    uint32_t slw_c1;            /* 16 */
    uint32_t slw_c2;            /* 20 */
    uint32_t slw_c3;            /* 24 */
    uint32_t slw_head;          /* 28 */
};

#ifdef __x86_64__
#define R_AX "%rax"
#define R_BX "%rbx"
#define R_DI "%rdi"
#define R_SI "%rsi"
#define JCXZ "jrcxz"
#define SYSCALL "syscall"
#define PROLOGUE "push %rbx\n\tpush %rbp\n\t"
#define EPILOGUE "pop %rbp\n\tpop %rbx\n\tret\n\t"
#else
#define R_AX "%eax"
#define R_BX "%ebx"
#define R_DI "%edi"
#define R_SI "%esi"
#define JCXZ "jecxz"
#define SYSCALL "int $0x80"
#define PROLOGUE "push %ebx\n\tpush %esi\n\tpush %edi\n\tpush %ebp\n\tmov 20(%esp), %edi\n\t"
#define EPILOGUE "pop %ebp\n\tpop %edi\n\tpop %esi\n\tpop %ebx\n\tret\n\t"
#endif

/* SLWPCB, copies of what it flushed, LLWPCB 0 (see tests/guest/lwp-events.c). */

asm(PROG_MACROS
    ".pushsection .text\n"
    ".globl usr_prog\n"
    "usr_prog:\n\t"
    PROLOGUE
    "mov (" R_DI "), %eax\n\t"
    "mov 4(" R_DI "), %esi\n"
    "TBEGIN usr\n"
    "usr_start:\n"
    "T usr, TX, llwpcb %eax\n"
    "usr_top:\n"
    "T usr, TP, mov $2, %ecx\n"
    "usr_l:\n"
    "T usr, TC, loop usr_l\n"                   /* taken, then not */
    "usr_l_end:\n"
    "T usr, TC, " JCXZ " usr_z\n"               /* taken */
    "ud2\n"
    "usr_z:\n"
    "T usr, TR, call usr_fn\n"
    "usr_c1:\n"
    "T usr, TP, mov $usr_t, %ebx\n"
    "T usr, TA, jmp *" R_BX "\n"
    "ud2\n"
    "usr_t:\n"
    "T usr, TP, mov $" TR_STR(SYS_getpid) ", %eax\n"
    "T usr, TX, " SYSCALL "\n"
    "T usr, TP, mov %eax, 8(" R_DI ")\n"
    "T usr, TP|TVAL, lwpval $1, %eax, %esi\n"
    "T usr, TP, test %eax, %eax\n"
    "T usr, TC, jz usr_bad\n"                   /* not taken */
    "T usr, TP, dec %esi\n"
    "T usr, TC, jnz usr_top\n"
    "usr_after:\n"
    "T usr, TP|TINS, lwpins $2, %eax, %esi\n"
    "usr_flush:\n"
    "TFLUSH usr\n"
    "usr_done:\n\t"
    EPILOGUE
    "usr_bad:\n\t"
    "ud2\n"
    "usr_fn:\n"
    "T usr, TP, nop\n"
    "T usr, TR, ret\n"
    "usr_fn_end:\n"
    "TEND usr\n"
    ".popsection\n");

/*
 * A signal in the middle of the loop: kill(pid, SIGUSR1) returns into the
 * handler, whose instructions (and records) the sigreturn rolls back with
 * the rest of the LWP state.
 */
asm(PROG_MACROS
    ".pushsection .text\n"
    ".globl sig_prog\n"
    "sig_prog:\n\t"
    PROLOGUE
    "mov (" R_DI "), %eax\n\t"
    "mov 4(" R_DI "), %esi\n"
    "TBEGIN sig\n"
    "sig_start:\n"
    "T sig, TX, llwpcb %eax\n"
    "sig_top:\n"
    "T sig, TP, nop\n"
    "T sig, TP, push " R_DI "\n"
    "T sig, TP, push " R_SI "\n"
    "T sig, TP, mov 8(" R_DI "), %ebx\n"
#ifdef __x86_64__
    "T sig, TP, mov %ebx, %edi\n"
    "T sig, TP, mov $" TR_STR(SIGUSR1) ", %esi\n"
    "T sig, TP, mov $" TR_STR(SYS_kill) ", %eax\n"
    "T sig, TX, syscall\n"
#else
    "T sig, TP, mov $" TR_STR(SIGUSR1) ", %ecx\n"
    "T sig, TP, mov $" TR_STR(SYS_kill) ", %eax\n"
    "T sig, TX, int $0x80\n"
#endif
    "T sig, TP, pop " R_SI "\n"
    "T sig, TP, pop " R_DI "\n"
    "T sig, TP, dec %esi\n"
    "T sig, TC, jnz sig_top\n"
    "sig_after:\n"
    "T sig, TP, nop\n"
    "TFLUSH sig\n"
    "sig_done:\n\t"
    EPILOGUE
    "TEND sig\n"
    ".popsection\n");

void usr_prog(struct prog_args *a);
void sig_prog(struct prog_args *a);
TR_TABLE(sig);
TR_LABEL(sig_start); TR_LABEL(sig_top); TR_LABEL(sig_after); TR_LABEL(sig_done);
TR_TABLE(usr);
TR_LABEL(usr_start); TR_LABEL(usr_top); TR_LABEL(usr_l); TR_LABEL(usr_l_end); TR_LABEL(usr_c1); TR_LABEL(usr_t);
TR_LABEL(usr_after); TR_LABEL(usr_done); TR_LABEL(usr_fn); TR_LABEL(usr_fn_end);

static struct lwpcb cb;
static struct lwp_record ring[NSLOTS] __attribute__((aligned(4096)));
static struct prog_args args;
static struct tr_path path;
static struct tr_out out;
static bool ipf_supported;

/* The intrinsics-free program writes memory the compiler cannot see. */
#define barrier() asm volatile("" ::: "memory")

static void path_usr(struct tr_path *p, unsigned iters)
{
    tr_begin(p, usr_tab, usr_tab_end);
    tr_span(p, usr_start, usr_top);
    for (unsigned i = 0; i < iters; i++) {
        tr_span(p, usr_top, usr_l);
        tr_span_n(p, usr_l, usr_l_end, 2);      /* LOOP taken, then not */
        tr_span(p, usr_l_end, usr_c1);          /* ... call usr_fn */
        tr_span(p, usr_fn, usr_fn_end);
        tr_span(p, usr_c1, usr_after);
    }
    tr_span(p, usr_after, usr_done);
}

static void cfg_init(struct tr_cfg *m, uint32_t events, int32_t counter)
{
    tr_cfg_init(m, events, counter, ipf_supported);
}

static volatile unsigned handler_runs;

static void on_usr1(int sig)
{
    (void)sig;
    /* Enough instructions and branches to cross both counters, and a record. */
    for (volatile int i = 0; i < 1000; i++) {
    }
    asm volatile("lwpins $0x5160, %0, %1" : : "r"(0xdead), "r"(0) : "memory", "cc");
    handler_runs++;
}

static void run_prog(void (*prog)(struct prog_args *), const struct tr_cfg *m, unsigned iters)
{
    memset(&cb, 0, sizeof(cb));
    memset(ring, 0, sizeof(ring));
    cb.flags = m->events;
    cb.buffer_size = RING_BYTES;
    cb.buffer_base = (uintptr_t)ring;
    tr_cfg_to_lwpcb(m, &cb);
    memset(&args, 0xee, sizeof(args));
    args.cb = (uintptr_t)&cb;
    args.iters = iters;
    args.pid = getpid();
    barrier();
    prog(&args);
    barrier();
}

static void run(const struct tr_cfg *m, unsigned iters)
{
    run_prog(usr_prog, m, iters);
}

static void verify(const char *what, const struct tr_cfg *m)
{
    unsigned where = 0;

    if (!tr_path_consistent(&path, &where)) {
        report(0, "%s: the test's path of the program is inconsistent at %u", what, where);
    }
    tr_simulate(&path, m, &out);
    if (out.nrec >= NSLOTS - 1) {
        report(0, "%s: the test expects more records than the ring holds", what);
    }
    tr_check_ring(what, &out, ring, NSLOTS, 0, cb.head / 32, 0);

    unsigned slw_pos = 0, before = 0;
    for (unsigned i = 0; i < path.n; i++) {
        if ((path.tab[path.idx[i]].cls & (TR_SNAP | TR_CLASS)) == (TR_SNAP | TR_P)) {
            slw_pos = i;
        }
    }
    for (unsigned k = 0; k < out.nrec; k++) {
        before += out.rec[k].pos < slw_pos;
    }
    report(args.slw_ret == (uint32_t)(uintptr_t)&cb, "%s: SLWPCB returns the LWPCB", what);
    report(args.slw_head == 32 * before, "%s: SLWPCB flushed BufferHeadOffset %u (want %u)",
           what, args.slw_head, 32 * before);
    const uint32_t *slw[4] = { NULL, &args.slw_c1, &args.slw_c2, &args.slw_c3 };
    for (int id = 1; id <= 3; id++) {
        if (!(m->events & (1u << id))) {
            continue;
        }
        int32_t got = tr_field(*slw[id]);
        report(out.nsnap == 2 && got == out.snap[0][id],
               "%s: SLWPCB flushed EventCounter%d = %d (want %d)", what, id, got, out.snap[0][id]);
        got = tr_field(cb.event[id - 1].counter);
        report(out.nsnap == 2 && got == out.snap[1][id],
               "%s: LLWPCB 0 flushed EventCounter%d = %d (want %d)", what, id, got,
               out.snap[1][id]);
    }
}

int main(void)
{
    unsigned a, b, c, d;
    struct tr_cfg m;
    const unsigned iters = 150;

    __cpuid(0x8000001C, a, b, c, d);
    report((d & 0xc) == 0xc, "CPUID 8000_001C EDX: LwpIRE and LwpBRE supported (%#x)", d);
    report((a & 0xc) == 0xc, "CPUID 8000_001C EAX: IRE and BRE available to programs (%#x)", a);
    ipf_supported = c >> 29 & 1;
    report(ipf_supported, "CPUID 8000_001C ECX[29] LwpIpFiltering under -cpu max");
    report((uintptr_t)&cb < (1ull << 32) && (uintptr_t)usr_prog < (1ull << 32),
           "(the program's addresses fit 32 bits)");

    path_usr(&path, iters);

    cfg_init(&m, TR_EV_VAL | TR_EV_IRE | TR_EV_BRE, 255);
    m.interval[1] = m.counter[1] = 24;
    m.counter[3] = 100;
    run(&m, iters);
    report(cb.flags == (TR_EV_VAL | TR_EV_IRE | TR_EV_BRE), "LLWPCB keeps VAL|IRE|BRE in Flags");
    report(cb.event[1].interval == 255 && cb.event[2].interval == 255, "intervals 255 kept");
    report(args.pid == (uint32_t)getpid(), "the raw getpid returned the pid (%u)", args.pid);
    verify("IRE+BRE+VAL", &m);

    cfg_init(&m, TR_EV_IRE | TR_EV_BRE, 255);
    m.filters = TR_F_NCB;
    run(&m, iters);
    verify("NCB filter", &m);

    cfg_init(&m, TR_EV_IRE, 0);
    run(&m, iters);
    verify("IRE, EventCounter2 = 0", &m);
    report(ring[0].event_id == 2 && ring[0].ip == path.tab[path.idx[1]].start,
           "counter 0: the first record is the first instruction after LLWPCB");

    cfg_init(&m, TR_EV_IRE | TR_EV_BRE, 100);
    m.filters = TR_F_IPF;
    m.base_ip = (uintptr_t)usr_c1;
    m.limit_ip = (uintptr_t)usr_t;
    run(&m, iters);
    verify(ipf_supported ? "IPF [c1, mov $getpid]" : "IPF (not enumerated: ignored)", &m);

    /* The system call is not counted: the exact decrement without records. */
    cfg_init(&m, TR_EV_IRE, 1000000);
    run(&m, iters);
    unsigned counted = 0, sys = 0;
    for (unsigned i = 0; i < path.n; i++) {
        const struct tr_ent *e = &path.tab[path.idx[i]];
        if (e->cls & TR_SNAP) {
            break;
        }
        counted += (e->cls & TR_CLASS) != TR_X;
        sys += (e->cls & TR_CLASS) == TR_X && e->start != (uintptr_t)usr_start;
    }
    int32_t dec = 1000000 - tr_field(args.slw_c2);
    report(dec == (int32_t)counted && sys == iters,
           "%s is not counted: IRE decrement %d (want %u; counting it would give %u)",
           SYSCALL, dec, counted, counted + sys);

    /* A signal handler's instructions are rolled back by sigreturn. */
    tr_begin(&path, sig_tab, sig_tab_end);
    tr_span(&path, sig_start, sig_top);
    tr_span_n(&path, sig_top, sig_after, 40);
    tr_span(&path, sig_after, sig_done);
    signal(SIGUSR1, on_usr1);
    cfg_init(&m, TR_EV_IRE | TR_EV_BRE, 100);
    handler_runs = 0;
    run_prog(sig_prog, &m, 40);
    report(handler_runs == 40, "the handler ran 40 times (%u)", handler_runs);
    verify("a signal handler after each kill(): its counts are rolled back", &m);

    printf("%d passed, %d failed\n", tests - failures, failures);
    return failures != 0;
}
