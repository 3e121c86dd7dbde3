/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Exactness of the LWP hardware events, as docs/lwp-events.rst defines them:
 * instructions retired (EventId 2) and branches retired (EventId 3), the
 * branch filters NCB/NRB/NAB (NMB/NPB ignored), IP filtering (inclusive
 * limits, IPI, ignored without CPUID support: the lwp-events-noipf run),
 * LLWPCB's interval minimum and counter loading, two events on one
 * instruction, exceptions, INT n/INT3/INT1, SYSCALL/SYSENTER, far transfers,
 * IRET and timer interrupts in the middle of counted code, REP string
 * instructions, locked accesses across pages, XSAVE/XRSTOR at CPL 3 and in a
 * kernel switching two tasks, LLWPCB of a new LWPCB mid-session, a CS base
 * (legacy and compatibility mode), records whose store faults (pending in
 * SavedEventRecord, a second one discarded), a full ring and the threshold
 * interrupt.  Run with -icount, -smp 2 and one-insn-per-tb too (meson).
 *
 * Every workload is an assembly program run at CPL 3 whose instructions are
 * recorded by the T macro of lwp-trace.h; the expected records and counters
 * are computed from those addresses and the path the program takes, never
 * written down as numbers.
 */
#include "lwp.h"
#include "apic.h"
#include "lwp-trace.h"
#include "../common/lwp-len-nops.h"

#define CORE_ID      0x5c
#define LWP_VECTOR   0x51
#define TIMER_VECTOR 0x40
#define VEC_NOP      0x60       /* user INT n that just returns */
#define VEC_UNMAP    0x61       /* makes the data page not present */
#define VEC_PROT     0x62       /* write-protects / unmaps the ring (once) */
#define VEC_YIELD    0x63       /* switches tasks */
#define VEC_DONE     0x64       /* a task has finished */
#define OF_VECTOR    4
#define GATE_SEL     0x5b       /* gdt[11] (and [12]): a call gate to CPL 0 */

#define RING_BYTES   4096
#define NSLOTS       (RING_BYTES / 32)
#define XSAVE_BYTES  4096
#define LWP_OFF      0x340

/* Shared with the programs (offsets used in the assembly below). */
struct prog_args {
    uint32_t cb;                /* 0: the LWPCB */
    uint32_t iters;             /* 4: loop iterations */
    uint32_t data;              /* 8: a data page */
    uint32_t slw_ret;           /* 12: what SLWPCB returned */
    uint32_t slw_c1;            /* 16: EventCounter1..3 right after SLWPCB */
    uint32_t slw_c2;            /* 20 */
    uint32_t slw_c3;            /* 24 */
    uint32_t slw_head;          /* 28: BufferHeadOffset right after SLWPCB */
};

#ifdef __x86_64__
#define R_AX "%rax"
#define R_BX "%rbx"
#define R_DX "%rdx"
#define R_SI "%rsi"
#define R_DI "%rdi"
#define PSZ  "8"
#define JCXZ "jrcxz"
#define PROLOGUE "push %rbx\n\tpush %rbp\n\t"
#define EPILOGUE "pop %rbp\n\tpop %rbx\n\tret\n\t"
#else
#define R_AX "%eax"
#define R_BX "%ebx"
#define R_DX "%edx"
#define R_SI "%esi"
#define R_DI "%edi"
#define PSZ  "4"
#define JCXZ "jecxz"
#define PROLOGUE "push %ebx\n\tpush %esi\n\tpush %edi\n\tpush %ebp\n\tmov 20(%esp), %edi\n\t"
#define EPILOGUE "pop %ebp\n\tpop %edi\n\tpop %esi\n\tpop %ebx\n\tret\n\t"
#endif
#define S(x) TR_STR(x)

/*
 * TFLUSH ends every session: SLWPCB (counted after it retires, so it
 * flushes the count of the instructions before it), copies of what it
 * flushed, then LLWPCB 0, which flushes again and is not counted.
 */

/* ---- LLWPCB then the flush, nothing else --------------------------------- */
asm(PROG_MACROS
    ".pushsection .text\n"
    ".globl llw_prog\n"
    "llw_prog:\n\t"
    PROLOGUE
    "mov (" R_DI "), %eax\n"
    "TBEGIN llw\n"
    "llw_start:\n"
    "T llw, TX, llwpcb %eax\n"
    "llw_flush:\n"
    "TFLUSH llw\n"
    "llw_done:\n"
    "TEND llw\n\t"
    EPILOGUE
    ".popsection\n");

/* ---- instructions retired: a straight-line block and a counted loop ------- */
asm(PROG_MACROS
    ".pushsection .text\n"
    ".globl ire_prog\n"
    "ire_prog:\n\t"
    PROLOGUE
    "mov (" R_DI "), %eax\n\t"
    "mov 4(" R_DI "), %ecx\n\t"
    "xor %edx, %edx\n"
    "TBEGIN ire\n"
    "ire_start:\n"
    "T ire, TX, llwpcb %eax\n"
    ".rept 100\n"
    "T ire, TP, nop\n"
    "T ire, TP, inc %edx\n"
    "T ire, TP, mov %edx, %esi\n"
    ".endr\n"
    "ire_loop:\n"
    "ire_add:\n"
    "T ire, TP, add $3, %edx\n"
    "T ire, TP, nop\n"
    "ire_lea:\n"
    "T ire, TP, lea 1(" R_DX "), %esi\n"
    "ire_val:\n"
    "T ire, TP|TVAL, lwpval $0x11, %edx, %esi\n"
    "T ire, TP, xor %esi, %esi\n"
    "T ire, TP, dec %ecx\n"
    "T ire, TC, jnz ire_loop\n"
    "ire_loop_end:\n"
    "ire_ins:\n"
    "T ire, TP|TINS, lwpins $0x22, %edx, %ecx\n"
    "T ire, TP, nop\n"
    "ire_flush:\n"
    "TFLUSH ire\n"
    "ire_done:\n"
    "TEND ire\n\t"
    EPILOGUE
    ".popsection\n");

/*
 * ---- instructions retired in a TB of 47 instructions of every length ----
 * 45 NOPs whose lengths run through 1 to 15 bytes (0F 1F /0 with a ModRM,
 * SIB and displacement as long as needed, then 66 prefixes), DEC and JNZ:
 * one TB, crossed once per record (256 apart) at each of its instructions
 * in turn (256 and 47 are coprime).  A record gathered at its TB's start
 * is named by adding up the lengths the TB passes.
 */
asm(PROG_MACROS
    ".pushsection .text\n"
    LEN_NOPS_MACRO
    ".globl len_prog\n"
    "len_prog:\n\t"
    PROLOGUE
    "mov (" R_DI "), %eax\n\t"
    "mov 4(" R_DI "), %ecx\n"
    "TBEGIN len\n"
    "len_start:\n"
    "T len, TX, llwpcb %eax\n"
    "len_loop:\n"
    ".rept 3\n"
    ".irp n, " LEN_NOPS_ORDER "\n"
    "T len, TP, len_nop \\n\n"
    ".endr\n"
    ".endr\n"
    "T len, TP, dec %ecx\n"
    "T len, TC, jnz len_loop\n"
    "len_loop_end:\n"
    "TFLUSH len\n"
    "len_done:\n"
    "TEND len\n\t"
    EPILOGUE
    ".purgem len_nop\n"
    ".popsection\n");

/* ---- branches retired: every counted kind, taken and not, and non-branches */
asm(PROG_MACROS
    ".pushsection .data\n"
    ".balign 8\n"
    "bre_ptr1: .long bre_t2, 0\n"
    "bre_ptr2: .long bre_fn, 0\n"
    "bre_farptr: .long bre_far\n .word " S(USER_CS) "\n"
    ".balign 8\n"
    "bre_farptr2: .long bre_fj\n .word " S(USER_CS) "\n"
    ".balign 8\n"
    "bre_gateptr: .long 0\n .word " S(GATE_SEL) "\n"
    ".popsection\n"
    ".pushsection .text\n"
    ".globl bre_prog\n"
    "bre_prog:\n\t"
    PROLOGUE
    "mov (" R_DI "), %eax\n\t"
    "mov 4(" R_DI "), %esi\n"
    "TBEGIN bre\n"
    "bre_start:\n"
    "T bre, TX, llwpcb %eax\n"
    "bre_top:\n"
    "T bre, TP, mov $2, %ecx\n"
    "bre_loop1:\n"
    "T bre, TC, loop bre_loop1\n"               /* taken, then not taken */
    "bre_loop1_end:\n"
    "T bre, TC, " JCXZ " bre_z1\n"              /* taken */
    "ud2\n"
    "bre_z1:\n"
    "T bre, TP, inc %ecx\n"
    "T bre, TC, jecxz bre_bad1\n"               /* not taken */
    "T bre, TC, jz bre_bad1\n"                  /* not taken */
    "T bre, TC, jnz bre_j1\n"                   /* taken */
    "bre_bad1:\n"
    "ud2\n"
    "bre_j1:\n"
    "T bre, TR, jmp bre_j2\n"                   /* JMP rel8 */
    "ud2\n"
    "bre_j2:\n"
    "T bre, TR, {disp32} jmp bre_j3\n"          /* JMP rel32 */
    "ud2\n"
    "bre_j3:\n"
    "T bre, TR, call bre_fn\n"                  /* CALL rel32 */
    "bre_c1:\n"
    "T bre, TP, mov $bre_t1, %ebx\n"
    "T bre, TA, jmp *" R_BX "\n"                /* JMP reg */
    "ud2\n"
    "bre_t1:\n"
    "T bre, TP, mov $bre_fn2, %ebx\n"
    "T bre, TA, call *" R_BX "\n"               /* CALL reg */
    "bre_c2:\n"
    "T bre, TA, jmp *bre_ptr1\n"                /* JMP mem */
    "ud2\n"
    "bre_t2:\n"
    "T bre, TA, call *bre_ptr2\n"               /* CALL mem */
    "bre_c3:\n"
    "T bre, TP, push $0\n"
    "T bre, TR, call bre_fn3\n"                 /* ... RET imm16 */
    "bre_c4:\n"
    "T bre, TP, mov $5, %ecx\n"
    "T bre, TP, cmp %ecx, %ecx\n"
    "bre_lnt:\n"
    "T bre, TC, loopne bre_bad2\n"              /* ZF = 1: not taken */
    "T bre, TC, loope bre_l2\n"                 /* taken */
    "bre_bad2:\n"
    "ud2\n"
    "bre_l2:\n"
    "T bre, TP, test %ecx, %ecx\n"
    "T bre, TC, loopne bre_l3\n"                /* taken */
    "ud2\n"
    "bre_l3:\n"
    "T bre, TC, loope bre_bad2\n"               /* ZF = 0: not taken */
    /* Far transfers, INT n, INT3, INT1, IRET: not branches. */
    "T bre, TP|TFAR, lcall *bre_farptr\n"
    "bre_c5:\n"
    "T bre, TP|TFAR, ljmp *bre_farptr2\n"
    "ud2\n"
    "bre_fj:\n"
    "T bre, TX, int $" S(VEC_NOP) "\n"
    "T bre, TX, int3\n"
    "T bre, TX, .byte 0xf1\n"                   /* INT1 */
    "T bre, TX, lcall *bre_gateptr\n"           /* call gate to CPL 0: LRET */
#ifdef __x86_64__
    "T bre, TX, syscall\n"                      /* to sys_stub: SYSRET */
#else
    "T bre, TP, mov $bre_se, %edx\n"
    "T bre, TP, mov %esp, %ecx\n"
    "T bre, TX, sysenter\n"                     /* to sys_stub: SYSEXIT */
    "bre_se:\n"
#endif
#ifdef __x86_64__
    "T bre, TP, mov %rsp, %rax\n"
    "T bre, TP, push $" S(USER_DS) "\n"
    "T bre, TP, push %rax\n"
    "T bre, TP, pushf\n"
    "T bre, TP, push $" S(USER_CS) "\n"
    "T bre, TP, push $bre_ir\n"
    "T bre, TP|TFAR, iretq\n"
#else
    "T bre, TP, pushf\n"
    "T bre, TP, push $" S(USER_CS) "\n"
    "T bre, TP, push $bre_ir\n"
    "T bre, TP|TFAR, iret\n"
#endif
    "ud2\n"
    "bre_ir:\n"
#ifndef __x86_64__
    "T bre, TP, test %ecx, %ecx\n"
    "T bre, TP, into\n"                         /* OF = 0: no trap, counted */
    "T bre, TP, mov $0x7f, %cl\n"
    "T bre, TP, add $1, %cl\n"
    "T bre, TX, into\n"                         /* OF = 1: #OF trap, not counted */
#endif
    "T bre, TP, dec %esi\n"
    "T bre, TC, jnz bre_top\n"
    "bre_after:\n"
    "T bre, TP, nop\n"
    "bre_flush:\n"
    "TFLUSH bre\n"
    "bre_done:\n\t"
    EPILOGUE
    "bre_fn:\n"
    "T bre, TP, nop\n"
    "T bre, TR, ret\n"
    "bre_fn_end:\n"
    "bre_fn2:\n"
    "T bre, TR, ret\n"
    "bre_fn2_end:\n"
    "bre_fn3:\n"
    "T bre, TR, ret $" PSZ "\n"
    "bre_fn3_end:\n"
    "bre_far:\n"
    "T bre, TP, nop\n"
    "T bre, TP|TFAR, lretl\n"
    "bre_far_end:\n"
    "TEND bre\n"
    ".globl gate_stub\n"
    "gate_stub:\n\t"
#ifdef __x86_64__
    "lretq\n"
#else
    "lret\n"
#endif
    ".globl sys_stub\n"
    "sys_stub:\n\t"
#ifdef __x86_64__
    "sysretq\n"
#else
    "sysexit\n"
#endif
    ".popsection\n");

