/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * User-space fuzzing of the kernel's LWP support: nothing a program does
 * with LWP may crash or hang the kernel.  Each round runs in a forked child,
 * which may die of any signal; the parent only counts outcomes.  Rounds:
 *
 *  - random LWPCBs: random contents (flags, sizes, intervals, threshold with
 *    INT, IP filters), the LWPCB and the ring placed at random among valid,
 *    read-only, unmapped, kernel and non-canonical addresses, then LLWPCB,
 *    a busy loop, LWPVAL/LWPINS, a fork, a signal;
 *  - crafted signal frames: a valid LWP session, then a signal handler that
 *    overwrites random bytes of the frame's LWP component (and sometimes
 *    XSTATE_BV) before sigreturn, then more counted instructions.
 *
 * Each child first calls arch_prctl(ARCH_LWP_SET_SIGNAL) with a random
 * argument, then opts in to the threshold signal by round: none, SIGIO or
 * SIGRTMIN+4 (whose default actions terminate).  A child may die of its
 * threshold signal only if it asked for it.
 *
 * The kernel is alive if this program ends and prints its summary; the
 * harness also fails the run on any oops, BUG or WARNING in the console.
 *
 *   lwp-linux-fuzz [rounds [seed]]
 */
#define _GNU_SOURCE
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <x86intrin.h>

#include "lwp-linux-test.h"

static uint64_t rng_state;

