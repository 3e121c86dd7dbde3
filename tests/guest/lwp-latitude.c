/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Latitude mode's late threshold interrupt (spec 1.1, Report: "the
 * interrupt may occur significantly later than the event that caused the
 * threshold to be reached").  Run under -icount shift=0, where an
 * instruction is a nanosecond of guest time, with "-append delay=N" naming
 * the CPU's lwp-irq-delay (0: exact mode, no property).
 *
 * Each trial stores one record with the threshold at 0, so that the record
 * meets it, and then counts in a loop of three instructions that runs
 * longer than N.  The handler reads the loop count: the interrupt came
 * 3 * count instructions after the LWPINS (up to 2 fewer if it came in the
 * middle of an iteration).
 *   - exact mode: every interrupt right after the LWPINS;
 *   - latitude mode: every threshold gives exactly one interrupt, none
 *     later than N instructions, and the lateness is spread over 0..N.
 * The lateness of each trial is printed ("LATENESS"), so that the harness
 * can check that a seed gives the same run every time (test_latitude.py).
 * The last part ends the session at CPL 3 and leaves: a late interrupt
 * then arrives in code that never used LWP, at CPL 0.
 *
 * Then the guarantees the spec keeps whatever freedoms are taken
 * ("-append tailn=N intervals=1" say that lwp-tail-reread=N and
 * lwp-interval-reread=on are set, with delay=N for lwp-irq-delay):
 *   - a CPL 3 producer stores numbered LWPINS records into a small ring
 *     whose threshold interrupt is the only consumer: every record is read
 *     once, in order, with its exact contents, or counted in MissedEvents;
 *     LWP writes nothing outside the ring and the LWPCB fields it owns
 *     (8.3: head, MissedEvents; Flags, intervals and counters at LLWPCB);
 *   - an EventInterval written during a session takes effect at the next
 *     overflow (read live) or never (cached), nothing else (8.3), and with
 *     the draw on, sessions do both.
 * Exact mode adds what only it promises (checks named "exact mode"):
 * every interrupt finds the ring at its threshold, none is missed,
 * intervals are cached.
 *
 * With "migrate=1" the guest instead meets one threshold and stops in
 * latitude_armed() with the interrupt pending, where the harness
 * (test_latitude_migrate.py) holds it with a gdbstub breakpoint, saves it
 * and restores it in a new QEMU; the interrupt must then come once.  With
 * "migrate=2" a record stored after its block is pending instead.
 */
#include "libguest.h"
#include "apic.h"
#include "lwp.h"

#define VECTOR 0x74
#define TRIALS 16
#define RING_RECORDS 32      /* LwpMinBufferSize 1: 32 records */

static struct lwpcb cb __attribute__((aligned(64)));
static struct lwp_record ring[RING_RECORDS] __attribute__((aligned(32)));

static volatile unsigned irq_count;
static volatile uintptr_t irq_loops;
static volatile unsigned irq_cpl;

/* Set by the harness, through the gdbstub, when it has restored the guest. */
volatile uint32_t restored;

static bool migrated(void)
{
    return restored;
}

static void lwp_irq(struct ex_regs *regs)
{
    irq_count++;
    irq_loops = regs->rcx;
    irq_cpl = regs->cs & 3;
    apic_eoi();
}

static void arm_lwpcb(void)
{
    lwpcb_init(&cb, ring, sizeof(ring), LWP_F_INT);
    cb.threshold = 0;
}

/* LWPINS, then @loops iterations of inc/cmp/jb; the interrupt's count. */
static uintptr_t lwpins_then_count(uintptr_t loops)
{
    uintptr_t n;

    irq_loops = ~(uintptr_t)0;
    asm volatile("xor %%ecx, %%ecx\n\t"
                 "sti\n\t"
                 "lwpins $0, %1, %1\n"
                 "1:\tinc %%ecx\n\t"
                 "cmp %2, %%ecx\n\t"
                 "jb 1b\n\t"
                 "cli"
                 : "=&c"(n) : "r"(1u), "r"((uint32_t)loops) : "memory", "cc");
    return n;
}

static void test_late_delivery(unsigned long delay)
{
    uintptr_t loops = delay / 3 + 64;
    unsigned long max_late = 0, sum = 0;
    unsigned missing = 0, extra = 0, too_late = 0, late = 0;

    for (int i = 0; i < TRIALS; i++) {
        arm_lwpcb();
        llwpcb(&cb);
        irq_count = 0;
        lwpins_then_count(loops);
        llwpcb(0);
        if (irq_count != 1) {
            missing += irq_count == 0;
            extra += irq_count > 1;
            printf("LATENESS %d none (%u interrupts)\n", i, irq_count);
            continue;
        }
        unsigned long lateness = 3 * irq_loops;

        printf("LATENESS %d %lu\n", i, lateness);
        max_late = lateness > max_late ? lateness : max_late;
        sum += lateness;
        late += lateness != 0;
        /* Up to 2 fewer than 3 * count: the +2 is that rounding. */
        too_late += lateness > delay + 2;
    }
    report(!missing && !extra, "%d thresholds met: one interrupt each (%u missing, %u extra)",
           TRIALS, missing, extra);
    if (!delay) {
        report(!late, "exact mode: every interrupt right after the LWPINS (%u late)", late);
        return;
    }
    report(!too_late, "latitude: no interrupt later than lwp-irq-delay=%lu instructions "
           "(latest %lu, %u beyond)", delay, max_late, too_late);
    /*
     * Sixteen draws, uniform over 0..N: all within the first eighth has a
     * chance of 8^-16, and so has a mean below N/8.
     */
    report(max_late > delay / 8 && sum / TRIALS > delay / 8,
           "latitude: lateness spread over 0..%lu (latest %lu, mean %lu)", delay, max_late,
           sum / TRIALS);
}

static uintptr_t user_session(uintptr_t unused)
{
    llwpcb(&cb);
    lwpins(0, 1, 0);
    llwpcb(0);
    return 0;
}

/*
 * Count to @loops at CPL 0 with interrupts enabled: code that never used
 * LWP, in which a late threshold interrupt may arrive.
 */
static void spin_with_interrupts(uint32_t loops)
{
    asm volatile("xor %%ecx, %%ecx\n\t"
                 "sti\n"
                 "1:\tinc %%ecx\n\t"
                 "cmp %0, %%ecx\n\t"
                 "jb 1b\n\t"
                 "cli" : : "r"(loops) : "ecx", "memory", "cc");
}

static void test_late_after_session(unsigned long delay)
{
    uintptr_t loops = delay / 3 + 64;
    unsigned at_cpl0 = 0, arrived = 0;

    for (int i = 0; i < TRIALS; i++) {
        arm_lwpcb();
        irq_count = 0;
        irq_cpl = 9;
        asm volatile("sti");
        run_in_user(user_session, 0);
        /*
         * Code that never used LWP, at CPL 0, until N has passed; the
         * return from CPL 3 came through an interrupt gate (IF clear).
         */
        spin_with_interrupts(loops);
        if (irq_count != 1) {
            printf("session %d: %u interrupts\n", i, irq_count);
        }
        arrived += irq_count == 1;
        at_cpl0 += irq_count == 1 && irq_cpl == 0;
    }
    report(arrived == TRIALS, "a CPL 3 session's threshold: one interrupt each (%u of %d)",
           arrived, TRIALS);
    if (!delay) {
        report(at_cpl0 == 0, "exact mode: taken in the session, at CPL 3 (%u at CPL 0)",
               at_cpl0);
    } else {
        report(at_cpl0 > 0, "latitude: taken after the session ended, at CPL 0, %u of %d times",
               at_cpl0, TRIALS);
    }
}

/*
 * The ring guarantees.  Guard bytes around the LWPCB and the ring, the
 * LWPCB's bytes LWP does not own compared with what LLWPCB left.
 */
#define CORE_ID 0x3c
#define RING_BYTES (RING_RECORDS * 32)
#define RING_THRESHOLD (8 * 32)
#define RING_STORES 3000
#define GUARD 0xa5

static struct {
    uint8_t guard0[256];
    struct lwpcb cb;
    uint8_t guard1[256];
    struct lwp_record ring[RING_RECORDS];
    uint8_t guard2[256];
} area __attribute__((aligned(4096)));

static struct {
    uint32_t expect;            /* the next sequence number */
    uint32_t seen, gaps, bad, dup, bad_head;
    uint32_t irqs, early;
    uint32_t first_bad_seq;
} rs;

extern const char lat_lwpins_ip[];

/* One LWPINS at a known address: its records' IP. */
static void __attribute__((noinline, noclone)) ring_lwpins(uintptr_t seq)
{
    asm volatile(".globl lat_lwpins_ip\n"
                 "lat_lwpins_ip:\n\t"
                 "lwpins $0x5a5a, %0, %1"
                 : : "r"((uint32_t)seq), "r"(seq * 3) : "memory", "cc");
}

