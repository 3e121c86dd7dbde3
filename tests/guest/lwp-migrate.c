/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A guest that keeps profiling while the test harness migrates it (spec
 * 8.2.3): at CPL 3 it inserts records with a sequence number (LWPINS, Data2)
 * and samples with LWPVAL, drains its ring buffer on the threshold interrupt
 * and proves at the end that the stream is continuous: no gap, no duplicate,
 * no missed event, LWPVAL sampling exact.
 *
 * With -append events=1 it also samples instructions retired and branches
 * retired, and at every multiple of "digestevery" iterations prints a digest
 * of every hardware-event record so far and of the counters, with the
 * iteration: the harness compares each with a run that was never migrated,
 * stopped at the last of them -- the counts must be exact across migration,
 * at whatever iteration the harness's migrations happened to fall.
 */
#include "lwp.h"
#include "apic.h"

#define NREC       64
#define VECTOR     0x52
#define VAL_EVERY  4                       /* EventInterval1 = 3 */

static struct lwpcb cb;

/*
 * The harness ends a run early by pressing a key: the i8042 then reports a
 * full output buffer.  (Runs at CPL 3 with IOPL 3.)
 */
static bool stop_requested(void)
{
    uint8_t status;

    asm volatile("inb $0x64, %0" : "=a"(status));
    if (status & 1) {
        asm volatile("inb $0x60, %0" : "=a"(status));
        return true;
    }
    return false;
}

/* XCR0, or 0 while CR4.OSXSAVE is clear (XGETBV would be #UD). */
static uint64_t xgetbv_safe(void)
{
    return read_cr4() & CR4_OSXSAVE ? xgetbv(0) : 0;
}
static struct lwp_record ring[NREC] __attribute__((aligned(64)));
static volatile unsigned drain_requested, interrupts;
/* Set while the threshold handler runs; the harness reads it (nm + xp). */
volatile uint32_t lwp_in_handler;
static uint32_t irq_spin;    /* -append irqspin=N: time spent in the handler */
static uint32_t iterations;   /* -append iterations=N */

static uint32_t events, digest_every;  /* -append events=1 digestevery=N */

static struct {
    uint64_t next_ins, next_val_call, records, bad, vals, hw, digest;
} seen = { 1, 0, 0, 0, 0, 0, 0xcbf29ce484222325ull };

/* FNV-1a over the bytes of a value. */
static void digest_add(uint64_t value)
{
    for (int i = 0; i < 8; i++) {
        seen.digest = (seen.digest ^ ((value >> (8 * i)) & 0xff)) * 0x100000001b3ull;
    }
}

static void on_threshold(struct ex_regs *regs)
{
    lwp_in_handler = 1;
    for (volatile uint32_t k = 0; k < irq_spin; k++) {
    }
    interrupts++;
    drain_requested = 1;
    apic_eoi();
    lwp_in_handler = 0;
}

/* Consumer: check records from the tail to the head, then free them. */
static void drain(void)
{
    uint32_t head, tail = cb.tail;

    slwpcb();                               /* flush the head to the LWPCB */
    head = cb.head;
    while (tail != head) {
        const struct lwp_record *r = &ring[tail / 32];
        if (r->event_id == 255) {
            seen.bad += r->data2 != seen.next_ins || r->data1 != (uint32_t)~r->data2;
            seen.next_ins = r->data2 + 1;
        } else if (events && (r->event_id == 2 || r->event_id == 3)) {
            digest_add(r->event_id | (uint64_t)r->flags << 8);
            digest_add(r->ip);
            digest_add(r->data2);
            seen.hw++;
        } else if (r->event_id == 1) {
            /* LWPVAL call k (0-based) stores when k % 4 == 0. */
            seen.bad += r->data2 != seen.next_val_call || r->flags != 0x77;
            seen.next_val_call = r->data2 + VAL_EVERY;
            seen.vals++;
        } else {
            seen.bad++;
        }
        seen.records++;
        tail = (tail + 32) % sizeof(ring);
    }
    cb.tail = tail;
}

static uintptr_t producer(uintptr_t unused)
{
    memset(&cb, 0, sizeof(cb));
    cb.flags = LWP_F_VAL | LWP_F_INT;
    cb.buffer_size = sizeof(ring);
    cb.buffer_base = (uintptr_t)ring;
    cb.threshold = NREC / 2 * 32;
    cb.event[0].interval = VAL_EVERY - 1;
    if (events) {
        cb.flags |= LWP_F_IRE | LWP_F_BRE;
        cb.event[1].interval = cb.event[1].counter = 4000;
        cb.event[2].interval = cb.event[2].counter = 700;
    }
    llwpcb(&cb);
    printf("profiling\n");                 /* the harness waits for this */
    for (uint32_t i = 1; i <= iterations; i++) {
        lwpins(i, ~i, 0x55);
        lwpval(i - 1, i, 0x77);
        if (drain_requested) {
            drain_requested = 0;
            drain();
        }
        if (i % 1000000 == 0) {
            printf("progress %u\n", i);
        }
        if (events && digest_every && i % digest_every == 0) {
            drain();
            digest_add(cb.event[1].counter);
            digest_add(cb.event[2].counter);
            printf("events digest %016llx after %llu records at iteration %u\n",
                   (unsigned long long)seen.digest, (unsigned long long)seen.hw, i);
        }
        if (i % 4096 == 0 && stop_requested()) {
            iterations = i;
            break;
        }
    }
    drain();
    llwpcb(0);
    return 0;
}

/* nolwp=1: the same kind of long run without touching LWP at all. */
static int plain_run(void)
{
    uint64_t sum = 0;

    printf("running without LWP\n");
    for (uint32_t i = 1; i <= iterations; i++) {
        sum += i ^ (sum >> 3);
        if (i % 1000000 == 0) {
            printf("progress %u\n", i);
        }
        if (i % 65536 == 0 && stop_requested()) {
            iterations = i;
            break;
        }
    }
    uint64_t want = 0;
    for (uint32_t i = 1; i <= iterations; i++) {
        want += i ^ (want >> 3);
    }
    report(sum == want, "a run without LWP computed the same checksum twice");
    report(!(xgetbv_safe() & XCR0_LWP), "LWP was never made available");
    return 0;
}

int main(void)
{
    iterations = cmdline_ulong("iterations", 200000);
    irq_spin = cmdline_ulong("irqspin", 0);
    events = cmdline_ulong("events", 0);
    digest_every = cmdline_ulong("digestevery", 0);
    if (cmdline_ulong("nolwp", 0)) {
        return plain_run();
    }
    set_irq_handler(VECTOR, on_threshold);
    apic_enable();
    lwp_os_enable(apic_read(APIC_ID) >> 24, VECTOR);
    asm volatile("sti");
    run_in_user(producer, 0);
    asm volatile("cli");
    report(seen.bad == 0, "every record in sequence (%llu out of order)",
           (unsigned long long)seen.bad);
    report(seen.next_ins == iterations + 1, "all %u LWPINS records seen (next %llu)",
           iterations, (unsigned long long)seen.next_ins);
    report(seen.vals == iterations / VAL_EVERY, "LWPVAL sampled exactly every %d calls (%llu)",
           VAL_EVERY, (unsigned long long)seen.vals);
    report(cb.missed == 0, "MissedEvents 0 (%llu)", (unsigned long long)cb.missed);
    report(interrupts > 0, "threshold interrupts delivered (%u)", interrupts);
    return 0;
}