static uint64_t rnd(void)
{
    /* xorshift64*: reproducible from the seed printed in the log */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

static uint8_t *region;           /* 8 pages: cb, ring, read-only, unmapped */
#define PG 4096

static uint64_t pick_addr(int valid_page)
{
    static const uint64_t odd[] = {
        0xffffffff81000000ull, 0xffff888000000000ull, 0x8000000000000000ull,
        0x00007ffffffff000ull, 0x0000000000001000ull, 0xfffffffffffff000ull,
    };

    switch (rnd() % 6) {
    case 0:
    case 1:
        return (uintptr_t)region + valid_page * PG;
    case 2:
        return (uintptr_t)region + 4 * PG;      /* read-only */
    case 3:
        return (uintptr_t)region + 6 * PG;      /* unmapped */
    case 4:
        return odd[rnd() % 6];
    default:
        return (uintptr_t)region + (rnd() % (8 * PG));
    }
}

static void spin(unsigned long n)
{
    asm volatile("1: dec %0\n\tjnz 1b" : "+r"(n) : : "cc");
}

static void workload(void)
{
    spin(2000 + rnd() % 20000);
    __lwpval32(1, 2, 3);
    __lwpins32(4, 5, 6);
    spin(1000);
}

static void on_usr2(int sig, siginfo_t *si, void *ctx)
{
    (void)sig;
    (void)si;
    (void)ctx;
    spin(100);
}

static void round_random_lwpcb(void)
{
    struct lwpcb *cb = (struct lwpcb *)(region + 0 * PG);
    uint64_t *q = (uint64_t *)cb;
    uint64_t cbaddr;

    for (size_t i = 0; i < sizeof(*cb) / 8; i++) {
        q[i] = rnd() % 4 ? 0 : rnd();
    }
    cb->flags = (uint32_t)rnd();
    cb->buffer_size = rnd() % 2 ? (uint32_t)rnd() : (uint32_t)(rnd() % (2 * PG));
    cb->buffer_base = pick_addr(1);
    cb->threshold = (uint32_t)(rnd() % (4 * PG));
    for (int e = 0; e < 3; e++) {
        cb->event[e].interval = (uint32_t)(rnd() % 3000);
        cb->event[e].counter = (uint32_t)rnd();
    }
    cbaddr = rnd() % 3 ? (uintptr_t)cb : pick_addr(0);
    llwpcb((void *)cbaddr);
    workload();
    if (rnd() % 4 == 0) {
        pid_t pid = fork();

        if (pid == 0) {
            workload();
            _exit(0);
        }
        waitpid(pid, NULL, 0);
    }
    if (rnd() % 4 == 0) {
        raise(SIGUSR2);
    }
    workload();
    llwpcb(0);
}

static void on_usr1_craft(int sig, siginfo_t *si, void *ctx)
{
    ucontext_t *uc = ctx;
    uint8_t *xs = (uint8_t *)uc->uc_mcontext.fpregs;
    uint8_t *lwp = xs + LWP_XSTATE_OFFSET;
    int n = 1 + (int)(rnd() % 8);

    (void)sig;
    (void)si;
    for (int i = 0; i < n; i++) {
        switch (rnd() % 4) {
        case 0:
            lwp[rnd() % 128] = (uint8_t)rnd();
            break;
        case 1: {
            uint64_t v = rnd() % 2 ? pick_addr(1) : rnd();
            memcpy(lwp + 8 * (rnd() % 16), &v, 8);
            break;
        }
        case 2:
            xs[XSTATE_BV_OFFSET + rnd() % 8] ^= (uint8_t)(1u << (rnd() % 8));
            break;
        default:
            ((struct lwp_xstate *)lwp)->reserved[rnd() % 40] = 0;
            break;
        }
    }
}

static void round_crafted_frame(void)
{
    struct lwpcb *cb = (struct lwpcb *)(region + 0 * PG);
    struct sigaction sa = { .sa_sigaction = on_usr1_craft, .sa_flags = SA_SIGINFO };

    memset(cb, 0, sizeof(*cb));
    cb->flags = (1u << LWP_EV_VAL) | (1u << LWP_EV_IRE) | (1u << LWP_EV_BRE) |
                (rnd() % 2 ? LWP_FLAG_INT : 0);
    cb->buffer_size = 2 * PG;
    cb->buffer_base = (uintptr_t)region + 2 * PG;
    cb->threshold = 32 * (uint32_t)(rnd() % 64);
    for (int e = 0; e < 3; e++) {
        cb->event[e].interval = 50 + (uint32_t)(rnd() % 500);
        cb->event[e].counter = cb->event[e].interval;
    }
    sigaction(SIGUSR1, &sa, NULL);
    llwpcb(cb);
    workload();
    raise(SIGUSR1);
    workload();
    llwpcb(0);
}

int main(int argc, char **argv)
{
    unsigned rounds = argc > 1 ? strtoul(argv[1], NULL, 0) : 400;
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 0x5eed1234abcdull;
    unsigned died[65] = { 0 }, exited = 0, hung = 0, unasked = 0;
    struct sigaction sa = { .sa_sigaction = on_usr2, .sa_flags = SA_SIGINFO };

    setvbuf(stdout, NULL, _IOLBF, 0);
    region = mmap(NULL, 8 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    mprotect(region + 4 * PG, 2 * PG, PROT_READ);
    munmap(region + 6 * PG, 2 * PG);
    sigaction(SIGUSR2, &sa, NULL);
    printf("fuzz: %u rounds, seed %#llx\n", rounds, (unsigned long long)seed);

    for (unsigned r = 0; r < rounds; r++) {
        int status;
        pid_t pid;

        rng_state = seed + r * 0x9e3779b97f4a7c15ull;
        rng_state |= 1;
        int optin = r % 3 == 0 ? 0 : r % 3 == 1 ? SIGIO : SIGRTMIN + 4;

        pid = fork();
        if (pid == 0) {
            alarm(20);
            lwp_set_signal((long)rnd());
            lwp_set_signal(optin);
            if (r % 2) {
                round_crafted_frame();
            } else {
                round_random_lwpcb();
            }
            _exit(0);
        }
        waitpid(pid, &status, 0);
        if (WIFEXITED(status)) {
            exited++;
        } else if (WIFSIGNALED(status)) {
            hung += WTERMSIG(status) == SIGALRM;
            died[WTERMSIG(status) & 63]++;
            unasked += (WTERMSIG(status) == SIGIO || WTERMSIG(status) == SIGRTMIN + 4) &&
                       WTERMSIG(status) != optin;
        }
    }
    unsigned rt4 = died[(SIGRTMIN + 4) & 63];

    note("%u rounds: %u exited, SIGSEGV %u, SIGBUS %u, SIGILL %u, SIGIO %u, SIGRTMIN+4 %u, "
         "other %u", rounds, exited, died[SIGSEGV], died[SIGBUS], died[SIGILL], died[SIGIO], rt4,
         rounds - exited - died[SIGSEGV] - died[SIGBUS] - died[SIGILL] - died[SIGIO] - rt4);
    report(!hung, "no round hung (%u)", hung);
    report(!unasked, "no child died of a threshold signal it did not ask for (%u)", unasked);
    report(died[SIGSEGV] > 0 && exited > 0,
           "bad LWPCBs and frames end in SIGSEGV, good ones run to the end");
    report(1, "the kernel survived %u fuzz rounds", rounds);
    return report_summary("lwp-linux-fuzz");
}
