/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * TCG as the LWP host of a hypervisor (spec 8.2.2): this guest is itself a
 * tiny SVM hypervisor that runs an L2 guest at CPL 3 which profiles itself
 * with instructions retired and threshold interrupts.  It switches LWP state
 * the way KVM with the qemu-lwp patches does: guest XCR0 (with bit 62) and
 * XRSTOR of component 62 before VMRUN, XSAVE of it and the host XCR0
 * (without bit 62) after #VMEXIT.  Checked: the threshold interrupt, a
 * physical interrupt, ends L2 with #VMEXIT(INTR) and reaches the host's IDT
 * once GIF is set again; the host never sees L2's LWP state; and L2's counts
 * are exact across every world switch.  64-bit only.
 */
#include "lwp.h"
#include "apic.h"
#include "svm.h"

#ifdef __x86_64__

#define HOST_VECTOR   0x51
#define L2_LOOPS      3000
#define STR(x)        #x
#define XSTR(x)       STR(x)
#define INTERVAL      255
#define NREC          64

static struct vmcb vmcb;
static uint8_t hsave[4096] __attribute__((aligned(4096)));
static uint8_t l2_stack[4096] __attribute__((aligned(16)));
/* L2's XSAVE image of component 62, kept by the hypervisor. */
static uint8_t l2_xsave[0x400] __attribute__((aligned(64)));
static struct lwpcb l2_cb;
static struct lwp_record l2_ring[NREC] __attribute__((aligned(64)));
static volatile unsigned host_irqs;

extern char l2_entry[], l2_loop[], l2_loop_end[];
uintptr_t l2_cb_addr;

/* L2: profile a counted loop, flush, and leave with VMMCALL.  Uses RAX only
 * (the VMCB carries it; the hypervisor keeps no other guest register). */
asm(".pushsection .text\n"
    "l2_entry:\n\t"
    "mov l2_cb_addr(%rip), %rax\n\t"
    "llwpcb %rax\n\t"
    "mov $" XSTR(L2_LOOPS) ", %eax\n"
    "l2_loop:\n\t"
    "dec %eax\n\t"
    "jnz l2_loop\n"
    "l2_loop_end:\n\t"
    "slwpcb %rax\n\t"
    "vmmcall\n\t"
    "ud2\n"
    ".popsection\n");

static void on_host_vector(struct ex_regs *regs)
{
    host_irqs++;
    apic_eoi();
}

static void xsave_lwp(void *area)
{
    asm volatile("xsave64 (%0)" : : "r"(area), "a"(0), "d"(1u << 30) : "memory");
}

static void xrstor_lwp(const void *area)
{
    asm volatile("xrstor64 (%0)" : : "r"(area), "a"(0), "d"(1u << 30) : "memory");
}

static void vmcb_init(void)
{
    vmcb_init_flat(&vmcb, USER_CS64, USER_DS, 3, l2_entry,
                   l2_stack + sizeof(l2_stack));
    vmcb.intercept |= 1ull << (EXIT_INTR - 0x60) |
                      1ull << (EXIT_VMMCALL - 0x60);
    vmcb.int_ctl = V_INTR_MASKING;
}

/*
 * One world switch, as KVM with the qemu-lwp patches does it: guest XCR0,
 * L2's LWP state, VMRUN with GIF clear and interrupts enabled; after
 * #VMEXIT, L2's LWP state saved and the host XCR0 back before anything else.
 */
static uint64_t run_l2(uint64_t host_xcr0, uint64_t guest_xcr0, bool *hidden)
{
    asm volatile("clgi");
    xsetbv(0, guest_xcr0);
    xrstor_lwp(l2_xsave);
    svm_vmrun(&vmcb, true);
    xsave_lwp(l2_xsave);
    xsetbv(0, host_xcr0);
    /* 8.2.2: without XCR0[62] the host sees no LWP state of L2's. */
    *hidden = rdmsr(MSR_LWP_CBADDR) == 0;
    asm volatile("sti; stgi; nop; nop; cli");  /* a held interrupt is taken here */
    return vmcb.exit_code;
}