/* ---- exceptions and interrupts in the middle of counted code -------------- */
asm(PROG_MACROS
    ".pushsection .text\n"
    ".globl flt_prog\n"
    "flt_prog:\n\t"
    PROLOGUE
    "mov (" R_DI "), %eax\n\t"
    "mov 4(" R_DI "), %esi\n\t"
    "mov 8(" R_DI "), %ebx\n"
    "TBEGIN flt\n"
    "flt_start:\n"
    "T flt, TX, llwpcb %eax\n"
    "flt_top:\n"
    "T flt, TX, int $" S(VEC_UNMAP) "\n"
    "flt_mov:\n"
    "T flt, TP, mov $100, %eax\n"
    "flt_nop:\n"
    "T flt, TP, nop\n"
    "flt_load:\n"
    "T flt, TP, add (" R_BX "), %eax\n"         /* #PF, mapped, retried */
    "T flt, TP, xor %edx, %edx\n"
    "T flt, TP, xor %ecx, %ecx\n"
    "flt_div:\n"
    "T flt, TP, div %ecx\n"                     /* #DE, divisor fixed, retried */
    "flt_jdiv:\n"
    "T flt, TR, jmp flt_jdiv_to\n"              /* ends the TB of the two faults */
    "flt_jdiv_to:\n"
    "T flt, TP, nop\n"
    "flt_ud:\n"
    "T flt, TX, ud2\n"                          /* #UD, skipped */
    "T flt, TP, inc %eax\n"
    "flt_hlt:\n"
    "T flt, TX, hlt\n"                          /* #GP at CPL 3, skipped */
    "T flt, TX, int3\n"
    "T flt, TX, .byte 0xf1\n"
    "T flt, TP, test %eax, %eax\n"
    "T flt, TC, jz flt_bad\n"
    "T flt, TP, dec %esi\n"
    "T flt, TC, jnz flt_top\n"
    "flt_after:\n"
    "T flt, TP, nop\n"
    "flt_flush:\n"
    "TFLUSH flt\n"
    "flt_done:\n"
    "TEND flt\n\t"
    EPILOGUE
    "flt_bad:\n\t"
    "ud2\n"
    ".popsection\n");

/*
 * ---- instructions TCG executes in pieces: REP string instructions (more
 * than one translation-block pass, zero iterations, a #PF in the middle),
 * locked accesses across a page boundary (an exclusive step with -smp 2),
 * MOV SS and STI shadows, CPUID/RDTSC/LFENCE/PAUSE.  Each retires once.
 */
asm(PROG_MACROS
    ".pushsection .text\n"
    ".globl rep_prog\n"
    "rep_prog:\n\t"
    PROLOGUE
    "mov (" R_DI "), %eax\n\t"
    "mov 8(" R_DI "), %edx\n"
    "TBEGIN rep\n"
    "rep_start:\n"
    "T rep, TX, llwpcb %eax\n"
    "T rep, TP, push " R_DI "\n"
    "T rep, TP, cld\n"
    "T rep, TP, mov %edx, %edi\n"
    "T rep, TP, mov $70000, %ecx\n"
    "T rep, TP, xor %eax, %eax\n"
    "rep_stos:\n"
    "T rep, TP, rep stosb\n"                   /* 70000 iterations */
    "T rep, TP, mov %edx, %edi\n"
    "T rep, TP, xor %ecx, %ecx\n"
    "rep_zero:\n"
    "T rep, TP, rep stosb\n"                   /* no iteration */
    "T rep, TP, mov %edx, %esi\n"
    "T rep, TP, lea 0x14000(" R_DX "), %edi\n"
    "T rep, TP, mov $8192, %ecx\n"
    "rep_movs:\n"
    "T rep, TP, rep movsb\n"                   /* #PF on its second page */
    "T rep, TP, mov %edx, %esi\n"
    "T rep, TP, mov %edx, %edi\n"
    "T rep, TP, mov $5, %ecx\n"
    "rep_cmps:\n"
    "T rep, TP, repe cmpsb\n"
    "T rep, TP, mov $10, %ecx\n"
    "T rep, TP, lea 1(" R_DX "), %edi\n"
    "T rep, TP, mov $1, %al\n"
    "T rep, TP, repne scasb\n"
    "rep_lock:\n"
    "T rep, TP, lock addl $1, 0x4ffe(" R_DX ")\n"   /* crosses a page boundary */
    "T rep, TP, xchg %ecx, 0x6ffe(" R_DX ")\n"
    "T rep, TP, mov %ss, %ecx\n"
    "rep_movss:\n"
    "T rep, TP, mov %ecx, %ss\n"
    "rep_shadow:\n"
    "T rep, TP, nop\n"
    "T rep, TP, sti\n"
    "T rep, TP, cli\n"
    "T rep, TP, pushf\n"
    "T rep, TP, popf\n"
    "T rep, TP, xor %eax, %eax\n"
    "rep_cpuid:\n"
    "T rep, TP, cpuid\n"
    "T rep, TP, rdtsc\n"
    "T rep, TP, lfence\n"
    "T rep, TP, pause\n"
    "T rep, TP, pop " R_DI "\n"
    "rep_flush:\n"
    "TFLUSH rep\n"
    "rep_done:\n"
    "TEND rep\n\t"
    EPILOGUE
    ".popsection\n");

/*
 * ---- XSAVE and XRSTOR of the LWP state at CPL 3 (each counted after it
 * retires), then LLWPCB of a second LWPCB while the first session runs.
 * args.data: the XSAVE area; args.slw_ret on entry: the second LWPCB.
 */
asm(PROG_MACROS
    ".pushsection .text\n"
    ".globl xs_prog\n"
    "xs_prog:\n\t"
    PROLOGUE
    "mov (" R_DI "), %eax\n\t"
    "mov 8(" R_DI "), %ebx\n\t"
    "mov 4(" R_DI "), %esi\n"
    "TBEGIN xs\n"
    "xs_start:\n"
    "T xs, TX, llwpcb %eax\n"
    "xs_loop1:\n"
    "T xs, TP, nop\n"
    "T xs, TP, dec %esi\n"
    "T xs, TC, jnz xs_loop1\n"
    "xs_loop1_end:\n"
    "T xs, TP, xor %eax, %eax\n"
    "T xs, TP, mov $0x40000000, %edx\n"
    "xs_save:\n"
    "T xs, TP|TSAVE|TSNAP, xsave (" R_BX ")\n"
    "T xs, TP, mov $300, %esi\n"
    "xs_loop2:\n"                              /* undone by the XRSTOR */
    "T xs, TP, nop\n"
    "T xs, TP, dec %esi\n"
    "T xs, TC, jnz xs_loop2\n"
    "xs_loop2_end:\n"
    "T xs, TP, xor %eax, %eax\n"
    "T xs, TP, mov $0x40000000, %edx\n"
    "xs_rstor:\n"
    "T xs, TP|TRSTOR, xrstor (" R_BX ")\n"
    "T xs, TP, mov $100, %esi\n"
    "xs_loop3:\n"
    "T xs, TP, nop\n"
    "T xs, TP, dec %esi\n"
    "T xs, TC, jnz xs_loop3\n"
    "xs_loop3_end:\n"
    "T xs, TP, mov 12(" R_DI "), %eax\n"
    "xs_switch:\n"
    "T xs, TX|TSNAP, llwpcb %eax\n"            /* flushes the first session */
    "T xs, TP, mov $150, %esi\n"
    "xs_loop4:\n"
    "T xs, TP, nop\n"
    "T xs, TP, dec %esi\n"
    "T xs, TC, jnz xs_loop4\n"
    "xs_loop4_end:\n"
    "xs_flush:\n"
    "TFLUSH xs\n"
    "xs_done:\n"
    "TEND xs\n\t"
    EPILOGUE
    ".popsection\n");

/*
 * ---- code in a 32-bit user segment with base CSB_BASE (legacy mode, or
 * compatibility mode in the 64-bit build), reached by a far call: records
 * and IP filtering use effective addresses, before the CS base.
 */
#define CSB_SEL  0x53           /* gdt[10], DPL 3 */
#define CSB_BASE 0x1000
asm(PROG_MACROS
    ".pushsection .data\n"
    ".balign 8\n"
    "csb_ptr: .long csb_fn - " S(CSB_BASE) "\n .word " S(CSB_SEL) "\n"
    ".popsection\n"
    ".pushsection .text\n"
    ".globl csb_prog\n"
    "csb_prog:\n\t"
    PROLOGUE
    "mov (" R_DI "), %eax\n\t"
    "mov 4(" R_DI "), %esi\n"
    "TBEGIN csb\n"
    "csb_start:\n"
    "T csb, TX, llwpcb %eax\n"
    "T csb, TP|TFAR, lcall *csb_ptr\n"
    "csb_back:\n"
    "T csb, TP, nop\n"
    "csb_flush:\n"
    "TFLUSH csb\n"
    "csb_done:\n\t"
    EPILOGUE
    ".code32\n"
    "csb_fn:\n"
    "T csb, TP, nop\n"
    "csb_loop:\n"
    "T csb, TP, mov $2, %ecx\n"
    "csb_l:\n"
    "T csb, TC, loop csb_l\n"
    "csb_l_end:\n"
    "T csb, TR, jmp csb_j\n"
    "ud2\n"
    "csb_j:\n"
    "T csb, TR, call csb_sub\n"
    "csb_c:\n"
    "T csb, TP, dec %esi\n"
    "T csb, TC, jnz csb_loop\n"
    "csb_loop_end:\n"
    "T csb, TP|TFAR, lretl\n"
    "csb_sub:\n"
    "T csb, TP, nop\n"
    "T csb, TR, ret\n"
    "csb_fn_end:\n"
#ifdef __x86_64__
    ".code64\n"
#endif
    "TEND csb\n"
    ".popsection\n");

/*
 * ---- instruction-fetch faults: an instruction straddling into a page that
 * is not present, and an absolute jump into another one.  Three pages A, B,
 * C from ff_anchor.
 */
asm(PROG_MACROS
    ".pushsection .text.lwp_ff, \"ax\"\n"
    ".balign 4096\n"
    "ff_anchor:\n"
    ".globl ff_prog\n"
    "ff_prog:\n\t"
    PROLOGUE
    "mov (" R_DI "), %eax\n"
    "TBEGIN ff\n"
    "ff_start:\n"
    "T ff, TX, llwpcb %eax\n"
    "T ff, TP, mov $ff_c, %ebx\n"
    "T ff, TR, jmp ff_pre\n"
    ".org ff_anchor + 4096 - 8\n"
    "ff_pre:\n"
    ".rept 5\n"
    "T ff, TP, nop\n"
    ".endr\n"
    "ff_last_a:\n"
    "T ff, TP, nop\n"
    "ff_straddle:\n"
    "T ff, TP, mov $1, %eax\n"                /* bytes 4094..4098: into page B */
    "ff_first_b:\n"
    "T ff, TP, nop\n"
    "ff_jmp:\n"
    "T ff, TA, jmp *" R_BX "\n"               /* into page C */
    ".org ff_anchor + 2 * 4096\n"
    "ff_c:\n"
    "T ff, TP, nop\n"
    "ff_flush:\n"
    "TFLUSH ff\n"
    "ff_done:\n"
    "TEND ff\n\t"
    EPILOGUE
    ".popsection\n");

