/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Interrupt entry stubs and the CPL 3 round trip of run_in_user().
 * Every vector pushes (error code or 0) and its number, then saves the
 * general registers as struct ex_regs and calls handle_interrupt().
 */
#define KERNEL_DS 0x10
#define USER_DS   0x2b
#ifdef __x86_64__
#define USER_CS   0x33
#else
#define USER_CS   0x23
#endif
#define USER_RETURN_VECTOR 0x7f

    .section .text
    .balign 16
    .globl interrupt_stubs
interrupt_stubs:
    .altmacro
    .macro stub vec
    .balign 16
    /* Vectors 8, 10-14, 17, 21, 29 and 30 push an error code themselves. */
    .if (\vec == 8) || ((\vec >= 10) && (\vec <= 14)) || (\vec == 17) || (\vec == 21) || (\vec == 29) || (\vec == 30)
    .else
    push $0
    .endif
    push $\vec
    jmp interrupt_common
    .endm
    .set i, 0
    .rept 256
    stub %i
    .set i, i + 1
    .endr

#ifdef __x86_64__
interrupt_common:
    push %rax
    push %rbx
    push %rcx
    push %rdx
    push %rsi
    push %rdi
    push %rbp
    push %r8
    push %r9
    push %r10
    push %r11
    push %r12
    push %r13
    push %r14
    push %r15
    mov %rsp, %rdi
    cld
    call handle_interrupt
    pop %r15
    pop %r14
    pop %r13
    pop %r12
    pop %r11
    pop %r10
    pop %r9
    pop %r8
    pop %rbp
    pop %rdi
    pop %rsi
    pop %rdx
    pop %rcx
    pop %rbx
    pop %rax
    add $16, %rsp
    iretq

    .globl run_in_user
run_in_user:                         /* rdi = fn, rsi = arg */
    push %rbx
    push %rbp
    push %r12
    push %r13
    push %r14
    push %r15
    mov %rsp, kernel_saved_sp
    mov %rsp, tss + 4                /* TSS.RSP0 */
    push $USER_DS
    push $user_stack_top
    pushf
    orl $0x3000, (%rsp)              /* IOPL 3: user code may print */
    push $USER_CS
    push $user_trampoline
    iretq
user_trampoline:
    mov %rdi, %rax
    mov %rsi, %rdi
    call *%rax
    int $USER_RETURN_VECTOR

    .globl resume_kernel
resume_kernel:                       /* rdi = value for run_in_user() */
    mov %rdi, %rax
    mov kernel_saved_sp, %rsp
    pop %r15
    pop %r14
    pop %r13
    pop %r12
    pop %rbp
    pop %rbx
    ret
#else
interrupt_common:
    push %ds
    push %es
    pusha
    mov $USER_DS, %ax
    mov %ax, %ds
    mov %ax, %es
    mov %esp, %eax
    push %eax
    cld
    call handle_interrupt
    add $4, %esp
    popa
    pop %es
    pop %ds
    add $8, %esp
    iret

    /*
     * Save the callee-saved registers and the kernel stack for
     * resume_kernel, point TSS.ESP0 below them, and load the two stack
     * arguments into EBX and ESI.
     */
    .macro leave_kernel
    push %ebx
    push %esi
    push %edi
    push %ebp
    mov 20(%esp), %ebx
    mov 24(%esp), %esi
    mov %esp, kernel_saved_sp
    mov %esp, tss + 4
    .endm

    .globl run_in_user
run_in_user:                         /* (fn, arg) on the stack */
    leave_kernel
    push $USER_DS
    push $user_stack_top
    pushf
    orl $0x3000, (%esp)
    push $USER_CS
    push $user_trampoline
    iret
user_trampoline:
    push %esi
    call *%ebx
    add $4, %esp
    int $USER_RETURN_VECTOR

    /*
     * run_in_v86(cs, ip): enter virtual-8086 mode at cs:ip; the first
     * exception or interrupt taken there returns its vector to the caller.
     */
    .globl run_in_v86
run_in_v86:
    leave_kernel
    push $0                          /* GS */
    push $0                          /* FS */
    push %ebx                        /* DS */
    push %ebx                        /* ES */
    push %ebx                        /* SS */
    push $0xff0                      /* SP */
    push $0x20002                    /* EFLAGS: VM */
    push %ebx                        /* CS */
    push %esi                        /* IP */
    iret

    .globl resume_kernel
resume_kernel:                       /* (value) on the stack */
    mov 4(%esp), %eax
    mov kernel_saved_sp, %esp
    pop %ebp
    pop %edi
    pop %esi
    pop %ebx
    ret
#endif

    .section .bss
    .balign 16
kernel_saved_sp: .skip 8
    .balign 16
    .skip 16384
user_stack_top:
