/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Differential fuzz target: QEMU's x86 decoder with the project's XOP/LWP
 * rows (target-i386-lwp/glue/lwp-decode.c.inc), cut out of the patched QEMU
 * source by extract-qemu-decoder.sh and run from disas_insn()'s first byte
 * to its last #UD check (qemu-decoder-run.c, built as for the 64-bit
 * targets and as for qemu-i386), against the simple reference of
 * lwp-decode-reference.h.  For every input both must agree on
 * accept / #UD / #GP (length) / not-XOP, and on an accepted instruction on
 * which one it is, its length, operand and address size, registers, memory
 * operand (base, index, scale, displacement, RIP-relative target) and
 * immediate.  Any disagreement aborts with both views.
 *
 * Input: byte 0 picks the mode (real, vm86, 16-, 32-bit protected, 64-bit)
 * and whether the CPU has LWP; the rest are code bytes (zero-padded).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lwp-decode-reference.h"
#include "qemu-decoder-run.h"

#define CODE_BYTES 32

static const char *const qemu_names[] = {
    "accepted", "#UD", "#NM", "#GP (length)", "not XOP",
};
static const char *const ref_names[] = { "not XOP", "accepted", "#UD", "#GP (length)" };

static void mismatch(const char *target, const char *what, const uint8_t *code,
                     enum ref_mode mode, const struct qemu_run *q, const struct ref_result *r)
{
    fprintf(stderr, "fuzz_decode: QEMU (%s) and the reference disagree on %s\n  mode %d, code:",
            target, what, mode);
    for (int i = 0; i < 16; i++) {
        fprintf(stderr, " %02x", code[i]);
    }
    fprintf(stderr, "\n  QEMU: %s, %u bytes fetched; reference: %s, length %u\n",
            qemu_names[q->verdict], q->len, ref_names[r->verdict], r->len);
    abort();
}

static uint64_t trunc_addr(uint64_t v, unsigned asize)
{
    return asize == 64 ? v : v & ((1ull << asize) - 1);
}

static void compare(const char *t, const uint8_t *code, enum ref_mode mode,
                    const struct qemu_run *q, const struct ref_result *r)
{
    switch (r->verdict) {
    case REF_OTHER:
        /* Not an XOP instruction: only require that it is not taken as one. */
        if (q->verdict == QRUN_ACCEPTED) {
            mismatch(t, "a non-XOP instruction", code, mode, q, r);
        }
        return;
    case REF_GP:
        if (q->verdict != QRUN_GP_LENGTH) {
            mismatch(t, "an instruction longer than 15 bytes", code, mode, q, r);
        }
        return;
    case REF_UD:
        /*
         * Which of #UD and #GP (length) wins when both apply is not the LWP
         * specification's business (QEMU raises whichever it meets first).
         */
        if (q->verdict == QRUN_UD ||
            (q->verdict == QRUN_GP_LENGTH && (r->len_known ? r->len : r->xop_at + 5) > 15)) {
            return;
        }
        mismatch(t, "#UD", code, mode, q, r);
        return;
    case REF_OK:
        break;
    }

    if (q->verdict != QRUN_ACCEPTED) {
        mismatch(t, "a valid LWP instruction", code, mode, q, r);
    }
    if ((int)q->insn != (int)r->insn) {
        mismatch(t, "which instruction", code, mode, q, r);
    }
    if (q->len != r->len) {
        mismatch(t, "the length", code, mode, q, r);
    }
    if (q->asize != r->asize) {
        mismatch(t, "the address size", code, mode, q, r);
    }
    if (q->opsize != r->opsize) {
        mismatch(t, "the operand size", code, mode, q, r);
    }
    if (r->insn == REF_LWPINS || r->insn == REF_LWPVAL) {
        if (q->vreg != r->vreg) {
            mismatch(t, "the vvvv register", code, mode, q, r);
        }
        if (q->rm_opsize != 32) {
            mismatch(t, "the r/m operand size", code, mode, q, r);
        }
        if (q->imm != r->imm) {
            mismatch(t, "the immediate", code, mode, q, r);
        }
    }
    if (r->rm_reg >= 0) {
        if (q->rm_mem || q->rm_reg != r->rm_reg) {
            mismatch(t, "the r/m register", code, mode, q, r);
        }
    } else if (!q->rm_mem || q->base != r->base || q->index != r->index ||
               (r->index >= 0 && q->scale != r->scale) ||
               trunc_addr(q->disp, r->asize) != trunc_addr(r->disp, r->asize)) {
        mismatch(t, "the memory operand", code, mode, q, r);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const enum ref_mode modes[8] = {
        REF_REAL, REF_VM86, REF_PROT16, REF_PROT32, REF_PROT32, REF_LONG64, REF_LONG64, REF_LONG64,
    };
    uint8_t code[CODE_BYTES + 16] = { 0 };
    struct qemu_run q;

    if (size < 1) {
        return 0;
    }
    const enum ref_mode mode = modes[data[0] & 7];
    const bool has_lwp = (data[0] & 0x18) != 0x18;
    memcpy(code, data + 1, size - 1 < CODE_BYTES ? size - 1 : CODE_BYTES);

    const struct ref_result r = ref_decode(code, mode, has_lwp);
    qemu_decode_x86_64(code, sizeof(code), (enum qemu_run_mode)mode, has_lwp, &q);
    compare("x86_64", code, mode, &q, &r);
    if (mode != REF_LONG64) {
        /* qemu-i386 has no 64-bit mode and no REX. */
        qemu_decode_i386(code, sizeof(code), (enum qemu_run_mode)mode, has_lwp, &q);
        compare("i386", code, mode, &q, &r);
    }
    return 0;
}