/* ---- a task that yields to the other one in the middle of its loop -------- */
asm(PROG_MACROS
    ".pushsection .text\n"
    ".globl tsk_prog\n"
    "tsk_prog:\n\t"
    PROLOGUE
    "mov (" R_DI "), %eax\n\t"
    "mov 4(" R_DI "), %esi\n\t"
    "xor %edx, %edx\n"
    "TBEGIN tsk\n"
    "tsk_start:\n"
    "T tsk, TX, llwpcb %eax\n"
    "tsk_top:\n"
    "T tsk, TP, add $7, %edx\n"
    "T tsk, TP, nop\n"
    "T tsk, TX, int $" S(VEC_YIELD) "\n"
    "T tsk, TP, mov %edx, %ebx\n"
    "T tsk, TR, call tsk_fn\n"
    "tsk_c1:\n"
    "T tsk, TP, dec %esi\n"
    "T tsk, TC, jnz tsk_top\n"
    "tsk_after:\n"
    "T tsk, TP, nop\n"
    "tsk_flush:\n"
    "TFLUSH tsk\n"
    "tsk_done:\n\t"
    "int $" S(VEC_DONE) "\n\t"
    "xor %eax, %eax\n\t"
    "int $" S(USER_RETURN_VECTOR) "\n"
    "tsk_fn:\n"
    "T tsk, TP, lea 1(" R_BX "), %ebx\n"
    "T tsk, TR, ret\n"
    "tsk_fn_end:\n"
    "TEND tsk\n"
    ".popsection\n");

/* ---- a record whose store faults ------------------------------------------ */
asm(PROG_MACROS
    ".pushsection .text\n"
    ".globl pnd_prog\n"
    "pnd_prog:\n\t"
    PROLOGUE
    "mov (" R_DI "), %eax\n\t"
    "mov 4(" R_DI "), %esi\n"
    "TBEGIN pnd\n"
    "pnd_start:\n"
    "T pnd, TX, llwpcb %eax\n"
    "T pnd, TX, int $" S(VEC_PROT) "\n"
    "pnd_top:\n"
    "T pnd, TP, nop\n"
    "T pnd, TP, add $1, %edx\n"
    "T pnd, TP, nop\n"
    "T pnd, TP, dec %esi\n"
    "pnd_jnz:\n"
    "T pnd, TC, jnz pnd_top\n"
    "pnd_after:\n"
    "T pnd, TP, nop\n"
    "pnd_flush:\n"
    "TFLUSH pnd\n"
    "pnd_done:\n"
    "TEND pnd\n\t"
    EPILOGUE
    ".popsection\n");

typedef uintptr_t prog_fn(uintptr_t);
extern char sys_stub[], gate_stub[];
extern prog_fn tf_prog, ff_prog, csb_prog, xs_prog, rep_prog, llw_prog, ire_prog, bre_prog, flt_prog, tsk_prog, pnd_prog;
extern prog_fn len_prog;
TR_TABLE(llw);
TR_TABLE(ire);
TR_TABLE(len);
TR_TABLE(bre);
TR_TABLE(flt);
TR_TABLE(tsk);
TR_TABLE(pnd);
TR_TABLE(rep);
TR_TABLE(xs);
TR_TABLE(csb);
TR_TABLE(ff);
TR_LABEL(ff_anchor); TR_LABEL(ff_start); TR_LABEL(ff_done); TR_LABEL(ff_last_a);
TR_LABEL(ff_straddle); TR_LABEL(ff_first_b); TR_LABEL(ff_jmp); TR_LABEL(ff_c);
TR_LABEL(csb_start); TR_LABEL(csb_back); TR_LABEL(csb_done); TR_LABEL(csb_fn);
TR_LABEL(csb_loop); TR_LABEL(csb_l); TR_LABEL(csb_l_end); TR_LABEL(csb_c);
TR_LABEL(csb_loop_end); TR_LABEL(csb_sub); TR_LABEL(csb_fn_end);
TR_LABEL(xs_start); TR_LABEL(xs_loop1); TR_LABEL(xs_loop1_end); TR_LABEL(xs_loop2);
TR_LABEL(xs_loop2_end); TR_LABEL(xs_loop3); TR_LABEL(xs_loop3_end); TR_LABEL(xs_loop4);
TR_LABEL(xs_loop4_end); TR_LABEL(xs_switch); TR_LABEL(xs_done); TR_LABEL(xs_save);
TR_LABEL(xs_rstor);
TR_LABEL(rep_start); TR_LABEL(rep_done); TR_LABEL(rep_stos); TR_LABEL(rep_zero);
TR_LABEL(rep_movs); TR_LABEL(rep_cmps); TR_LABEL(rep_lock); TR_LABEL(rep_movss);
TR_LABEL(rep_shadow); TR_LABEL(rep_cpuid); TR_LABEL(rep_flush);
TR_LABEL(llw_start); TR_LABEL(llw_flush); TR_LABEL(llw_done);
TR_LABEL(ire_start); TR_LABEL(ire_loop); TR_LABEL(ire_add); TR_LABEL(ire_lea);
TR_LABEL(ire_val); TR_LABEL(ire_loop_end); TR_LABEL(ire_done); TR_LABEL(ire_ins);
TR_LABEL(bre_start); TR_LABEL(bre_top); TR_LABEL(bre_loop1); TR_LABEL(bre_loop1_end);
TR_LABEL(bre_c1); TR_LABEL(bre_c2); TR_LABEL(bre_c3); TR_LABEL(bre_c4); TR_LABEL(bre_c5);
TR_LABEL(bre_t1); TR_LABEL(bre_t2); TR_LABEL(bre_lnt);
TR_LABEL(bre_after); TR_LABEL(bre_done);
TR_LABEL(bre_fn); TR_LABEL(bre_fn_end); TR_LABEL(bre_fn2); TR_LABEL(bre_fn2_end);
TR_LABEL(bre_fn3); TR_LABEL(bre_fn3_end); TR_LABEL(bre_far); TR_LABEL(bre_far_end);
TR_LABEL(flt_start); TR_LABEL(flt_top); TR_LABEL(flt_after); TR_LABEL(flt_done);
TR_LABEL(tf_jmp); TR_LABEL(tf_to);
TR_LABEL(flt_load); TR_LABEL(flt_div); TR_LABEL(flt_jdiv); TR_LABEL(flt_mov); TR_LABEL(flt_nop); TR_LABEL(flt_ud); TR_LABEL(flt_hlt);
TR_LABEL(tsk_start); TR_LABEL(tsk_top); TR_LABEL(tsk_c1); TR_LABEL(tsk_after);
TR_LABEL(tsk_done); TR_LABEL(tsk_fn); TR_LABEL(tsk_fn_end);
TR_LABEL(pnd_start); TR_LABEL(pnd_top); TR_LABEL(pnd_jnz); TR_LABEL(pnd_after);
TR_LABEL(pnd_done);
TR_LABEL(len_start); TR_LABEL(len_loop); TR_LABEL(len_loop_end); TR_LABEL(len_done);

/* ---- the paths the programs take ------------------------------------------ */

static struct tr_path path;
static struct tr_out out;

static void path_llw(struct tr_path *p)
{
    tr_begin(p, llw_tab, llw_tab_end);
    tr_span(p, llw_start, llw_done);
}

static void path_ire(struct tr_path *p, unsigned iters)
{
    tr_begin(p, ire_tab, ire_tab_end);
    tr_span(p, ire_start, ire_loop);
    tr_span_n(p, ire_loop, ire_loop_end, iters);
    tr_span(p, ire_loop_end, ire_done);
}

static void path_len(struct tr_path *p, unsigned iters)
{
    tr_begin(p, len_tab, len_tab_end);
    tr_span(p, len_start, len_loop);
    tr_span_n(p, len_loop, len_loop_end, iters);
    tr_span(p, len_loop_end, len_done);
}

static void path_bre(struct tr_path *p, unsigned iters)
{
    tr_begin(p, bre_tab, bre_tab_end);
    tr_span(p, bre_start, bre_top);
    for (unsigned i = 0; i < iters; i++) {
        tr_span(p, bre_top, bre_loop1);
        tr_span_n(p, bre_loop1, bre_loop1_end, 2);
        tr_span(p, bre_loop1_end, bre_c1);
        tr_span(p, bre_fn, bre_fn_end);
        tr_span(p, bre_c1, bre_c2);
        tr_span(p, bre_fn2, bre_fn2_end);
        tr_span(p, bre_c2, bre_c3);
        tr_span(p, bre_fn, bre_fn_end);
        tr_span(p, bre_c3, bre_c4);
        tr_span(p, bre_fn3, bre_fn3_end);
        tr_span(p, bre_c4, bre_c5);
        tr_span(p, bre_far, bre_far_end);
        tr_span(p, bre_c5, bre_after);
    }
    tr_span(p, bre_after, bre_done);
}

static void path_flt(struct tr_path *p, unsigned iters)
{
    tr_begin(p, flt_tab, flt_tab_end);
    tr_span(p, flt_start, flt_top);
    tr_span_n(p, flt_top, flt_after, iters);
    tr_span(p, flt_after, flt_done);
}

static void path_tsk(struct tr_path *p, unsigned iters)
{
    tr_begin(p, tsk_tab, tsk_tab_end);
    tr_span(p, tsk_start, tsk_top);
    for (unsigned i = 0; i < iters; i++) {
        tr_span(p, tsk_top, tsk_c1);
        tr_span(p, tsk_fn, tsk_fn_end);
        tr_span(p, tsk_c1, tsk_after);
    }
    tr_span(p, tsk_after, tsk_done);
}

static void path_pnd(struct tr_path *p, unsigned iters)
{
    tr_begin(p, pnd_tab, pnd_tab_end);
    tr_span(p, pnd_start, pnd_top);
    tr_span_n(p, pnd_top, pnd_after, iters);
    tr_span(p, pnd_after, pnd_done);
}

/* ---- running a program and comparing with the model ----------------------- */

static struct lwpcb *cb, *cb2;
static struct lwp_record *ring, *ring2;
static uint8_t *data_page;
static struct prog_args args, args2;
static bool ipf_supported;

static void cfg_init(struct tr_cfg *m, uint32_t events, int32_t counter)
{
    tr_cfg_init(m, events, counter, ipf_supported);
}

static void prepare(struct lwpcb *c, struct lwp_record *r, const struct tr_cfg *m, uint32_t head0)
{
    lwpcb_init(c, r, RING_BYTES, m->events);
    memset(r, 0, RING_BYTES);
    c->head = c->tail = head0;
    tr_cfg_to_lwpcb(m, c);
}

static void set_args(struct prog_args *a, struct lwpcb *c, uint32_t iters)
{
    memset(a, 0xee, sizeof(*a));
    a->cb = (uintptr_t)c;
    a->iters = iters;
    a->data = (uintptr_t)data_page;
}

static void verify_flush(const char *what, const struct tr_path *p, const struct tr_cfg *m,
                         const struct lwpcb *c, const struct prog_args *a, uint32_t head0,
                         unsigned capacity);

static void verify(const char *what, const struct tr_path *p, const struct tr_cfg *m,
                   const struct lwpcb *c, const struct lwp_record *r,
                   const struct prog_args *a, uint32_t head0)
{
    unsigned where = 0;

    if (!tr_path_consistent(p, &where)) {
        report(false, "%s: the test's path of the program is inconsistent at %u", what, where);
    }
    tr_simulate(p, m, &out);
    if (out.nrec >= NSLOTS - 1) {
        report(false, "%s: the test expects more records than the ring holds", what);
    }
    unsigned nrec = ((c->head + RING_BYTES - head0) % RING_BYTES) / 32;
    tr_check_ring(what, &out, r, NSLOTS, head0 / 32, nrec, CORE_ID);
    verify_flush(what, p, m, c, a, head0, ~0u);
}

/*
 * The flushes: SLWPCB's (counters and head before SLWPCB, copied by the
 * program) and LLWPCB 0's (counters at the end).  The head is checked when
 * the ring cannot fill before SLWPCB (capacity in records).
 */
