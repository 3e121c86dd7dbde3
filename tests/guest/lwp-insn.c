/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The LWP instructions (spec 5) and the ring buffer (spec 1.1, 6, 8.3):
 * decoding and #UD, LLWPCB validation, SLWPCB, LWPINS/LWPVAL records byte by
 * byte, wraparound, full buffer and MissedEvents, the threshold interrupt.
 */
#include "lwp.h"
#include "apic.h"

#define CORE_ID  0x2a
#define VECTOR   0x51
#define NREC     32                       /* LwpMinBufferSize = 1: 32 records */

static struct lwpcb cb;
static struct lwp_record ring[NREC] __attribute__((aligned(4096)));

/* Run a raw byte sequence under ASM_TRY; returns the vector or -1. */
#define TRY_BYTES(...) ({                                                   \
    asm volatile(ASM_TRY ".byte " #__VA_ARGS__ "\n\t" ASM_CATCH             \
                 : : : "rax", "memory");                                    \
    last_exc.vector; })

static int try_llwpcb(const void *p)
{
    asm volatile(ASM_TRY "llwpcb %0\n\t" ASM_CATCH : : "r"(p) : "memory");
    return last_exc.vector;
}

static void fresh_lwpcb(uint32_t flags)
{
    lwpcb_init(&cb, ring, sizeof(ring), flags);
    memset(ring, 0, sizeof(ring));
}

static void test_decode(void)
{
    uintptr_t v;

    report(TRY_BYTES(0x8f, 0xe9, 0x70, 0x12, 0xc0) == UD_VECTOR, "LLWPCB with vvvv != 1111b: #UD");
    report(TRY_BYTES(0x8f, 0xe9, 0x70, 0x12, 0xc8) == UD_VECTOR, "SLWPCB with vvvv != 1111b: #UD");
    report(TRY_BYTES(0x8f, 0xe9, 0x78, 0x12, 0x00) == UD_VECTOR, "LLWPCB with a memory operand: #UD");
    report(TRY_BYTES(0x8f, 0xe9, 0x78, 0x12, 0xd0) == UD_VECTOR, "XOP map 9 opcode 12 /2: #UD");
    report(TRY_BYTES(0x8f, 0xe9, 0x78, 0x13, 0xc0) == UD_VECTOR, "XOP map 9 opcode 13: #UD");
    report(TRY_BYTES(0x8f, 0xe8, 0x78, 0x12, 0xc0) == UD_VECTOR, "XOP map 8: #UD");
    report(TRY_BYTES(0x8f, 0xeb, 0x78, 0x12, 0xc0) == UD_VECTOR, "XOP map 0Bh: #UD");
    report(TRY_BYTES(0x8f, 0xe9, 0x7c, 0x12, 0xc8) == UD_VECTOR, "SLWPCB with XOP.L = 1: #UD");
    report(TRY_BYTES(0x8f, 0xe9, 0x79, 0x12, 0xc8) == UD_VECTOR, "SLWPCB with XOP.pp = 01: #UD");
    report(TRY_BYTES(0x66, 0x8f, 0xe9, 0x78, 0x12, 0xc8) == UD_VECTOR, "66 before XOP: #UD");
    report(TRY_BYTES(0xf3, 0x8f, 0xe9, 0x78, 0x12, 0xc8) == UD_VECTOR, "F3 before XOP: #UD");
    report(TRY_BYTES(0xf2, 0x8f, 0xe9, 0x78, 0x12, 0xc8) == UD_VECTOR, "F2 before XOP: #UD");
    report(TRY_BYTES(0xf0, 0x8f, 0xe9, 0x78, 0x12, 0xc8) == UD_VECTOR, "LOCK before XOP: #UD");
#ifdef __x86_64__
    report(TRY_BYTES(0x48, 0x8f, 0xe9, 0x78, 0x12, 0xc8) == UD_VECTOR, "REX before XOP: #UD");
#else
    /* vvvv[3] is ignored outside 64-bit mode, but LLWPCB's must be 1111b. */
    report(TRY_BYTES(0x8f, 0xe9, 0x38, 0x12, 0xc0) == UD_VECTOR,
           "LLWPCB with vvvv = 0111b outside 64-bit mode: #UD");
#endif

    /* POP Ev keeps working: 8F /0 with register and memory operands. */
    uintptr_t slot = 0;
    asm volatile("push %2\n\t.byte 0x8f, 0xc0\n\t" /* pop %eax/%rax */
                 "push %3\n\t.byte 0x8f, 0x07"       /* pop (%edi)/(%rdi) */
                 : "=&a"(v) : "D"(&slot), "i"(0x1234), "i"(0x5678) : "memory");
    report(v == 0x1234 && slot == 0x5678, "8F /0 still decodes as POP (reg and memory)");
}

