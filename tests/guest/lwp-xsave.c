/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * LWP state and XSAVE/XRSTOR (spec 7, 8.2.1, 8.4): the component 62 image of
 * figure 7-1, processor supplied values, XRSTOR's rules, CPL != 0 address
 * validation, a context switch between two user tasks, non-lazy state, and
 * XRSTOR that ends its block on every CPU with LWP.
 */
#include "lwp.h"

#define NREC 32
#define XSTATE_BV_OFF 512
#define LWP_OFF 0x340
#define XSAVE_SIZE 0x1000

static uint8_t area_a[XSAVE_SIZE] __attribute__((aligned(64)));
static uint8_t area_b[XSAVE_SIZE] __attribute__((aligned(64)));
static struct lwpcb cb_a, cb_b;
static struct lwp_record ring_a[NREC] __attribute__((aligned(64)));
static struct lwp_record ring_b[NREC] __attribute__((aligned(64)));

static void xsave(void *area, uint64_t rfbm)
{
    asm volatile("xsave (%0)" : : "r"(area), "a"((uint32_t)rfbm),
                 "d"((uint32_t)(rfbm >> 32)) : "memory");
}

static int xrstor(const void *area, uint64_t rfbm)
{
    asm volatile(ASM_TRY "xrstor (%0)\n\t" ASM_CATCH : : "r"(area), "a"((uint32_t)rfbm),
                 "d"((uint32_t)(rfbm >> 32)) : "memory");
    return last_exc.vector;
}

static uint64_t *bv(uint8_t *area)
{
    return (uint64_t *)(area + XSTATE_BV_OFF);
}

#define LWP_U32(area, off) (*(uint32_t *)((area) + LWP_OFF + (off)))
#define LWP_U64(area, off) (*(uint64_t *)((area) + LWP_OFF + (off)))

static void clean_area(uint8_t *area)
{
    memset(area, 0, XSAVE_SIZE);
    memset(area + LWP_OFF, 0xaa, 128);
}

static void start_session(struct lwpcb *cb, struct lwp_record *ring, uint32_t interval)
{
    lwpcb_init(cb, ring, NREC * 32, LWP_F_VAL);
    memset(ring, 0, NREC * 32);
    cb->event[0].interval = interval;
    cb->event[0].counter = 3;
    llwpcb(cb);
}

static void test_image(void)
{
    clean_area(area_a);
    xsave(area_a, XCR0_LWP);
    report((*bv(area_a) & XCR0_LWP) == 0, "XSAVE with LWP disabled: XSTATE_BV[62] = 0");
    report(LWP_U64(area_a, 0) == 0xaaaaaaaaaaaaaaaaull, "XSAVE with LWP disabled: area untouched");

    start_session(&cb_a, ring_a, 5);
    lwpval(0, 1, 0);                       /* counter 3 -> 2 */
    lwpval(0, 1, 0);                       /* -> 1 */
    lwpins(0, 7, 0);                       /* head 32 */
    clean_area(area_a);
    xsave(area_a, XCR0_LWP);
    report(*bv(area_a) & XCR0_LWP, "XSAVE with LWP enabled: XSTATE_BV[62] = 1");
    report(LWP_U64(area_a, 0) == (uintptr_t)&cb_a, "image: LWPCBAddress (linear)");
    report(LWP_U32(area_a, 8) == LWP_F_VAL, "image: Flags = active events (%#x)", LWP_U32(area_a, 8));
    report(LWP_U32(area_a, 12) == 32, "image: BufferHeadOffset %u", LWP_U32(area_a, 12));
    report(LWP_U64(area_a, 16) == (uintptr_t)ring_a, "image: BufferBase (linear)");
    report(LWP_U32(area_a, 24) == NREC * 32, "image: BufferSize");
    report(LWP_U32(area_a, 28) == 0, "image: Filters");
    report(LWP_U64(area_a, 32) == 0, "image: no SavedEventRecord pending");
    report(LWP_U32(area_a, 64) == 1, "image: EventCounter1 = %u", LWP_U32(area_a, 64));
    bool zero = true;
    for (int i = 88; i < 128; i++) {
        zero &= area_a[LWP_OFF + i] == 0;
    }
    report(zero, "image: bytes 88-127 zero");
    report(cb_a.head == 0, "XSAVE does not write the LWPCB");

    /* XSAVEOPT only where CPUID 0Dh.1 EAX[0] has it (not on family 15h models). */
    uint32_t xs1, unused;
    cpuid_count(0xd, 1, &xs1, &unused, &unused, &unused);
    bool has_xsaveopt = xs1 & 1;
    memset(area_b, 0, XSAVE_SIZE);
    if (has_xsaveopt) {
        asm volatile("xsaveopt (%0)" : : "r"(area_b), "a"(0), "d"((uint32_t)(XCR0_LWP >> 32)) : "memory");
        report((*bv(area_b) & XCR0_LWP) && memcmp(area_b + LWP_OFF, area_a + LWP_OFF, 128) == 0,
               "XSAVEOPT saves the same image while LWP is enabled");
    } else {
        report_skip("XSAVEOPT not enumerated");
    }

    /* Processor supplied values disable LWP (spec 7.5, 8.7.2). */
    memset(area_b, 0, XSAVE_SIZE);
    report(xrstor(area_b, XCR0_LWP) == -1 && slwpcb() == 0,
           "XRSTOR with XSTATE_BV[62] = 0 disables LWP");
    /* RFBM without bit 62 leaves LWP alone. */
    report(xrstor(area_a, 3) == -1 && slwpcb() == 0, "XRSTOR without bit 62 in EDX:EAX: no LWP change");

    memset(area_b, 0xaa, XSAVE_SIZE);
    *bv(area_b) = 0;
    memset(area_b + XSTATE_BV_OFF + 8, 0, 56);
    if (has_xsaveopt) {
        asm volatile("xsaveopt (%0)" : : "r"(area_b), "a"(0), "d"((uint32_t)(XCR0_LWP >> 32)) : "memory");
        report((*bv(area_b) & XCR0_LWP) == 0 && area_b[LWP_OFF] == 0xaa,
               "XSAVEOPT with LWP disabled: XSTATE_BV[62] = 0, area untouched");
    }

    report(xrstor(area_a, XCR0_LWP) == -1, "XRSTOR of the saved image");
    lwpval(0, 1, 0);                       /* counter 1 -> 0 */
    lwpval(0, 2, 0);                       /* -> -1: stores */
    report(slwpcb() == (uintptr_t)&cb_a && cb_a.head == 2 * 32 && ring_a[1].data1 == 2,
           "restored session continues: counter and head carried over (head %u)", cb_a.head);
    llwpcb(0);
}