static void verify_flush(const char *what, const struct tr_path *p, const struct tr_cfg *m,
                         const struct lwpcb *c, const struct prog_args *a, uint32_t head0,
                         unsigned capacity)
{
    unsigned slw_pos = 0;
    for (unsigned i = 0; i < p->n; i++) {
        if ((p->tab[p->idx[i]].cls & (TR_SNAP | TR_CLASS)) == (TR_SNAP | TR_P)) {
            slw_pos = i;
        }
    }
    unsigned before = 0;
    for (unsigned k = 0; k < out.nrec; k++) {
        before += out.rec[k].pos < slw_pos;
    }
    before = before < capacity ? before : capacity;
    report(a->slw_ret == (uint32_t)(uintptr_t)c, "%s: SLWPCB returns the LWPCB", what);
    report(a->slw_head == (head0 + 32 * before) % RING_BYTES,
           "%s: SLWPCB flushed BufferHeadOffset %u (want %u)", what, a->slw_head,
           (head0 + 32 * before) % RING_BYTES);
    const uint32_t *slw[4] = { NULL, &a->slw_c1, &a->slw_c2, &a->slw_c3 };
    for (int id = 1; id <= 3; id++) {
        if (!(m->events & (1u << id))) {
            continue;
        }
        int32_t got = tr_field(*slw[id]);
        /* The last two flushes are SLWPCB's and LLWPCB 0's. */
        const int32_t *slw_snap = out.snap[out.nsnap - 2], *end_snap = out.snap[out.nsnap - 1];
        report(out.nsnap >= 2 && got == slw_snap[id],
               "%s: SLWPCB flushed EventCounter%d = %d (want %d)", what, id, got, slw_snap[id]);
        got = tr_field(c->event[id - 1].counter);
        report(out.nsnap >= 2 && got == end_snap[id],
               "%s: LLWPCB 0 flushed EventCounter%d = %d (want %d)", what, id, got, end_snap[id]);
    }
}

/* Run one program on (cb, ring) with the LWPCB built from m, and verify. */
static void run_and_verify(const char *what, prog_fn *prog, const struct tr_path *p,
                           const struct tr_cfg *m, uint32_t iters)
{
    prepare(cb, ring, m, 0);
    set_args(&args, cb, iters);
    run_in_user(prog, (uintptr_t)&args);
    verify(what, p, m, cb, ring, &args, 0);
}

static void fatal(const char *what, struct ex_regs *regs)
{
    printf("FAIL: unexpected %s, vector %u at %#lx (cs %#lx) error %#lx cr2 %#lx\n", what,
           (unsigned)regs->vector, (unsigned long)regs->rip, (unsigned long)regs->cs,
           (unsigned long)regs->error_code, (unsigned long)read_cr2());
    report_summary();
    guest_exit(1);
}

static void set_user_gate(int vec)
{
    struct {
        uint16_t limit;
        uintptr_t base;
    } __attribute__((packed)) idtr;

    asm volatile("sidt %0" : "=m"(idtr));
    ((uint8_t *)idtr.base)[vec * (sizeof(uintptr_t) == 8 ? 16 : 8) + 5] |= 3 << 5;
}

static void xsave(void *area, uint64_t rfbm)
{
    asm volatile("xsave (%0)" : : "r"(area), "a"((uint32_t)rfbm),
                 "d"((uint32_t)(rfbm >> 32)) : "memory");
}

static void xrstor(const void *area, uint64_t rfbm)
{
    asm volatile("xrstor (%0)" : : "r"(area), "a"((uint32_t)rfbm),
                 "d"((uint32_t)(rfbm >> 32)) : "memory");
}

/* Trap counters of the handlers below. */
static volatile unsigned n_nop, n_bp, n_db, n_de, n_ud, n_gp, n_pf, n_unmap, n_tick;

static void on_nop(struct ex_regs *regs)
{
    n_nop++;
}

static void on_bp(struct ex_regs *regs)
{
    if ((regs->cs & 3) != 3) {
        fatal("#BP", regs);
    }
    n_bp++;
}

static volatile unsigned n_of;

static void on_of(struct ex_regs *regs)
{
    if ((regs->cs & 3) != 3) {
        fatal("#OF", regs);
    }
    n_of++;
}

static void on_db(struct ex_regs *regs)
{
    if ((regs->cs & 3) != 3) {
        fatal("#DB", regs);
    }
    n_db++;
}

/* ---- a: enumeration -------------------------------------------------------- */

static void test_cpuid(void)
{
    uint32_t a, b, c, d;
    unsigned want_ipf = cmdline_ulong("ipf", 1);

    lwp_cpuid(&a, &b, &c, &d);
    report(d & LWP_F_IRE, "CPUID 8000_001C EDX[2] LwpIRE");
    report(d & LWP_F_BRE, "CPUID 8000_001C EDX[3] LwpBRE");
    report((d & 0x70) == 0, "CPUID 8000_001C EDX[6:4] (DME, CNH, RNH) not enumerated (%#x)", d);
    report((c >> 29 & 1) == want_ipf, "CPUID 8000_001C ECX[29] LwpIpFiltering = %u (want %u)",
           c >> 29 & 1, want_ipf);
    report((c >> 28 & 1) == 0, "CPUID 8000_001C ECX[28] LwpBranchPrediction = 0");
    ipf_supported = c >> 29 & 1;
}

/* ---- b: LLWPCB's interval minimum and counter loading ---------------------- */

static void test_llwpcb(void)
{
    struct tr_cfg m;
    uint32_t a, b, c, d;

    lwp_cpuid(&a, &b, &c, &d);
    report((a & (LWP_F_IRE | LWP_F_BRE)) == (LWP_F_IRE | LWP_F_BRE),
           "CPUID 8000_001C EAX: IRE and BRE available after LWP_CFG (%#x)", a);

    /* Intervals below the minimum, a negative EventCounter2. */
    path_llw(&path);
    cfg_init(&m, TR_EV_VAL | TR_EV_IRE | TR_EV_BRE, 0);
    m.counter[1] = 2;
    m.counter[2] = 0;                  /* as loaded from -5 */
    m.counter[3] = 7;
    m.interval[1] = 3;
    prepare(cb, ring, &m, 0);
    cb->event[0].interval = 3;
    cb->event[1].interval = 0;
    cb->event[2].interval = 100;
    cb->event[1].counter = 0x3fffffb;  /* -5 */
    set_args(&args, cb, 0);
    run_in_user(llw_prog, (uintptr_t)&args);
    report(cb->flags == (LWP_F_VAL | LWP_F_IRE | LWP_F_BRE),
           "LLWPCB keeps IRE and BRE in Flags (%#x)", cb->flags);
    report(cb->event[1].interval == 255, "LLWPCB writes back EventInterval2 = 255 for 0 (%u)",
           cb->event[1].interval);
    report(cb->event[2].interval == 255, "LLWPCB writes back EventInterval3 = 255 for 100 (%u)",
           cb->event[2].interval);
    report(cb->event[0].interval == 3, "EventInterval1 = 3 is kept (LWPVAL has no minimum)");
    report(tr_field(args.slw_c2) == 0,
           "negative EventCounter2 loaded as 0: SLWPCB right after LLWPCB flushes %d",
           tr_field(args.slw_c2));
    report(args.slw_c3 == 7 && args.slw_c1 == 2,
           "EventCounter1/3 loaded as they are: SLWPCB flushes %d and %d",
           tr_field(args.slw_c1), tr_field(args.slw_c3));
    /* Counter 0: SLWPCB, the first instruction after LLWPCB, makes it negative. */
    verify("LLWPCB, then SLWPCB with EventCounter2 = 0", &path, &m, cb, ring, &args, 0);
    report(ring[0].event_id == 2 && ring[0].ip == (uintptr_t)llw_flush,
           "the IRE record names SLWPCB, the first instruction after LLWPCB (%#llx)",
           (unsigned long long)ring[0].ip);

    /* Negative and just-below-minimum intervals, a counter above the interval. */
    cfg_init(&m, TR_EV_IRE | TR_EV_BRE, 0);
    m.counter[2] = 300;
    m.counter[3] = 255;
    prepare(cb, ring, &m, 0);
    cb->event[1].interval = 0x3ffffff;  /* -1 */
    cb->event[2].interval = 254;
    set_args(&args, cb, 0);
    run_in_user(llw_prog, (uintptr_t)&args);
    report(cb->event[1].interval == 255, "negative EventInterval2 written back as 255 (%u)",
           cb->event[1].interval);
    report(cb->event[2].interval == 255, "EventInterval3 = 254 written back as 255 (%u)",
           cb->event[2].interval);
    report(tr_field(args.slw_c2) == 300, "EventCounter2 = 300 (above the interval) loaded as is (%d)",
           tr_field(args.slw_c2));
    verify("LLWPCB with EventCounter2 = 300", &path, &m, cb, ring, &args, 0);

    /* The largest counter (2^25 - 1) counts down exactly. */
    path_ire(&path, 100);
    cfg_init(&m, TR_EV_IRE | TR_EV_BRE, 0x1ffffff);
    run_and_verify("EventCounter 2^25 - 1", ire_prog, &path, &m, 100);
    path_llw(&path);

    /* Intervals at or above the minimum are kept. */
    cfg_init(&m, TR_EV_IRE | TR_EV_BRE, 255);
    m.interval[2] = 255;
    m.interval[3] = 1000;
    prepare(cb, ring, &m, 0);
    set_args(&args, cb, 0);
    run_in_user(llw_prog, (uintptr_t)&args);
    report(cb->event[1].interval == 255 && cb->event[2].interval == 1000,
           "EventInterval 255 and 1000 kept (%u, %u)", cb->event[1].interval, cb->event[2].interval);

    /* BRE not made available in LWP_CFG: dropped from Flags, not counted, not flushed. */
    uint64_t cfg = rdmsr(MSR_LWP_CFG);
    wrmsr(MSR_LWP_CFG, cfg & ~(uint64_t)LWP_F_BRE);
    path_bre(&path, 5);
    cfg_init(&m, TR_EV_IRE | TR_EV_BRE, 0);
    prepare(cb, ring, &m, 0);
    cb->event[2].counter = 1234;
    set_args(&args, cb, 5);
    run_in_user(bre_prog, (uintptr_t)&args);
    wrmsr(MSR_LWP_CFG, cfg);
    report(cb->flags == LWP_F_IRE, "BRE not in LWP_CFG: LLWPCB writes back Flags %#x (want IRE)",
           cb->flags);
    report(cb->event[2].counter == 1234, "BRE not in LWP_CFG: EventCounter3 not flushed (%u)",
           cb->event[2].counter);
    m.events = TR_EV_IRE;
    verify("BRE not in LWP_CFG: IRE only", &path, &m, cb, ring, &args, 0);
}

/* ---- c: instructions retired ---------------------------------------------- */

static void test_ire(void)
{
    struct tr_cfg m;
    const unsigned iters = 300;

    path_ire(&path, iters);

    cfg_init(&m, TR_EV_IRE | TR_EV_VAL, 255);
    m.interval[1] = m.counter[1] = 49;
    run_and_verify("IRE+VAL, counter = interval = 255", ire_prog, &path, &m, iters);
    report(out.counted[2] > 2000 && out.nrec >= 8,
           "(the workload retires %u counted instructions, %u records)", out.counted[2], out.nrec);
    /* Records fall on the (N+1)th, (2N+2)th, ... counted instruction. */
    bool at = true;
    unsigned nire = 0;
    for (unsigned k = 0; k < out.nrec; k++) {
        if (out.rec[k].id == 2) {
            nire++;
            at &= tr_occurrences(&path, &m, 2, out.rec[k].pos) == (int32_t)(256 * nire);
        }
    }
    report(at && nire == out.counted[2] / 256,
           "(model: the %u IRE records fall on every 256th counted instruction)", nire);

    cfg_init(&m, TR_EV_IRE, 0);
    run_and_verify("IRE, EventCounter2 = 0", ire_prog, &path, &m, iters);
    uint32_t after_llwpcb = path.tab[path.idx[1]].start;
    report(ring[0].event_id == 2 && ring[0].ip == after_llwpcb,
           "counter 0: the first record is the first instruction after LLWPCB (%#llx, want %#x)",
           (unsigned long long)ring[0].ip, after_llwpcb);

    cfg_init(&m, TR_EV_IRE, 1000);
    m.interval[2] = 300;
    run_and_verify("IRE, counter 1000, interval 300", ire_prog, &path, &m, iters);
}

/* len_prog's loop: 3 x 15 NOPs, DEC and JNZ. */
#define LEN_LOOP_INSNS 47u

/*
 * A record at each instruction of one TB of 47, named from the lengths of
 * those before it: every length at every place.
 */
static void test_lengths(void)
{
    struct tr_cfg m;
    const unsigned iters = 400;
    bool seen[LEN_LOOP_INSNS] = { false };
    unsigned kinds = 0;

    path_len(&path, iters);
    cfg_init(&m, TR_EV_IRE, 255);
    run_and_verify("IRE in a TB of 47 instructions of 1 to 15 bytes", len_prog, &path, &m,
                   iters);
    /* len_tab: LLWPCB, then the loop's instructions. */
    for (unsigned k = 0; k < out.nrec; k++) {
        for (unsigned i = 0; i < LEN_LOOP_INSNS; i++) {
            if (out.rec[k].id == 2 && out.rec[k].ip == len_tab[1 + i].start && !seen[i]) {
                seen[i] = true;
                kinds++;
            }
        }
    }
    report(kinds == LEN_LOOP_INSNS,
           "(model: records fall on all %u instructions of the loop: %u do)",
           LEN_LOOP_INSNS, kinds);
}