static void test_llwpcb_validation(void)
{
    report(slwpcb() == 0, "SLWPCB returns 0 while LWP is disabled");

    fresh_lwpcb(LWP_F_VAL);
    cb.buffer_size = 32 * 31;
    report(try_llwpcb(&cb) == GP_VECTOR, "BufferSize below 32 records: #GP");
    report(slwpcb() == 0, "LWP stays disabled after the #GP");
    cb.buffer_size = 32 * 32 + 31;
    report(try_llwpcb(&cb) == -1, "BufferSize rounded down to the minimum is accepted");
    llwpcb(0);

    static const struct { unsigned off; uint32_t val; const char *what; } rsvd[] = {
        { 20, 1, "bytes 23-20" }, { 36, 1u << 13, "Filters bit 13" },
        { 36, 1u << 24, "Filters bit 24" }, { 56, 1, "bytes 63-56" },
        { 68, 1, "bytes 71-68" }, { 88, 1, "bytes 88..EventOffset-1" },
        { 0x80, 1u << 26, "EventInterval1 bits 31:26" },
        { 0x84, 1u << 26, "EventCounter1 bits 63:58" },
    };
    for (unsigned i = 0; i < sizeof(rsvd) / sizeof(rsvd[0]); i++) {
        fresh_lwpcb(LWP_F_VAL);
        *(uint32_t *)((uint8_t *)&cb + rsvd[i].off) = rsvd[i].val;
        report(try_llwpcb(&cb) == GP_VECTOR && slwpcb() == 0,
               "reserved LWPCB field %s non-zero: #GP", rsvd[i].what);
    }

    /* Flags: AND with the available features, written back. */
    fresh_lwpcb(LWP_F_VAL | LWP_F_IRE | LWP_F_BRE | LWP_F_INT | (1u << 7) | 1);
    cb.event[0].interval = 0x3ffffff;          /* -1 as a 26-bit value */
    cb.software[0] = 0x5a5a5a5a5a5a5a5aull;
    llwpcb(&cb);
    report(cb.flags == (LWP_F_VAL | LWP_F_IRE | LWP_F_BRE | LWP_F_INT),
           "Flags written back as %#x (VAL|IRE|BRE|INT available)",
           cb.flags);
    report(cb.event[0].interval == 0, "negative EventInterval1 written back as 0");
    report(cb.software[0] == 0x5a5a5a5a5a5a5a5aull, "bytes 72-87 untouched");
    report(slwpcb() == (uintptr_t)&cb, "SLWPCB returns the LWPCB address");
    report(rdmsr(MSR_LWP_CBADDR) == (uintptr_t)&cb, "LWP_CBADDR holds the linear address");
    llwpcb(0);
    report(slwpcb() == 0 && rdmsr(MSR_LWP_CBADDR) == 0, "LLWPCB 0 disables LWP");

    /* Spec 4.1: making LWP available again starts it disabled. */
    fresh_lwpcb(LWP_F_VAL);
    llwpcb(&cb);
    xsetbv(0, xgetbv(0) & ~XCR0_LWP);
    xsetbv(0, xgetbv(0) | XCR0_LWP);
    report(rdmsr(MSR_LWP_CBADDR) == 0 && slwpcb() == 0,
           "clearing and setting XCR0[62] leaves LWP disabled");
}

