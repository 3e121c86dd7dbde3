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
 *    next inter-privilege interrupt (here the return from CPL 3).
 */
#include "libguest.h"

#define CPUID_1_ECX_XSAVE   (1u << 26)
#define CPUID_1_ECX_OSXSAVE (1u << 27)
#define CPUID_8000_0001_ECX_SVM (1u << 2)
#define MSR_EFER  0xC0000080
#define EFER_SVME (1ull << 12)
#define VMCB_TR_ATTRIB 0x492      /* state save area, TR's attributes */

static uint8_t vmcb[4096] __attribute__((aligned(4096)));

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
    memset(vmcb, 0, sizeof(vmcb));
    asm volatile("vmsave" : : "a"((uintptr_t)vmcb) : "memory");
    /* As the hardware stores it: type 1011b, busy 32/64-bit TSS. */
    *(uint16_t *)(vmcb + VMCB_TR_ATTRIB) =
        (*(uint16_t *)(vmcb + VMCB_TR_ATTRIB) & ~0xf) | 0xb;
    asm volatile("vmload" : : "a"((uintptr_t)vmcb) : "memory");
    asm volatile("str %0" : "=r"(tr));
    report(tr == TSS_SEL, "VMLOAD kept TR's selector (%#x)", tr);
    report(run_in_user(user_nothing, 41) == 42,
           "an interrupt from CPL 3 after VMLOAD of a busy TR finds its stack "
           "in the TSS");
    report(run_in_user(user_nothing, 1) == 2, "... and again");
    wrmsr(MSR_EFER, rdmsr(MSR_EFER) & ~EFER_SVME);
}

int main(void)
{
    test_osxsave();
    test_vmload_busy_tss();
    return 0;
}