static bool record_exact(const struct lwp_record *r, uint32_t seq)
{
    return r->event_id == 255 && r->core_id == CORE_ID && r->flags == 0x5a5a &&
           r->data2 == (uint64_t)seq * 3 && r->ip == (uintptr_t)lat_lwpins_ip &&
           r->reserved == 0;
}

/* Empty the ring up to the head the LWPCB shows; runs with IF clear. */
static void ring_consume(void)
{
    uint32_t head = *(volatile uint32_t *)&area.cb.head;
    uint32_t tail = *(volatile uint32_t *)&area.cb.tail;

    if (head >= RING_BYTES || head % 32) {
        rs.bad_head++;
        return;
    }
    while (tail != head) {
        const struct lwp_record *r = &area.ring[tail / 32];
        uint32_t seq = r->data1;

        if (seq < rs.expect) {
            rs.dup++;
        } else {
            if (!record_exact(r, seq)) {
                rs.bad++;
                rs.first_bad_seq = rs.first_bad_seq ? rs.first_bad_seq : seq;
            }
            rs.gaps += seq - rs.expect;
            rs.expect = seq + 1;
            rs.seen++;
        }
        tail = (tail + 32) % RING_BYTES;
    }
    *(volatile uint32_t *)&area.cb.tail = tail;
}

static void ring_irq(struct ex_regs *regs)
{
    uint32_t head = *(volatile uint32_t *)&area.cb.head;
    uint32_t used = (head + RING_BYTES - area.cb.tail) % RING_BYTES;

    rs.irqs++;
    rs.early += used < RING_THRESHOLD;
    ring_consume();
    apic_eoi();
}

static uintptr_t ring_producer(uintptr_t unused)
{
    llwpcb(&area.cb);
    for (uint32_t seq = 1; seq <= RING_STORES; seq++) {
        ring_lwpins(seq);
        for (volatile int i = 0; i < 8; i++) {
        }
    }
    llwpcb(0);              /* flushes the head */
    return 0;
}

static void test_ring_guarantees(unsigned long delay, bool exact)
{
    static uint8_t before[sizeof(area.cb)];
    const uint8_t *cbb = (const uint8_t *)&area.cb;
    uintptr_t loops = delay / 3 + 64;
    unsigned guard_bad = 0, cb_bad = 0;

    memset(&area, GUARD, sizeof(area));
    lwpcb_init(&area.cb, area.ring, RING_BYTES, LWP_F_INT);
    area.cb.threshold = RING_THRESHOLD;
    memset(&rs, 0, sizeof(rs));
    rs.expect = 1;
    lwp_os_enable(CORE_ID, VECTOR);
    set_irq_handler(VECTOR, ring_irq);

    memcpy(before, &area.cb, sizeof(area.cb));

    asm volatile("sti");
    run_in_user(ring_producer, 0);
    /* A late interrupt still on its way: let it come, then read the rest. */
    spin_with_interrupts(loops);
    ring_consume();

    for (size_t i = 0; i < sizeof(area.guard0); i++) {
        guard_bad += area.guard0[i] != GUARD;
        guard_bad += area.guard1[i] != GUARD;
        guard_bad += area.guard2[i] != GUARD;
    }
    for (size_t i = 0; i < sizeof(area.cb); i++) {
        bool lwp_owns = i < 4 ||                       /* Flags */
                        (i >= 16 && i < 20) ||         /* BufferHeadOffset */
                        (i >= 24 && i < 32) ||         /* MissedEvents */
                        (i >= 64 && i < 68) ||         /* BufferTailOffset: ours */
                        (i >= 0x80 && i < 0x98);       /* intervals, counters */
        cb_bad += !lwp_owns && cbb[i] != before[i];
    }
    printf("RING stores %u seen %u missed %llu irqs %u early %u\n", RING_STORES, rs.seen,
           (unsigned long long)area.cb.missed, rs.irqs, rs.early);
    report(!guard_bad && !cb_bad, "ring: no LWP write outside the ring and the LWPCB's own "
           "fields (%u guard bytes, %u LWPCB bytes changed)", guard_bad, cb_bad);
    report(!rs.bad_head, "ring: the LWPCB's head always a record boundary in the ring "
           "(%u bad)", rs.bad_head);
    report(!rs.bad && !rs.dup, "ring: every record read once, in order, exact contents "
           "(%u wrong from seq %u, %u again)", rs.bad, rs.first_bad_seq, rs.dup);
    report(rs.seen + rs.gaps + (RING_STORES + 1 - rs.expect) == RING_STORES &&
           rs.gaps + (RING_STORES + 1 - rs.expect) == area.cb.missed,
           "ring: every record read or counted in MissedEvents (%u read, %u in gaps, "
           "%u at the end, MissedEvents %llu)", rs.seen, rs.gaps,
           RING_STORES + 1 - rs.expect, (unsigned long long)area.cb.missed);
    report(rs.irqs > 0, "ring: threshold interrupts came (%u)", rs.irqs);
    if (exact) {
        report(!rs.early && !area.cb.missed, "exact mode: every interrupt finds the ring at "
               "its threshold, none missed (%u early, %llu missed)", rs.early,
               (unsigned long long)area.cb.missed);
    }
    set_irq_handler(VECTOR, lwp_irq);
}

