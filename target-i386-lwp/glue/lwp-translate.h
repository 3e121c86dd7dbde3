/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qemu-lwp: what target/i386/tcg/translate.c keeps per TB for counting LWP
 * hardware events, and the hooks it calls (lwp-translate.c.inc).
 */
#ifndef QEMU_LWP_TRANSLATE_H
#define QEMU_LWP_TRANSLATE_H

typedef struct QemuLwpDisas {
    TCGOp *charge_op;         /* sub_i32 of the IRE charge (constant patched) */
    TCGOp *weight_op;         /* ld_i32 of the BRE weight (offset patched) */
    TCGOp *waiting_op;        /* and_i32 of the waiting-record test (mask) */
    TCGOp *info_op[2];        /* mov_i32 of the TB description, lo and hi */
    TCGLabel *slow;           /* the slow path, after the TB's exits */
    TCGLabel *resume;         /* where the slow path rejoins the TB */
    uint32_t charged;         /* leading instructions charged at TB start */
    uint32_t last_off;        /* pc of the last instruction - pc_first */
    /*
     * The lengths of its first LWP_TB_LENS instructions, 4 bits each from
     * bit 0 of lens[0], then of lens[1], known once the next one starts:
     * helper_lwp_tb_slow finds a crossing instruction's address by adding
     * them up.  0: not known.
     */
    uint64_t lens[2];
    bool lens_broken;         /* a length over LWP_TB_LEN_MASK: lens unused */
    vaddr insn_pc;            /* pc of the instruction being translated */
    uint8_t kind;             /* QemuLwpInsnKind of that instruction */
    uint8_t branch;           /* its LwpBranchClass */
    uint8_t len;              /* its length */
    bool rep;                 /* it is a REP string instruction */
    bool restore;             /* an XRSTOR in a TB that does not count */
    bool exit_taken;          /* the exit being made follows a taken branch */
    bool single;              /* cut to length: counted insn by insn */
    uint32_t stepped_insn;    /* num_insns of the last insn counted inline */
    bool goto_ptr;            /* LWP alone turned jmp_opt off */
    bool stores_records;      /* an LWPVAL or LWPINS is in the TB */
    bool store_late;          /* records may wait for the TB's end */
    /* num_insns of the branch whose exits count it (LWP_TB_INFO.EXIT) */
    uint32_t exit_insn;
    bool exit_hooks;          /* lwp_tcg.exit_hooks when translated */
} QemuLwpDisas;

struct DisasContext;
static void lwp_tr_retire(struct DisasContext *s);
static void lwp_tr_uncounted(struct DisasContext *s);
static void lwp_tr_jump_exit(struct DisasContext *s, int tb_num);
static void lwp_tr_goto_exit(struct DisasContext *s, target_ulong new_eip);
static bool lwp_tr_may_goto_ptr(struct DisasContext *s);

#endif
