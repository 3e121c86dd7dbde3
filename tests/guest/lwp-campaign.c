/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A seeded, replayable adversarial campaign in system mode ("-append
 * 'seed=N cases=M'"; default seed 1, 60 cases).  Each case writes a random
 * value to LWP_CFG (#GP or accepted), then a valid one with a random vector
 * (0-15 included: the APIC's illegal-vector error); builds a random LWPCB
 * (flags, intervals, counters, threshold, filters, head, Random) anywhere in
 * an arena, with its ring there too; takes a random arena page's
 * present/writable/user bit away; runs LLWPCB, LWPVAL, LWPINS and branches at
 * CPL 3 (now and then at CPL 0) with interrupts on; XSAVEs the LWP state,
 * mutates the image and XRSTORs it at CPL 0; and stops LWP.  #PF on the
 * arena gives the page back and retries; #GP ends the step.
 *
 * Half of the cases put the LWPCB, the ring or both outside RAM: in ROM,
 * in a device (local APIC, I/O APIC, HPET, VGA) or in unassigned space, or
 * move the loaded LWPCB there by remapping its page while the session
 * runs.  Device windows avoid the registers whose writes would end the
 * guest (the local APIC's ICR and LVTs, the I/O APIC's register select);
 * stray device interrupts are counted and the devices quietened.
 *
 * Checked: every case completes (QEMU alive, the guest intact) and no arena
 * byte outside the LWPCB and the ring changed.  Run under plain TCG,
 * -icount shift=0 and one insn per TB.
 */
#include "lwp.h"
#include "apic.h"
#include "../common/lwp-campaign-case.h"

#define ARENA_PAGES 8
#define LWPCB_BYTES (0x13 * 8)

static uint8_t *arena;
static uint8_t shadow[ARENA_PAGES * 4096];
static uint8_t xarea[4096] __attribute__((aligned(64)));
static volatile unsigned n_pf, n_gp, n_irq, n_stray;
static volatile unsigned threshold_vector;
static uint32_t lwp_edx;
static unsigned n_in_ram, n_outside[6];

/*
 * Physical windows outside RAM (identity-mapped, user-accessible) where a
 * case may put the LWPCB or the ring; @cb_off and @ring_off are the
 * offsets in the window that keep the guest alive (see above).
 */
static const struct window {
    const char *name;
    uint32_t base, size;
    uint32_t cb_off;          /* the LWPCB's offset (a page's worth apart) */
    uint32_t ring_off;        /* the ring's first byte */
} windows[] = {
    { "rom", 0xfffe0000u, 0x20000, 0x40, 0 },
    { "lapic", 0xfee00000u, 0x1000, 0x000, 0x400 },
    { "ioapic", 0xfec00000u, 0x1000, 0x44, 0 },
    { "hpet", 0xfed00000u, 0x400, 0x20, 0 },
    { "vga", 0x000a0000u, 0x10000, 0x100, 0 },
    { "unassigned", 0xc0000000u, 0x10000, 0x80, 0 },
};

enum placement {
    IN_RAM,
    RING_OUTSIDE,             /* the ring in a window */
    CB_OUTSIDE,               /* the LWPCB in a window (LLWPCB reads it there) */
    CB_MOVED,                 /* the loaded LWPCB's page remapped to a window */
    BOTH_OUTSIDE,
};

#define IOAPIC_BASE 0xfec00000u
#define HPET_BASE 0xfed00000u

/* Undo what device writes may have started: timers, routes, priorities. */
static void quiet_devices(void)
{
    for (unsigned pin = 0; pin < 24; pin++) {
        *(volatile uint32_t *)(uintptr_t)IOAPIC_BASE = 0x10 + 2 * pin;
        *(volatile uint32_t *)(uintptr_t)(IOAPIC_BASE + 0x10) = 1u << 16;
    }
    *(volatile uint32_t *)(uintptr_t)(HPET_BASE + 0x10) = 0;
    for (unsigned t = 0; t < 3; t++) {
        *(volatile uint32_t *)(uintptr_t)(HPET_BASE + 0x100 + 0x20 * t) = 0;
    }
    apic_write(0x80, 0);                          /* TPR */
    for (uint32_t lvt = 0x320; lvt <= 0x370; lvt += 0x10) {
        apic_write(lvt, 1u << 16);                /* masked */
    }
    apic_write(0x380, 0);                         /* timer initial count */
    apic_write(APIC_ESR, 0);
    apic_enable();
}

static void arena_accessible(void)
{
    vm_set_flags((uintptr_t)arena, ARENA_PAGES * PAGE_SIZE, PTE_P | PTE_RW | PTE_US, 0);
}

/* #PF: on the arena, give the page back and retry; elsewhere, a failure. */
static void on_pf(struct ex_regs *regs)
{
    uintptr_t cr2 = read_cr2();

    if (cr2 < (uintptr_t)arena || cr2 >= (uintptr_t)arena + ARENA_PAGES * PAGE_SIZE) {
        printf("FAIL: #PF outside the arena at %#lx (rip %#lx)\n", (unsigned long)cr2,
               (unsigned long)regs->rip);
        guest_exit(1);
    }
    n_pf++;
    arena_accessible();
}

/* Every vector from 32 up: the threshold interrupt, or a device's stray one. */
static void on_irq(struct ex_regs *regs)
{
    if (regs->vector == 0xff) {
        return;                                   /* spurious: no EOI */
    }
    if (regs->vector == threshold_vector) {
        n_irq++;
    } else {
        n_stray++;
        quiet_devices();
    }
    apic_eoi();
}

/* ---- CPL 3: the session ---------------------------------------------------- */
static struct lwpcb *case_cb;

/* The workload of a session: LWPVAL, LWPINS and branches. */
static void session_work(uintptr_t iters)
{
    uint32_t x = (uint32_t)iters * 2654435761u;

    asm volatile("sti");
    for (unsigned i = 0; i < iters; i++) {
        x = x * 1103515245u + 12345u;
        switch (x >> 30) {
        case 0:
            asm volatile("lwpval $3, %0, %1" : : "r"(i), "r"((uintptr_t)x) : "memory");
            break;
        case 1:
            asm volatile("lwpins $0xffff, %0, %1" : : "r"(i), "r"((uintptr_t)x) : "memory", "cc");
            break;
        default:
            asm volatile("mov %0, %%ecx\n1: dec %%ecx\n jnz 1b" : : "r"((x >> 25) | 1) :
                         "ecx", "cc");
            break;
        }
    }
    asm volatile("cli");
}

static uintptr_t user_session(uintptr_t iters)
{
    asm volatile(ASM_TRY "llwpcb %0\n\t" ASM_CATCH : : "r"(case_cb) : "memory");
    if (last_exc.vector != -1) {
        return 1;                          /* #GP: a refused LWPCB */
    }
    session_work(iters);
    return 0;
}

static uintptr_t user_continue(uintptr_t iters)
{
    session_work(iters);
    return 0;
}

/* At CPL 3, or now and then at CPL 0 where the instructions work alike. */
static uintptr_t run_at_random_cpl(uintptr_t (*fn)(uintptr_t), uintptr_t arg)
{
    return rnd_below(8) ? run_in_user(fn, arg) : fn(arg);
}

static uintptr_t user_stop(uintptr_t unused)
{
    uintptr_t v;

    asm volatile("slwpcb %0\n\tllwpcb %1" : "=&r"(v) : "r"(0ul) : "memory");
    return v;
}

/* ---- CPL 0: XSAVE, mutate, XRSTOR ----------------------------------------- */
static void xsave_mutate_xrstor(struct lwpcb *cb, uint8_t *ring, uint32_t ring_size)
{
    uint8_t *c = xarea + 0x340;

    memset(xarea, 0, sizeof(xarea));
    asm volatile("xsave (%0)" : : "r"(xarea), "a"(0), "d"((uint32_t)(XCR0_LWP >> 32)) : "memory");
    switch (rnd_below(5)) {
    case 0:
        *(uint32_t *)(c + 8) = (uint32_t)rnd();                 /* Flags */
        break;
    case 1:
        *(uint32_t *)(c + 12) = (uint32_t)rnd();                /* head */
        break;
    case 2:
        *(uint32_t *)(c + 24) = rnd_below(ring_size + 1) |      /* BufferSize */
                                (rnd_below(2) ? 0 : (uint32_t)rnd() & 0xf0000000u);
        break;
    case 3:
        for (int i = 0; i < 32; i++) {                          /* pending record */
            c[32 + i] = (uint8_t)rnd();
        }
        for (int i = 0; i < 6; i++) {                           /* counters */
            *(uint32_t *)(c + 64 + 4 * i) = (uint32_t)rnd();
        }
        break;
    default:                                                    /* a session of ours */
        *(uint64_t *)(xarea + 512) |= XCR0_LWP;
        *(uint64_t *)c = (uintptr_t)cb;
        *(uint64_t *)(c + 16) = (uintptr_t)ring;
        *(uint32_t *)(c + 24) = ring_size;
        *(uint32_t *)(c + 8) = (uint32_t)rnd() & 0x8000000e;
        break;
    }
    asm volatile(ASM_TRY "xrstor (%0)\n\t" ASM_CATCH
                 : : "r"(xarea), "a"(0), "d"((uint32_t)(XCR0_LWP >> 32)) : "memory");
    n_gp += last_exc.vector == GP_VECTOR;
}

static uint8_t *window_ring(const struct window *w, uint32_t *ring_size)
{
    uint32_t room = w->size - w->ring_off;

    if (*ring_size > room) {
        *ring_size = room & ~31u;
    }
    return (uint8_t *)(uintptr_t)(w->base + w->ring_off +
                                  32 * rnd_below((room - *ring_size) / 32 + 1));
}

/* Remap the pages of the loaded LWPCB at @cb to @w; returns the first old page. */
static uint64_t move_cb(struct lwpcb *cb, const struct window *w)
{
    uintptr_t first = (uintptr_t)cb & ~(PAGE_SIZE - 1);
    uintptr_t last = ((uintptr_t)cb + LWPCB_BYTES - 1) & ~(PAGE_SIZE - 1);
    uint64_t old = vm_map_page(first, w->base);

    if (last != first) {
        vm_map_page(last, w->base + PAGE_SIZE);
    }
    return old;
}

static void unmove_cb(struct lwpcb *cb, uint64_t old)
{
    uintptr_t first = (uintptr_t)cb & ~(PAGE_SIZE - 1);
    uintptr_t last = ((uintptr_t)cb + LWPCB_BYTES - 1) & ~(PAGE_SIZE - 1);

    vm_map_page(first, old);
    if (last != first) {
        vm_map_page(last, old + PAGE_SIZE);
    }
}

static int one_case(unsigned n)
{
    static const uint8_t placements[8] = {
        IN_RAM, IN_RAM, IN_RAM, IN_RAM, RING_OUTSIDE, CB_OUTSIDE, CB_MOVED, BOTH_OUTSIDE,
    };
    enum placement place = placements[rnd_below(8)];
    const struct window *w = &windows[rnd_below(sizeof(windows) / sizeof(windows[0]))];
    uint32_t ring_size = 32 * (32 + rnd_below(64));
    struct lwpcb *cb = (struct lwpcb *)(arena + 8 * rnd_below(
                           (ARENA_PAGES / 2 * PAGE_SIZE - LWPCB_BYTES) / 8));
    uint8_t *ring = arena + ARENA_PAGES / 2 * PAGE_SIZE +
                    32 * rnd_below((ARENA_PAGES / 2 * PAGE_SIZE - ring_size) / 32);
    struct lwpcb *user_cb = cb;
    uint64_t cfg = rnd(), moved_from = 0;
    unsigned vector;

    if (place == CB_MOVED) {
        /* In the arena at the window's offset, so the move keeps it there. */
        cb = (struct lwpcb *)(arena + PAGE_SIZE * rnd_below(ARENA_PAGES / 2 - 1) + w->cb_off);
        user_cb = cb;
    }
    if (place == CB_OUTSIDE || place == BOTH_OUTSIDE) {
        user_cb = (struct lwpcb *)(uintptr_t)(w->base + w->cb_off);
    }
    if (place == RING_OUTSIDE || place == BOTH_OUTSIDE) {
        ring = window_ring(w, &ring_size);
    }
    if (place == IN_RAM) {
        n_in_ram++;
    } else {
        n_outside[w - windows]++;
    }

    /* LWP_CFG: a random write (#GP or accepted), then a usable value. */
    asm volatile(ASM_TRY "wrmsr\n\t" ASM_CATCH
                 : : "c"(MSR_LWP_CFG), "a"((uint32_t)cfg), "d"((uint32_t)(cfg >> 32)) : "memory");
    n_gp += last_exc.vector == GP_VECTOR;
    vector = rnd_below(4) ? 0x30 + rnd_below(0x40) : rnd_below(16);
    threshold_vector = vector;
    wrmsr(MSR_LWP_CFG, (lwp_edx & (uint32_t)rnd()) | (uint64_t)(uint8_t)rnd() << 32 |
                       (uint64_t)vector << 40);

    arena_accessible();
    for (unsigned i = 0; i < ARENA_PAGES * PAGE_SIZE; i++) {
        arena[i] = (uint8_t)rnd();
    }
    memset(cb, 0, sizeof(*cb));
    campaign_random_lwpcb(cb, ring, ring_size);
    memcpy(shadow, arena, sizeof(shadow));
    if (rnd_below(2)) {
        static const uint64_t bits[] = { PTE_P, PTE_RW, PTE_US };
        vm_set_flags((uintptr_t)arena + PAGE_SIZE * rnd_below(ARENA_PAGES), PAGE_SIZE, 0,
                     bits[rnd_below(3)]);
    }

    case_cb = user_cb;
    if (run_at_random_cpl(user_session, 50 + rnd_below(400)) == 0) {
        if (place == CB_MOVED) {
            moved_from = move_cb(cb, w);
            run_at_random_cpl(user_continue, 50 + rnd_below(200));
        }
        if (rnd_below(2)) {
            xsave_mutate_xrstor(user_cb, ring, ring_size);
            run_at_random_cpl(user_session, 50 + rnd_below(200));
        }
        run_at_random_cpl(user_stop, 0);
    } else {
        n_gp++;
    }
    asm volatile("cli");
    wrmsr(MSR_LWP_CBADDR, 0);
    if (moved_from) {
        unmove_cb(cb, moved_from);
    }
    if (place != IN_RAM) {
        quiet_devices();
    }
    arena_accessible();

    for (unsigned i = 0; i < ARENA_PAGES * PAGE_SIZE; i++) {
        uint8_t *p = arena + i;
        if ((p >= (uint8_t *)cb && p < (uint8_t *)cb + LWPCB_BYTES) ||
            (p >= ring && p < ring + ring_size)) {
            continue;
        }
        if (*p != shadow[i]) {
            printf("case %u: arena byte %#x changed (%#x -> %#x); LWPCB at %#lx, ring at %#lx "
                   "size %u\n", n, i, shadow[i], *p, (unsigned long)((uint8_t *)cb - arena),
                   (unsigned long)(ring - arena), ring_size);
            return 1;
        }
    }
    return 0;
}

int main(void)
{
    unsigned long seed = cmdline_ulong("seed", 1);
    unsigned cases = cmdline_ulong("cases", 60), failed = 0;
    uint32_t a, b, c;

    campaign_seed(seed);
    arena = alloc_pages(ARENA_PAGES);
    lwp_os_enable(0, 0x30);
    lwp_cpuid(&a, &b, &c, &lwp_edx);
    quiet_devices();
    set_irq_handler(PF_VECTOR, on_pf);
    for (int v = 32; v < 256; v++) {
        if (v != USER_RETURN_VECTOR) {
            set_irq_handler(v, on_irq);
        }
    }
    for (unsigned n = 0; n < cases; n++) {
        failed += one_case(n);
    }
    set_irq_handler(PF_VECTOR, NULL);
    report(failed == 0, "seed %lu: %u cases, %u with a byte changed outside the LWPCB and the "
           "ring (%u #PF retried, %u #GP, %u interrupts, %u stray device interrupts)",
           seed, cases, failed, n_pf, n_gp, n_irq, n_stray);
    printf("cases in RAM: %u; outside:", n_in_ram);
    for (unsigned i = 0; i < sizeof(windows) / sizeof(windows[0]); i++) {
        printf(" %s %u", windows[i].name, n_outside[i]);
    }
    printf("\n");
    return 0;
}
