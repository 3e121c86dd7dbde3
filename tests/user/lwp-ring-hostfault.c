/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * linux-user: a hardware-event record store that takes a host fault is the
 * program's fault, delivered as a signal, never QEMU's (issue 15, defect 1).
 *  - the ring is a MAP_SHARED mapping of two pages over a file one page
 *    long, IRE at the minimum interval: the first record stored on the
 *    second page raises SIGBUS (BUS_ADRERR at that record's address); the
 *    handler extends the file and after sigreturn the pending record is
 *    stored: the records equal those of a run on a file two pages long;
 *  - another thread keeps protecting, unmapping and mapping the ring pages while
 *    IRE and BRE store records: every store either completes or delivers
 *    SIGSEGV to the program, and the program (and QEMU) finish.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <x86intrin.h>

#include "../common/lwp-user-abi.h"
#include "lwp-counted-run.h"

#define PAGE 4096
#define RING_SIZE (2 * PAGE)

static struct lwpcb cb;
static int tests, failures;
static int ring_fd;
static struct lwp_record *ring;

static void report(int pass, const char *what, unsigned long a, unsigned long b)
{
    printf("%s: %s (%lu, %lu)\n", pass ? "PASS" : "FAIL", what, a, b);
    tests++;
    failures += !pass;
}

/* ---- a ring page beyond the end of its file --------------------------- */
static volatile int nbus, bus_code;
static volatile uintptr_t bus_addr;

static void on_bus(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    nbus++;
    bus_code = si->si_code;
    bus_addr = (uintptr_t)si->si_addr;
    /* The handler runs without LWP: it can make the page exist. */
    if (ftruncate(ring_fd, RING_SIZE) != 0) {
        _exit(2);
    }
}

/* Run IRE at the minimum interval until the ring holds @want records. */
static unsigned long ire_run(unsigned file_size, unsigned *records)
{
    if (ftruncate(ring_fd, 0) != 0 || ftruncate(ring_fd, file_size) != 0) {
        exit(2);
    }
    memset(&cb, 0, sizeof(cb));
    cb.flags = 1u << 2;                           /* IRE */
    cb.buffer_size = RING_SIZE;
    cb.buffer_base = (uintptr_t)ring;
    cb.event[1].interval = cb.event[1].counter = 0;   /* raised to the minimum */
    nbus = 0;
    return lwp_counted_run(&cb, ring, 40000, records);
}

/* ---- a racing thread --------------------------------------------------- */
static volatile int stop_racer, nsegv;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)si;
    (void)uc;
    nsegv++;
}

static void *racer(void *arg)
{
    (void)arg;
    /* Windows long enough that stores land in them, on a loaded host too. */
    while (!stop_racer) {
        mprotect((char *)ring + PAGE, PAGE, PROT_NONE);
        mprotect((char *)ring, PAGE, PROT_READ);
        usleep(200);
        mprotect((char *)ring, 2 * PAGE, PROT_READ | PROT_WRITE);
        usleep(100);
        munmap((char *)ring + PAGE, PAGE);
        usleep(200);
        if (mmap((char *)ring + PAGE, PAGE, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_FIXED, ring_fd, PAGE) == MAP_FAILED) {
            _exit(2);
        }
        usleep(100);
    }
    return NULL;
}

static unsigned race_run(void)
{
    pthread_t t;
    unsigned stored = 0;

    stop_racer = 0;
    pthread_create(&t, NULL, racer, NULL);
    for (int round = 0; round < 200; round++) {
        memset(&cb, 0, sizeof(cb));
        cb.flags = 1u << 2 | 1u << 3;             /* IRE and BRE */
        cb.buffer_size = RING_SIZE;
        cb.buffer_base = (uintptr_t)ring;
        __llwpcb(&cb);
        asm volatile("mov $5000, %%ecx\n"
                     "1: nop\n dec %%ecx\n jnz 1b\n" ::: "ecx", "cc");
        __slwpcb();
        asm volatile("" ::: "memory");
        __llwpcb(0);
        stored += cb.head / 32;
    }
    stop_racer = 1;
    pthread_join(t, NULL);
    mprotect(ring, RING_SIZE, PROT_READ | PROT_WRITE);
    return stored;
}

int main(int argc, char **argv)
{
    /* "race": only the racing part (to run it alone, many times). */
    const int race_only = argc > 1 && !strcmp(argv[1], "race");
    struct sigaction sa = { .sa_sigaction = on_bus, .sa_flags = SA_SIGINFO };
    char name[] = "/tmp/lwp-ring-XXXXXX";
    unsigned n_plain = 0, n_bus = 0;

    setvbuf(stdout, NULL, _IONBF, 0);
    ring_fd = mkstemp(name);
    if (ring_fd < 0) {
        perror("mkstemp");
        return 2;
    }
    unlink(name);
    if (ftruncate(ring_fd, RING_SIZE) != 0) {
        perror("ftruncate");
        return 2;
    }
    ring = mmap(NULL, RING_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, ring_fd, 0);
    if (ring == MAP_FAILED) {
        perror("mmap");
        return 2;
    }
    sigaction(SIGBUS, &sa, NULL);

    if (race_only) {
        goto race;
    }
    unsigned long h_plain = ire_run(RING_SIZE, &n_plain);
    report(nbus == 0 && n_plain > PAGE / 32,
           "control run: records past the first ring page", n_plain, nbus);
    unsigned long h_bus = ire_run(PAGE, &n_bus);
    report(nbus == 1, "a record store beyond the end of the file: one SIGBUS",
           nbus, 1);
    report(bus_code == BUS_ADRERR && bus_addr == (uintptr_t)ring + PAGE,
           "SIGBUS is BUS_ADRERR at the first record of the second page",
           (unsigned long)bus_code, (unsigned long)(bus_addr - (uintptr_t)ring));
    report(h_bus == h_plain && n_bus == n_plain,
           "after sigreturn the pending record is stored: same records as the control run",
           n_bus, n_plain);

race:
    sa.sa_sigaction = on_segv;
    sigaction(SIGSEGV, &sa, NULL);
    unsigned stored = race_run();
    report(stored > 0, "racing mprotect and munmap: the program runs to the end "
           "(records, SIGSEGVs)", stored, nsegv);

    printf("%d passed, %d failed\n", tests - failures, failures);
    return failures != 0;
}
