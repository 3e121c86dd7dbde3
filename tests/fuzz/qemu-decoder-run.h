/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One instruction through QEMU's decoder as cut out by
 * extract-qemu-decoder.sh (qemu-decoder-run.c, built once as in
 * qemu-system-x86_64/qemu-x86_64 and once as in qemu-i386), reduced to what
 * fuzz_decode compares with its reference.
 */
#ifndef QEMU_DECODER_RUN_H
#define QEMU_DECODER_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum qemu_run_mode { QRUN_REAL, QRUN_VM86, QRUN_PROT16, QRUN_PROT32, QRUN_LONG64 };
enum qemu_run_verdict {
    QRUN_ACCEPTED,      /* passed every #UD check (disas_insn up to validate_vex) */
    QRUN_UD,
    QRUN_NM,
    QRUN_GP_LENGTH,     /* longer than 15 bytes */
    QRUN_OTHER,         /* not XOP: handed to the legacy or VEX tables */
};
enum qemu_run_insn { QRUN_LLWPCB, QRUN_SLWPCB, QRUN_LWPINS, QRUN_LWPVAL, QRUN_NOT_LWP };

struct qemu_run {
    enum qemu_run_verdict verdict;
    unsigned len;               /* bytes fetched */
    enum qemu_run_insn insn;
    unsigned opsize;            /* LLWPCB/SLWPCB register, LWPINS/LWPVAL vvvv register */
    unsigned rm_opsize;         /* LWPINS/LWPVAL r/m operand */
    unsigned asize;
    bool rm_mem;
    int rm_reg, vreg;
    int base, index, scale;
    uint64_t disp;
    uint32_t imm;
};

/* @code holds at least 32 bytes. */
void qemu_decode_x86_64(const uint8_t *code, size_t len, enum qemu_run_mode mode,
                        bool has_lwp, struct qemu_run *out);
void qemu_decode_i386(const uint8_t *code, size_t len, enum qemu_run_mode mode,
                      bool has_lwp, struct qemu_run *out);

#endif
