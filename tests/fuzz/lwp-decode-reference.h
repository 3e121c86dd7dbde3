/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A deliberately simple decoder of the four LWP instructions, written from
 * the encoding tables of the LWP specification (43724 rev 3.08, 5.1-5.4),
 * independent of QEMU's table-driven decoder:
 *
 *                         XOP  RXB.mmmmm  W.vvvv.L.pp  Opcode
 *   LLWPCB reg32/64        8F  RXB.09     W.1111.0.00  12 /0   (mod = 11b)
 *   SLWPCB reg32/64        8F  RXB.09     W.1111.0.00  12 /1   (mod = 11b)
 *   LWPINS reg.vvvv, r/m32, imm32  8F RXB.0A W.src1.0.00 12 /0 imm32
 *   LWPVAL reg.vvvv, r/m32, imm32  8F RXB.0A W.src1.0.00 12 /1 imm32
 *
 * plus the rules the specification leaves to the XOP prefix (AMD64 APM):
 * 8Fh is XOP only when mmmmm >= 8 (else POP Ev); a 66, F2, F3, LOCK or REX
 * prefix before XOP is #UD; R/X/B and W act only in 64-bit mode; an
 * instruction longer than 15 bytes is #GP; and 8Fh is never XOP on a CPU
 * without an XOP-encoded instruction set (LWP, XOP, TBM): there 8F /1-7 is
 * POP Ev's #UD, with no byte fetched after the ModRM.  And the spec's own:
 * #UD outside protected mode (real, virtual-8086).
 */
#ifndef LWP_DECODE_REFERENCE_H
#define LWP_DECODE_REFERENCE_H

#include <stdbool.h>
#include <stdint.h>

enum ref_mode { REF_REAL, REF_VM86, REF_PROT16, REF_PROT32, REF_LONG64 };
enum ref_verdict { REF_OTHER, REF_OK, REF_UD, REF_GP };
enum ref_insn { REF_LLWPCB, REF_SLWPCB, REF_LWPINS, REF_LWPVAL };

struct ref_result {
    enum ref_verdict verdict;
    unsigned len;           /* whole instruction, when its format is known */
    bool len_known;
    unsigned xop_at;        /* offset of the 8Fh byte */
    enum ref_insn insn;
    unsigned opsize;        /* 32 or 64: LLWPCB/SLWPCB reg, LWPINS/LWPVAL vvvv reg */
    unsigned asize;         /* 16, 32 or 64 */
    int rm_reg;             /* r/m register, -1 for memory */
    int vreg;               /* vvvv register (LWPINS/LWPVAL) */
    int base, index, scale; /* memory: -1 none, -2 RIP */
    uint64_t disp;          /* memory: displacement, RIP-relative folded in */
    uint32_t imm;
};

/*
 * Outside 64-bit mode the processor ignores vvvv[3] when it names a
 * register (as REX.B; binutils and Xen decode it so): LWPINS/LWPVAL use
 * vvvv & 7 there.  LLWPCB/SLWPCB still need the whole field 1111b.
 */

static inline uint32_t ref_le(const uint8_t *p, unsigned n)
{
    uint32_t v = 0;
    for (unsigned i = 0; i < n; i++) {
        v |= (uint32_t)p[i] << (8 * i);
    }
    return v;
}

