/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qemu-lwp guest test library: tiny freestanding multiboot guests in the
 * style of kvm-unit-tests.  One binary per test; 32-bit builds run in legacy
 * protected mode with PAE paging, 64-bit builds in long mode.  Everything is
 * identity-mapped with user access allowed, so code and data can be used at
 * CPL 0 and CPL 3 alike.
 */
#ifndef LIBGUEST_H
#define LIBGUEST_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Segment selectors (see gdt in boot.S). */
#define KERNEL_CS64 0x08
#define KERNEL_DS   0x10
#define KERNEL_CS32 0x18
#define USER_CS32   0x23
#define USER_DS     0x2b
#define USER_CS64   0x33
#define TSS_SEL     0x38
#ifdef __x86_64__
#define KERNEL_CS KERNEL_CS64
#define USER_CS   USER_CS64
#define PTR_SUFFIX "q"
#else
#define KERNEL_CS KERNEL_CS32
#define USER_CS   USER_CS32
#define PTR_SUFFIX "l"
#endif

/* Vector that returns from run_in_user() to the kernel. */
#define USER_RETURN_VECTOR 0x7f

/* Exception vectors. */
#define DE_VECTOR 0
#define DB_VECTOR 1
#define BP_VECTOR 3
#define UD_VECTOR 6
#define NM_VECTOR 7
#define TS_VECTOR 10
#define NP_VECTOR 11
#define SS_VECTOR 12
#define GP_VECTOR 13
#define PF_VECTOR 14
#define AC_VECTOR 17

/* #PF error code bits. */
#define PFERR_PRESENT (1u << 0)
#define PFERR_WRITE   (1u << 1)
#define PFERR_USER    (1u << 2)

/* Page table entry bits. */
#define PTE_P   (1ull << 0)
#define PTE_RW  (1ull << 1)
#define PTE_US  (1ull << 2)
#define PTE_PS  (1ull << 7)
#define PAGE_SIZE 4096ul

/* Register state saved on interrupt entry (layout fixed by entry.S). */
struct ex_regs {
#ifdef __x86_64__
    uint64_t r15, r14, r13, r12, r11, r10, r9, r8;
    uint64_t rbp, rdi, rsi, rdx, rcx, rbx, rax;
#else
    uint32_t rdi, rsi, rbp, esp_unused, rbx, rdx, rcx, rax;
    uint32_t es, ds;
#endif
    uintptr_t vector, error_code;
    uintptr_t rip, cs, rflags;
    uintptr_t rsp, ss;  /* valid only when (cs & 3) != 0 in 32-bit mode */
};

/* What the last caught exception was; vector is -1 when none was caught. */
struct exc_info {
    int vector;
    uintptr_t error_code;
    uintptr_t rip;
    uintptr_t cr2;
    int cpl;
};
extern volatile struct exc_info last_exc;
extern volatile uintptr_t fault_resume;

/*
 * Catching an exception from inline assembly:
 *     asm volatile(ASM_TRY "ud2\n\t" ASM_CATCH ::: "memory");
 *     report(last_exc.vector == UD_VECTOR, "ud2 raises #UD");
 * If anything between ASM_TRY and ASM_CATCH faults, execution resumes at
 * ASM_CATCH with last_exc describing the fault.  Each asm statement may hold
 * only one ASM_TRY/ASM_CATCH pair (they use the local label 1).
 */
#define ASM_TRY "movl $-1, last_exc\n\t" \
                "mov" PTR_SUFFIX " $1f, fault_resume\n\t"
#define ASM_CATCH "\n1:\n\t" "mov" PTR_SUFFIX " $0, fault_resume\n\t"

/* A handler for a vector; it runs with interrupts disabled. */
typedef void (*irq_handler_t)(struct ex_regs *regs);
void set_irq_handler(int vector, irq_handler_t handler);

