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
 *    SIGSEGV to the program, and the program (and QEMU) finish;
 *  - the LWPCB straddles two pages of a MAP_SHARED file that is cut to one
 *    page while the session runs: the next record store's read of the LWPCB
 *    takes a host SIGBUS inside QEMU's model, which becomes the program's
 *    SIGBUS (BUS_ADRERR at the second page) without unwinding the model;
 *    the handler extends the file and the records equal a control run's;
 *  - the racing thread again, on the LWPCB's pages: every record store reads
 *    the LWPCB, so a page unmapped between QEMU's probe and its read is the
 *    program's SIGSEGV too.
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

static struct lwpcb *cb;
static int cb_fd;
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
static volatile int nbus, bus_code, bus_fd;
static volatile uintptr_t bus_addr;

static void on_bus(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    nbus++;
    bus_code = si->si_code;
    bus_addr = (uintptr_t)si->si_addr;
    /* The handler runs without LWP: it can make the page exist. */
    if (ftruncate(bus_fd, 2 * PAGE) != 0) {
        _exit(2);
    }
}

/* Run IRE at the minimum interval until the ring holds @want records. */
static unsigned long ire_run(unsigned file_size, unsigned *records)
{
    if (ftruncate(ring_fd, 0) != 0 || ftruncate(ring_fd, file_size) != 0) {
        exit(2);
    }
    memset(cb, 0, sizeof(*cb));
    cb->flags = 1u << 2;                          /* IRE */
    cb->buffer_size = RING_SIZE;
    cb->buffer_base = (uintptr_t)ring;
    cb->event[1].interval = cb->event[1].counter = 0;   /* raised to the minimum */
    nbus = 0;
    bus_fd = ring_fd;
    return lwp_counted_run(cb, ring, 40000, records);
}

/*
 * IRE at the minimum interval with the LWPCB's file cut to @cut bytes
 * after LLWPCB (the control run cuts it to its own size).
 */
static unsigned long cb_cut_run(off_t cut, unsigned *records)
{
    unsigned long hash = 0;
    unsigned rounds = 40000;

    if (ftruncate(cb_fd, 2 * PAGE) != 0) {
        exit(2);
    }
    memset(cb, 0, sizeof(*cb));
    cb->flags = 1u << 2;                          /* IRE */
    cb->buffer_size = RING_SIZE;
    cb->buffer_base = (uintptr_t)ring;
    nbus = 0;
    bus_fd = cb_fd;
    __llwpcb(cb);
    if (ftruncate(cb_fd, cut) != 0) {
        exit(2);
    }
    asm volatile("1: nop\n nop\n nop\n dec %0\n jnz 1b\n"
                 : "+c"(rounds) : : "cc");
    __slwpcb();
    asm volatile("" ::: "memory");
    __llwpcb(0);
    *records = cb->head / 32;
    for (unsigned i = 0; i < *records; i++) {
        hash = hash * 31 + ring[i].ip + ring[i].event_id + ring[i].data2;
    }
    return hash;
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

/* What the racing thread takes away and gives back: two pages of a file. */
static struct race_target {
    char *addr;
    int fd;
} target;

static void *racer(void *arg)
{
    (void)arg;
    /* Windows long enough that stores land in them, on a loaded host too. */
    while (!stop_racer) {
        mprotect(target.addr + PAGE, PAGE, PROT_NONE);
        mprotect(target.addr, PAGE, PROT_READ);
        usleep(200);
        mprotect(target.addr, 2 * PAGE, PROT_READ | PROT_WRITE);
        usleep(100);
        munmap(target.addr, PAGE);
        usleep(200);
        if (mmap(target.addr, PAGE, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_FIXED, target.fd, 0) == MAP_FAILED) {
            _exit(2);
        }
        usleep(100);
    }
    return NULL;
}

/*
 * IRE and BRE sessions while the racer works on @addr (the ring, or the
 * LWPCB's pages); the number of records stored.
 */
static unsigned race_run(char *addr, int fd)
{
    pthread_t t;
    unsigned stored = 0;

    target.addr = addr;
    target.fd = fd;
    stop_racer = 0;
    pthread_create(&t, NULL, racer, NULL);
    for (int round = 0; round < 200; round++) {
        memset(cb, 0, sizeof(*cb));
        cb->flags = 1u << 2 | 1u << 3;            /* IRE and BRE */
        cb->buffer_size = RING_SIZE;
        cb->buffer_base = (uintptr_t)ring;
        __llwpcb(cb);
        asm volatile("mov $5000, %%ecx\n"
                     "1: nop\n dec %%ecx\n jnz 1b\n" ::: "ecx", "cc");
        __slwpcb();
        asm volatile("" ::: "memory");
        __llwpcb(0);
        stored += cb->head / 32;
    }
    stop_racer = 1;
    pthread_join(t, NULL);
    mprotect(addr, 2 * PAGE, PROT_READ | PROT_WRITE);
    return stored;
}

/* Two pages of a new unlinked file, mapped shared; its descriptor in *@fd. */
static void *shared_pages(int *fd)
{
    char name[] = "/tmp/lwp-ring-XXXXXX";
    void *p;

    *fd = mkstemp(name);
    if (*fd < 0) {
        perror("mkstemp");
        exit(2);
    }
    unlink(name);
    if (ftruncate(*fd, 2 * PAGE) != 0) {
        perror("ftruncate");
        exit(2);
    }
    p = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(2);
    }
    return p;
}