int main(void)
{
    uint32_t a, b, c, d;

    cpuid_count(0x80000001, 0, &a, &b, &c, &d);
    report(c & (1u << 2), "CPUID 8000_0001.ECX[2] SVM");
    report(c & (1u << 15), "CPUID 8000_0001.ECX[15] LWP");

    set_irq_handler(HOST_VECTOR, on_host_vector);
    apic_enable();
    write_cr4(read_cr4() | CR4_OSXSAVE);
    uint64_t host_xcr0 = xgetbv(0) & ~XCR0_LWP;
    uint64_t guest_xcr0 = host_xcr0 | XCR0_LWP;
    xsetbv(0, guest_xcr0);
    lwp_cpuid(&a, &b, &c, &d);
    /* The host owns LWP_CFG: its own vector for L2's threshold interrupts. */
    wrmsr(MSR_LWP_CFG, d | (uint64_t)HOST_VECTOR << 40);
    xsetbv(0, host_xcr0);

    wrmsr(MSR_EFER, rdmsr(MSR_EFER) | EFER_SVME);
    wrmsr(MSR_VM_HSAVE, (uintptr_t)hsave);
    vmcb_init();

    lwpcb_init(&l2_cb, l2_ring, sizeof(l2_ring), LWP_F_IRE | LWP_F_INT);
    l2_cb.threshold = 32;                      /* an interrupt for every record */
    l2_cb.event[1].interval = INTERVAL;
    l2_cb.event[1].counter = INTERVAL;
    l2_cb_addr = (uintptr_t)&l2_cb;
    memset(l2_xsave, 0, sizeof(l2_xsave));     /* XSTATE_BV[62] = 0: LWP off */

    unsigned intr_exits = 0, other_exits = 0, runs = 0, hidden_all = 1;
    uint64_t exit_code;
    bool hidden;
    do {
        exit_code = run_l2(host_xcr0, guest_xcr0, &hidden);
        hidden_all &= hidden;
        intr_exits += exit_code == EXIT_INTR;
        other_exits += exit_code != EXIT_INTR && exit_code != EXIT_VMMCALL;
        runs++;
    } while (exit_code == EXIT_INTR && runs < 1000);

    /* Counted in L2 before SLWPCB: MOV, then the loop's DEC and JNZ. */
    const unsigned counted = 1 + 2 * L2_LOOPS;
    const unsigned want_records = counted / (INTERVAL + 1);
    const int32_t want_counter = INTERVAL - (int32_t)(counted % (INTERVAL + 1));
    unsigned in_loop = 1;
    for (unsigned i = 0; i < l2_cb.head / 32; i++) {
        in_loop &= l2_ring[i].event_id == 2 &&
                   l2_ring[i].ip >= (uintptr_t)l2_loop && l2_ring[i].ip < (uintptr_t)l2_loop_end;
    }
    report(exit_code == EXIT_VMMCALL, "L2 ran to its VMMCALL (last exit %#llx)",
           (unsigned long long)exit_code);
    report(other_exits == 0, "no exit other than INTR and VMMCALL (%u)", other_exits);
    report(intr_exits == want_records,
           "every L2 threshold interrupt ended L2 with #VMEXIT(INTR) (%u for %u records)",
           intr_exits, want_records);
    report(host_irqs == intr_exits,
           "... and reached the host at its vector once GIF was set (%u)", host_irqs);
    report(hidden_all, "with the host XCR0 LWP_CBADDR reads 0: L2's state stays hidden");
    report(l2_cb.head == want_records * 32 && in_loop,
           "L2 stored exactly %u instructions-retired records, all in its loop (head %#x)",
           want_records, l2_cb.head);
    report((int32_t)(l2_cb.event[1].counter << 6) >> 6 == want_counter,
           "L2's counter is exact across %u world switches (%d)", runs,
           (int32_t)(l2_cb.event[1].counter << 6) >> 6);
    report(l2_cb.missed == 0, "MissedEvents 0");
    return report_summary();
}

#else

int main(void)
{
    report_skip("the SVM host test runs in long mode only");
    return report_summary();
}

#endif
