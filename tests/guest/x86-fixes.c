/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Upstream QEMU bugs the series fixes on its own (no LWP involved), each
 * with the behaviour the architecture defines:
 *  - patch 0009: CR4.OSXSAVE exists whenever CPUID[1].ECX.XSAVE is set
 *    (SDM vol. 3 2.5, APM vol. 2 3.1.3), whatever CPUID[0Dh,1] says about
 *    XSAVEOPT; setting it on a CPU without XSAVE is #GP(0) (MOV CR4 with a
 *    reserved bit), not an SVM #VMEXIT outside any guest;
 *  - patch 0014: VMLOAD of a VMCB whose TR is busy, as VMSAVE and real
 *    hardware store it (APM vol. 2 15.5.2): the TSS stays usable for the
 *    next inter-privilege interrupt (here the return from CPL 3);
 *  - patch 0024: a virtual interrupt (V_IRQ) that VMRUN finds in the VMCB
 *    is taken once L2 sets IF (here #VMEXIT(VINTR)), and an L2 at CPL 0
 *    that writes CR8 while one is pending goes on (QEMU asserted the BQL
 *    it did not hold and aborted).  64-bit only.
 */
#include "libguest.h"
#include "svm.h"

#define CPUID_1_ECX_XSAVE   (1u << 26)
#define CPUID_1_ECX_OSXSAVE (1u << 27)
#define VMCB_TR_ATTRIB 0x492      /* state save area, TR's attributes */

static uint8_t vmsave_area[4096] __attribute__((aligned(4096)));

static void test_osxsave(void)
{
    uint32_t a, b, c, d;
    uintptr_t cr4 = read_cr4();

    cpuid_count(1, 0, &a, &b, &c, &d);
    asm volatile(ASM_TRY "mov %0, %%cr4\n\t" ASM_CATCH
                 : : "r"(cr4 | CR4_OSXSAVE) : "memory");
    if (c & CPUID_1_ECX_XSAVE) {
        cpuid_count(0xd, 1, &a, &b, &d, &d);
        report(last_exc.vector == -1 && (read_cr4() & CR4_OSXSAVE),
               "CPUID has XSAVE (XSAVEOPT %s): MOV CR4 sets OSXSAVE",
               a & 1 ? "too" : "not");
        cpuid_count(1, 0, &a, &b, &c, &d);
        report(c & CPUID_1_ECX_OSXSAVE, "CPUID[1].ECX.OSXSAVE follows CR4");
        report(xgetbv(0) & 1, "XGETBV works: XCR0 = %#llx",
               (unsigned long long)xgetbv(0));
        write_cr4(cr4);
    } else {
        report(last_exc.vector == GP_VECTOR && last_exc.error_code == 0,
               "CPUID without XSAVE: MOV CR4 setting OSXSAVE is #GP(0) (vector %d)",
               last_exc.vector);
        report(read_cr4() == cr4, "CR4 unchanged");
    }
}

static uintptr_t user_nothing(uintptr_t arg)
{
    return arg + 1;
}

static void test_vmload_busy_tss(void)
{
    uint32_t a, b, c, d;
    uint16_t tr;

    cpuid_count(0x80000001, 0, &a, &b, &c, &d);
    if (!(c & CPUID_8000_0001_ECX_SVM)) {
        report_skip("no SVM: VMLOAD of a busy TSS");
        return;
    }
    wrmsr(MSR_EFER, rdmsr(MSR_EFER) | EFER_SVME);
    memset(vmsave_area, 0, sizeof(vmsave_area));
    asm volatile("vmsave" : : "a"((uintptr_t)vmsave_area) : "memory");
    /* As the hardware stores it: type 1011b, busy 32/64-bit TSS. */
    *(uint16_t *)(vmsave_area + VMCB_TR_ATTRIB) =
        (*(uint16_t *)(vmsave_area + VMCB_TR_ATTRIB) & ~0xf) | 0xb;
    asm volatile("vmload" : : "a"((uintptr_t)vmsave_area) : "memory");
    asm volatile("str %0" : "=r"(tr));
    report(tr == TSS_SEL, "VMLOAD kept TR's selector (%#x)", tr);
    report(run_in_user(user_nothing, 41) == 42,
           "an interrupt from CPL 3 after VMLOAD of a busy TR finds its stack "
           "in the TSS");
    report(run_in_user(user_nothing, 1) == 2, "... and again");
    wrmsr(MSR_EFER, rdmsr(MSR_EFER) & ~EFER_SVME);
}

#ifdef __x86_64__
static struct vmcb l2_vmcb;
static uint8_t l2_hsave[4096] __attribute__((aligned(4096)));
static uint8_t l2_stack[4096] __attribute__((aligned(16)));
extern char l2_cr8_entry[];

/*
 * L2, at CPL 0 with IF clear: CR8 to 0, under which the pending virtual
 * interrupt (priority 15) may be taken; VMMCALL; then IF set, where the
 * virtual interrupt ends L2 before the second VMMCALL.
 */
asm(".pushsection .text\n"
    "l2_cr8_entry:\n\t"
    "xor %eax, %eax\n\t"
    "mov %rax, %cr8\n\t"
    "vmmcall\n\t"
    "sti\n\t"
    "nop\n\t"
    "vmmcall\n\t"
    "ud2\n"
    ".popsection\n");

static void l2_vmcb_init(void)
{
    vmcb_init_flat(&l2_vmcb, KERNEL_CS64, KERNEL_DS, 0, l2_cr8_entry,
                   l2_stack + sizeof(l2_stack));
    l2_vmcb.intercept |= 1ull << (EXIT_INTR - 0x60) |
                         1ull << (EXIT_VINTR - 0x60) |
                         1ull << (EXIT_VMMCALL - 0x60);
    l2_vmcb.int_ctl = V_INTR_MASKING | V_IRQ | 15u << V_INTR_PRIO_SHIFT | 15;
    l2_vmcb.int_vector = 0x40;
}

static uint64_t l2_run(void)
{
    /* Host IF clear: the firmware's PIT must not end L2. */
    asm volatile("clgi");
    svm_vmrun(&l2_vmcb, false);
    asm volatile("stgi");
    return l2_vmcb.exit_code;
}

static void test_virq_cr8(void)
{
    uint32_t a, b, c, d;
    uint64_t exit_code, vmmcall_rip;

    cpuid_count(0x80000001, 0, &a, &b, &c, &d);
    if (!(c & CPUID_8000_0001_ECX_SVM)) {
        report_skip("no SVM: virtual interrupts and CR8 in L2");
        return;
    }
    wrmsr(MSR_EFER, rdmsr(MSR_EFER) | EFER_SVME);
    wrmsr(MSR_VM_HSAVE, (uintptr_t)l2_hsave);
    l2_vmcb_init();
    exit_code = l2_run();
    vmmcall_rip = l2_vmcb.rip;
    report(exit_code == EXIT_VMMCALL,
           "L2 at CPL 0 wrote CR8 with a virtual interrupt pending and went on "
           "to its VMMCALL (exit %#llx)", (unsigned long long)exit_code);
    report((l2_vmcb.int_ctl & V_TPR_MASK) == 0,
           "#VMEXIT wrote L2's CR8 back as V_TPR (int_ctl %#x)", l2_vmcb.int_ctl);
    report(l2_vmcb.int_ctl & V_IRQ,
           "with IF clear, the virtual interrupt is still pending (V_IRQ)");
    l2_vmcb.rip = vmmcall_rip + 3;
    exit_code = l2_run();
    report(exit_code == EXIT_VINTR,
           "VMRUN found V_IRQ pending: it ended L2 with #VMEXIT(VINTR) once L2 "
           "set IF (exit %#llx)", (unsigned long long)exit_code);
    report(l2_vmcb.rip == vmmcall_rip + 3 + 2,
           "... after the STI and the instruction in its shadow (RIP +%lld)",
           (long long)(l2_vmcb.rip - vmmcall_rip - 3));
    wrmsr(MSR_EFER, rdmsr(MSR_EFER) & ~EFER_SVME);
}
#else
static void test_virq_cr8(void)
{
    report_skip("32-bit: virtual interrupts and CR8 in L2 (64-bit only)");
}
#endif

int main(void)
{
    test_osxsave();
    test_vmload_busy_tss();
    test_virq_cr8();
    return 0;
}
