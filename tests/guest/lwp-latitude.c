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
 * With "migrate=1" the guest instead meets one threshold and stops in
 * latitude_armed() with the interrupt pending, where the harness
 * (test_latitude_migrate.py) holds it with a gdbstub breakpoint, saves it
 * and restores it in a new QEMU; the interrupt must then come once.
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
        asm volatile("xor %%ecx, %%ecx\n\t"
                     "sti\n"
                     "1:\tinc %%ecx\n\t"
                     "cmp %0, %%ecx\n\t"
                     "jb 1b\n\t"
                     "cli" : : "r"((uint32_t)loops) : "ecx", "memory", "cc");
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

int main(void)
{
    unsigned long delay = cmdline_ulong("delay", 0);

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
    return 0;
}
