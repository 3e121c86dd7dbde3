/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * IDT, TSS and interrupt dispatch for guest tests.
 */
#include "libguest.h"

extern uint64_t gdt[];
extern char interrupt_stubs[];
extern char kernel_stack_top[];
void resume_kernel(uintptr_t value) __attribute__((noreturn));
void handle_interrupt(struct ex_regs *regs);
void guest_start(void);

volatile struct exc_info last_exc = { .vector = -1 };
volatile uintptr_t fault_resume;

#ifdef __x86_64__
struct idt_entry {
    uint16_t off0, sel;
    uint8_t ist, type;
    uint16_t off1;
    uint32_t off2, reserved;
} __attribute__((packed));
struct tss {
    uint32_t reserved0;
    uint64_t rsp0, rsp1, rsp2, reserved1, ist[7], reserved2;
    uint16_t reserved3, iomap_base;
} __attribute__((packed));
#else
struct idt_entry {
    uint16_t off0, sel;
    uint8_t zero, type;
    uint16_t off1;
} __attribute__((packed));
struct tss {
    uint32_t link, esp0, ss0, esp1, ss1, esp2, ss2, cr3, eip, eflags;
    uint32_t eax, ecx, edx, ebx, esp, ebp, esi, edi;
    uint32_t es, cs, ss, ds, fs, gs, ldt;
    uint16_t trap, iomap_base;
} __attribute__((packed));
#endif

static struct idt_entry idt[256] __attribute__((aligned(16)));
struct tss tss __attribute__((aligned(16)));
static irq_handler_t handlers[256];

static void set_gate(int vec, int dpl)
{
    uintptr_t off = (uintptr_t)interrupt_stubs + 16 * vec;

    idt[vec].off0 = off;
    idt[vec].sel = KERNEL_CS;
    idt[vec].type = 0x8e | (dpl << 5);     /* present interrupt gate */
    idt[vec].off1 = off >> 16;
#ifdef __x86_64__
    idt[vec].off2 = (uint64_t)off >> 32;
#endif
}

static void setup_tss(void)
{
    uintptr_t base = (uintptr_t)&tss;
    uint32_t limit = sizeof(tss) - 1;

    tss.iomap_base = sizeof(tss);
#ifdef __x86_64__
    tss.rsp0 = (uintptr_t)kernel_stack_top;
#else
    tss.esp0 = (uintptr_t)kernel_stack_top;
    tss.ss0 = KERNEL_DS;
#endif
    gdt[TSS_SEL / 8] = (limit & 0xffff) | ((uint64_t)(base & 0xffffff) << 16) |
                       (0x89ull << 40) | ((uint64_t)(limit >> 16) << 48) |
                       ((uint64_t)(base >> 24 & 0xff) << 56);
#ifdef __x86_64__
    gdt[TSS_SEL / 8 + 1] = (uint64_t)base >> 32;
#endif
    asm volatile("ltr %w0" : : "r"(TSS_SEL));
}

extern uint64_t mb_info;

const char *guest_cmdline(void)
{
    const uint32_t *mbi = (const uint32_t *)(uintptr_t)mb_info;

    /* Multiboot: flags bit 2 says mbi[4] holds the command line. */
    return mbi && (mbi[0] & 4) ? (const char *)(uintptr_t)mbi[4] : "";
}

unsigned long cmdline_ulong(const char *key, unsigned long fallback)
{
    const char *p = guest_cmdline();
    size_t n = strlen(key);

    for (; *p; p++) {
        if ((p == guest_cmdline() || p[-1] == ' ') && !memcmp(p, key, n) && p[n] == '=') {
            unsigned long v = 0;
            for (p += n + 1; *p >= '0' && *p <= '9'; p++) {
                v = v * 10 + (*p - '0');
            }
            return v;
        }
    }
    return fallback;
}

void set_irq_handler(int vector, irq_handler_t handler)
{
    handlers[vector] = handler;
}

static void unexpected(struct ex_regs *regs)
{
    printf("FAIL: unexpected interrupt %u at %#lx (cs %#lx) error %#lx cr2 %#lx\n",
           (unsigned)regs->vector, (unsigned long)regs->rip,
           (unsigned long)regs->cs, (unsigned long)regs->error_code,
           (unsigned long)read_cr2());
    report_summary();
    guest_exit(1);
}

void handle_interrupt(struct ex_regs *regs)
{
    if (regs->vector == USER_RETURN_VECTOR && (regs->cs & 3) == 3) {
        resume_kernel(regs->rax);
    }
#ifndef __x86_64__
    if (regs->rflags & (1u << 17)) {
        /* Anything taken in virtual-8086 mode ends run_in_v86(). */
        resume_kernel(regs->vector);
    }
#endif
    if (handlers[regs->vector]) {
        handlers[regs->vector](regs);
        return;
    }
    if (regs->vector < 32 && fault_resume) {
        last_exc.vector = regs->vector;
        last_exc.error_code = regs->error_code;
        last_exc.rip = regs->rip;
        last_exc.cr2 = regs->vector == PF_VECTOR ? read_cr2() : 0;
        last_exc.cpl = regs->cs & 3;
        regs->rip = fault_resume;
        fault_resume = 0;
        return;
    }
    unexpected(regs);
}

void guest_start(void)
{
    struct {
        uint16_t limit;
        uintptr_t base;
    } __attribute__((packed)) idtr = { sizeof(idt) - 1, (uintptr_t)idt };

    for (int v = 0; v < 256; v++) {
        set_gate(v, v == USER_RETURN_VECTOR ? 3 : 0);
    }
    asm volatile("lidt %0" : : "m"(idtr));
    setup_tss();
    /*
     * Mask the legacy PICs: the BIOS leaves them on vectors 8-15, where a
     * timer tick would look like an exception once a test enables interrupts.
     */
    outb(0x21, 0xff);
    outb(0xa1, 0xff);
    guest_exit(main() ? 1 : report_summary());
}