/* ---- d, e: branches retired and the branch filters ------------------------- */

static void test_bre(void)
{
    static const struct {
        uint32_t filters;
        const char *what;
    } runs[] = {
        { 0, "IRE+BRE, no filter" },
        { TR_F_NCB, "NCB (no conditional branches)" },
        { TR_F_NRB, "NRB (no unconditional relative branches)" },
        { TR_F_NAB, "NAB (no absolute branches)" },
        { TR_F_NCB | TR_F_NRB, "NCB|NRB" },
        { TR_F_NCB | TR_F_NRB | TR_F_NAB, "NCB|NRB|NAB: no branch counted" },
        { TR_F_NMB | TR_F_NPB, "NMB|NPB ignored (no LwpBranchPrediction)" },
    };
    struct tr_cfg m;
    const unsigned iters = 60;

    path_bre(&path, iters);
    n_nop = n_bp = n_db = n_of = 0;
    for (unsigned i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
        cfg_init(&m, TR_EV_IRE | TR_EV_BRE, 255);
        m.filters = runs[i].filters;
        if (i == 0) {
            m.counter[3] = 40;
        }
        run_and_verify(runs[i].what, bre_prog, &path, &m, iters);
        if (i == 0) {
            report(n_nop == iters && n_bp == iters && n_db == iters,
                   "INT n, INT3 and INT1 each trapped %u times (%u, %u, %u)", iters, n_nop,
                   n_bp, n_db);
#ifndef __x86_64__
            report(n_of == iters, "INTO with OF = 1 trapped %u times (%u)", iters, n_of);
#endif
            unsigned nbr = 0;
            for (unsigned k = 0; k < out.nrec; k++) {
                nbr += out.rec[k].id == 3;
            }
            report(nbr >= 4, "(the workload retires %u counted branches, %u BRE records)",
                   out.counted[3], nbr);
        }
    }

    /*
     * Branch records at an interval where QEMU cuts the crossing TB instead
     * of testing at every branch's exit (LWP_EXIT_HOOK_INTERVAL): the same
     * records, wherever the counter crosses.
     */
    cfg_init(&m, TR_EV_IRE | TR_EV_BRE, 255);
    m.interval[3] = 5000;
    m.counter[3] = 40;
    run_and_verify("BRE at EventInterval3 5000", bre_prog, &path, &m, iters);

    /* Exact decrements per filter, without records: counter far above. */
    static const struct { uint32_t filters; unsigned cls; const char *what; } dec[] = {
        { TR_F_NCB, TR_C, "NCB" }, { TR_F_NRB, TR_R, "NRB" }, { TR_F_NAB, TR_A, "NAB" },
    };
    unsigned by_class[5] = { 0 };
    for (unsigned i = 0; i < path.n; i++) {
        by_class[path.tab[path.idx[i]].cls & TR_CLASS]++;
    }
    for (unsigned i = 0; i < 3; i++) {
        cfg_init(&m, TR_EV_BRE, 1000000);
        m.filters = dec[i].filters;
        prepare(cb, ring, &m, 0);
        set_args(&args, cb, iters);
        run_in_user(bre_prog, (uintptr_t)&args);
        int32_t got = 1000000 - tr_field(args.slw_c3);
        int32_t want = by_class[TR_C] + by_class[TR_R] + by_class[TR_A] - by_class[dec[i].cls];
        report(got == want && cb->head == 0,
               "%s: BRE counter decremented by exactly the other branches: %d (want %d)",
               dec[i].what, got, want);
    }
}

/* ---- f: IP filtering ------------------------------------------------------- */

static void test_ipf(void)
{
    struct tr_cfg m;
    char what[96];
    const char *note = ipf_supported ? "" : " (not enumerated: ignored)";

    path_ire(&path, 200);

    cfg_init(&m, TR_EV_IRE | TR_EV_VAL, 255);
    m.interval[1] = m.counter[1] = 9;
    m.filters = TR_F_IPF;
    m.base_ip = (uintptr_t)ire_lea;
    m.limit_ip = (uintptr_t)ire_val;
    snprintf(what, sizeof(what), "IPF [lea, lwpval] inclusive%s", note);
    run_and_verify(what, ire_prog, &path, &m, 200);
    if (ipf_supported) {
        report(out.counted[2] == 2 * 200 && out.counted[1] == 200,
               "(model: 2 instructions per iteration in range, LWPVAL included)");
    }

    m.base_ip = (uintptr_t)ire_add + 1;
    m.limit_ip = (uintptr_t)ire_val - 1;
    snprintf(what, sizeof(what), "IPF [add+1, lwpval-1]: add and lwpval out%s", note);
    run_and_verify(what, ire_prog, &path, &m, 200);

    m.filters = TR_F_IPF | TR_F_IPI;
    m.base_ip = (uintptr_t)ire_lea;
    m.limit_ip = (uintptr_t)ire_val;
    snprintf(what, sizeof(what), "IPF|IPI [lea, lwpval]: everything else%s", note);
    run_and_verify(what, ire_prog, &path, &m, 200);

    m.filters = TR_F_IPI;
    snprintf(what, sizeof(what), "IPI without IPF: no filtering");
    run_and_verify(what, ire_prog, &path, &m, 200);

    /* Limits inside the 300-instruction straight-line block (one long TB). */
    uint32_t i100 = path.tab[path.idx[100]].start, i200 = path.tab[path.idx[200]].start;
    m.filters = TR_F_IPF;
    m.base_ip = i100;
    m.limit_ip = i200;
    snprintf(what, sizeof(what), "IPF [100th, 200th] of a straight-line block%s", note);
    run_and_verify(what, ire_prog, &path, &m, 200);
    m.base_ip = i100 + 1;
    m.limit_ip = i200 - 1;
    snprintf(what, sizeof(what), "IPF [100th+1, 200th-1] of a straight-line block%s", note);
    run_and_verify(what, ire_prog, &path, &m, 200);
    m.filters = TR_F_IPF | TR_F_IPI;
    snprintf(what, sizeof(what), "IPF|IPI [100th+1, 200th-1] of a straight-line block%s", note);
    run_and_verify(what, ire_prog, &path, &m, 200);
    m.filters = TR_F_IPF;
    m.base_ip = i200;
    m.limit_ip = i100;
    snprintf(what, sizeof(what), "IPF with BaseIP > LimitIP: nothing in range%s", note);
    run_and_verify(what, ire_prog, &path, &m, 200);
#ifdef __x86_64__
    /* 64-bit limits: a LimitIP truncated to 32 bits would make the range empty. */
    m.base_ip = (uintptr_t)ire_lea;
    m.limit_ip = (1ull << 32) | ((uintptr_t)ire_lea - 1);
    snprintf(what, sizeof(what), "IPF [lea, 2^32 + lea - 1]: 64-bit LimitIP%s", note);
    run_and_verify(what, ire_prog, &path, &m, 200);
    m.base_ip = (1ull << 32) | (uintptr_t)ire_lea;
    m.limit_ip = ~0ull;
    snprintf(what, sizeof(what), "IPF [2^32 + lea, 2^64 - 1]: 64-bit BaseIP%s", note);
    run_and_verify(what, ire_prog, &path, &m, 200);
#endif

    path_bre(&path, 30);
    cfg_init(&m, TR_EV_IRE | TR_EV_BRE, 100);
    m.filters = TR_F_IPF;
    m.base_ip = (uintptr_t)bre_c1;
    m.limit_ip = (uintptr_t)bre_t2;
    snprintf(what, sizeof(what), "branches, IPF [c1, call *mem]%s", note);
    run_and_verify(what, bre_prog, &path, &m, 30);
    m.filters = TR_F_IPF | TR_F_IPI;
    snprintf(what, sizeof(what), "branches, IPF|IPI [c1, call *mem]%s", note);
    run_and_verify(what, bre_prog, &path, &m, 30);
}

/* ---- g: two events on one instruction -------------------------------------- */

static void same_insn(const char *what, prog_fn *prog, const struct tr_path *p,
                      struct tr_cfg *m, unsigned ida, unsigned idb, const void *addr,
                      unsigned nth, uint32_t iters)
{
    int pos = tr_find(p, addr, nth);

    m->counter[ida] = tr_occurrences(p, m, ida, pos) - 1;
    m->counter[idb] = tr_occurrences(p, m, idb, pos) - 1;
    run_and_verify(what, prog, p, m, iters);
    report(out.nrec >= 2 && out.rec[0].pos == (unsigned)pos && out.rec[1].pos == (unsigned)pos,
           "%s: (model: both counters cross at path index %d)", what, pos);
    report(ring[0].event_id == ida && ring[1].event_id == idb &&
           ring[0].ip == (uintptr_t)addr && ring[1].ip == (uintptr_t)addr,
           "%s: EventId %u then %u, both at %#lx (got %u at %#llx, %u at %#llx)", what, ida, idb,
           (unsigned long)(uintptr_t)addr, ring[0].event_id, (unsigned long long)ring[0].ip,
           ring[1].event_id, (unsigned long long)ring[1].ip);
}

static void test_same_insn(void)
{
    struct tr_cfg m;

    path_bre(&path, 10);
    cfg_init(&m, TR_EV_IRE | TR_EV_BRE, 0);
    same_insn("IRE and BRE cross on CALL mem", bre_prog, &path, &m, 2, 3, bre_t2, 3, 10);
    cfg_init(&m, TR_EV_IRE | TR_EV_BRE, 0);
    same_insn("IRE and BRE cross on a LOOPNE not taken", bre_prog, &path, &m, 2, 3, bre_lnt, 6, 10);
    uint32_t fall = 0;
    for (unsigned i = 0; i < path.ntab; i++) {
        if (path.tab[i].start == (uintptr_t)bre_lnt) {
            fall = path.tab[i].end;
        }
    }
    report(ring[1].data2 == fall && (ring[1].flags >> 15) == 0,
           "... its BRE record: TKN 0, TargetAddress = fall-through %#x (got %#llx)", fall,
           (unsigned long long)ring[1].data2);

    path_ire(&path, 100);
    cfg_init(&m, TR_EV_IRE | TR_EV_VAL, 0);
    same_insn("VAL and IRE cross on LWPVAL", ire_prog, &path, &m, 1, 2, ire_val, 40, 100);

    /* LWPINS stores its record, then retires: the IRE record follows. */
    cfg_init(&m, TR_EV_IRE, 0);
    int pos = tr_find(&path, ire_ins, 0);
    m.counter[2] = tr_occurrences(&path, &m, 2, pos) - 1;
    run_and_verify("IRE crosses on LWPINS", ire_prog, &path, &m, 100);
    report(cb->head == 2 * 32 && ring[0].event_id == 255 && ring[1].event_id == 2 &&
           ring[0].ip == (uintptr_t)ire_ins && ring[1].ip == (uintptr_t)ire_ins,
           "IRE crosses on LWPINS: EventId 255 then 2, both at %#lx",
           (unsigned long)(uintptr_t)ire_ins);
}

/* ---- h: exceptions and interrupts in the middle of counted code ------------ */

static void on_unmap(struct ex_regs *regs)
{
    vm_set_flags((uintptr_t)data_page, PAGE_SIZE, 0, PTE_P);
    n_unmap++;
}

static void on_pf_data(struct ex_regs *regs)
{
    if (read_cr2() != (uintptr_t)data_page || regs->rip != (uintptr_t)flt_load) {
        fatal("#PF", regs);
    }
    vm_set_flags((uintptr_t)data_page, PAGE_SIZE, PTE_P, 0);
    n_pf++;
}

static void on_de(struct ex_regs *regs)
{
    if (regs->rip != (uintptr_t)flt_div) {
        fatal("#DE", regs);
    }
    regs->rcx = 1;
    n_de++;
}

static void on_ud(struct ex_regs *regs)
{
    if (regs->rip != (uintptr_t)flt_ud) {
        fatal("#UD", regs);
    }
    regs->rip += 2;
    n_ud++;
}

static void on_gp(struct ex_regs *regs)
{
    if (regs->rip != (uintptr_t)flt_hlt || regs->error_code != 0) {
        fatal("#GP", regs);
    }
    regs->rip += 1;
    n_gp++;
}

static void on_tick(struct ex_regs *regs)
{
    n_tick++;
    apic_eoi();
}