/*
 * Spec 5: #UD unless LWP is available -- XCR0[62] -- even with CR4.OSXSAVE
 * set (a check keyed on OSXSAVE alone would pass the earlier #UD test,
 * which runs before the OS sets OSXSAVE).  All four instructions.
 */
static void test_ud_with_xcr0_lwp_clear(void)
{
    uintptr_t v = 0;

    fresh_lwpcb(LWP_F_VAL);
    xsetbv(0, xgetbv(0) & ~XCR0_LWP);
    report((read_cr4() & CR4_OSXSAVE) && !(xgetbv(0) & XCR0_LWP),
           "state: CR4.OSXSAVE = 1, XCR0[62] = 0 (by XSETBV)");
    asm volatile(ASM_TRY "llwpcb %0\n\t" ASM_CATCH : : "r"(&cb) : "memory");
    report(last_exc.vector == UD_VECTOR, "LLWPCB with OSXSAVE = 1, XCR0[62] = 0: #UD");
    asm volatile(ASM_TRY "slwpcb %0\n\t" ASM_CATCH : "+r"(v) : : "memory");
    report(last_exc.vector == UD_VECTOR, "SLWPCB with OSXSAVE = 1, XCR0[62] = 0: #UD");
    asm volatile(ASM_TRY "lwpval $1, %0, %1\n\t" ASM_CATCH : : "r"(2), "r"(3) : "memory");
    report(last_exc.vector == UD_VECTOR, "LWPVAL with OSXSAVE = 1, XCR0[62] = 0: #UD");
    asm volatile(ASM_TRY "lwpins $1, %0, %1\n\t" ASM_CATCH : : "r"(2), "r"(3)
                 : "memory", "cc");
    report(last_exc.vector == UD_VECTOR, "LWPINS with OSXSAVE = 1, XCR0[62] = 0: #UD");
    xsetbv(0, xgetbv(0) | XCR0_LWP);
    report(slwpcb() == 0, "XCR0[62] set again: available, LWP disabled");
}

/* A new session holding the two records test_records' checks start with. */
static void two_records_again(void)
{
    llwpcb(0);
    fresh_lwpcb(LWP_F_VAL);
    llwpcb(&cb);
    lwpins(0, 1, 0);
    lwpins(0xffffffffu, 1, 2);
}

