/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * LWP enumeration and configuration registers: CPUID (spec 3), XCR0[62]
 * (4.1), LWP_CFG and LWP_CBADDR (4.2, 4.3).  Runs with -cpu max.
 */
#include "lwp.h"

#define LWP_ECX_IPF (1u << 29)

static uintptr_t user_rdmsr(uintptr_t msr)
{
    asm volatile(ASM_TRY "rdmsr\n\t" ASM_CATCH : : "c"(msr) : "rax", "rdx", "memory");
    return last_exc.vector;
}

static int wrmsr_fault(uint32_t msr, uint64_t v)
{
    asm volatile(ASM_TRY "wrmsr\n\t" ASM_CATCH
                 : : "c"(msr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)) : "memory");
    return last_exc.vector;
}

static int xsetbv_fault(uint64_t v)
{
    asm volatile(ASM_TRY "xsetbv\n\t" ASM_CATCH
                 : : "c"(0), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)) : "memory");
    return last_exc.vector;
}

int main(void)
{
    uint32_t a, b, c, d, xsave_d, max_ext;

    cpuid_count(0x80000000, 0, &max_ext, &b, &c, &d);
    report(max_ext >= 0x8000001C, "extended level %#x reaches 8000_001C", max_ext);
    cpuid_count(0x80000001, 0, &a, &b, &c, &d);
    report(c & (1u << 15), "CPUID 8000_0001.ECX[15] LWP");
    cpuid_count(0xd, 0, &a, &b, &c, &xsave_d);
    report(xsave_d & (1u << 30), "CPUID 0D.0 EDX[30]: XCR0[62] supported");
    uint32_t size_all = c;
    cpuid_count(0xd, 62, &a, &b, &c, &d);
    report(a == 0x80 && b == 0x340, "CPUID 0D.62: size %#x offset %#x", a, b);
    report(size_all >= 0x3c0, "CPUID 0D.0 ECX (%#x) covers the LWP area", size_all);

    lwp_cpuid(&a, &b, &c, &d);
    report(d & 1, "8000_001C.EDX[0] LwpAvail");
    report(d & (1u << 1), "8000_001C.EDX LwpVAL supported");
    report(d & (1u << 31), "8000_001C.EDX LwpInt supported");
    report(b == 0x80032013, "8000_001C.EBX = %#x (family 15h)", b);
    report((c & ~LWP_ECX_IPF) == 0x00010200, "8000_001C.ECX = %#x (family 15h fields)", c);
    /* The family-15h models leave IP filtering off; -cpu max offers it. */
    uint32_t sig, unused;
    cpuid_count(1, 0, &sig, &unused, &unused, &unused);
    bool family15h = ((sig >> 8) & 0xf) == 0xf && ((sig >> 20) & 0xff) == 6;
    report(!(c & LWP_ECX_IPF) == family15h, "8000_001C.ECX[29] LwpIpFiltering %s",
           family15h ? "clear on family 15h" : "set under -cpu max");
    report(d & (1u << 2), "8000_001C.EDX LwpIRE supported");
    report(d & (1u << 3), "8000_001C.EDX LwpBRE supported");
    report(a == 0, "8000_001C.EAX = 0 before the OS enables LWP");
    uint32_t supported = d;

    /* Before XCR0[62] the LWP instructions are #UD. */
    asm volatile(ASM_TRY "slwpcb %%eax\n\t" ASM_CATCH : : : "rax", "memory");
    report(last_exc.vector == UD_VECTOR, "SLWPCB #UD while XCR0[62] is clear");

    write_cr4(read_cr4() | CR4_OSXSAVE);
    cpuid_count(0xd, 0, &a, &b, &c, &d);
    uint32_t size_before = b;
    report(xsetbv_fault(xgetbv(0) | XCR0_LWP) == -1, "XSETBV accepts bit 62");
    report(xgetbv(0) & XCR0_LWP, "XCR0[62] reads back set");
    cpuid_count(0xd, 0, &a, &b, &c, &d);
    report(b == 0x3c0 && b > size_before, "CPUID 0D.0 EBX tracks XCR0: %#x -> %#x",
           size_before, b);
    lwp_cpuid(&a, &b, &c, &d);
    report(a == 1, "8000_001C.EAX = 1 with XCR0[62] and LWP_CFG = 0 (got %#x)", a);

    report(rdmsr(MSR_LWP_CFG) == 0, "LWP_CFG resets to 0");
    report(rdmsr(MSR_LWP_CBADDR) == 0, "LWP_CBADDR resets to 0");
    report(wrmsr_fault(MSR_LWP_CFG, supported | 0x2aull << 32 | 0x51ull << 40) == -1,
           "LWP_CFG accepts supported features, COREID and VECTOR");
    /*
     * Silicon (an FX-8150's bit-by-bit WRMSR probe): bit 0 and bits 63:48
     * are write-ignored -- no #GP, they stay 0; of bits 31:1 an
     * unsupported feature bit #GPs.
     */
    const uint64_t cfg_set = (supported & ~1u) | 0x2aull << 32 | 0x51ull << 40;
    report(rdmsr(MSR_LWP_CFG) == cfg_set,
           "LWP_CFG reads back, bit 0 write-ignored (%#llx)",
           (unsigned long long)rdmsr(MSR_LWP_CFG));
    lwp_cpuid(&a, &b, &c, &d);
    report(a == ((supported & ~1u) | 1), "8000_001C.EAX = (LWP_CFG[31:1] & EDX) | XCR0[62] = %#x", a);
    report(wrmsr_fault(MSR_LWP_CFG, 1u << 7) == GP_VECTOR, "LWP_CFG reserved bit 7: #GP");
    report(wrmsr_fault(MSR_LWP_CFG, ~supported & 0x7f) == GP_VECTOR,
           "LWP_CFG unsupported feature bits: #GP");
    unsigned gp_bits = 0, unsupported_bits = 0;
    for (unsigned bit = 1; bit < 32; bit++) {
        if (!(supported & (1u << bit))) {
            unsupported_bits++;
            gp_bits += wrmsr_fault(MSR_LWP_CFG, cfg_set | 1ull << bit) == GP_VECTOR;
        }
    }
    report(unsupported_bits && gp_bits == unsupported_bits,
           "each unsupported bit of 31:1 alone: #GP (%u of %u)", gp_bits, unsupported_bits);
    report(rdmsr(MSR_LWP_CFG) == cfg_set, "LWP_CFG unchanged by faulting writes");
    unsigned ignored_ok = 0;
    for (unsigned bit = 48; bit < 64; bit++) {
        ignored_ok += wrmsr_fault(MSR_LWP_CFG, cfg_set | 1ull << bit) == -1 &&
                      rdmsr(MSR_LWP_CFG) == cfg_set;
    }
    report(ignored_ok == 16, "each bit of 63:48: no #GP, reads back 0 (%u of 16)", ignored_ok);
    report(wrmsr_fault(MSR_LWP_CFG, 0xffff000000000001ull) == -1 && rdmsr(MSR_LWP_CFG) == 0,
           "bits 63:48 and 0 all set: accepted, the write leaves them 0, the rest cleared");
    wrmsr(MSR_LWP_CFG, cfg_set);
    unsigned cbaddr_gp = 0;
    for (unsigned bit = 0; bit < 64; bit++) {
        cbaddr_gp += wrmsr_fault(MSR_LWP_CBADDR, 1ull << bit) == GP_VECTOR;
    }
    report(cbaddr_gp == 64, "WRMSR LWP_CBADDR: every bit alone #GPs (%u of 64)", cbaddr_gp);
    wrmsr(MSR_LWP_CFG, LWP_F_VAL);
    lwp_cpuid(&a, &b, &c, &d);
    report(a == (LWP_F_VAL | 1), "8000_001C.EAX follows a subset in LWP_CFG");

    report(wrmsr_fault(MSR_LWP_CBADDR, 0x1000) == GP_VECTOR, "WRMSR LWP_CBADDR non-zero: #GP");
    report(wrmsr_fault(MSR_LWP_CBADDR, 0) == -1, "WRMSR LWP_CBADDR zero is accepted");
    report(run_in_user(user_rdmsr, MSR_LWP_CFG) == GP_VECTOR, "RDMSR LWP_CFG at CPL 3: #GP");

    report(xsetbv_fault(xgetbv(0) & ~XCR0_LWP) == -1, "XSETBV can clear bit 62");
    lwp_cpuid(&a, &b, &c, &d);
    report((a & 1) == 0, "8000_001C.EAX[0] clear again");
    return 0;
}
