/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * linux-user: LWP and the emulated OS's signals and threads.
 *  - single-stepping (TF) traps after every instruction, LWPVAL that
 *    stores a record included;
 *  - a ring-buffer store that faults (page PROT_NONE) delivers SIGSEGV once
 *    after the instruction; the handler, which runs with LWP disabled,
 *    maps the page again and after sigreturn the pending record is stored:
 *    the records equal those of a run without the fault;
 *  - a new thread starts with LWP disabled (spec 8.4).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <x86intrin.h>

#include "../common/lwp-user-abi.h"
#include "lwp-counted-run.h"

#ifdef __x86_64__
#define REG_PC REG_RIP
#define SP "%%rsp"
#else
#define REG_PC REG_EIP
#define SP "%%esp"
#endif

static struct lwpcb cb;
static int tests, failures;

static void report(int pass, const char *what, unsigned long a, unsigned long b)
{
    printf("%s: %s (%lu, %lu)\n", pass ? "PASS" : "FAIL", what, a, b);
    tests++;
    failures += !pass;
}

/* ---- single step ---------------------------------------------------- */
static volatile unsigned long traps[16];
static volatile int ntraps;
extern char st_a1[], st_a2[], st_a3[], st_a4[];

static void on_trap(int sig, siginfo_t *si, void *uc_)
{
    ucontext_t *uc = uc_;

    (void)sig;
    (void)si;
    if (ntraps < 16) {
        traps[ntraps++] = uc->uc_mcontext.gregs[REG_PC];
    }
}

static int step_lwpval(void)
{
    ntraps = 0;
    asm volatile("pushf; orl $0x100, (" SP "); popf\n"
                 "nop\n"
                 "st_a1: lwpval $1, %%eax, %%ecx\n"
                 "st_a2: nop\n"
                 "st_a3: nop\n"
                 "st_a4: pushf; andl $~0x100, (" SP "); popf\n"
                 ::: "memory", "cc");
    return ntraps >= 4 && traps[0] == (unsigned long)st_a1 &&
           traps[1] == (unsigned long)st_a2 && traps[2] == (unsigned long)st_a3 &&
           traps[3] == (unsigned long)st_a4;
}

/* ---- a faulting ring store ------------------------------------------ */
static struct lwp_record *ring;
static volatile int nsegv;

static void on_segv(int sig, siginfo_t *si, void *uc_)
{
    (void)sig;
    (void)si;
    (void)uc_;
    nsegv++;
    /* The handler runs without LWP: it can map the ring page again. */
    mprotect((char *)ring + 4096, 4096, PROT_READ | PROT_WRITE);
}

static unsigned long ring_run(int protect, unsigned *records)
{
    memset(&cb, 0, sizeof(cb));
    memset(ring, 0, 8192);
    cb.flags = 1u << 2 | 1u << 3;
    cb.buffer_size = 8192;
    cb.buffer_base = (uintptr_t)ring;
    cb.event[1].interval = cb.event[1].counter = 255;
    cb.event[2].interval = cb.event[2].counter = 255;
    nsegv = 0;
    if (protect) {
        mprotect((char *)ring + 4096, 4096, PROT_NONE);
    }
    return lwp_counted_run(&cb, ring, 20000, records);
}

/* ---- threads ----------------------------------------------------------- */
static void *thread_main(void *arg)
{
    (void)arg;
    return __slwpcb();
}

int main(void)
{
    struct sigaction sa = { .sa_sigaction = on_trap, .sa_flags = SA_SIGINFO };
    static struct lwp_record small_ring[64] __attribute__((aligned(64)));

    setvbuf(stdout, NULL, _IONBF, 0);
    sigaction(SIGTRAP, &sa, NULL);
    int plain = step_lwpval();
    report(plain, "TF without LWP: a trap after each instruction", ntraps, 4);
    memset(&cb, 0, sizeof(cb));
    cb.flags = 1u << 1;                    /* LWPVAL, interval 0: always stores */
    cb.buffer_size = sizeof(small_ring);
    cb.buffer_base = (uintptr_t)small_ring;
    __llwpcb(&cb);
    int stepped = step_lwpval();
    __slwpcb();
    asm volatile("" ::: "memory");
    __llwpcb(0);
    report(stepped && cb.head == 32,
           "TF with an LWPVAL that stores: the trap after it is not lost", ntraps, cb.head / 32);

    sa.sa_sigaction = on_segv;
    sigaction(SIGSEGV, &sa, NULL);
    ring = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    unsigned n_plain, n_fault;
    unsigned long h_plain = ring_run(0, &n_plain);
    report(nsegv == 0 && n_plain > 128, "control run: records past the first ring page",
           n_plain, nsegv);
    unsigned long h_fault = ring_run(1, &n_fault);
    report(nsegv == 1, "a faulting ring store: one SIGSEGV, fixed by the handler", nsegv, 1);
    report(h_fault == h_plain && n_fault == n_plain,
           "after sigreturn the pending record is stored: same records as the control run",
           n_fault, n_plain);

    pthread_t t;
    void *child_cb = (void *)1;
    __llwpcb(&cb);
    pthread_create(&t, NULL, thread_main, NULL);
    pthread_join(t, &child_cb);
    report(child_cb == NULL && __slwpcb() == &cb,
           "a new thread starts with LWP disabled; the parent's session goes on",
           (unsigned long)(uintptr_t)child_cb, 0);
    __llwpcb(0);

    printf("%d passed, %d failed\n", tests - failures, failures);
    return failures != 0;
}