static void test_faults(void)
{
    struct tr_cfg m;
    const unsigned iters = 400;

    set_irq_handler(VEC_UNMAP, on_unmap);
    set_irq_handler(PF_VECTOR, on_pf_data);
    set_irq_handler(DE_VECTOR, on_de);
    set_irq_handler(UD_VECTOR, on_ud);
    set_irq_handler(GP_VECTOR, on_gp);
    set_irq_handler(TIMER_VECTOR, on_tick);

    path_flt(&path, iters);
    cfg_init(&m, TR_EV_IRE | TR_EV_BRE, 255);
    m.counter[3] = 50;
    /*
     * A periodic APIC timer interrupts the loop at times the test does not
     * control.  QEMU delivers its ticks from the host's main loop, so a run
     * may see none, however fast or loaded the host: run again until one
     * does (each run is exact anyway); only the harness's timeout bounds it.
     */
    unsigned attempt;
    for (attempt = 1;; attempt++) {
        n_bp = n_db = n_de = n_ud = n_gp = n_pf = n_unmap = n_tick = 0;
        prepare(cb, ring, &m, 0);
        set_args(&args, cb, iters);
        apic_write(0x3e0, 0xb);                        /* divide by 1 */
        apic_write(0x320, TIMER_VECTOR | 1u << 17);    /* periodic */
        apic_write(0x380, 5000);                       /* 5 us */
        asm volatile("sti");
        run_in_user(flt_prog, (uintptr_t)&args);
        asm volatile("cli");
        apic_write(0x320, 1u << 16);
        apic_write(0x380, 0);
        if (n_tick) {
            break;
        }
    }
    verify("#PF/#DE/#UD/#GP/INT n/INT3/INT1/timer mid-loop", &path, &m, cb, ring, &args, 0);
    report(n_pf == iters && n_de == iters && n_ud == iters && n_gp == iters && n_unmap == iters &&
           n_bp == iters && n_db == iters,
           "each iteration took #PF, #DE, #UD, #GP, INT n, #BP, #DB (%u %u %u %u %u %u %u)",
           n_pf, n_de, n_ud, n_gp, n_unmap, n_bp, n_db);
    report(n_tick > 0, "timer interrupts arrived during the loop (%u, run %u)", n_tick, attempt);

    /* The counter crosses exactly on, or right before, a faulting instruction. */
    static const struct {
        const char *at;
        const char *what;
    } cross[] = {
        { flt_mov, "IRE crosses on the instruction after INT n" },
        { flt_nop, "IRE crosses right before the #PF-ing load" },
        { flt_load, "IRE crosses on the #PF-ing load (counted when retried)" },
        { flt_div, "IRE crosses on the #DE-ing DIV (counted when retried)" },
        { flt_jdiv, "IRE crosses on the JMP after the #PF-ing load and #DE-ing DIV" },
    };
    for (unsigned i = 0; i < sizeof(cross) / sizeof(cross[0]); i++) {
        cfg_init(&m, TR_EV_IRE | TR_EV_BRE, 255);
        int pos = tr_find(&path, cross[i].at, 7);
        m.counter[2] = tr_occurrences(&path, &m, 2, pos) - 1;
        run_and_verify(cross[i].what, flt_prog, &path, &m, iters);
        report(ring[0].event_id == 2 && ring[0].ip == (uintptr_t)cross[i].at,
               "%s: first record at %#lx (got %#llx)", cross[i].what,
               (unsigned long)(uintptr_t)cross[i].at, (unsigned long long)ring[0].ip);
    }
    /*
     * A branch record where the two faults come first in the branch's TB:
     * each fault gives back the TB's charge but for the branch, which its
     * exit counts only once it retires.
     */
    cfg_init(&m, TR_EV_IRE | TR_EV_BRE, 255);
    int jpos = tr_find(&path, flt_jdiv, 7);
    m.counter[3] = tr_occurrences(&path, &m, 3, jpos) - 1;
    run_and_verify("BRE crosses on the JMP after the #PF-ing load and #DE-ing DIV", flt_prog,
                   &path, &m, iters);
    report(ring[0].event_id == 3 && ring[0].ip == (uintptr_t)flt_jdiv &&
           ring[0].data2 == (uintptr_t)flt_jdiv + 2,
           "BRE crosses on the JMP after the faults: first record at %#lx to %#lx "
           "(got %u at %#llx to %#llx)",
           (unsigned long)(uintptr_t)flt_jdiv, (unsigned long)(uintptr_t)flt_jdiv + 2,
           ring[0].event_id, (unsigned long long)ring[0].ip,
           (unsigned long long)ring[0].data2);

    set_irq_handler(VEC_UNMAP, NULL);
    set_irq_handler(PF_VECTOR, NULL);
    set_irq_handler(DE_VECTOR, NULL);
    set_irq_handler(UD_VECTOR, NULL);
    set_irq_handler(GP_VECTOR, NULL);
    /* The tick handler stays: a tick may still wait in the IRR for the next STI. */
}

/* ---- h2: instructions TCG executes in pieces retire once ------------------- */

#define REP_PAGES 24
static uint8_t *rep_buf;
static volatile unsigned n_pf_rep;

static void on_pf_rep(struct ex_regs *regs)
{
    uintptr_t cr2 = read_cr2();

    if (cr2 < (uintptr_t)rep_buf || cr2 >= (uintptr_t)rep_buf + REP_PAGES * PAGE_SIZE ||
        regs->rip != (uintptr_t)rep_movs) {
        fatal("#PF", regs);
    }
    vm_set_flags(cr2, 1, PTE_P, 0);
    n_pf_rep++;
}

static void test_rep(void)
{
    static const struct {
        const char *at;
        const char *what;
    } cross[] = {
        { rep_flush, "REP STOSB x70000, REP STOSB x0, REP MOVSB with #PF, REPE CMPSB, "
                     "REPNE SCASB, LOCK ADD across pages, MOV SS, STI, CPUID, RDTSC" },
        { rep_stos, "IRE crosses on REP STOSB x70000" },
        { rep_zero, "IRE crosses on REP STOSB x0" },
        { rep_movs, "IRE crosses on REP MOVSB interrupted by #PF" },
        { rep_cmps, "IRE crosses on REPE CMPSB" },
        { rep_lock, "IRE crosses on LOCK ADD across a page boundary" },
        { rep_movss, "IRE crosses on MOV SS" },
        { rep_shadow, "IRE crosses in the MOV SS shadow" },
        { rep_cpuid, "IRE crosses on CPUID" },
    };
    struct tr_cfg m;

    /* -append cpuid_exits=1: run under a hypervisor that emulates CPUID. */
    bool cpuid_exits = cmdline_ulong("cpuid_exits", 0);

    if (cpuid_exits) {
        tr_mark_emulated(rep_tab, rep_tab_end, rep_cpuid);
    }
    rep_buf = alloc_pages(REP_PAGES);
    set_irq_handler(PF_VECTOR, on_pf_rep);
    tr_begin(&path, rep_tab, rep_tab_end);
    tr_span(&path, rep_start, rep_done);
    for (unsigned i = 0; i < sizeof(cross) / sizeof(cross[0]); i++) {
        if (cpuid_exits && cross[i].at == rep_cpuid) {
            report_skip("%s: CPUID does not retire in this guest (hypervisor exit)",
                        cross[i].what);
            continue;
        }
        cfg_init(&m, TR_EV_IRE | TR_EV_BRE, 1000);
        if (i) {
            int pos = tr_find(&path, cross[i].at, 0);
            m.counter[2] = tr_occurrences(&path, &m, 2, pos) - 1;
        }
        vm_set_flags((uintptr_t)rep_buf + 21 * PAGE_SIZE, PAGE_SIZE, 0, PTE_P);
        n_pf_rep = 0;
        prepare(cb, ring, &m, 0);
        set_args(&args, cb, 0);
        args.data = (uintptr_t)rep_buf;
        run_in_user(rep_prog, (uintptr_t)&args);
        verify(cross[i].what, &path, &m, cb, ring, &args, 0);
        if (i) {
            report(ring[0].event_id == 2 && ring[0].ip == (uintptr_t)cross[i].at,
                   "%s: the record names it (%#llx, want %#lx)", cross[i].what,
                   (unsigned long long)ring[0].ip, (unsigned long)(uintptr_t)cross[i].at);
        } else {
            report(n_pf_rep == 1 && rep_buf[0x14000 + 4095] == 0 &&
                   *(uint32_t *)(rep_buf + 0x4ffe) == 1,
                   "(the REP MOVSB took its #PF, the locked add happened: %u)", n_pf_rep);
        }
    }
    set_irq_handler(PF_VECTOR, NULL);
}

/* ---- i2: XSAVE/XRSTOR at CPL 3, LLWPCB of a new LWPCB mid-session ---------- */

static uint8_t user_area[XSAVE_BYTES] __attribute__((aligned(64)));

static void path_xs(struct tr_path *p, unsigned n1, bool first)
{
    tr_begin(p, xs_tab, xs_tab_end);
    if (first) {
        tr_span(p, xs_start, xs_loop1);
        tr_span_n(p, xs_loop1, xs_loop1_end, n1);
        tr_span(p, xs_loop1_end, xs_loop2);
        tr_span_n(p, xs_loop2, xs_loop2_end, 300);
        tr_span(p, xs_loop2_end, xs_loop3);
        tr_span_n(p, xs_loop3, xs_loop3_end, 100);
        tr_span(p, xs_loop3_end, xs_switch);
        tr_span(p, xs_switch, (char *)xs_switch + 1);
    } else {
        tr_span(p, xs_switch, xs_loop4);
        tr_span_n(p, xs_loop4, xs_loop4_end, 150);
        tr_span(p, xs_loop4_end, xs_done);
    }
}

static void test_user_xsave(void)
{
    static struct tr_path path_b;
    struct tr_cfg ma, mb;
    const unsigned n1 = 200;
    char what[80];

    for (int variant = 0; variant < 2; variant++) {
        path_xs(&path, n1, true);
        path_xs(&path_b, n1, false);
        cfg_init(&ma, TR_EV_IRE | TR_EV_BRE, 255);
        cfg_init(&mb, TR_EV_IRE | TR_EV_BRE, 255);
        if (variant) {
            /*
             * EventCounter2 is 0 when XSAVE saves it: XSAVE's retirement
             * stores a record, which the XRSTOR rolls back (head and
             * counter); XRSTOR's own retirement then stores one.  BRE
             * crosses between the two and again after the XRSTOR.
             */
            int pos = tr_find(&path, xs_save, 0);
            ma.counter[2] = tr_occurrences(&path, &ma, 2, pos) - 1;
            ma.counter[3] = tr_occurrences(&path, &ma, 3, pos) + 5;
        }
        prepare(cb, ring, &ma, 0);
        prepare(cb2, ring2, &mb, 0);
        memset(user_area, 0, sizeof(user_area));
        set_args(&args, cb, n1);
        args.data = (uintptr_t)user_area;
        args.slw_ret = (uintptr_t)cb2;
        run_in_user(xs_prog, (uintptr_t)&args);

        snprintf(what, sizeof(what), "CPL 3 XSAVE/XRSTOR%s, session 1",
                 variant ? " (IRE crosses on XSAVE and XRSTOR)" : "");
        tr_simulate(&path, &ma, &out);
        report(out.nsnap == 2, "%s: (model: XSAVE and the LLWPCB switch flush)", what);
        report(tr_field(*(uint32_t *)(user_area + LWP_OFF + 68)) == out.snap[0][2] &&
               tr_field(*(uint32_t *)(user_area + LWP_OFF + 72)) == out.snap[0][3],
               "%s: XSAVE saved EventCounter2/3 = %d/%d, the count before it (want %d/%d)",
               what, tr_field(*(uint32_t *)(user_area + LWP_OFF + 68)),
               tr_field(*(uint32_t *)(user_area + LWP_OFF + 72)), out.snap[0][2], out.snap[0][3]);
        tr_check_ring(what, &out, ring, NSLOTS, 0, cb->head / 32, CORE_ID);
        report(tr_field(cb->event[1].counter) == out.snap[1][2] &&
               tr_field(cb->event[2].counter) == out.snap[1][3],
               "%s: LLWPCB of a new LWPCB flushed EventCounter2/3 = %d/%d (want %d/%d)", what,
               tr_field(cb->event[1].counter), tr_field(cb->event[2].counter), out.snap[1][2],
               out.snap[1][3]);
        if (variant) {
            report(ring[0].event_id == 2 && ring[0].ip == (uintptr_t)xs_rstor,
                   "%s: XRSTOR restored EventCounter2 = 0, then retired: the first record "
                   "names it (%#llx, want %#lx)", what, (unsigned long long)ring[0].ip,
                   (unsigned long)(uintptr_t)xs_rstor);
            report(out.nrec >= 2 && out.rec[1].id == 3,
                   "%s: (model: BRE's record after XSAVE was rolled back, it crossed again)",
                   what);
        }
        snprintf(what, sizeof(what), "CPL 3 LLWPCB of a new LWPCB mid-session%s, session 2",
                 variant ? " (variant)" : "");
        verify(what, &path_b, &mb, cb2, ring2, &args, 0);
    }
}

