/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Differential fuzz target: QEMU's x86 decoder with the project's XOP/LWP
 * rows (target-i386-lwp/glue/lwp-decode.c.inc), cut out of the patched QEMU
 * source by extract-qemu-decoder.sh and run from disas_insn()'s first byte
 * to its last #UD check, against the simple reference of
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

#include "qemu-decoder-shim.h"

static struct {
    bool accepted;
    unsigned char insn[512];
} qemu_out;

#define QEMU_DECODER_ACCEPT(s, d)                                        \
    do {                                                                 \
        _Static_assert(sizeof(*(d)) <= sizeof(qemu_out.insn), "insn");  \
        memcpy(qemu_out.insn, (d), sizeof(*(d)));                        \
        (s)->verdict = QEMU_DECODE_ACCEPTED;                             \
    } while (0)
#define QEMU_DECODER_REJECT(s, v) ((s)->verdict = (v))

#include "qemu-decoder.h"
#include "lwp-decode-reference.h"

#define CODE_BYTES 32

static const char *const verdict_names[] = {
    "none", "accepted", "#UD", "#UD (unknown)", "#NM", "#GP (length)", "not XOP",
};
static const char *const ref_names[] = { "not XOP", "accepted", "#UD", "#GP (length)" };

static void mismatch(const char *what, const uint8_t *code, enum ref_mode mode,
                     const DisasContext *s, const struct ref_result *r)
{
    fprintf(stderr, "fuzz_decode: QEMU and the reference disagree on %s\n  mode %d, code:",
            what, mode);
    for (int i = 0; i < 16; i++) {
        fprintf(stderr, " %02x", code[i]);
    }
    fprintf(stderr, "\n  QEMU: %s, pc %lu; reference: %s, len %u\n",
            verdict_names[s->verdict], (unsigned long)s->pc, ref_names[r->verdict], r->len);
    abort();
}

static unsigned mo_bits(MemOp ot)
{
    return 8u << ot;
}

static uint64_t trunc_addr(uint64_t v, unsigned asize)
{
    return asize == 64 ? v : v & ((1ull << asize) - 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const enum ref_mode modes[8] = {
        REF_REAL, REF_VM86, REF_PROT16, REF_PROT32, REF_PROT32, REF_LONG64, REF_LONG64, REF_LONG64,
    };
    uint8_t code[CODE_BYTES + 16] = { 0 };
    CPUX86State env = { 0 };
    DisasContext s;
    X86DecodedInsn d;

    if (size < 1) {
        return 0;
    }
    const enum ref_mode mode = modes[data[0] & 7];
    const bool has_lwp = (data[0] & 0x18) != 0x18;
    memcpy(code, data + 1, size - 1 < CODE_BYTES ? size - 1 : CODE_BYTES);

    memset(&s, 0, sizeof(s));
    s.code = code;
    s.code_len = sizeof(code);
    s.flags = mode == REF_REAL ? 0 : HF_PE_MASK;
    s.flags |= mode == REF_VM86 ? HF_VM_MASK : 0;
    s.flags |= mode >= REF_PROT32 ? HF_CS32_MASK | HF_SS32_MASK : 0;
    s.flags |= mode == REF_LONG64 ? HF_CS64_MASK | HF_LMA_MASK : 0;
    s.cpuid_ext3_features = has_lwp ? CPUID_EXT3_LWP : 0;
    memset(&qemu_out, 0, sizeof(qemu_out));
    switch (sigsetjmp(s.jmpbuf, 0)) {
    case 0:
        disas_insn(&s, (CPUState *)&env);
        break;
    case 1:
        s.verdict = QEMU_DECODE_GP_LENGTH;
        break;
    default:
        break;      /* QEMU_DECODE_OTHER */
    }
    memcpy(&d, qemu_out.insn, sizeof(d));

    const struct ref_result r = ref_decode(code, mode, has_lwp);
    const bool qemu_ud = s.verdict == QEMU_DECODE_ILLEGAL || s.verdict == QEMU_DECODE_UNKNOWN;
    switch (r.verdict) {
    case REF_OTHER:
        /* Not an XOP instruction: only require that it is not taken as one. */
        if (s.verdict == QEMU_DECODE_ACCEPTED) {
            mismatch("a non-XOP instruction", code, mode, &s, &r);
        }
        return 0;
    case REF_GP:
        if (s.verdict != QEMU_DECODE_GP_LENGTH) {
            mismatch("an instruction longer than 15 bytes", code, mode, &s, &r);
        }
        return 0;
    case REF_UD:
        /*
         * Which of #UD and #GP (length) wins when both apply is not the LWP
         * specification's business (QEMU raises whichever it meets first);
         * with everything up to the ModRM byte in the first 15 bytes, #UD.
         */
        if (qemu_ud) {
            return 0;
        }
        if (s.verdict == QEMU_DECODE_GP_LENGTH &&
            (r.len_known ? r.len : r.xop_at + 5) > 15) {
            return 0;
        }
        mismatch("#UD", code, mode, &s, &r);
        return 0;
    case REF_OK:
        break;
    }

    if (s.verdict != QEMU_DECODE_ACCEPTED) {
        mismatch("a valid LWP instruction", code, mode, &s, &r);
    }
    static void (*const gens[4])(DisasContext *, struct X86DecodedInsn *) = {
        gen_LLWPCB, gen_SLWPCB, gen_LWPINS, gen_LWPVAL,
    };
    if (d.e.gen != gens[r.insn]) {
        mismatch("which instruction", code, mode, &s, &r);
    }
    if (s.pc != r.len) {
        mismatch("the length", code, mode, &s, &r);
    }
    if (mo_bits(s.aflag) != r.asize) {
        mismatch("the address size", code, mode, &s, &r);
    }
    if (r.insn == REF_LLWPCB || r.insn == REF_SLWPCB) {
        /* LLWPCB reads its register (operand 1), SLWPCB writes it (operand 0). */
        const X86DecodedOp *op = &d.op[r.insn == REF_LLWPCB ? 1 : 0];
        if (op->has_ea || op->n != r.rm_reg) {
            mismatch("the r/m register", code, mode, &s, &r);
        }
        if (mo_bits(op->ot) != r.opsize) {
            mismatch("the operand size", code, mode, &s, &r);
        }
        return 0;
    }
    /* LWPINS/LWPVAL: vvvv register, r/m32, imm32. */
    if (d.op[0].n != r.vreg || mo_bits(d.op[0].ot) != r.opsize) {
        mismatch("the vvvv register or operand size", code, mode, &s, &r);
    }
    if (mo_bits(d.op[1].ot) != 32) {
        mismatch("the r/m operand size", code, mode, &s, &r);
    }
    if (r.rm_reg >= 0) {
        if (d.op[1].has_ea || d.op[1].n != r.rm_reg) {
            mismatch("the r/m register", code, mode, &s, &r);
        }
    } else if (!d.op[1].has_ea || d.mem.base != r.base || d.mem.index != r.index ||
               (r.index >= 0 && d.mem.scale != r.scale) ||
               trunc_addr(d.mem.disp, r.asize) != trunc_addr(r.disp, r.asize)) {
        mismatch("the memory operand", code, mode, &s, &r);
    }
    if ((uint32_t)d.immediate != r.imm) {
        mismatch("the immediate", code, mode, &s, &r);
    }
    return 0;
}