/*
 * Intervals: LWPVAL with EventInterval1 = 3, rewritten to 6 by the program
 * after the record of its 13th LWPVAL.  Cached: a record every 4th LWPVAL
 * throughout; live: from the overflow after the rewrite, every 7th.
 */
#define IV_OLD 3
#define IV_NEW 6
#define IV_SWITCH 14
#define IV_VALS 40
#define IV_SESSIONS 24

static struct lwpcb icb __attribute__((aligned(64)));
static struct lwp_record iring[RING_RECORDS] __attribute__((aligned(32)));

static uintptr_t interval_session(uintptr_t unused)
{
    llwpcb(&icb);
    for (uint32_t i = 1; i <= IV_VALS; i++) {
        if (i == IV_SWITCH) {
            *(volatile uint32_t *)&icb.event[0].interval = IV_NEW;
        }
        lwpval(0, i, 0);
    }
    llwpcb(0);
    return 0;
}

/* 0: cached, 1: live, -1: neither. */
static int interval_session_kind(void)
{
    uint32_t n = icb.head / 32, prev = 0;
    bool live = false;

    for (uint32_t k = 0; k < n; k++) {
        uint32_t at = iring[k].data1;
        uint32_t gap = at - prev;

        if (k == 0) {
            if (at != 1) {
                return -1;
            }
        } else if (gap == IV_NEW + 1 && prev >= IV_SWITCH) {
            live = true;
        } else if (gap != IV_OLD + 1 || live) {
            return -1;
        }
        prev = at;
    }
    /* Both see the records up to the overflow after the rewrite. */
    return n < 6 ? -1 : live;
}

static void test_interval_caching(bool exact, bool draw)
{
    unsigned kinds[3] = { 0, 0, 0 };

    for (int s = 0; s < IV_SESSIONS; s++) {
        lwpcb_init(&icb, iring, sizeof(iring), LWP_F_VAL);
        icb.event[0].interval = IV_OLD;
        memset(iring, 0, sizeof(iring));
        run_in_user(interval_session, 0);
        kinds[interval_session_kind() + 1]++;
    }
    printf("INTERVALS cached %u live %u other %u\n", kinds[1], kinds[2], kinds[0]);
    report(!kinds[0], "intervals: a rewritten EventInterval is used from the next overflow "
           "or never, nothing else (%u of %d sessions otherwise)", kinds[0], IV_SESSIONS);
    if (exact) {
        report(!kinds[2], "exact mode: intervals cached at LLWPCB (%u live)", kinds[2]);
    } else if (draw) {
        report(kinds[1] && kinds[2], "latitude: sessions drew both (%u cached, %u live)",
               kinds[1], kinds[2]);
    }
}

/* The harness's breakpoint: the interrupt is pending here. */
void __attribute__((noinline)) latitude_armed(void)
{
    asm volatile("" ::: "memory");
}

static void test_pending_across_migration(unsigned long delay)
{
    uintptr_t loops = delay / 3 + 64;
    int tries = 0;

    /* A draw can come out below the few instructions before the stop. */
    do {
        arm_lwpcb();
        llwpcb(&cb);
        irq_count = 0;
        asm volatile("sti");
        lwpins(0, 1, 0);
        if (!irq_count) {
            latitude_armed();
        }
        asm volatile("xor %%ecx, %%ecx\n"
                     "1:\tinc %%ecx\n\t"
                     "cmp %0, %%ecx\n\t"
                     "jb 1b\n\t"
                     "cli" : : "r"((uint32_t)loops) : "ecx", "memory", "cc");
        llwpcb(0);
    } while (++tries < 4 && irq_count == 1 && !migrated());
    report(migrated(), "stopped with the interrupt pending (%d tries)", tries);
    report(irq_count == 1, "after the restore: the pending interrupt, once (%u)", irq_count);
}