static void test_records(void)
{
    uintptr_t ip;
    uint8_t cf;

    fresh_lwpcb(LWP_F_VAL);
    llwpcb(&cb);
#ifdef __x86_64__
    uint64_t data2 = 0x1122334455667788ull;
    asm volatile("lea 1f(%%rip), %0\n1:\tlwpins $0x7abcdef0, %2, %3\n\tsetc %1"
                 : "=&r"(ip), "=qm"(cf) : "r"(0xdeadbeef), "r"(data2) : "memory", "cc");
#else
    uint64_t data2 = 0x11223344u;
    asm volatile("mov $1f, %0\n1:\tlwpins $0x7abcdef0, %2, %3\n\tsetc %1"
                 : "=&r"(ip), "=qm"(cf) : "r"(0xdeadbeef), "r"((uint32_t)data2) : "memory", "cc");
#endif
    struct lwp_record *r = &ring[0];
    report(cf == 0, "LWPINS clears CF when the record fits");
    report(r->event_id == 255, "LWPINS record: EventId 255");
    report(r->core_id == CORE_ID, "LWPINS record: CoreId from LWP_CFG (%#x)", r->core_id);
    report(r->flags == 0xdef0, "LWPINS record: Flags = imm[15:0] (%#x)", r->flags);
    report(r->data1 == 0xdeadbeef, "LWPINS record: Data1 = r/m32");
    report(r->ip == ip, "LWPINS record: InstructionAddress %#llx (want %#llx)",
           (unsigned long long)r->ip, (unsigned long long)ip);
    report(r->data2 == data2, "LWPINS record: Data2 = vvvv register, zero-extended");
    report(r->reserved == 0, "LWPINS record: bytes 31-24 zero");

    /* 32-bit operand size zero-extends Data2 (XOP.W = 0). */
    lwpins(0xffffffffu, 1, 2);
    report(ring[1].data2 == 0xffffffffull, "32-bit LWPINS: Data2 zero-extended");

#ifdef __x86_64__
    /*
     * XOP.W = 0 in 64-bit code: Data2 is the low half of a vvvv register
     * whose upper half is not zero (a 32-bit move would clear it).
     */
    {
        uint64_t wide = 0xdeadbeefffffffffull;
        asm volatile("lwpins $0, %0, %k1" : : "r"(5), "r"(wide) : "memory", "cc");
        report(ring[2].data1 == 5 && ring[2].data2 == 0xffffffffull,
               "64-bit code, XOP.W = 0 LWPINS, vvvv = 0xdeadbeefffffffff: Data2 %#llx",
               (unsigned long long)ring[2].data2);
        llwpcb(0);
        fresh_lwpcb(LWP_F_VAL);
        llwpcb(&cb);                       /* EventInterval1 0: every LWPVAL stores */
        asm volatile("lwpval $0, %0, %k1" : : "r"(6), "r"(wide) : "memory");
        report(ring[0].event_id == 1 && ring[0].data1 == 6 &&
               ring[0].data2 == 0xffffffffull,
               "64-bit code, XOP.W = 0 storing LWPVAL, vvvv = 0xdeadbeefffffffff: Data2 %#llx",
               (unsigned long long)ring[0].data2);
        asm volatile("lwpval $0, %0, %1" : : "r"(7), "r"(wide) : "memory");
        report(ring[1].data2 == wide, "XOP.W = 1 LWPVAL: Data2 is all 64 bits (%#llx)",
               (unsigned long long)ring[1].data2);
        two_records_again();
    }
#else
    /*
     * XOP.vvvv = 1000b names r8, which exists only in 64-bit mode; outside
     * it the processor ignores vvvv[3], so it is EAX.  The encodings are
     * lwpins/lwpval $0, %ebx, vvvv = 1000b.
     */
    asm volatile(".byte 0x8f, 0xea, 0x38, 0x12, 0xc3\n\t.long 0"
                 : : "a"(0x5eed), "b"(9) : "memory", "cc");
    report(ring[2].event_id == 255 && ring[2].data1 == 9 && ring[2].data2 == 0x5eed,
           "LWPINS with vvvv[3] set outside 64-bit mode: Data2 from EAX (%#llx)",
           (unsigned long long)ring[2].data2);
    asm volatile(".byte 0x8f, 0xea, 0x38, 0x12, 0xcb\n\t.long 0"
                 : : "a"(0xfeed), "b"(10) : "memory", "cc");
    report(ring[3].event_id == 1 && ring[3].data1 == 10 && ring[3].data2 == 0xfeed,
           "storing LWPVAL with vvvv[3] set outside 64-bit mode: Data2 from EAX (%#llx)",
           (unsigned long long)ring[3].data2);
    two_records_again();
#endif

    /* Memory operand for Data1. */
    static uint32_t mem_val = 0xcafef00d;
    asm volatile("lwpins $7, %0, %1" : : "m"(mem_val), "r"(0) : "memory", "cc");
    report(ring[2].data1 == 0xcafef00d && ring[2].flags == 7, "LWPINS reads Data1 from memory");

    slwpcb();
    report(cb.head == 3 * 32, "SLWPCB flushes BufferHeadOffset (%u)", cb.head);

    /* LWPVAL with interval 2: every third sample is stored. */
    llwpcb(0);
    fresh_lwpcb(LWP_F_VAL);
    cb.event[0].interval = 2;
    llwpcb(&cb);
    for (int i = 0; i < 7; i++) {
        lwpval(i, 100 + i, 0x40 + i);
    }
    slwpcb();
    report(cb.head == 3 * 32, "7 LWPVALs at interval 2, counter 0: 3 records (head %u)", cb.head);
    report(ring[0].event_id == 1 && ring[0].data1 == 100 && ring[0].flags == 0x40 &&
           ring[0].data2 == 0, "first LWPVAL record: EventId 1, Data1, Flags, Data2");
    report(ring[1].data1 == 103 && ring[2].data1 == 106, "records for samples 4 and 7");
    report(cb.event[0].counter == 2, "EventCounter1 flushed by SLWPCB (%u)", cb.event[0].counter);

    /* LWPVAL does not touch its memory operand unless it stores. */
    uint32_t *absent = alloc_pages(1);
    vm_set_flags((uintptr_t)absent, PAGE_SIZE, 0, PTE_P);
    asm volatile(ASM_TRY "lwpval $1, %0, %1\n\t" ASM_CATCH : : "m"(*absent), "r"(0) : "memory");
    report(last_exc.vector == -1, "LWPVAL that does not store leaves its memory operand alone");
    asm volatile(ASM_TRY "lwpval $1, %0, %1\n\t" ASM_CATCH : : "m"(*absent), "r"(0) : "memory");
    asm volatile(ASM_TRY "lwpval $1, %0, %1\n\t" ASM_CATCH : : "m"(*absent), "r"(0) : "memory");
    report(last_exc.vector == PF_VECTOR && last_exc.cr2 == (uintptr_t)absent,
           "LWPVAL that stores reads its memory operand: #PF");
    slwpcb();
    report(cb.head == 3 * 32 && cb.event[0].counter == 0,
           "the faulting LWPVAL changed nothing (head %u, counter %u)", cb.head, cb.event[0].counter);
    vm_set_flags((uintptr_t)absent, PAGE_SIZE, PTE_P, 0);
    llwpcb(0);

    /* LWPVAL/LWPINS with LWP disabled: no effect, CF clear. */
    memset(ring, 0, sizeof(ring));
    asm volatile("stc" ::: "cc");
    cf = lwpins(1, 2, 3);
    lwpval(1, 2, 3);
    report(cf == 0 && ring[0].event_id == 0, "LWPINS/LWPVAL with LWP disabled: nothing stored, CF = 0");

    /* LWPVAL with the VAL event not enabled: nothing. */
    fresh_lwpcb(0);
    llwpcb(&cb);
    lwpval(1, 2, 3);
    cf = lwpins(4, 5, 6);
    report(ring[0].event_id == 255 && ring[1].event_id == 0,
           "VAL not enabled: LWPVAL stores nothing, LWPINS still works");
    llwpcb(0);
}

