/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the guests that act as SVM hypervisors share: the parts of AMD's
 * VMCB (APM vol. 2, appendix B) they use, and a VMCB segment from a GDT
 * entry.
 */
#ifndef GUEST_SVM_H
#define GUEST_SVM_H

#include "libguest.h"

#define MSR_EFER      0xC0000080
#define MSR_VM_HSAVE  0xC0010117
#define EFER_SVME     (1ull << 12)
#define CPUID_8000_0001_ECX_SVM (1u << 2)

#define EXIT_INTR     0x60
#define EXIT_VINTR    0x64
#define EXIT_VMMCALL  0x81

/* int_ctl */
#define V_TPR_MASK         0x0fu
#define V_IRQ              (1u << 8)
#define V_INTR_PRIO_SHIFT  16
#define V_INTR_MASKING     (1u << 24)

struct vmcb_seg {
    uint16_t selector, attrib;
    uint32_t limit;
    uint64_t base;
} __attribute__((packed));

struct vmcb {
    uint32_t intercept_cr, intercept_dr, intercept_exceptions;
    uint64_t intercept;                       /* bit n: exit code 0x60 + n */
    uint8_t reserved1[0x40 - 0x14];
    uint64_t iopm_base, msrpm_base, tsc_offset;
    uint32_t asid;
    uint8_t tlb_ctl, reserved2[3];
    uint32_t int_ctl, int_vector, int_state;
    uint8_t reserved3[4];
    uint64_t exit_code, exit_info_1, exit_info_2;
    uint8_t reserved4[0x400 - 0x88];
    struct vmcb_seg es, cs, ss, ds, fs, gs, gdtr, ldtr, idtr, tr;
    uint8_t reserved5[0x4cb - 0x4a0];
    uint8_t cpl;
    uint8_t reserved6[4];
    uint64_t efer;
    uint8_t reserved7[0x548 - 0x4d8];
    uint64_t cr4, cr3, cr0, dr7, dr6, rflags, rip;
    uint8_t reserved8[0x5d8 - 0x580];
    uint64_t rsp;
    uint8_t reserved9[0x5f8 - 0x5e0];
    uint64_t rax;
    uint8_t reserved10[0x1000 - 0x600];
} __attribute__((packed, aligned(4096)));

extern uint64_t gdt[];

/* A flat segment with the attributes of GDT entry @sel. */
static inline void vmcb_seg_from_gdt(struct vmcb_seg *s, uint16_t sel)
{
    uint64_t d = gdt[sel / 8];

    s->selector = sel;
    s->attrib = ((d >> 40) & 0xff) | ((d >> 44) & 0xf00);
    s->limit = 0xffffffff;
    s->base = 0;
}

#ifdef __x86_64__
#define VMRUN_INTERCEPT (1ull << (0x80 - 0x60))   /* VMRUN needs it set */

/*
 * A VMCB for an L2 in this guest's own long-mode world: its GDT, IDT,
 * paging and TSS, flat segments @cs and @ds at @cpl, IF clear, starting
 * at @rip on the stack that ends at @stack_top; ASID 1 and only VMRUN
 * intercepted.
 */
static inline void vmcb_init_flat(struct vmcb *v, uint16_t cs, uint16_t ds,
                                  uint8_t cpl, const void *rip,
                                  const void *stack_top)
{
    struct { uint16_t limit; uint64_t base; } __attribute__((packed)) gdtr, idtr;

    asm volatile("sgdt %0; sidt %1" : "=m"(gdtr), "=m"(idtr));
    memset(v, 0, sizeof(*v));
    v->intercept = VMRUN_INTERCEPT;
    v->asid = 1;
    vmcb_seg_from_gdt(&v->cs, cs);
    vmcb_seg_from_gdt(&v->ss, ds);
    vmcb_seg_from_gdt(&v->ds, ds);
    vmcb_seg_from_gdt(&v->es, ds);
    v->gdtr.limit = gdtr.limit;
    v->gdtr.base = gdtr.base;
    v->idtr.limit = idtr.limit;
    v->idtr.base = idtr.base;
    v->tr.selector = TSS_SEL;
    v->tr.attrib = 0x8b;
    v->tr.limit = 0x67;
    v->tr.base = (gdt[TSS_SEL / 8] >> 16 & 0xffffff) |
                 (gdt[TSS_SEL / 8] >> 56 & 0xff) << 24 |
                 gdt[TSS_SEL / 8 + 1] << 32;
    v->cpl = cpl;
    v->efer = rdmsr(MSR_EFER);
    v->cr0 = read_cr0();
    v->cr3 = read_cr3();
    v->cr4 = read_cr4();
    v->dr7 = 0x400;
    v->dr6 = 0xffff0ff0;
    v->rflags = 0x2;
    v->rip = (uintptr_t)rip;
    v->rsp = (uintptr_t)stack_top;
}

/*
 * VMRUN @v, GIF already clear (the caller's CLGI).  L2 leaves the host any
 * general register but RAX and RSP, so the callee-saved ones are kept
 * here.  @host_if: EFLAGS.IF set for VMRUN (the host IF, HIF), so that a
 * physical interrupt ends L2; clear again after #VMEXIT either way.
 */
static inline void svm_vmrun(struct vmcb *v, bool host_if)
{
    uint64_t pa = (uintptr_t)v;

    asm volatile("push %%rbx; push %%rbp; push %%r12; push %%r13; push %%r14; push %%r15\n\t"
                 "test %b1, %b1\n\t"
                 "jz 1f\n\t"
                 "sti\n"
                 "1:\tvmrun\n\t"
                 "cli\n\t"
                 "pop %%r15; pop %%r14; pop %%r13; pop %%r12; pop %%rbp; pop %%rbx"
                 : "+a"(pa) : "c"(host_if) : "rdx", "rsi", "rdi", "r8", "r9", "r10",
                   "r11", "memory", "cc");
}
#endif

#endif