/* ---- d2: effective addresses in a code segment with a base ------------------ */

static void test_cs_base(void)
{
    extern uint64_t gdt[];
    const unsigned iters = 150;
    struct tr_cfg m;
    char what[96];
    const char *mode = sizeof(void *) == 8 ? "compatibility mode" : "legacy mode";

    /* 32-bit code, DPL 3, base CSB_BASE, 4 GiB limit. */
    gdt[CSB_SEL >> 3] = 0x00cffb000000ffffull | (uint64_t)CSB_BASE << 16;
    tr_begin(&path, csb_tab, csb_tab_end);
    tr_span(&path, csb_start, csb_back);
    tr_span(&path, csb_fn, csb_loop);
    for (unsigned i = 0; i < iters; i++) {
        tr_span(&path, csb_loop, csb_l);
        tr_span_n(&path, csb_l, csb_l_end, 2);
        tr_span(&path, csb_l_end, csb_c);
        tr_span(&path, csb_sub, csb_fn_end);
        tr_span(&path, csb_c, csb_loop_end);
    }
    tr_span(&path, csb_loop_end, csb_sub);
    tr_span(&path, csb_back, csb_done);

    cfg_init(&m, TR_EV_IRE | TR_EV_BRE, 255);
    m.eff_lo = (uintptr_t)csb_fn;
    m.eff_hi = (uintptr_t)csb_fn_end;
    m.eff_sub = CSB_BASE;
    snprintf(what, sizeof(what), "CS base %#x (%s)", CSB_BASE, mode);
    run_and_verify(what, csb_prog, &path, &m, iters);
    bool eff = out.nrec > 4;
    for (unsigned k = 0; k < out.nrec; k++) {
        eff &= out.rec[k].ip < (uintptr_t)csb_fn - CSB_BASE + 0x100 || out.rec[k].ip >= m.eff_hi;
    }
    report(eff, "%s: (model: records in the segment carry offsets, not linear addresses)", what);

    /* IP filtering compares effective addresses. */
    m.filters = TR_F_IPF;
    m.base_ip = (uintptr_t)csb_l - CSB_BASE;
    m.limit_ip = (uintptr_t)csb_c - CSB_BASE;
    snprintf(what, sizeof(what), "CS base %#x (%s), IPF on offsets%s", CSB_BASE, mode,
             ipf_supported ? "" : " (ignored)");
    run_and_verify(what, csb_prog, &path, &m, iters);
    gdt[CSB_SEL >> 3] = 0;
}

/* ---- h3: instruction-fetch faults ----------------------------------------- */

static volatile unsigned ff_n;
static volatile uintptr_t ff_rip[2], ff_cr2[2];

static void on_pf_fetch(struct ex_regs *regs)
{
    uintptr_t cr2 = read_cr2();
    uintptr_t b = (uintptr_t)ff_anchor + PAGE_SIZE;

    if (cr2 < b || cr2 >= b + 2 * PAGE_SIZE || ff_n == 2) {
        fatal("#PF", regs);
    }
    ff_rip[ff_n] = regs->rip;
    ff_cr2[ff_n] = cr2;
    ff_n++;
    vm_set_flags(cr2, 1, PTE_P, 0);
}

static void test_fetch_faults(void)
{
    static const struct {
        const char *at;
        unsigned id;
        const char *what;
    } cross[] = {
        { NULL, 0, "fetch faults: straddling MOV, JMP into a not-present page" },
        { ff_last_a, 2, "IRE crosses on the last instruction of page A" },
        { ff_straddle, 2, "IRE crosses on the instruction straddling into page B" },
        { ff_first_b, 2, "IRE crosses on the first instruction of page B" },
        { ff_c, 2, "IRE crosses on the first instruction of page C" },
        { ff_jmp, 3, "BRE crosses on the JMP into the not-present page C" },
    };
    struct tr_cfg m;
    uintptr_t b = (uintptr_t)ff_anchor + PAGE_SIZE, c = b + PAGE_SIZE;

    tr_begin(&path, ff_tab, ff_tab_end);
    tr_span(&path, ff_start, ff_done);
    set_irq_handler(PF_VECTOR, on_pf_fetch);
    for (unsigned i = 0; i < sizeof(cross) / sizeof(cross[0]); i++) {
        cfg_init(&m, TR_EV_IRE | TR_EV_BRE, 255);
        if (cross[i].at) {
            int pos = tr_find(&path, cross[i].at, 0);
            m.counter[cross[i].id] = tr_occurrences(&path, &m, cross[i].id, pos) - 1;
        }
        vm_set_flags(b, 2 * PAGE_SIZE, 0, PTE_P);
        ff_n = 0;
        prepare(cb, ring, &m, 0);
        set_args(&args, cb, 0);
        run_in_user(ff_prog, (uintptr_t)&args);
        report(ff_n == 2 && ff_rip[0] == (uintptr_t)ff_straddle && ff_cr2[0] == b &&
               ff_rip[1] == c && ff_cr2[1] == c,
               "%s: #PF on fetch at %#lx (cr2 %#lx) and %#lx", cross[i].what,
               (unsigned long)ff_rip[0], (unsigned long)ff_cr2[0], (unsigned long)ff_rip[1]);
        verify(cross[i].what, &path, &m, cb, ring, &args, 0);
        if (cross[i].at) {
            report(ring[0].event_id == cross[i].id && ring[0].ip == (uintptr_t)cross[i].at &&
                   (cross[i].id != 3 || ring[0].data2 == c),
                   "%s: the record names it (%#llx)", cross[i].what,
                   (unsigned long long)ring[0].ip);
        }
    }
    set_irq_handler(PF_VECTOR, NULL);
}

/* ---- i: two tasks switched with XSAVE/XRSTOR ------------------------------- */

static struct ex_regs task_regs[2];
static uint8_t task_area[2][XSAVE_BYTES] __attribute__((aligned(64)));
static uint8_t task_stack[4096] __attribute__((aligned(16)));
static int cur_task;
static bool task_done[2];
static unsigned switches;

static void switch_task(struct ex_regs *regs, int next)
{
    xsave(task_area[cur_task], XCR0_LWP);
    task_regs[cur_task] = *regs;
    *regs = task_regs[next];
    xrstor(task_area[next], XCR0_LWP);
    cur_task = next;
    switches++;
}

static void on_yield(struct ex_regs *regs)
{
    if (!task_done[!cur_task]) {
        switch_task(regs, !cur_task);
    }
}

static void on_done(struct ex_regs *regs)
{
    task_done[cur_task] = true;
    if (!task_done[!cur_task]) {
        switch_task(regs, !cur_task);
    }
}

static void test_tasks(void)
{
    static struct tr_path path_b;
    struct tr_cfg ma, mb;
    const unsigned iters_a = 150, iters_b = 110;

    set_irq_handler(VEC_YIELD, on_yield);
    set_irq_handler(VEC_DONE, on_done);
    cur_task = 0;
    task_done[0] = task_done[1] = false;
    switches = 0;
    memset(task_area, 0, sizeof(task_area));   /* XSTATE_BV = 0: B starts without LWP */

    cfg_init(&ma, TR_EV_IRE | TR_EV_BRE, 255);
    cfg_init(&mb, TR_EV_IRE | TR_EV_BRE, 100);
    mb.interval[2] = 300;
    mb.interval[3] = 256;
    prepare(cb, ring, &ma, 0);
    prepare(cb2, ring2, &mb, 0);
    set_args(&args, cb, iters_a);
    set_args(&args2, cb2, iters_b);

    memset(&task_regs[1], 0, sizeof(task_regs[1]));
    task_regs[1].rip = (uintptr_t)tsk_prog;
    task_regs[1].cs = USER_CS;
    task_regs[1].rflags = 0x3002;
    task_regs[1].ss = USER_DS;
#ifdef __x86_64__
    task_regs[1].rdi = (uintptr_t)&args2;
    task_regs[1].rsp = (uintptr_t)&task_stack[sizeof(task_stack) - 8];
#else
    uint32_t *sp = (uint32_t *)&task_stack[sizeof(task_stack) - 8];
    sp[0] = 0;                                 /* return address, never used */
    sp[1] = (uintptr_t)&args2;
    task_regs[1].rsp = (uintptr_t)sp;
    task_regs[1].ds = task_regs[1].es = USER_DS;
#endif
    run_in_user(tsk_prog, (uintptr_t)&args);
    report(task_done[0] && task_done[1] && switches >= iters_b * 2,
           "tasks A and B ran to the end with %u switches", switches);

    path_tsk(&path, iters_a);
    verify("task A", &path, &ma, cb, ring, &args, 0);
    path_tsk(&path_b, iters_b);
    verify("task B", &path_b, &mb, cb2, ring2, &args2, 0);
    set_irq_handler(VEC_YIELD, NULL);
    set_irq_handler(VEC_DONE, NULL);
}

/* ---- j: a record whose store faults ---------------------------------------- */

static uint8_t pf_area[XSAVE_BYTES] __attribute__((aligned(64)));
static volatile unsigned pnd_faults, n_prot;
static volatile uintptr_t pnd_rip, pnd_cr2, pnd_err;
static uint64_t pnd_clear;                     /* PTE_RW or PTE_P */
static bool pnd_switch;                        /* discard LWP state and XRSTOR it back */
static uintptr_t pnd_cbaddr_off;

static void on_prot(struct ex_regs *regs)
{
    if (n_prot++ == 0) {
        vm_set_flags((uintptr_t)ring, PAGE_SIZE, 0, pnd_clear);
    }
}

static void on_pf_ring(struct ex_regs *regs)
{
    uintptr_t cr2 = read_cr2();

    if (cr2 < (uintptr_t)ring || cr2 >= (uintptr_t)ring + PAGE_SIZE || pnd_faults) {
        fatal("#PF", regs);
    }
    pnd_faults++;
    pnd_rip = regs->rip;
    pnd_cr2 = cr2;
    pnd_err = regs->error_code;
    memset(pf_area, 0, sizeof(pf_area));
    xsave(pf_area, XCR0_LWP);
    vm_set_flags((uintptr_t)ring, PAGE_SIZE, pnd_clear, 0);
    if (pnd_switch) {
        /* As if another thread ran: LWP stopped, then this one's state restored. */
        wrmsr(MSR_LWP_CBADDR, 0);
        pnd_cbaddr_off = rdmsr(MSR_LWP_CBADDR);
        xrstor(pf_area, XCR0_LWP);
    }
}

#define PF_U32(off) (*(uint32_t *)(pf_area + LWP_OFF + (off)))
#define PF_U64(off) (*(uint64_t *)(pf_area + LWP_OFF + (off)))

static void pending(const char *what, struct tr_cfg *m, uint64_t clear, uint32_t err)
{
    const unsigned iters = 200;
    const uint32_t head0 = 5 * 32;

    pnd_clear = clear;
    pnd_faults = n_prot = 0;
    set_irq_handler(VEC_PROT, on_prot);
    set_irq_handler(PF_VECTOR, on_pf_ring);
    prepare(cb, ring, m, head0);
    set_args(&args, cb, iters);
    run_in_user(pnd_prog, (uintptr_t)&args);
    set_irq_handler(VEC_PROT, NULL);
    set_irq_handler(PF_VECTOR, NULL);

    verify(what, &path, m, cb, ring, &args, head0);
    const struct tr_rec *r = &out.rec[0];
    report(pnd_faults == 1, "%s: one #PF (%u)", what, pnd_faults);
    report(pnd_err == err, "%s: error code %#lx (want %#x)", what, (unsigned long)pnd_err, err);
    report(pnd_cr2 == (uintptr_t)&ring[head0 / 32], "%s: CR2 %#lx is the record's slot %#lx", what,
           (unsigned long)pnd_cr2, (unsigned long)(uintptr_t)&ring[head0 / 32]);
    report(pnd_rip == r->next,
           "%s: reported after the crossing instruction %#x retired: rip %#lx (want %#x)",
           what, r->ip, (unsigned long)pnd_rip, r->next);
    report((*(uint64_t *)(pf_area + 512) & XCR0_LWP) && PF_U64(0) == (uintptr_t)cb,
           "%s: XSAVE in the handler: LWP enabled, LWPCBAddress", what);
    report(pf_area[LWP_OFF + 32] == 2 && PF_U64(32 + 8) == r->ip,
           "%s: SavedEventRecord EventId %u InstructionAddress %#llx (want 2, %#x)", what,
           pf_area[LWP_OFF + 32], (unsigned long long)PF_U64(32 + 8), r->ip);
    report(PF_U32(12) == head0, "%s: XSAVE BufferHeadOffset %u not advanced (want %u)", what,
           PF_U32(12), head0);
    report(tr_field(PF_U32(68)) == -1,
           "%s: XSAVE EventCounter2 = %d: not reset before the record is stored (want -1)",
           what, tr_field(PF_U32(68)));
}

