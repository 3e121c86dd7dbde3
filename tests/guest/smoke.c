/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Smoke test of the guest harness itself, in both modes: exceptions with
 * their error codes, page-level protection, the CPL 3 round trip, and the
 * two CPUID bits the LWP spec says must agree.
 */
#include "libguest.h"

static uint8_t probe_page[4096] __attribute__((aligned(4096)));

static uintptr_t user_cpl(uintptr_t arg)
{
    return read_cpl() * 100 + arg;
}

static uintptr_t user_faults(uintptr_t page)
{
    volatile uint8_t *p = (volatile uint8_t *)page;

    /* A supervisor-only page read from CPL 3: #PF, present, user. */
    asm volatile(ASM_TRY "movb (%0), %%al\n\t" ASM_CATCH : : "r"(p) : "rax", "memory");
    return last_exc.vector << 16 | last_exc.error_code;
}

static uintptr_t user_write_ro(uintptr_t page)
{
    asm volatile(ASM_TRY "movb $1, (%0)\n\t" ASM_CATCH : : "r"(page) : "memory");
    return last_exc.vector << 16 | last_exc.error_code;
}

static uintptr_t user_wrmsr(uintptr_t unused)
{
    (void)unused;
    asm volatile(ASM_TRY "wrmsr\n\t" ASM_CATCH : : "c"(0xC0000105), "a"(0), "d"(0) : "memory");
    return last_exc.vector << 16 | last_exc.error_code;
}

int main(void)
{
    uint32_t a, b, c, d;
    uintptr_t page = (uintptr_t)probe_page;

    report(read_cpl() == 0, "starts at CPL 0");
#ifdef __x86_64__
    uint32_t efer_lma = rdmsr(0xC0000080) >> 10 & 1;
    report(efer_lma == 1, "long mode active");
#else
    report((read_cr4() & CR4_PAE) && (read_cr0() >> 31), "protected mode with PAE paging");
#endif

    asm volatile(ASM_TRY "ud2\n\t" ASM_CATCH ::: "memory");
    report(last_exc.vector == UD_VECTOR, "ud2 raises #UD");

    asm volatile(ASM_TRY "nop\n\t" ASM_CATCH ::: "memory");
    report(last_exc.vector == -1, "no exception recorded when none happens");

    asm volatile(ASM_TRY "mov %w0, %%fs\n\t" ASM_CATCH : : "r"(0x1003) : "memory");
    report(last_exc.vector == GP_VECTOR && last_exc.error_code == 0x1000,
           "selector beyond the GDT raises #GP(0x1000), got %d(%#lx)",
           last_exc.vector, (unsigned long)last_exc.error_code);

    vm_set_flags(page, PAGE_SIZE, 0, PTE_P);
    asm volatile(ASM_TRY "movb (%0), %%al\n\t" ASM_CATCH : : "r"(page) : "rax", "memory");
    report(last_exc.vector == PF_VECTOR && last_exc.error_code == 0 &&
           last_exc.cr2 == page, "read of a not-present page: #PF(0), CR2 = address");
    asm volatile(ASM_TRY "movb $1, (%0)\n\t" ASM_CATCH : : "r"(page) : "memory");
    report(last_exc.vector == PF_VECTOR && last_exc.error_code == PFERR_WRITE,
           "write to a not-present page: #PF(W)");
    vm_set_flags(page, PAGE_SIZE, PTE_P, 0);
    probe_page[0] = 42;
    report(probe_page[0] == 42, "page present again after restoring P");

    report(run_in_user(user_cpl, 7) == 307, "run_in_user runs at CPL 3 and returns its value");
    report(read_cpl() == 0, "back at CPL 0 after run_in_user");

    vm_set_flags(page, PAGE_SIZE, 0, PTE_US);
    uintptr_t r = run_in_user(user_faults, page);
    report(r == (PF_VECTOR << 16 | PFERR_PRESENT | PFERR_USER),
           "CPL 3 read of a supervisor page: #PF(P|U), got %#lx", (unsigned long)r);
    vm_set_flags(page, PAGE_SIZE, PTE_US, PTE_RW);
    r = run_in_user(user_write_ro, page);
    report(r == (PF_VECTOR << 16 | PFERR_PRESENT | PFERR_WRITE | PFERR_USER),
           "CPL 3 write to a read-only page: #PF(P|W|U), got %#lx", (unsigned long)r);
    asm volatile(ASM_TRY "movb $2, (%0)\n\t" ASM_CATCH : : "r"(page) : "memory");
    report(last_exc.vector == PF_VECTOR && last_exc.error_code == (PFERR_PRESENT | PFERR_WRITE),
           "CPL 0 write to a read-only page with CR0.WP: #PF(P|W)");
    vm_set_flags(page, PAGE_SIZE, PTE_RW, 0);

    r = run_in_user(user_wrmsr, 0);
    report(r == (GP_VECTOR << 16), "WRMSR at CPL 3 raises #GP(0)");

    cpuid_count(0x80000001, 0, &a, &b, &c, &d);
    uint32_t lwp_ext = c >> 15 & 1;
    cpuid_count(0xd, 0, &a, &b, &c, &d);
    uint32_t lwp_xsave = d >> 30 & 1;
    report(lwp_ext == lwp_xsave,
           "CPUID 8000_0001.ECX[15] (%u) equals 0D.0 EDX[30] (%u)", lwp_ext, lwp_xsave);
    return 0;
}