/* @code holds at least 32 bytes. */
static inline struct ref_result ref_decode(const uint8_t *code, enum ref_mode mode, bool has_lwp)
{
    struct ref_result r = { .verdict = REF_OTHER, .rm_reg = -1, .base = -1, .index = -1 };
    const bool m64 = mode == REF_LONG64;
    bool bad_prefix = false, adr = false;
    unsigned i = 0;

    /* Legacy prefixes and REX, in any order and number. */
    for (;; i++) {
        const uint8_t b = code[i];
        if (i >= 15) {
            r.verdict = REF_GP;     /* 15 bytes of prefixes and still no opcode */
            return r;
        }
        if (b == 0x66 || b == 0xf2 || b == 0xf3 || b == 0xf0) {
            bad_prefix = true;
        } else if (b == 0x67) {
            adr = true;
        } else if (b == 0x26 || b == 0x2e || b == 0x36 || b == 0x3e || b == 0x64 || b == 0x65) {
            /* segment override: allowed */
        } else if (m64 && (b & 0xf0) == 0x40) {
            bad_prefix = true;      /* REX */
        } else {
            break;
        }
    }
    if (code[i] != 0x8f || (code[i + 1] & 0x1f) < 8 || !has_lwp) {
        /*
         * Not XOP: POP Ev or another opcode.  A CPU without LWP (the
         * harness's CPUs have no XOP or TBM either) has no XOP prefix: 8F
         * is POP Ev, whose /1-7 are #UD after the ModRM byte.
         */
        return r;
    }
    r.xop_at = i;
    const uint8_t xop1 = code[i + 1], xop2 = code[i + 2], opcode = code[i + 3];
    const uint8_t modrm = code[i + 4];
    const unsigned map = xop1 & 0x1f, w = xop2 >> 7, vvvv = (~xop2 >> 3) & 15;
    const unsigned l = (xop2 >> 2) & 1, pp = xop2 & 3;
    const unsigned mod = modrm >> 6, reg = (modrm >> 3) & 7, rm = modrm & 7;
    const unsigned rex_x = m64 && !(xop1 & 0x40) ? 8 : 0, rex_b = m64 && !(xop1 & 0x20) ? 8 : 0;
    bool ud = bad_prefix || mode == REF_REAL || mode == REF_VM86;

    if ((map != 9 && map != 10) || opcode != 0x12 || reg > 1) {
        r.verdict = REF_UD;         /* no other XOP opcode exists here */
        return r;
    }
    r.insn = map == 9 ? (reg ? REF_SLWPCB : REF_LLWPCB) : (reg ? REF_LWPVAL : REF_LWPINS);
    r.opsize = m64 && w ? 64 : 32;
    if (m64) {
        r.asize = adr ? 32 : 64;
    } else {
        r.asize = (mode == REF_PROT32) != adr ? 32 : 16;
    }

    /* ModRM, SIB and displacement. */
    unsigned n = i + 5;
    int64_t disp = 0;
    bool sib = false, rip = false;
    if (mod == 3) {
        r.rm_reg = rm | rex_b;
    } else if (r.asize == 16) {
        static const int base16[8] = { 3, 3, 5, 5, 6, 7, 5, 3 };
        static const int index16[8] = { 6, 7, 6, 7, -1, -1, -1, -1 };
        r.base = base16[rm];
        r.index = index16[rm];
        if (mod == 0 && rm == 6) {
            r.base = -1;
            disp = ref_le(code + n, 2);
            n += 2;
        } else if (mod == 1) {
            disp = (int8_t)code[n++];
        } else if (mod == 2) {
            disp = (int16_t)ref_le(code + n, 2);
            n += 2;
        }
    } else {
        r.base = rm | rex_b;
        if (rm == 4) {
            const uint8_t s = code[n++];
            sib = true;
            r.scale = s >> 6;
            r.index = ((s >> 3) & 7) | rex_x;
            if (r.index == 4) {
                r.index = -1;
            }
            r.base = (s & 7) | rex_b;
        }
        if (mod == 0 && (r.base & 7) == 5) {
            r.base = -1;
            disp = (int32_t)ref_le(code + n, 4);
            n += 4;
            rip = m64 && !sib;
        } else if (mod == 1) {
            disp = (int8_t)code[n++];
        } else if (mod == 2) {
            disp = (int32_t)ref_le(code + n, 4);
            n += 4;
        }
    }
    if (map == 10) {
        r.imm = ref_le(code + n, 4);
        n += 4;
    }
    r.len = n;
    r.len_known = true;
    if (rip) {
        r.base = -2;
        disp += n;                  /* relative to the next instruction (at 0 + n) */
    }
    r.disp = (uint64_t)disp;
    r.vreg = m64 ? vvvv : vvvv & 7;

    if (l || pp) {
        ud = true;
    }
    if (map == 9 && (mod != 3 || vvvv != 0)) {
        ud = true;                  /* mod must be 11b, vvvv 1111b */
    }
    r.verdict = ud ? REF_UD : n > 15 ? REF_GP : REF_OK;
    return r;
}

#endif