static void test_ring(void)
{
    uint8_t cf;

    /* Fill: 31 records fit, the 32nd overwrites the last slot. */
    fresh_lwpcb(0);
    llwpcb(&cb);
    for (int i = 0; i < NREC - 1; i++) {
        lwpins(0, i, 0);
    }
    cf = lwpins(0, 1000, 0);
    report(cf == 1, "LWPINS on a full ring sets CF");
    report(cb.missed == 1, "MissedEvents incremented to %llu", (unsigned long long)cb.missed);
    report(cb.head == (NREC - 1) * 32, "full: head flushed and not advanced (%u)", cb.head);
    report(ring[NREC - 1].data1 == 1000, "full: the last record is overwritten");
    cf = lwpins(0, 1001, 0);
    report(cf == 1 && cb.missed == 2 && ring[NREC - 1].data1 == 1001, "still full: MissedEvents 2");

    /* Software consumes records: the tail is re-read and storing resumes. */
    cb.tail = 4 * 32;
    cf = lwpins(0, 1002, 0);
    slwpcb();
    report(cf == 0 && cb.head == 0, "after the tail moves, the head wraps to 0 (%u)", cb.head);
    report(ring[NREC - 1].data1 == 1002, "record stored in the last slot before wrapping");
    llwpcb(0);

    /* Wraparound from a non-zero starting head. */
    fresh_lwpcb(0);
    cb.head = 30 * 32 + 5;                  /* rounded down to 30 records */
    cb.tail = 10 * 32;
    llwpcb(&cb);
    lwpins(0, 1, 0);
    lwpins(0, 2, 0);
    lwpins(0, 3, 0);
    slwpcb();
    report(ring[30].data1 == 1 && ring[31].data1 == 2 && ring[0].data1 == 3 && cb.head == 32,
           "head rounded down, records wrap around the ring");
    llwpcb(0);

    /* BufferHeadOffset >= BufferSize is replaced by 0. */
    fresh_lwpcb(0);
    cb.head = sizeof(ring);
    llwpcb(&cb);
    lwpins(0, 9, 0);
    report(ring[0].data1 == 9, "BufferHeadOffset beyond the ring starts at 0");
    llwpcb(0);
}