/*
 * migrate=2: a record pending across a save and restore.  At CPL 3, IRE
 * every 256 instructions, no threshold interrupt, so each record may be
 * stored after its block.  LLWPCB, a jump that ends its block, a block of
 * SLED_A NOPs ending in a jump to pending_store_stop, on a page of its own
 * where the harness's breakpoint is, then SLED_B NOPs.  The block of
 * SLED_A NOPs holds the 256th instruction, whose record is stored at the
 * next block's start: pending when the breakpoint stops the guest there
 * (a breakpoint on the block's own page would make every block there one
 * instruction long, stored at once).  The harness checks that
 * 'info registers' shows it pending, saves the guest and restores it in a
 * new QEMU.  The record must then reach the ring once: each record exactly
 * 256 instructions of the stream after the one before (a lost record
 * leaves 512, a doubled one 0).
 */
#define SLED_A 300
#define SLED_B 2048

static struct lwpcb scb __attribute__((aligned(64)));
static struct lwp_record sring[32] __attribute__((aligned(32)));
extern const uint8_t pending_store_sled[], pending_store_jump[], pending_store_stop[];

static uintptr_t store_sled(uintptr_t arg)
{
    (void)arg;
    asm volatile("llwpcb %0\n\t"
                 "jmp pending_store_sled\n"
                 ".globl pending_store_sled\n"
                 "pending_store_sled:\n\t"
                 ".rept %c1\n\tnop\n\t.endr\n"
                 ".globl pending_store_jump\n"
                 "pending_store_jump:\n\t"
                 "jmp pending_store_stop\n\t"
                 ".balign 4096\n"
                 ".globl pending_store_stop\n"
                 "pending_store_stop:\n\t"
                 ".rept %c2\n\tnop\n\t.endr"
                 : : "r"(&scb), "i"(SLED_A), "i"(SLED_B) : "memory");
    llwpcb(0);
    return 0;
}

/* Where @ip is in the stream of instructions after the first jump, or -1. */
static long sled_index(uint64_t ip)
{
    uintptr_t a = (uintptr_t)pending_store_sled, b = (uintptr_t)pending_store_stop;

    if (ip >= a && ip < a + SLED_A) {
        return ip - a;
    }
    if (ip == (uintptr_t)pending_store_jump) {
        return SLED_A;
    }
    if (ip >= b && ip < b + SLED_B) {
        return SLED_A + 1 + (ip - b);
    }
    return -1;
}

static void test_pending_store_across_migration(void)
{
    unsigned n, bad = 0;

    lwpcb_init(&scb, sring, sizeof(sring), LWP_F_IRE);
    scb.event[1].interval = 255;
    scb.event[1].counter = 255;
    run_in_user(store_sled, 0);
    n = scb.head / sizeof(struct lwp_record);
    for (unsigned i = 0; i < n; i++) {
        long at = sled_index(sring[i].ip);

        bad += at < 0 || (i ? at - sled_index(sring[i - 1].ip) != 256 : at >= 256);
    }
    printf("PENDING-STORE %u records, %u not 256 instructions after the one before, "
           "missed %u\n", n, bad, (unsigned)scb.missed);
    report(migrated(), "stopped with a record pending, saved and restored");
    report(n == (SLED_A + 1 + SLED_B) / 256 && !bad && !scb.missed,
           "after the restore: the pending record stored once, every record "
           "256 instructions after the one before (%u records, %u off)", n, bad);
}

int main(void)
{
    unsigned long delay = cmdline_ulong("delay", 0);

    if (cmdline_ulong("migrate", 0) == 2) {
        lwp_os_enable(0, VECTOR);
        test_pending_store_across_migration();
        return 0;
    }
    if (cmdline_ulong("migrate", 0)) {
        lwp_os_enable(0, VECTOR);
        set_irq_handler(VECTOR, lwp_irq);
        apic_enable();
        test_pending_across_migration(delay);
        return 0;
    }

    lwp_os_enable(0, VECTOR);
    set_irq_handler(VECTOR, lwp_irq);
    apic_enable();
    test_late_delivery(delay);
    test_late_after_session(delay);

    unsigned long tailn = cmdline_ulong("tailn", 0);
    bool draw = cmdline_ulong("intervals", 0);
    bool exact = !delay && !tailn && !draw;

    test_ring_guarantees(delay, exact);
    test_interval_caching(exact, draw);
    return 0;
}
