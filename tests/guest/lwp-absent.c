/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A CPU without LWP (run with -cpu max,-lwp): nothing of LWP is visible and
 * every way in faults (spec 3, 4, 5 "LWP is not implemented").  Without LWP,
 * XOP or TBM there is no XOP prefix either: 8F /1-7 is an undefined POP,
 * #UD after its ModRM byte, even when the bytes an XOP prefix would take
 * next lie on a page that is not present.
 */
#include "lwp.h"

#define CPUID_EXT3_XOP (1u << 11)
#define CPUID_EXT3_TBM (1u << 21)

/* Jump to @at (no return address pushed); the vector it faults with. */
static int jump_fault(uintptr_t at)
{
    asm volatile(ASM_TRY "jmp *%0\n\t" ASM_CATCH : : "r"(at) : "memory");
    return last_exc.vector;
}

static void test_xop_at_page_end(void)
{
    uint8_t *code = alloc_pages(2);
    uintptr_t end = (uintptr_t)code + PAGE_SIZE;
    uint32_t a, b, c, d;
    int vec;

    if (cmdline_ulong("hw_decoder", 0)) {
        /*
         * Under a hypervisor the processor decodes by its own features:
         * one with XOP takes 8F as a prefix whatever the guest's CPUID says.
         */
        report_skip("8F at a page end: decoded by the host CPU (hw_decoder=1)");
        return;
    }
    cpuid_count(0x80000001, 0, &a, &b, &c, &d);
    report(!(c & (CPUID_EXT3_XOP | CPUID_EXT3_TBM)), "no XOP, no TBM either");
    vm_set_flags(end, PAGE_SIZE, 0, PTE_P);

    /* Control: a NOP in the last byte, then the fetch of the next page. */
    code[PAGE_SIZE - 1] = 0x90;
    vec = jump_fault(end - 1);
    report(vec == PF_VECTOR && last_exc.rip == end,
           "control: the fetch after the page's last byte is #PF at %#lx "
           "(vector %d at %#lx)", (unsigned long)end, vec,
           (unsigned long)last_exc.rip);

    /* 8F C8: XOP map 8 if it were a prefix; POP /1 (mod 11b) here. */
    code[PAGE_SIZE - 2] = 0x8f;
    code[PAGE_SIZE - 1] = 0xc8;
    vec = jump_fault(end - 2);
    report(vec == UD_VECTOR && last_exc.rip == end - 2,
           "8F C8 in a page's last two bytes, next page absent: #UD, not #PF "
           "(vector %d)", vec);
    /* 8F /1 with mod 11b and the next page present: #UD too. */
    vm_set_flags(end, PAGE_SIZE, PTE_P, 0);
    memset((void *)end, 0, 16);
    vec = jump_fault(end - 2);
    report(vec == UD_VECTOR && last_exc.rip == end - 2,
           "8F C8 followed by a present page: #UD (vector %d)", vec);
}

static int wrmsr_fault(uint32_t msr, uint64_t v)
{
    asm volatile(ASM_TRY "wrmsr\n\t" ASM_CATCH
                 : : "c"(msr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)) : "memory");
    return last_exc.vector;
}

static int rdmsr_fault(uint32_t msr)
{
    asm volatile(ASM_TRY "rdmsr\n\t" ASM_CATCH : : "c"(msr) : "rax", "rdx", "memory");
    return last_exc.vector;
}

int main(void)
{
    uint32_t a, b, c, d;

    cpuid_count(0x80000001, 0, &a, &b, &c, &d);
    report(!(c & (1u << 15)), "CPUID 8000_0001.ECX[15] clear");
    cpuid_count(0xd, 0, &a, &b, &c, &d);
    report(!(d & (1u << 30)), "CPUID 0D.0 EDX[30] clear");
    cpuid_count(0xd, 62, &a, &b, &c, &d);
    report(a == 0 && b == 0, "CPUID 0D.62 empty");
    uint32_t max_ext;
    cpuid_count(0x80000000, 0, &max_ext, &b, &c, &d);
    if (max_ext >= 0x8000001C) {
        lwp_cpuid(&a, &b, &c, &d);
        report((a | b | c | d) == 0, "CPUID 8000_001C all zero");
    } else {
        report(true, "CPUID 8000_001C beyond the maximum extended leaf %#x", max_ext);
    }

    write_cr4(read_cr4() | CR4_OSXSAVE);
    asm volatile(ASM_TRY "xsetbv\n\t" ASM_CATCH
                 : : "c"(0), "a"((uint32_t)xgetbv(0)), "d"((uint32_t)(XCR0_LWP >> 32)) : "memory");
    report(last_exc.vector == GP_VECTOR, "XSETBV of bit 62: #GP");
    report(rdmsr_fault(MSR_LWP_CFG) == GP_VECTOR, "RDMSR LWP_CFG: #GP");
    report(wrmsr_fault(MSR_LWP_CFG, 0) == GP_VECTOR, "WRMSR LWP_CFG: #GP");
    report(rdmsr_fault(MSR_LWP_CBADDR) == GP_VECTOR, "RDMSR LWP_CBADDR: #GP");

    asm volatile(ASM_TRY "llwpcb %%eax\n\t" ASM_CATCH : : "a"(0) : "memory");
    report(last_exc.vector == UD_VECTOR, "LLWPCB: #UD");
    asm volatile(ASM_TRY "slwpcb %%eax\n\t" ASM_CATCH : : : "rax", "memory");
    report(last_exc.vector == UD_VECTOR, "SLWPCB: #UD");
    asm volatile(ASM_TRY "lwpins $1, %%eax, %%edx\n\t" ASM_CATCH : : "a"(0), "d"(0) : "memory");
    report(last_exc.vector == UD_VECTOR, "LWPINS: #UD");
    asm volatile(ASM_TRY "lwpval $1, %%eax, %%edx\n\t" ASM_CATCH : : "a"(0), "d"(0) : "memory");
    report(last_exc.vector == UD_VECTOR, "LWPVAL: #UD");
    test_xop_at_page_end();
    return 0;
}