static volatile unsigned irq_count;
static volatile uintptr_t irq_rip;
static volatile uint32_t irq_head;

static void lwp_irq(struct ex_regs *regs)
{
    irq_count++;
    irq_rip = regs->rip;
    irq_head = cb.head;
    apic_eoi();
}

static void test_threshold(void)
{
    uintptr_t after;

    set_irq_handler(VECTOR, lwp_irq);
    apic_enable();
    fresh_lwpcb(LWP_F_INT);
    cb.threshold = 2 * 32 + 7;             /* rounded down to 2 records */
    llwpcb(&cb);
    report(cb.flags == LWP_F_INT, "INT enabled in Flags");
    asm volatile("sti");
    lwpins(0, 1, 0);
    report(irq_count == 0, "below the threshold: no interrupt");
#ifdef __x86_64__
    asm volatile("lea 1f(%%rip), %0\n\tlwpins $0, %1, %2\n1:\tnop" : "=&r"(after) : "r"(2), "r"(0) : "memory", "cc");
#else
    asm volatile("mov $1f, %0\n\tlwpins $0, %1, %2\n1:\tnop" : "=&r"(after) : "r"(2), "r"(0) : "memory", "cc");
#endif
    asm volatile("cli");
    report(irq_count == 1, "threshold reached: one interrupt at vector %#x", VECTOR);
    report(irq_rip == after, "interrupt taken right after the storing LWPINS (%#lx, want %#lx)",
           (unsigned long)irq_rip, (unsigned long)after);
    report(irq_head == 2 * 32, "head written to the LWPCB before the interrupt (%u)", irq_head);
    llwpcb(0);

    /* Threshold above BufferSize: never. */
    irq_count = 0;
    fresh_lwpcb(LWP_F_INT);
    cb.threshold = sizeof(ring) + 32;
    llwpcb(&cb);
    asm volatile("sti");
    for (int i = 0; i < 40; i++) {
        lwpins(0, i, 0);
    }
    asm volatile("cli");
    report(irq_count == 0, "threshold above BufferSize: no interrupt");
    llwpcb(0);

    /* Threshold 0: every stored record interrupts. */
    irq_count = 0;
    fresh_lwpcb(LWP_F_INT);
    cb.threshold = 0;
    llwpcb(&cb);
    asm volatile("sti");
    lwpins(0, 1, 0);
    lwpins(0, 2, 0);
    lwpins(0, 3, 0);
    asm volatile("cli");
    report(irq_count == 3, "threshold 0: an interrupt per record (%u)", irq_count);
    llwpcb(0);

    /* INT not available in LWP_CFG: Flags drop it, no interrupt. */
    uint64_t cfg = rdmsr(MSR_LWP_CFG);
    wrmsr(MSR_LWP_CFG, cfg & ~(uint64_t)LWP_F_INT);
    irq_count = 0;
    fresh_lwpcb(LWP_F_INT);
    llwpcb(&cb);
    asm volatile("sti");
    lwpins(0, 1, 0);
    asm volatile("cli");
    report(cb.flags == 0 && irq_count == 0, "INT unavailable: Flags cleared, no interrupt");
    llwpcb(0);
    wrmsr(MSR_LWP_CFG, cfg);

    /*
     * A vector below 16 is illegal for the local APIC, the interrupt's
     * path: nothing is delivered, ESR records "Receive Illegal Vector"
     * (bit 6; ESR is latched by a write before it is read).
     */
    const unsigned bad_vector = 5;         /* #BR: pushes no error code */
    set_irq_handler(bad_vector, lwp_irq);
    apic_write(APIC_ESR, 0);
    report(!(apic_read(APIC_ESR) & APIC_ESR_RECV_ILLEGAL), "ESR: no illegal vector yet");
    wrmsr(MSR_LWP_CFG, (cfg & ~(0xffull << 40)) | (uint64_t)bad_vector << 40);
    irq_count = 0;
    fresh_lwpcb(LWP_F_INT);
    cb.threshold = 0;
    llwpcb(&cb);
    asm volatile("sti");
    lwpins(0, 1, 0);
    asm volatile("nop; nop; cli");
    llwpcb(0);
    report(cb.flags == LWP_F_INT && irq_count == 0,
           "threshold vector %u: not delivered through the IDT (%u)", bad_vector, irq_count);
    apic_write(APIC_ESR, 0);
    report(apic_read(APIC_ESR) & APIC_ESR_RECV_ILLEGAL,
           "threshold vector %u: ESR bit 6, Receive Illegal Vector (ESR %#x)", bad_vector,
           apic_read(APIC_ESR));
    set_irq_handler(bad_vector, NULL);
    wrmsr(MSR_LWP_CFG, cfg);
}