static void test_pending(void)
{
    struct tr_cfg m;

    path_pnd(&path, 200);
    cfg_init(&m, TR_EV_IRE, 255);
    m.fault_rec = 0;
    pending("IRE record into a read-only ring page", &m, PTE_RW,
            PFERR_PRESENT | PFERR_WRITE | PFERR_USER);

    /* IRE and BRE cross on the same JNZ; the ring page is not present. */
    cfg_init(&m, TR_EV_IRE | TR_EV_BRE, 0);
    int pos = tr_find(&path, pnd_jnz, 20);
    m.counter[2] = tr_occurrences(&path, &m, 2, pos) - 1;
    m.counter[3] = tr_occurrences(&path, &m, 3, pos) - 1;
    m.fault_rec = 0;
    pending("IRE+BRE cross on JNZ, ring page not present", &m, PTE_P,
            PFERR_WRITE | PFERR_USER);
    int32_t discarded_c3 = tr_field(PF_U32(72));
    report(out.discarded == 1 && out.rec[0].pos == (unsigned)pos && out.rec[1].id == 3 &&
           out.rec[1].ip == (uintptr_t)pnd_jnz,
           "(model: the BRE record of that JNZ is discarded, the next JNZ reports)");
    report(ring[5].event_id == 2 && ring[6].event_id == 3 &&
           ring[6].ip == (uintptr_t)pnd_jnz && ring[5].ip == ring[6].ip &&
           ring[6].data2 == (uintptr_t)pnd_top,
           "the pending IRE record, then BRE at the next JNZ (not the discarded one)");
    report(discarded_c3 == -1,
           "XSAVE in the handler: EventCounter3 stays negative (%d, want -1) after its record "
           "was discarded", discarded_c3);

    /* The handler saves the state, stops LWP and restores it: the record survives. */
    cfg_init(&m, TR_EV_IRE | TR_EV_BRE, 255);
    m.counter[3] = 60;
    m.fault_rec = 0;
    pnd_switch = true;
    pending("pending record through XSAVE, LWP_CBADDR = 0, XRSTOR", &m, PTE_RW,
            PFERR_PRESENT | PFERR_WRITE | PFERR_USER);
    pnd_switch = false;
    report(pnd_cbaddr_off == 0, "(LWP was stopped in the handler)");
}

/* ---- l: the threshold interrupt for hardware-event records ------------------ */

/*
 * Single-stepped (EFLAGS.TF), a JMP whose branch record meets the
 * threshold: the #DB after it and the LWP interrupt both arrive, the trap
 * first (it belongs to the instruction that retired; a maskable interrupt
 * is taken at the boundary after it, the lowest priority of the two).
 */
asm(".pushsection .text\n"
    ".globl tf_prog\n"
    "tf_prog:\n\t"
    PROLOGUE
    "mov (" R_DI "), %eax\n\t"
    "llwpcb %eax\n\t"
    "pushf\n\t"
#ifdef __x86_64__
    "orl $0x100, (%rsp)\n\t"
#else
    "orl $0x100, (%esp)\n\t"
#endif
    "popf\n\t"
    "nop\n"
    ".globl tf_jmp\n"
    "tf_jmp:\n\t"
    "jmp tf_to\n"
    ".globl tf_to\n"
    "tf_to:\n\t"
    "nop\n\t"
    "pushf\n\t"
#ifdef __x86_64__
    "andl $~0x100, (%rsp)\n\t"
#else
    "andl $~0x100, (%esp)\n\t"
#endif
    "popf\n\t"
    "xor %eax, %eax\n\t"
    "llwpcb %eax\n\t"
    EPILOGUE
    ".popsection\n");

static volatile unsigned n_thr, thr_bad;

static void on_threshold(struct ex_regs *regs)
{
    n_thr++;
    /* The head that crossed the threshold is in the LWPCB (table 6-1). */
    thr_bad += cb->head < 3 * 32 || (regs->cs & 3) != 3;
    apic_eoi();
}

static void test_threshold(void)
{
    struct tr_cfg m;
    const unsigned iters = 300;

    set_irq_handler(LWP_VECTOR, on_threshold);
    n_thr = thr_bad = 0;
    path_ire(&path, iters);
    cfg_init(&m, TR_EV_IRE, 255);
    prepare(cb, ring, &m, 0);
    cb->flags |= LWP_F_INT;
    cb->threshold = 3 * 32;
    set_args(&args, cb, iters);
    asm volatile("sti");
    run_in_user(ire_prog, (uintptr_t)&args);
    asm volatile("cli");
    set_irq_handler(LWP_VECTOR, NULL);
    verify("IRE records with the threshold interrupt", &path, &m, cb, ring, &args, 0);
    report(n_thr == out.nrec - 2 && !thr_bad,
           "a threshold interrupt at CPL 3 for each of the %u stores at or above the threshold "
           "(%u, %u bad)", out.nrec - 2, n_thr, thr_bad);
}

/* What arrived at CPL 3 while tf_prog ran: 'D' (#DB) or 'I' (LWP), and where. */
static volatile unsigned tf_n;
static volatile char tf_kind[32];
static volatile uintptr_t tf_rip[32];

static void tf_log(char kind, struct ex_regs *regs)
{
    if ((regs->cs & 3) != 3) {
        fatal(kind == 'D' ? "#DB" : "LWP interrupt", regs);
    }
    if (tf_n < 32) {
        tf_kind[tf_n] = kind;
        tf_rip[tf_n] = regs->rip;
    }
    tf_n++;
}

static void on_db_tf(struct ex_regs *regs)
{
    tf_log('D', regs);
}

static void on_threshold_tf(struct ex_regs *regs)
{
    tf_log('I', regs);
    apic_eoi();
}

static void test_single_step_threshold(void)
{
    struct tr_cfg m;
    int db_at = -1, irq_at = -1;
    unsigned n_irq = 0;

    cfg_init(&m, TR_EV_BRE, 255);
    m.counter[3] = 0;                   /* the JMP, the first branch, crosses */
    prepare(cb, ring, &m, 0);
    cb->flags |= LWP_F_INT;
    cb->threshold = 32;                 /* its record meets the threshold */
    set_args(&args, cb, 1);
    tf_n = 0;
    set_irq_handler(DB_VECTOR, on_db_tf);
    set_irq_handler(LWP_VECTOR, on_threshold_tf);
    asm volatile("sti");
    run_in_user(tf_prog, (uintptr_t)&args);
    asm volatile("cli");
    set_irq_handler(LWP_VECTOR, NULL);
    set_irq_handler(DB_VECTOR, on_db);
    for (unsigned i = 0; i < tf_n && i < 32; i++) {
        if (tf_kind[i] == 'D' && tf_rip[i] == (uintptr_t)tf_to && db_at < 0) {
            db_at = i;
        }
        if (tf_kind[i] == 'I') {
            n_irq++;
            irq_at = irq_at < 0 ? (int)i : irq_at;
        }
    }
    report(ring[0].event_id == 3 && ring[0].ip == (uintptr_t)tf_jmp &&
           ring[0].data2 == (uintptr_t)tf_to,
           "single-stepped JMP: its branch record (EventId %u at %#llx to %#llx)",
           ring[0].event_id, (unsigned long long)ring[0].ip,
           (unsigned long long)ring[0].data2);
    report(db_at >= 0, "single-stepped JMP whose record interrupts: the #DB after it "
           "arrives, at its target (%u events)", tf_n);
    report(n_irq == 1 && irq_at >= 0 && tf_rip[irq_at] == (uintptr_t)tf_to,
           "... and the threshold interrupt once, at the target (%u, at %#lx)", n_irq,
           irq_at >= 0 ? (unsigned long)tf_rip[irq_at] : 0ul);
    report(db_at >= 0 && irq_at > db_at, "... the #DB first (at %d, interrupt at %d)",
           db_at, irq_at);
}

/* ---- k: a full ring: records are missed, counters still reset --------------- */

static void test_full(void)
{
    struct tr_cfg m;
    const unsigned iters = 300;

    path_ire(&path, iters);
    cfg_init(&m, TR_EV_IRE, 255);
    prepare(cb, ring, &m, 0);
    cb->tail = 4 * 32;                         /* room for 3 records */
    set_args(&args, cb, iters);
    run_in_user(ire_prog, (uintptr_t)&args);
    tr_simulate(&path, &m, &out);
    unsigned n = out.nrec;
    report(n > 4 && cb->missed == n - 3, "full ring: MissedEvents %llu (want %u)",
           (unsigned long long)cb->missed, n - 3);
    report(cb->head == 3 * 32, "full ring: head stays %u (want 96)", cb->head);
    bool ok = n > 4;
    for (unsigned k = 0; k < 3 && ok; k++) {
        ok &= ring[k].event_id == 2 && ring[k].ip == out.rec[k].ip;
    }
    report(ok, "full ring: the first 3 records stored in order");
    report(ring[3].event_id == out.rec[n - 1].id && ring[3].ip == out.rec[n - 1].ip,
           "full ring: the slot at the head holds the last record (EventId %u at %#llx, want "
           "%u at %#x)", ring[3].event_id, (unsigned long long)ring[3].ip, out.rec[n - 1].id,
           out.rec[n - 1].ip);
    report(ring[4].event_id == 0, "full ring: nothing written at the tail");
    verify_flush("full ring", &path, &m, cb, &args, 0, 3);
}

int main(void)
{
    cb = alloc_pages(1);
    cb2 = alloc_pages(1);
    ring = alloc_pages(1);
    ring2 = alloc_pages(1);
    data_page = alloc_pages(1);

    test_cpuid();
    lwp_os_enable(CORE_ID, LWP_VECTOR);
#ifdef __x86_64__
    /* SYSCALL enters sys_stub at CPL 0 (CS 0x08), SYSRET returns to 0x33/0x2b. */
    wrmsr(0xC0000080, rdmsr(0xC0000080) | 1);          /* EFER.SCE */
    wrmsr(0xC0000081, 0x0020000800000000ull);          /* STAR */
    wrmsr(0xC0000082, (uintptr_t)sys_stub);            /* LSTAR */
    wrmsr(0xC0000084, 0x200);                          /* SFMASK: IF */
#else
    /* SYSENTER: CS 0x10 (flat), SYSEXIT returns to 0x23/0x2b. */
    wrmsr(0x174, 0x10);
    wrmsr(0x175, (uintptr_t)alloc_pages(1) + PAGE_SIZE);
    wrmsr(0x176, (uintptr_t)sys_stub);
#endif
    apic_enable();
    set_user_gate(VEC_NOP);
    set_user_gate(VEC_UNMAP);
    set_user_gate(VEC_PROT);
    set_user_gate(VEC_YIELD);
    set_user_gate(VEC_DONE);
    set_user_gate(BP_VECTOR);
    set_irq_handler(VEC_NOP, on_nop);
    set_irq_handler(BP_VECTOR, on_bp);
    set_irq_handler(DB_VECTOR, on_db);
    set_user_gate(OF_VECTOR);
    set_irq_handler(OF_VECTOR, on_of);
    {
        /* A DPL 3 call gate to gate_stub in the kernel code segment. */
        extern uint64_t gdt[];
        uint64_t off = (uintptr_t)gate_stub;
        gdt[GATE_SEL >> 3] = (off & 0xffff) | (uint64_t)KERNEL_CS << 16 | 0xecull << 40 |
                             (off >> 16 & 0xffff) << 48;
#ifdef __x86_64__
        gdt[(GATE_SEL >> 3) + 1] = 0;
#endif
    }

    test_llwpcb();
    test_ire();
    test_lengths();
    test_bre();
    test_ipf();
    test_same_insn();
    test_faults();
    test_rep();
    test_user_xsave();
    test_cs_base();
    test_fetch_faults();
    test_tasks();
    test_pending();
    test_full();
    test_threshold();
    test_single_step_threshold();
    return 0;
}
