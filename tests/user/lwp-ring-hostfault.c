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
#include <stdbool.h>
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

/* What a run cuts to one page: the ring's file or the LWPCB's. */
static int cut_fd;

static void cut_to_one_page(void)
{
    if (ftruncate(cut_fd, PAGE) != 0) {
        _exit(2);
    }
}

/* The same call where the control run cuts nothing, so both count alike. */
static void cut_nothing(void)
{
    if (ftruncate(cut_fd, 2 * PAGE) != 0) {
        _exit(2);
    }
}

/*
 * IRE at the minimum interval over the counted loop, with @fd cut to one
 * page (@cut) or left two pages long, before LLWPCB or right after it.
 */
static unsigned long ire_run(int fd, bool cut, bool after_llwpcb,
                             unsigned *records)
{
    /* Old records go; both files are two pages long again. */
    if (ftruncate(ring_fd, 0) != 0 || ftruncate(ring_fd, 2 * PAGE) != 0 ||
        ftruncate(cb_fd, 2 * PAGE) != 0) {
        exit(2);
    }
    memset(cb, 0, sizeof(*cb));
    cb->flags = 1u << 2;                          /* IRE */
    cb->buffer_size = RING_SIZE;
    cb->buffer_base = (uintptr_t)ring;
    cb->event[1].interval = cb->event[1].counter = 0;   /* raised to the minimum */
    nbus = 0;
    bus_fd = cut_fd = fd;
    if (!after_llwpcb) {
        (cut ? cut_to_one_page : cut_nothing)();
        return lwp_counted_run(cb, ring, 40000, records);
    }
    return lwp_counted_run_then(cb, ring, 40000, records,
                                cut ? cut_to_one_page : cut_nothing);
}

/*
 * A run with the second page of @pages (of file @fd) beyond the end of the
 * file against one without: one SIGBUS, BUS_ADRERR at that page, and after
 * sigreturn the same records.
 */
static void check_cut(const char *what, int fd, const char *pages,
                      bool after_llwpcb)
{
    unsigned n_plain = 0, n_cut = 0;
    unsigned long h_plain = ire_run(fd, false, after_llwpcb, &n_plain);
    char line[160];

    snprintf(line, sizeof(line), "%s: control run, records past the first ring page",
             what);
    report(nbus == 0 && n_plain > PAGE / 32, line, n_plain, nbus);
    unsigned long h_cut = ire_run(fd, true, after_llwpcb, &n_cut);
    snprintf(line, sizeof(line), "%s: its second page beyond the end of the file: one SIGBUS",
             what);
    report(nbus == 1, line, nbus, 1);
    snprintf(line, sizeof(line), "%s: SIGBUS is BUS_ADRERR at the second page", what);
    report(bus_code == BUS_ADRERR && bus_addr == (uintptr_t)pages + PAGE, line,
           (unsigned long)bus_code, (unsigned long)(bus_addr - (uintptr_t)pages));
    snprintf(line, sizeof(line), "%s: after sigreturn the records are the control run's",
             what);
    report(h_cut == h_plain && n_cut == n_plain, line, n_cut, n_plain);
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
    check_cut("the ring", ring_fd, (const char *)ring, false);
    check_cut("the LWPCB, cut while LWP runs", cb_fd, cb_pages, true);

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