#ifdef __x86_64__
extern uint64_t pdpt[];

/* XOP.R/X/B, every register, SIB and RIP-relative forms (64-bit mode). */
static void test_addressing64(void)
{
    static uint32_t arr[8] = { 10, 11, 12, 13, 14, 15, 16, 17 };

    fresh_lwpcb(LWP_F_VAL);
    llwpcb(&cb);
    asm volatile("mov %0, %%r9\n\tmov $3, %%r10\n\tmov %1, %%r11\n\t"
                 "lwpins $0x41, 8(%%r9,%%r10,4), %%r11"
                 : : "r"(arr), "r"(0x1234567890ull) : "r9", "r10", "r11", "memory", "cc");
    report(ring[0].data1 == 15 && ring[0].data2 == 0x1234567890ull && ring[0].flags == 0x41,
           "LWPINS with r8-r15 base/index (SIB) and vvvv = r11");
    asm volatile("mov $0xfeedface, %%r12d\n\tmov $7, %%r13\n\tlwpins $0x42, %%r12d, %%r13"
                 : : : "r12", "r13", "memory", "cc");
    report(ring[1].data1 == 0xfeedface && ring[1].data2 == 7, "LWPINS with r12d as r/m, r13 as vvvv");
    asm volatile("lwpins $0x43, %c0+4(%%rip), %%rax" : : "i"(arr), "a"(0) : "memory", "cc");
    report(ring[2].data1 == 11 && ring[2].flags == 0x43, "LWPINS with a RIP-relative operand and imm32");
    asm volatile("mov %0, %%r15\n\tlwpval $0x44, 4(%%r15), %%r14" : : "r"(arr) : "r14", "r15", "memory");
    report(ring[3].event_id == 1 && ring[3].data1 == 11, "LWPVAL with an r15-based memory operand");
    llwpcb(0);
}

/* 32-bit operand size truncates the LWPCB address (5.1, 5.2). */
static void test_operand_size64(void)
{
    uint64_t high = (uintptr_t)&cb + (1ull << 32);
    uint32_t low;
    uintptr_t full;

    pdpt[4] = pdpt[0];                     /* alias the first GiB at 4 GiB */
    asm volatile("mov %%cr3, %%rax\n\tmov %%rax, %%cr3" : : : "rax", "memory");
    fresh_lwpcb(0);
    llwpcb((void *)high);
    asm volatile("slwpcb %0" : "=r"(full));
    asm volatile("slwpcb %0" : "=r"(low));
    report(full == high && rdmsr(MSR_LWP_CBADDR) == high, "64-bit LLWPCB/SLWPCB keep the full address");
    report(low == (uint32_t)high, "SLWPCB with 32-bit operand size truncates");
    llwpcb(0);
    asm volatile("llwpcb %k0" : : "r"(high) : "memory");
    report(rdmsr(MSR_LWP_CBADDR) == (uintptr_t)&cb, "LLWPCB with 32-bit operand size truncates");
    llwpcb(0);
    pdpt[4] = 0;
}
#endif