/* Run fn(arg) at CPL 3 (IOPL 3, so it may still print) and return its value. */
uintptr_t run_in_user(uintptr_t (*fn)(uintptr_t), uintptr_t arg);

#ifndef __x86_64__
/*
 * Run real-mode code at cs:ip in virtual-8086 mode (32-bit builds); returns
 * the vector of the first exception or interrupt it takes.
 */
uintptr_t run_in_v86(uint16_t cs, uint16_t ip);
#endif

/* The -append command line, and a "key=number" read from it. */
const char *guest_cmdline(void);
unsigned long cmdline_ulong(const char *key, unsigned long fallback);

/* Reporting: one line per check, then a summary and the exit status. */
void report(bool pass, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void report_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int report_summary(void);
void guest_exit(int code) __attribute__((noreturn));

/* Output over the debug console (port 0xe9). */
int printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int snprintf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void puts_raw(const char *s);

/* Freestanding memory helpers (also used by the compiler). */
void *memset(void *d, int c, size_t n);
void *memcpy(void *d, const void *s, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);

/* Paging: change the flags of the 4 KiB pages covering [addr, addr+len). */
void vm_set_flags(uintptr_t addr, size_t len, uint64_t set, uint64_t clear);
/* Map the 4 KiB page at addr to physical page phys; returns the old one. */
uint64_t vm_map_page(uintptr_t addr, uint64_t phys);
/* 4 KiB-aligned scratch memory, never used by the library itself. */
void *alloc_pages(unsigned n);

/* The test's entry point, called at CPL 0 with paging on. */
int main(void);

/* Instructions. */
static inline void outb(uint16_t port, uint8_t v)
{
    asm volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}
static inline void outl(uint16_t port, uint32_t v)
{
    asm volatile("outl %0, %1" : : "a"(v), "Nd"(port));
}
static inline void cpuid_count(uint32_t leaf, uint32_t sub, uint32_t *a,
                               uint32_t *b, uint32_t *c, uint32_t *d)
{
    asm volatile("cpuid" : "=a"(*a), "=b"(*b), "=c"(*c), "=d"(*d)
                 : "a"(leaf), "c"(sub));
}
static inline uint64_t rdmsr(uint32_t msr)
{
    uint32_t lo, hi;
    asm volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
    return lo | ((uint64_t)hi << 32);
}
static inline void wrmsr(uint32_t msr, uint64_t v)
{
    asm volatile("wrmsr" : : "c"(msr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32))
                 : "memory");
}
static inline uint64_t xgetbv(uint32_t idx)
{
    uint32_t lo, hi;
    asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(idx));
    return lo | ((uint64_t)hi << 32);
}
static inline void xsetbv(uint32_t idx, uint64_t v)
{
    asm volatile("xsetbv" : : "c"(idx), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)));
}
static inline uintptr_t read_cr0(void) { uintptr_t v; asm volatile("mov %%cr0, %0" : "=r"(v)); return v; }
static inline uintptr_t read_cr2(void) { uintptr_t v; asm volatile("mov %%cr2, %0" : "=r"(v)); return v; }
static inline uintptr_t read_cr3(void) { uintptr_t v; asm volatile("mov %%cr3, %0" : "=r"(v)); return v; }
static inline uintptr_t read_cr4(void) { uintptr_t v; asm volatile("mov %%cr4, %0" : "=r"(v)); return v; }
static inline void write_cr4(uintptr_t v) { asm volatile("mov %0, %%cr4" : : "r"(v) : "memory"); }
static inline void invlpg(uintptr_t va) { asm volatile("invlpg (%0)" : : "r"(va) : "memory"); }
static inline unsigned read_cpl(void)
{
    uint16_t cs;
    asm volatile("mov %%cs, %0" : "=r"(cs));
    return cs & 3;
}

#define CR4_PAE        (1u << 5)
#define CR4_OSFXSR     (1u << 9)
#define CR4_OSXSAVE    (1u << 18)

#endif /* LIBGUEST_H */
