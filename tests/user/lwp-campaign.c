/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * linux-user: a seeded, replayable adversarial campaign.  Each case takes a
 * random LWPCB (flags, intervals, counters, threshold, filters, head) placed
 * anywhere in an arena -- across page boundaries too -- and a random ring
 * there or in a MAP_SHARED file mapping that runs beyond the end of its
 * file, random page protections, an optional thread that protects and
 * unprotects the ring while LWP stores, and XSAVE/XRSTOR of a randomly
 * mutated LWP image; it then runs LWPVAL, LWPINS and branches, and stops.
 * A fault (SIGSEGV, SIGBUS) is the program's: the handler, running without
 * LWP, makes everything accessible again and returns, and the pending work
 * is redone.  Checked: QEMU survives every case, and LWP never changes a
 * byte of the arena outside the LWPCB and the ring.
 *
 *   lwp-campaign [SEED [CASES]]        (default: seed 1, 150 cases)
 * A long run for release checks: see docs/lwp.rst, "Guarantees".
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <x86intrin.h>

#include "../common/lwp-campaign-case.h"
#include "../common/lwp-user-abi.h"

#define PAGE 4096
#define ARENA_PAGES 12
#define FILE_PAGES 4
#define LWPCB_SIZE (0x13 * 8)

static uint8_t *arena, *filemap;
static uint8_t shadow[ARENA_PAGES * PAGE];
static int file_fd;
static volatile unsigned nsegv, nbus;

static void all_accessible(void)
{
    mprotect(arena, ARENA_PAGES * PAGE, PROT_READ | PROT_WRITE);
    mprotect(filemap, FILE_PAGES * PAGE, PROT_READ | PROT_WRITE);
}

static sigjmp_buf recover;
static volatile int can_recover;
static volatile unsigned ngp;

static void on_fault(int sig, siginfo_t *si, void *uc)
{
    uint8_t *addr = si->si_addr;

    (void)uc;
    if (sig == SIGSEGV && si->si_code == SI_KERNEL && can_recover) {
        /* #GP: an LWPCB or image the instruction refused; end the case. */
        ngp++;
        all_accessible();
        siglongjmp(recover, 1);
    }
    if (!((addr >= arena && addr < arena + ARENA_PAGES * PAGE) ||
          (addr >= filemap && addr < filemap + FILE_PAGES * PAGE))) {
        static const char msg[] = "FAIL: a fault outside the arena and the file mapping\n";
        (void)!write(1, msg, sizeof(msg) - 1);
        _exit(4);
    }
    if (sig == SIGBUS) {
        nbus++;
        if (ftruncate(file_fd, FILE_PAGES * PAGE) != 0) {
            _exit(3);
        }
    } else {
        nsegv++;
    }
    all_accessible();
}

/* ---- a thread that races the stores -------------------------------------- */
static uint8_t *race_at;
static volatile int race_run;

static void *racer(void *arg)
{
    (void)arg;
    for (int i = 0; i < 300 && race_run; i++) {
        mprotect(race_at, PAGE, i & 1 ? PROT_READ : PROT_NONE);
        sched_yield();
        mprotect(race_at, PAGE, PROT_READ | PROT_WRITE);
        sched_yield();
    }
    return NULL;
}

/* ---- the workload -------------------------------------------------------- */
static void workload(unsigned iters, uint32_t seed)
{
    static volatile uint32_t mem_val = 0x5a5a;
    uint32_t x = seed | 1;

    for (unsigned i = 0; i < iters; i++) {
        x = x * 1103515245u + 12345u;
        switch (x >> 29) {
        case 0:
            __lwpval32(x, i, 0x11);
            break;
        case 1:
            __lwpins32(x, i, 0xffff);
            break;
        case 2:
            asm volatile("lwpval $7, %0, %1" : : "m"(mem_val), "r"(x) : "memory");
            break;
        case 3:
            asm volatile("lwpins $0x1234, %0, %1" : : "m"(mem_val), "r"(x) : "memory", "cc");
            break;
        default:
            asm volatile("mov %0, %%ecx\n1: dec %%ecx\n jnz 1b" : : "r"((x >> 24) | 1) :
                         "ecx", "cc");
            break;
        }
    }
}

/* ---- XSAVE/XRSTOR of a mutated LWP image ---------------------------------- */
static uint8_t xarea[4096] __attribute__((aligned(64)));

static void xsave_mutate_xrstor(uint8_t *cb, uint8_t *ring, uint32_t ring_size)
{
    const uint64_t lwp = 1ull << 62;
    uint8_t *c = xarea + 0x340;

    memset(xarea, 0, sizeof(xarea));
    asm volatile("xsave %0" : "+m"(xarea) : "a"((uint32_t)lwp), "d"((uint32_t)(lwp >> 32)));
    switch (rnd_below(6)) {
    case 0:                                 /* Flags */
        *(uint32_t *)(c + 8) = (uint32_t)rnd();
        break;
    case 1:                                 /* BufferHeadOffset */
        *(uint32_t *)(c + 12) = rnd_below(2) ? (uint32_t)rnd() : rnd_below(ring_size);
        break;
    case 2:                                 /* BufferSize */
        /* Bits 31:28 are reserved; a size beyond the ring is ours to avoid. */
        *(uint32_t *)(c + 24) = rnd_below(ring_size + 1) | (rnd_below(2) ? 0 : (uint32_t)rnd() & 0xf0000000u);
        break;
    case 3:                                 /* SavedEventRecord */
        for (int i = 0; i < 32; i++) {
            c[32 + i] = (uint8_t)rnd();
        }
        break;
    case 4:                                 /* EventCounters */
        for (int i = 0; i < 6; i++) {
            *(uint32_t *)(c + 64 + 4 * i) = (uint32_t)rnd();
        }
        break;
    default:                                /* a session of our own */
        *(uint64_t *)(xarea + 512) |= lwp;
        *(uint64_t *)c = (uintptr_t)cb;
        *(uint64_t *)(c + 16) = (uintptr_t)ring;
        *(uint32_t *)(c + 24) = ring_size;
        *(uint32_t *)(c + 8) = (uint32_t)rnd() & 0x8000000e;
        break;
    }
    asm volatile("xrstor %0" : : "m"(xarea), "a"((uint32_t)lwp), "d"((uint32_t)(lwp >> 32)));
}

