/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Runs QEMU's decoder text (qemu-decoder.h, generated) on one instruction;
 * see qemu-decoder-run.h.  Compiled twice: as for the 64-bit targets
 * (qemu_decode_x86_64) and with -DQEMU_DECODER_I386 as for qemu-i386.
 */
#include "qemu-decoder-shim.h"
#include "qemu-decoder-run.h"

static struct X86DecodedInsn *accepted;

#define QEMU_DECODER_ACCEPT(s, d)               \
    do {                                        \
        *accepted = *(d);                       \
        (s)->verdict = QEMU_DECODE_ACCEPTED;    \
    } while (0)
#define QEMU_DECODER_REJECT(s, v) ((s)->verdict = (v))

#include "qemu-decoder.h"

#ifdef QEMU_DECODER_I386
#define QEMU_DECODE_FN qemu_decode_i386
#else
#define QEMU_DECODE_FN qemu_decode_x86_64
#endif

static unsigned mo_bits(MemOp ot)
{
    return 8u << ot;
}

void QEMU_DECODE_FN(const uint8_t *code, size_t len, enum qemu_run_mode mode, bool has_lwp,
                    struct qemu_run *out)
{
    CPUX86State env = { 0 };
    X86DecodedInsn d;
    DisasContext s;

    memset(&s, 0, sizeof(s));
    memset(&d, 0, sizeof(d));
    accepted = &d;
    s.code = code;
    s.code_len = len;
    s.flags = mode == QRUN_REAL ? 0 : HF_PE_MASK;
    s.flags |= mode == QRUN_VM86 ? HF_VM_MASK : 0;
    s.flags |= mode >= QRUN_PROT32 ? HF_CS32_MASK | HF_SS32_MASK : 0;
    s.flags |= mode == QRUN_LONG64 ? HF_CS64_MASK | HF_LMA_MASK : 0;
    s.cpuid_ext3_features = has_lwp ? CPUID_EXT3_LWP : 0;
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

    memset(out, 0, sizeof(*out));
    out->len = s.pc;
    out->insn = QRUN_NOT_LWP;
    switch (s.verdict) {
    case QEMU_DECODE_ACCEPTED:
        out->verdict = QRUN_ACCEPTED;
        break;
    case QEMU_DECODE_ILLEGAL:
    case QEMU_DECODE_UNKNOWN:
        out->verdict = QRUN_UD;
        return;
    case QEMU_DECODE_NM:
        out->verdict = QRUN_NM;
        return;
    case QEMU_DECODE_GP_LENGTH:
        out->verdict = QRUN_GP_LENGTH;
        return;
    default:
        out->verdict = QRUN_OTHER;
        return;
    }

    out->asize = mo_bits(s.aflag);
    if (d.e.gen == gen_LLWPCB || d.e.gen == gen_SLWPCB) {
        /* LLWPCB reads its register (operand 1), SLWPCB writes it (operand 0). */
        const X86DecodedOp *op = &d.op[d.e.gen == gen_LLWPCB ? 1 : 0];
        out->insn = d.e.gen == gen_LLWPCB ? QRUN_LLWPCB : QRUN_SLWPCB;
        out->opsize = mo_bits(op->ot);
        out->rm_mem = op->has_ea;
        out->rm_reg = op->n;
    } else if (d.e.gen == gen_LWPINS || d.e.gen == gen_LWPVAL) {
        out->insn = d.e.gen == gen_LWPINS ? QRUN_LWPINS : QRUN_LWPVAL;
        out->vreg = d.op[0].n;
        out->opsize = mo_bits(d.op[0].ot);
        out->rm_opsize = mo_bits(d.op[1].ot);
        out->rm_mem = d.op[1].has_ea;
        out->rm_reg = d.op[1].n;
        out->imm = (uint32_t)d.immediate;
    }
    if (out->rm_mem) {
        out->base = d.mem.base;
        out->index = d.mem.index;
        out->scale = d.mem.scale;
        out->disp = (uint64_t)(int64_t)d.mem.disp;
    }
}