int main(int argc, char **argv)
{
    /* "race": only the racing part (to run it alone, many times). */
    const int race_only = argc > 1 && !strcmp(argv[1], "race");
    struct sigaction sa = { .sa_sigaction = on_bus, .sa_flags = SA_SIGINFO };
    unsigned n_plain = 0, n_bus = 0;
    char *cb_pages;

    setvbuf(stdout, NULL, _IONBF, 0);
    ring = shared_pages(&ring_fd);
    /* The LWPCB straddles its two pages: both are read per record. */
    cb_pages = shared_pages(&cb_fd);
    cb = (struct lwpcb *)(cb_pages + PAGE - 64);
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

    unsigned n_cb_plain = 0, n_cb_cut = 0;
    unsigned long h_cb_plain = cb_cut_run(2 * PAGE, &n_cb_plain);
    report(nbus == 0 && n_cb_plain > 0, "control run: the LWPCB's file stays two pages long",
           n_cb_plain, nbus);
    unsigned long h_cb_cut = cb_cut_run(PAGE, &n_cb_cut);
    report(nbus == 1, "the LWPCB's second page beyond the end of its file: one SIGBUS",
           nbus, 1);
    report(bus_code == BUS_ADRERR && bus_addr == (uintptr_t)cb_pages + PAGE,
           "SIGBUS is BUS_ADRERR at the LWPCB's second page",
           (unsigned long)bus_code, (unsigned long)(bus_addr - (uintptr_t)cb_pages));
    report(h_cb_cut == h_cb_plain && n_cb_cut == n_cb_plain,
           "after sigreturn the records are those of the control run", n_cb_cut, n_cb_plain);

race:
    sa.sa_sigaction = on_segv;
    sigaction(SIGSEGV, &sa, NULL);
    unsigned stored = race_run((char *)ring, ring_fd);
    report(stored > 0, "racing mprotect and munmap of the ring: the program runs to the end "
           "(records, SIGSEGVs)", stored, nsegv);
    nsegv = 0;
    stored = race_run(cb_pages, cb_fd);
    report(stored > 0, "racing mprotect and munmap of the LWPCB: the program runs to the end "
           "(records, SIGSEGVs)", stored, nsegv);

    printf("%d passed, %d failed\n", tests - failures, failures);
    return failures != 0;
}
