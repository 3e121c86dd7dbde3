/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The preload library of bench/run-bench.sh: switches LWP on in an
 * unmodified program, as a profiler would, and counts what it stored.
 *
 *   qemu-x86_64 -cpu max -E LD_PRELOAD=lwp-preload.so \
 *       -E QEMU_LWP_BENCH=EVENT:INTERVAL:RING_BYTES PROGRAM ARGS...
 *
 * EVENT is 2 (instructions retired) or 3 (branches retired).  The ring is
 * made large enough for the whole run by the harness (populated at start),
 * so it never fills and every record is really stored (the common case of
 * the record store); or, for the ring-full configuration, small and never
 * drained, so that all but its first records are missed events.
 * At exit the library flushes LWP and prints one line on stderr:
 *   lwp-preload: event E interval N records R missed M bad B
 * (B: sampled records of another EventId).  Exits 3 if LWP cannot be set
 * up as asked.  Only the thread that loads the library counts: a new
 * thread starts with LWP disabled (spec 8.4).
 */
#include <cpuid.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include <x86intrin.h>

#include "../tests/common/lwp-user-abi.h"

#define RECORD_SIZE 32
/* Records sampled for their EventId at exit (every Nth). */
#define SAMPLE_EVERY 1024

static struct lwpcb cb;
static uint8_t *ring;
static unsigned long ring_bytes;
/* Memory mapped and touched, the ring at its start: at least ring_bytes. */
static unsigned long map_bytes;
static unsigned event, interval;
/* stderr as it was at start: a program may close fd 2 before exiting (xz). */
static int report_fd = -1;

static void fail(const char *why)
{
    fprintf(stderr, "lwp-preload: %s\n", why);
    _exit(3);
}

/*
 * The ring, mapped and made resident.  Also without LWP (EVENT 0): the
 * configurations a per-event cost or a ratio compares then hold the same
 * resident memory.
 */
static void ring_map(void)
{
    /*
     * Populated now, as a profiler's ring that it drains and reuses is
     * resident: a page faulted in under the first record that lands on it
     * would add the host kernel's fault (about a microsecond in a VM, per
     * 128 records) to what the benchmark reports as LWP's cost per record.
     */
    ring = mmap(NULL, map_bytes, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_POPULATE,
                -1, 0);
    if (ring == MAP_FAILED) {
        fail("cannot map the ring buffer");
    }
    /*
     * And touched, page by page: a hypervisor with shadow paging (or a host
     * that backs memory lazily) makes the first write to each page cost
     * some microseconds even after MAP_POPULATE, 75-90 ns per record when
     * records stream into fresh pages.  The harness gives every
     * configuration the same ring, so this cancels out of what it reports
     * per record.
     */
    for (unsigned long off = 0; off < map_bytes; off += 4096) {
        ((volatile uint8_t *)ring)[off] = 0;
    }
}

__attribute__((constructor)) static void lwp_preload_start(void)
{
    const char *spec = getenv("QEMU_LWP_BENCH");
    unsigned a, b, c, d;

    if (!spec) {
        return;
    }
    switch (sscanf(spec, "%u:%u:%lu:%lu", &event, &interval, &ring_bytes,
                   &map_bytes)) {
    case 3:
        map_bytes = ring_bytes;
        /* fall through */
    case 4:
        break;
    default:
        ring_bytes = 0;
    }
    if ((event != 0 && event != 2 && event != 3) || ring_bytes < 4096 ||
        ring_bytes > 0x0ffff000ul || map_bytes < ring_bytes) {
        fail("QEMU_LWP_BENCH must be EVENT:INTERVAL:RING_BYTES[:MAP_BYTES], "
             "EVENT 0 (a ring and no LWP), 2 or 3, RING_BYTES 4096 to "
             "0x0ffff000 (BufferSize has 28 bits), MAP_BYTES at least "
             "RING_BYTES");
    }
    ring_bytes &= ~4095ul;
    if (!event) {
        ring_map();
        return;
    }
    report_fd = fcntl(2, F_DUPFD_CLOEXEC, 64);
    __cpuid(0x80000000u, a, b, c, d);
    if (a < 0x8000001Cu) {
        fail("no CPUID leaf 8000_001C");
    }
    __cpuid_count(0x8000001Cu, 0, a, b, c, d);
    if (!(a & 1) || !(a >> event & 1) || (b & 0xff) * 8 > sizeof(cb) ||
        (b >> 24) != 0x80 || ((c >> 16) & 0xff) * 32 * RECORD_SIZE > ring_bytes) {
        fail("the event is not available or does not fit the LWPCB");
    }
    ring_map();
    cb.flags = 1u << event;
    cb.buffer_size = ring_bytes;
    cb.buffer_base = (uintptr_t)ring;
    cb.event[event - 1].interval = interval;
    cb.event[event - 1].counter = interval;
    asm volatile("" ::: "memory");
    __llwpcb(&cb);
    asm volatile("" ::: "memory");
    if (!(cb.flags >> event & 1)) {
        fail("LLWPCB did not enable the event");
    }
    /* LLWPCB raised an interval below the minimum to it (spec 2.5). */
    interval = cb.event[event - 1].interval;
}

__attribute__((destructor)) static void lwp_preload_stop(void)
{
    unsigned long records, bad = 0;

    if (!ring || !event) {
        return;
    }
    __slwpcb();                                 /* flushes the head */
    asm volatile("" ::: "memory");
    records = cb.head / RECORD_SIZE;
    for (unsigned long i = 0; i < records; i += SAMPLE_EVERY) {
        bad += ring[i * RECORD_SIZE] != event;
    }
    __llwpcb(0);
    dprintf(report_fd,
            "lwp-preload: event %u interval %u records %lu missed %llu bad %lu\n",
            event, interval, records, (unsigned long long)cb.missed, bad);
}