static void test_xrstor_rules(void)
{
    uint64_t cfg = rdmsr(MSR_LWP_CFG);

    start_session(&cb_a, ring_a, 5);
    xsave(area_a, XCR0_LWP);
    llwpcb(0);

    memcpy(area_b, area_a, XSAVE_SIZE);
    LWP_U32(area_b, 24) = 31 * 32;
    report(xrstor(area_b, XCR0_LWP) == -1 && slwpcb() == 0, "XRSTOR: BufferSize below minimum disables");

    memcpy(area_b, area_a, XSAVE_SIZE);
    LWP_U32(area_b, 12) = NREC * 32 - 31;     /* > BufferSize - 32 */
    report(xrstor(area_b, XCR0_LWP) == -1, "XRSTOR: head beyond the last record accepted");
    lwpins(0, 0x11, 0);
    report(ring_a[0].data1 == 0x11, "XRSTOR: head beyond the last record becomes 0");
    llwpcb(0);

    memcpy(area_b, area_a, XSAVE_SIZE);
    LWP_U32(area_b, 12) = 3 * 32 + 5;
    LWP_U32(area_b, 24) = NREC * 32 + 17;
    xrstor(area_b, XCR0_LWP);
    lwpins(0, 0x22, 0);
    slwpcb();
    report(ring_a[3].data1 == 0x22 && cb_a.head == 4 * 32, "XRSTOR: head and size rounded down");
    llwpcb(0);

    /* Events not available in LWP_CFG are not restored. */
    wrmsr(MSR_LWP_CFG, cfg & ~(uint64_t)LWP_F_VAL);
    xrstor(area_a, XCR0_LWP);
    memset(ring_a, 0, sizeof(ring_a));
    for (int i = 0; i < 10; i++) {
        lwpval(0, 1, 0);
    }
    report(ring_a[0].event_id == 0, "XRSTOR: events unavailable in LWP_CFG stay off");
    xsave(area_b, XCR0_LWP);
    report(LWP_U32(area_b, 8) == 0, "... and XSAVE then reports no active event");
    llwpcb(0);
    wrmsr(MSR_LWP_CFG, cfg);

    /* XCR0[62] clear but XSTATE_BV[62] set: #GP (spec 7.4). */
    xsetbv(0, xgetbv(0) & ~XCR0_LWP);
    report(xrstor(area_a, ~0ull) == GP_VECTOR, "XRSTOR with XSTATE_BV[62] and XCR0[62] clear: #GP");
    xsetbv(0, xgetbv(0) | XCR0_LWP);
    report(slwpcb() == 0, "LWP unchanged by the faulting XRSTOR");
}

