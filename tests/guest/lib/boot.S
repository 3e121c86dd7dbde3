/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Multiboot entry for qemu-lwp guest tests.  QEMU's -kernel loader enters in
 * 32-bit protected mode with paging off.  We load our own GDT, build an
 * identity map of the first 4 GiB with 2 MiB pages (PAE for 32-bit builds,
 * 4-level for 64-bit builds) and call guest_start() in the build's mode.
 */
#define __ASSEMBLY__
#define KERNEL_CS64 0x08
#define KERNEL_DS   0x10
#define KERNEL_CS32 0x18
#define USER_DS     0x2b
#define USER_CS32   0x23
#define USER_CS64   0x33

#define MB_MAGIC 0x1BADB002
#define MB_FLAGS 0x00000002

    .section .multiboot, "a"
    .balign 4
    .long MB_MAGIC, MB_FLAGS, -(MB_MAGIC + MB_FLAGS)

    .section .data
    .balign 16
    .globl gdt
gdt:
    .quad 0                          /* 0x00 null */
    .quad 0x00af9b000000ffff         /* 0x08 kernel code, 64-bit */
    .quad 0x00cf93000000ffff         /* 0x10 kernel data */
    .quad 0x00cf9b000000ffff         /* 0x18 kernel code, 32-bit */
    .quad 0x00cffb000000ffff         /* 0x20 user code, 32-bit (0x23) */
    .quad 0x00cff3000000ffff         /* 0x28 user data (0x2b) */
    .quad 0x00affb000000ffff         /* 0x30 user code, 64-bit (0x33) */
    .quad 0, 0                       /* 0x38 TSS, filled in by desc.c */
    .quad 0, 0, 0, 0                 /* spare descriptors for tests */
gdt_end:
    .globl gdt_desc
gdt_desc:
    .word gdt_end - gdt - 1
    .long gdt, 0                     /* base; high half for 64-bit LGDT */

    .globl mb_info
    .balign 8
mb_info: .quad 0

    .section .bss
    .balign 4096
    .globl pml4, pdpt, pd
pml4: .skip 4096
pdpt: .skip 4096
pd:   .skip 4 * 4096                 /* 4 x 1 GiB of 2 MiB pages */
    .balign 16
    .skip 65536
    .globl kernel_stack_top
kernel_stack_top:

    .section .text
    .code32
    .globl start
start:
    cli
    mov %ebx, mb_info                /* multiboot information */
    mov $kernel_stack_top, %esp
    lgdt gdt_desc

    /* Identity map 4 GiB: PD entries P|RW|US|PS. */
    mov $pd, %edi
    xor %ecx, %ecx
1:  mov %ecx, %eax
    shl $21, %eax
    or $0x87, %eax
    mov %eax, (%edi,%ecx,8)
    mov %ecx, %eax
    shr $11, %eax                    /* high dword: (i * 2 MiB) >> 32 */
    mov %eax, 4(%edi,%ecx,8)
    inc %ecx
    cmp $2048, %ecx
    jb 1b

    /* PDPT entries: PAE allows only P there; 4-level paging also RW|US. */
    mov $pdpt, %edi
    xor %ecx, %ecx
2:  mov %ecx, %eax
    shl $12, %eax
    add $pd, %eax
#ifdef __x86_64__
    or $0x7, %eax
#else
    or $0x1, %eax
#endif
    mov %eax, (%edi,%ecx,8)
    inc %ecx
    cmp $4, %ecx
    jb 2b

    /* CR4.PAE, and CR4.OSFXSR/OSXMMEXCPT so SSE state exists for XSAVE tests. */
    mov %cr4, %eax
    or $0x620, %eax
    mov %eax, %cr4

#ifdef __x86_64__
    mov $pdpt, %eax
    or $0x7, %eax
    mov %eax, pml4
    mov $pml4, %eax
    mov %eax, %cr3
    mov $0xC0000080, %ecx            /* EFER.LME */
    rdmsr
    or $0x100, %eax
    wrmsr
    mov %cr0, %eax
    or $0x80010023, %eax             /* PG | WP | NE | MP | PE */
    mov %eax, %cr0
    ljmp $KERNEL_CS64, $start64

    .code64
start64:
    mov $KERNEL_DS, %ax
    mov %ax, %ds
    mov %ax, %es
    mov %ax, %ss
    xor %eax, %eax
    mov %ax, %fs
    mov %ax, %gs
    mov $kernel_stack_top, %rsp
    call guest_start
3:  hlt
    jmp 3b
#else
    mov $pdpt, %eax
    mov %eax, %cr3
    mov %cr0, %eax
    or $0x80010023, %eax             /* PG | WP | NE | MP | PE */
    mov %eax, %cr0
    ljmp $KERNEL_CS32, $start32
start32:
    mov $KERNEL_DS, %ax
    mov %ax, %ss
    /* DS/ES use the DPL 3 flat segment so they survive CPL changes. */
    mov $USER_DS, %ax
    mov %ax, %ds
    mov %ax, %es
    xor %eax, %eax
    mov %ax, %fs
    mov %ax, %gs
    mov $kernel_stack_top, %esp
    call guest_start
3:  hlt
    jmp 3b
#endif