/* ---- one case ------------------------------------------------------------- */
static int one_case(unsigned n)
{
    struct lwpcb *volatile cb;
    uint8_t *volatile ring;
    uint32_t ring_size;
    pthread_t t;
    int racing;

    all_accessible();
    if (ftruncate(file_fd, PAGE) != 0) {
        return 1;
    }
    /* The LWPCB: 8-byte aligned anywhere in the first half of the arena. */
    cb = (struct lwpcb *)(arena + 8 * rnd_below(ARENA_PAGES * PAGE / 2 / 8 - LWPCB_SIZE / 8));
    ring_size = 32 * (32 + rnd_below(160));
    if (rnd_below(3) == 0) {
        ring = filemap + 32 * rnd_below((FILE_PAGES * PAGE - ring_size) / 32);
    } else {
        ring = arena + ARENA_PAGES * PAGE / 2 + 32 * rnd_below(
                   (ARENA_PAGES * PAGE / 2 - ring_size) / 32);
    }
    for (unsigned i = 0; i < ARENA_PAGES * PAGE; i++) {
        arena[i] = (uint8_t)rnd();
    }
    memset(cb, 0, sizeof(*cb));
    campaign_random_lwpcb(cb, ring, ring_size);
    memcpy(shadow, arena, sizeof(shadow));

    /* Random protections: a page of the LWPCB or of the ring goes away. */
    if (rnd_below(3) == 0) {
        mprotect(arena + PAGE * rnd_below(ARENA_PAGES), PAGE,
                 rnd_below(2) ? PROT_READ : PROT_NONE);
    }
    racing = rnd_below(4) == 0;
    if (racing) {
        race_at = (uint8_t *)((uintptr_t)(ring + rnd_below(ring_size)) & ~(uintptr_t)(PAGE - 1));
        race_run = 1;
        pthread_create(&t, NULL, racer, NULL);
    }

    /* A #GP (bad LWPCB, refused image) ends the case through recover. */
    can_recover = 1;
    if (sigsetjmp(recover, 1) == 0) {
        __llwpcb(cb);
        workload(100 + rnd_below(400), (uint32_t)rnd());
        if (rnd_below(3) == 0) {
            xsave_mutate_xrstor((uint8_t *)cb, ring, ring_size);
            workload(100 + rnd_below(200), (uint32_t)rnd());
        }
        __slwpcb();
        __llwpcb(0);
    }
    can_recover = 0;
    if (racing) {
        race_run = 0;
        pthread_join(t, NULL);
    }
    all_accessible();

    /* Nothing outside the LWPCB and the ring changed. */
    for (unsigned i = 0; i < ARENA_PAGES * PAGE; i++) {
        uint8_t *p = arena + i;
        if ((p >= (uint8_t *)cb && p < (uint8_t *)cb + LWPCB_SIZE) ||
            (p >= ring && p < ring + ring_size)) {
            continue;
        }
        if (*p != shadow[i]) {
            printf("FAIL: case %u: arena byte %#x changed (%#x -> %#x); LWPCB at %#lx, "
                   "ring at %#lx size %u\n", n, i, shadow[i], *p,
                   (unsigned long)((uint8_t *)cb - arena),
                   (unsigned long)(ring - arena), ring_size);
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    unsigned long seed = argc > 1 ? strtoul(argv[1], NULL, 0) : 1;
    unsigned cases = argc > 2 ? strtoul(argv[2], NULL, 0) : 150;
    struct sigaction sa = { .sa_sigaction = on_fault, .sa_flags = SA_SIGINFO };
    char name[] = "/tmp/lwp-campaign-XXXXXX";
    unsigned failures = 0;

    setvbuf(stdout, NULL, _IONBF, 0);
    campaign_seed(seed);
    file_fd = mkstemp(name);
    if (file_fd < 0) {
        perror("mkstemp");
        return 2;
    }
    unlink(name);
    arena = mmap(NULL, ARENA_PAGES * PAGE, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    filemap = mmap(NULL, FILE_PAGES * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, file_fd, 0);
    if (arena == MAP_FAILED || filemap == MAP_FAILED) {
        perror("mmap");
        return 2;
    }
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    for (unsigned n = 0; n < cases; n++) {
        failures += one_case(n);
    }
    printf("%s: seed %lu, %u cases, %u failed; %u SIGSEGV, %u SIGBUS, %u #GP taken by "
           "the program\n", failures ? "FAIL" : "PASS", seed, cases, failures, nsegv, nbus, ngp);
    return failures != 0;
}