/* CPL != 0 validation (spec 7.4): a failure disables LWP without a fault. */
static uintptr_t user_xrstor(uintptr_t area)
{
    int vec = xrstor((void *)area, XCR0_LWP);
    return vec == -1 ? slwpcb() : (uintptr_t)-1;
}

static void test_cpl3_validation(void)
{
    start_session(&cb_a, ring_a, 5);
    xsave(area_a, XCR0_LWP);
    llwpcb(0);

    report(run_in_user(user_xrstor, (uintptr_t)area_a) == (uintptr_t)&cb_a,
           "CPL 3 XRSTOR of a valid image enables LWP");
    llwpcb(0);
    memcpy(area_b, area_a, XSAVE_SIZE);
#ifdef __x86_64__
    LWP_U64(area_b, 16) = 0x0000800000000000ull - 64;  /* ring runs past canonical */
    report(run_in_user(user_xrstor, (uintptr_t)area_b) == 0,
           "CPL 3 XRSTOR with a non-canonical ring buffer: LWP disabled, no fault");
    report(xrstor(area_b, XCR0_LWP) == -1 && slwpcb() == (uintptr_t)&cb_a,
           "CPL 0 XRSTOR of the same image is trusted");
    llwpcb(0);
#else
    LWP_U64(area_b, 16) = 0xfffffff0;                   /* wraps past the DS limit */
    report(run_in_user(user_xrstor, (uintptr_t)area_b) == 0,
           "CPL 3 XRSTOR with a ring beyond the DS limit: LWP disabled, no fault");
    report(xrstor(area_b, XCR0_LWP) == -1 && slwpcb() == (uintptr_t)&cb_a,
           "CPL 0 XRSTOR of the same image is trusted");
    llwpcb(0);
#endif
}

/* Two user tasks, each with its own LWPCB, switched by the "kernel". */
static uintptr_t task_start(uintptr_t which)
{
    struct lwpcb *cb = which ? &cb_b : &cb_a;
    start_session(cb, which ? ring_b : ring_a, 0);
    return slwpcb() == (uintptr_t)cb;
}

static uintptr_t task_work(uintptr_t which)
{
    lwpins(which, which ? 0xb : 0xa, 0);
    return slwpcb() == (uintptr_t)(which ? &cb_b : &cb_a);
}

static void test_context_switch(void)
{
    bool ok = true;

    memset(area_b, 0, XSAVE_SIZE);
    ok &= run_in_user(task_start, 0);
    ok &= run_in_user(task_work, 0);
    xsave(area_a, XCR0_LWP);               /* switch A -> new task B */
    xrstor(area_b, XCR0_LWP);              /* init: B starts without LWP */
    ok &= slwpcb() == 0;
    ok &= run_in_user(task_start, 1);
    ok &= run_in_user(task_work, 1);
    ok &= run_in_user(task_work, 1);
    xsave(area_b, XCR0_LWP);               /* B -> A */
    xrstor(area_a, XCR0_LWP);
    ok &= run_in_user(task_work, 0);
    xsave(area_a, XCR0_LWP);               /* A -> B */
    xrstor(area_b, XCR0_LWP);
    ok &= run_in_user(task_work, 1);
    report(ok, "each task sees its own LWPCB across switches");
    llwpcb(0);
    report(ring_a[0].data1 == 0xa && ring_a[1].data1 == 0xa && ring_a[2].event_id == 0,
           "task A's ring holds exactly its 2 records");
    report(ring_b[0].data1 == 0xb && ring_b[1].data1 == 0xb && ring_b[2].data1 == 0xb &&
           ring_b[3].event_id == 0, "task B's ring holds exactly its 3 records");
}

/*
 * XRSTOR that enables LWP changes what the instructions after it count, on
 * every CPU with LWP, not only on those with MPX (Opteron_G5, EPYC): a
 * translator must not run on with the state it saw before the XRSTOR.
 * Spec 7.4 (the counters come from the image), 2.1 and 5.3 (each LWPVAL
 * decrements EventCounter1 and stores when it becomes negative, then resets
 * it to the interval), 2.2 (each instruction retired at CPL 3 decrements
 * EventCounter2).  XRSTOR itself retires in the restored session
 * (docs/lwp-events.rst: counted after it retires).
 */
extern char xr_nop5[];