#ifndef __x86_64__
/*
 * A 16-bit code segment (CS.D = 0): LWPINS records IP as the instruction
 * address and still takes a 32-bit r/m operand and imm32.
 */
static void test_code16(void)
{
    extern uint64_t gdt[];
    static const uint8_t code[] = {
        0x8f, 0xea, 0x70, 0x12, 0xc3,             /* lwpins $0x1234, %ebx, %ecx */
        0x34, 0x12, 0x00, 0x00,
        0x66, 0xcb,                               /* o32 lret */
    };
    uint8_t *low = (uint8_t *)0x8000;
    struct { uint32_t off; uint16_t sel; } __attribute__((packed)) target = { 0x8000, 0x50 };

    gdt[10] = 0x000f9b000000ffffull;              /* 16-bit code, base 0, DPL 0 */
    memcpy(low, code, sizeof(code));
    fresh_lwpcb(0);
    llwpcb(&cb);
    asm volatile("lcall *%0" : : "m"(target), "b"(0xabcdef01), "c"(0x5566) : "memory", "cc");
    llwpcb(0);
    report(ring[0].event_id == 255 && ring[0].ip == 0x8000 && ring[0].flags == 0x1234 &&
           ring[0].data1 == 0xabcdef01 && ring[0].data2 == 0x5566,
           "LWPINS in a 16-bit code segment: IP %#llx, Data1 %#x, Data2 %#llx",
           (unsigned long long)ring[0].ip, ring[0].data1, (unsigned long long)ring[0].data2);
}

/* Spec 5: every LWP instruction is #UD outside protected mode (here V86). */
static void test_v86(void)
{
    static const uint8_t code[][6] = {
        { 0x8f, 0xe9, 0x78, 0x12, 0xc8, 0xf4 },   /* slwpcb %eax; hlt */
        { 0x8f, 0xe9, 0x78, 0x12, 0xc0, 0xf4 },   /* llwpcb %eax */
        { 0xcd, 0x30, 0xf4 },                     /* int $0x30: #GP at IOPL 0 */
    };
    uint8_t *low = (uint8_t *)0x7000;             /* 0700:0000 */

    memcpy(low, code[0], 6);
    report(run_in_v86(0x700, 0) == UD_VECTOR, "SLWPCB in virtual-8086 mode: #UD");
    memcpy(low, code[1], 6);
    report(run_in_v86(0x700, 0) == UD_VECTOR, "LLWPCB in virtual-8086 mode: #UD");
    memcpy(low, code[2], 3);
    report(run_in_v86(0x700, 0) == GP_VECTOR, "(control: INT in V86 at IOPL 0 is #GP, not #UD)");
}
#endif

static uintptr_t user_session(uintptr_t unused)
{
    fresh_lwpcb(LWP_F_VAL);
    llwpcb(&cb);
    lwpins(0x77, 0x66, 0x55);
    uintptr_t ok = slwpcb() == (uintptr_t)&cb && cb.head == 32 && ring[0].data1 == 0x66;
    llwpcb(0);
    return ok;
}

int main(void)
{
    lwp_os_enable(CORE_ID, VECTOR);
    test_decode();
    test_ud_with_xcr0_lwp_clear();
    test_llwpcb_validation();
    test_records();
    test_ring();
    test_threshold();
#ifdef __x86_64__
    test_addressing64();
    test_operand_size64();
#else
    test_v86();
    test_code16();
#endif
    report(run_in_user(user_session, 0), "a CPL 3 session: LLWPCB, LWPINS, SLWPCB");
    return 0;
}
