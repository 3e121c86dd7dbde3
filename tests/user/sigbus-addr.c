/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * linux-user, no LWP involved (QEMU patch 0019): a guest load from the page
 * of a file mapping beyond the end of the file raises SIGBUS (BUS_ADRERR),
 * and si_addr is the address the guest accessed (POSIX mmap: "references
 * within the address range starting at pa and continuing for len bytes to
 * whole pages following the end of an object shall result in delivery of a
 * SIGBUS signal"; Linux reports the faulting address).  Under qemu-i386 the
 * guest's addresses are not the host's (guest_base), which QEMU must
 * translate back.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static sigjmp_buf back;
static volatile uintptr_t bus_addr;
static volatile int bus_code, nbus;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    bus_addr = (uintptr_t)si->si_addr;
    bus_code = si->si_code;
    nbus++;
    siglongjmp(back, 1);
}

int main(void)
{
    long page = sysconf(_SC_PAGESIZE);
    char path[] = "/tmp/sigbus-addr-XXXXXX";
    struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO };
    volatile uint8_t *p;
    volatile int failures = 0;
    int fd;

    fd = mkstemp(path);
    if (fd < 0 || ftruncate(fd, page) != 0) {
        perror("sigbus-addr: temporary file");
        return 1;
    }
    unlink(path);
    p = mmap(NULL, 2 * page, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        perror("sigbus-addr: mmap");
        return 1;
    }
    sigaction(SIGBUS, &sa, NULL);

    /* Positive control: the page inside the file reads as zero. */
    if (p[page - 1] != 0) {
        printf("FAIL: the file's page does not read as zero\n");
        failures++;
    } else {
        printf("PASS: the file's own page reads, no SIGBUS (%d)\n", nbus);
    }
    failures += nbus != 0;

    if (!sigsetjmp(back, 1)) {
        (void)p[page + 8];
    }
    if (nbus == 1 && bus_code == BUS_ADRERR && bus_addr == (uintptr_t)(p + page + 8)) {
        printf("PASS: SIGBUS BUS_ADRERR at the guest address %#lx\n",
               (unsigned long)bus_addr);
    } else {
        printf("FAIL: %d SIGBUS, si_code %d, si_addr %#lx (want 1, %d, %#lx)\n",
               nbus, bus_code, (unsigned long)bus_addr, BUS_ADRERR,
               (unsigned long)(uintptr_t)(p + page + 8));
        failures++;
    }
    return failures != 0;
}