__attribute__((noinline)) static uintptr_t user_xrstor_nops(uintptr_t area)
{
    asm volatile("xrstor (%0)\n\t"
                 ".rept 4\n\tnop\n\t.endr\n"
                 "xr_nop5:\n\t"
                 ".rept 16\n\tnop\n\t.endr\n\t"
                 "xsave (%1)\n\t"
                 : : "r"(area), "r"(area_b), "a"((uint32_t)XCR0_LWP),
                     "d"((uint32_t)(XCR0_LWP >> 32)) : "memory");
    return 0;
}

static void test_xrstor_ends_block(void)
{
    uintptr_t flushed;
    uint32_t interval;

    /* LWPVAL, interval 0: each of the two LWPVALs after XRSTOR stores. */
    lwpcb_init(&cb_a, ring_a, NREC * 32, LWP_F_VAL);
    memset(ring_a, 0, sizeof(ring_a));
    llwpcb(&cb_a);
    xsave(area_a, XCR0_LWP);
    llwpcb(0);
    report(LWP_U32(area_a, 64) == 0, "image: EventCounter1 = 0, interval 0");
    asm volatile("xrstor (%0)\n\t"
                 "lwpval $0, %1, %2\n\t"
                 "lwpval $0, %3, %2\n\t"
                 : : "r"(area_a), "r"(0x11u), "r"((uintptr_t)0), "r"(0x22u),
                     "a"((uint32_t)XCR0_LWP), "d"((uint32_t)(XCR0_LWP >> 32))
                 : "memory");
    flushed = slwpcb();
    report(flushed == (uintptr_t)&cb_a && cb_a.head == 2 * 32 &&
           ring_a[0].event_id == 1 && ring_a[0].data1 == 0x11 &&
           ring_a[1].event_id == 1 && ring_a[1].data1 == 0x22,
           "two LWPVALs right after XRSTOR in straight-line code store 2 records "
           "(head %u, data1 %#x %#x)", cb_a.head, ring_a[0].data1, ring_a[1].data1);
    llwpcb(0);

    /* Instructions retired: restored EventCounter2 = 5, then 20 NOPs at CPL 3. */
    lwpcb_init(&cb_a, ring_a, NREC * 32, LWP_F_IRE);
    memset(ring_a, 0, sizeof(ring_a));
    cb_a.event[1].interval = 255;
    cb_a.event[1].counter = 255;
    llwpcb(&cb_a);                    /* CPL 0: nothing counts */
    interval = cb_a.event[1].interval;   /* >= 255: the minimum written back */
    xsave(area_a, XCR0_LWP);
    llwpcb(0);
    report((*bv(area_a) & XCR0_LWP) && LWP_U32(area_a, 8) == LWP_F_IRE,
           "image: instructions retired active");
    LWP_U32(area_a, 68) = 5;
    memset(area_b, 0, XSAVE_SIZE);
    run_in_user(user_xrstor_nops, (uintptr_t)area_a);
    flushed = slwpcb();
    report(flushed == (uintptr_t)&cb_a, "CPL 3 XRSTOR enabled the session");
    /* XRSTOR 5 -> 4, NOPs 1-4 -> 0, NOP 5 -> -1: its record, reset. */
    report(cb_a.head >= 32 && ring_a[0].event_id == 2 &&
           ring_a[0].ip == (uintptr_t)xr_nop5,
           "the 5th NOP after XRSTOR stores the record (IP %#llx, want %#lx)",
           (unsigned long long)ring_a[0].ip, (unsigned long)(uintptr_t)xr_nop5);
    report((*bv(area_b) & XCR0_LWP) && LWP_U32(area_b, 68) == interval - 15,
           "the 15 NOPs after it count: XSAVE saves EventCounter2 = %d (want %u)",
           (int)LWP_U32(area_b, 68), interval - 15);
    llwpcb(0);
}

static void test_non_lazy(void)
{
    start_session(&cb_a, ring_a, 0);
    asm volatile("mov %0, %%cr0" : : "r"(read_cr0() | 8) : "memory");   /* CR0.TS */
    asm volatile(ASM_TRY "lwpins $0, %0, %1\n\t" ASM_CATCH : : "r"(0x33), "r"(0) : "memory", "cc");
    report(last_exc.vector == -1 && ring_a[0].data1 == 0x33, "LWPINS works with CR0.TS = 1");
    asm volatile("clts");
    llwpcb(0);
}

int main(void)
{
    lwp_os_enable(1, 0x51);
    test_image();
    test_xrstor_rules();
    test_cpl3_validation();
    test_context_switch();
    test_non_lazy();
    test_xrstor_ends_block();
    return 0;
}
