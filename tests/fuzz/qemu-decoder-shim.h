/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What QEMU's x86 decoder text (cut out by extract-qemu-decoder.sh) needs
 * to run outside QEMU: a DisasContext with the fields the decoder reads,
 * the constants of translate.c, and a code fetch from a byte buffer that,
 * like translate.c's advance_pc(), gives up with #GP past 15 bytes.  The
 * CPUID_* and HF_* constants come from QEMU's cpu.h (cut out as well).
 */
#ifndef QEMU_DECODER_SHIM_H
#define QEMU_DECODER_SHIM_H

#include <assert.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* qemu-system-x86_64 and qemu-x86_64; -DQEMU_DECODER_I386 for qemu-i386. */
#ifndef QEMU_DECODER_I386
#define TARGET_X86_64 1
#endif
#define xglue(x, y) x ## y
#define glue(x, y) xglue(x, y)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define g_assert_not_reached() abort()

#ifdef TARGET_X86_64
typedef uint64_t target_ulong;
typedef int64_t target_long;
#else
typedef uint32_t target_ulong;
typedef int32_t target_long;
#endif
typedef void *TCGv;
typedef void *TCGv_i32;
typedef void *TCGv_ptr;
typedef enum MemOp {
    MO_8 = 0, MO_16 = 1, MO_32 = 2, MO_64 = 3, MO_128 = 4, MO_256 = 5,
} MemOp;

typedef struct CPUX86State {
    uint32_t cpuid_vendor1;
} CPUX86State;
typedef struct CPUState CPUState;
static inline CPUX86State *cpu_env(CPUState *cpu)
{
    return (CPUX86State *)cpu;
}

#define R_EAX 0
#define R_ECX 1
#define R_EDX 2
#define R_EBX 3
#define R_ESP 4
#define R_EBP 5
#define R_ESI 6
#define R_EDI 7
#define R_ES 0
#define R_CS 1
#define R_SS 2
#define R_DS 3
#define R_FS 4
#define R_GS 5

/* translate.c */
#define PREFIX_REPZ   0x01
#define PREFIX_REPNZ  0x02
#define PREFIX_LOCK   0x04
#define PREFIX_DATA   0x08
#define PREFIX_ADR    0x10
#define PREFIX_VEX    0x20
#define PREFIX_REX    0x40
#define PE(S)     (((S)->flags & HF_PE_MASK) != 0)
#define VM86(S)   (((S)->flags & HF_VM_MASK) != 0)
#define CODE32(S) (((S)->flags & HF_CS32_MASK) != 0)
#ifdef TARGET_X86_64
#define CODE64(S) (((S)->flags & HF_CS64_MASK) != 0)
#define REX_PREFIX(S)  (((S)->prefix & PREFIX_REX) != 0)
#define REX_W(S)       ((S)->vex_w)
#define REX_R(S)       ((S)->rex_r + 0)
#define REX_X(S)       ((S)->rex_x + 0)
#define REX_B(S)       ((S)->rex_b + 0)
#else
#define CODE64(S) false
#define REX_PREFIX(S)  false
#define REX_W(S)       false
#define REX_R(S)       0
#define REX_X(S)       0
#define REX_B(S)       0
#endif
#define X86_MAX_INSN_LENGTH 15

typedef enum QemuDecodeVerdict {
    QEMU_DECODE_NONE,       /* still decoding */
    QEMU_DECODE_ACCEPTED,   /* passed every #UD check up to validate_vex */
    QEMU_DECODE_ILLEGAL,    /* #UD */
    QEMU_DECODE_UNKNOWN,    /* #UD, opcode not in the tables */
    QEMU_DECODE_NM,         /* #NM */
    QEMU_DECODE_GP_LENGTH,  /* #GP, longer than 15 bytes */
    QEMU_DECODE_OTHER,      /* not XOP: went to the legacy/VEX tables */
} QemuDecodeVerdict;

typedef struct DisasContextBase {
    target_ulong pc_next;
} DisasContextBase;

typedef struct DisasContext {
    DisasContextBase base;
    target_ulong pc;
    int override;
    int prefix;
    MemOp aflag;
    MemOp dflag;
#ifdef TARGET_X86_64
    uint8_t rex_r, rex_x, rex_b;
#endif
    bool vex_w;
    uint8_t vex_l;
    uint8_t vex_v;
    uint8_t popl_esp_hack;
    int rip_offset;
    bool has_modrm;
    uint8_t modrm;
    uint32_t flags;
    int cpuid_features;
    int cpuid_ext_features;
    int cpuid_ext2_features;
    int cpuid_ext3_features;
    int cpuid_7_0_ebx_features;
    int cpuid_7_0_ecx_features;
    int cpuid_7_1_eax_features;
    int cpuid_xsave_features;
    /* The harness's own: the code bytes and the outcome. */
    const uint8_t *code;
    size_t code_len;
    sigjmp_buf jmpbuf;
    QemuDecodeVerdict verdict;
} DisasContext;

static inline uint64_t advance_pc(CPUX86State *env, DisasContext *s, int num_bytes)
{
    uint64_t pc = s->pc;

    (void)env;
    s->pc += num_bytes;
    if (s->pc - s->base.pc_next > X86_MAX_INSN_LENGTH) {
        siglongjmp(s->jmpbuf, 1);
    }
    return pc;
}

static inline uint64_t code_load(DisasContext *s, uint64_t pc, int n)
{
    uint64_t v = 0;

    for (int i = n - 1; i >= 0; i--) {
        assert(pc + i < s->code_len);
        v = (v << 8) | s->code[pc + i];
    }
    return v;
}

static inline uint8_t x86_ldub_code(CPUX86State *env, DisasContext *s)
{
    return code_load(s, advance_pc(env, s, 1), 1);
}
static inline uint16_t x86_lduw_code(CPUX86State *env, DisasContext *s)
{
    return code_load(s, advance_pc(env, s, 2), 2);
}
static inline uint32_t x86_ldl_code(CPUX86State *env, DisasContext *s)
{
    return code_load(s, advance_pc(env, s, 4), 4);
}
static inline uint64_t x86_ldq_code(CPUX86State *env, DisasContext *s)
{
    return code_load(s, advance_pc(env, s, 8), 8);
}

static inline void gen_illegal_opcode(DisasContext *s)
{
    s->verdict = QEMU_DECODE_ILLEGAL;
}
static inline void gen_NM_exception(DisasContext *s)
{
    s->verdict = QEMU_DECODE_NM;
}

/* The legacy and VEX tables are not cut out: reaching them means "not XOP". */
struct X86OpEntry;
struct X86DecodedInsn;
#define QEMU_DECODER_OTHER_TABLE(name)                                        \
    static void name(DisasContext *s, CPUX86State *env, struct X86OpEntry *e, \
                     uint8_t *b)                                              \
    {                                                                         \
        (void)env; (void)e; (void)b;                                          \
        s->verdict = QEMU_DECODE_OTHER;                                       \
        siglongjmp(s->jmpbuf, 2);                                             \
    }
QEMU_DECODER_OTHER_TABLE(decode_root)
QEMU_DECODER_OTHER_TABLE(decode_0F)
QEMU_DECODER_OTHER_TABLE(decode_0F38)
QEMU_DECODER_OTHER_TABLE(decode_0F3A)

/* The LWP rows' code generators: only their identity matters here. */
#define QEMU_DECODER_GEN(name) \
    static void gen_##name(DisasContext *s, struct X86DecodedInsn *d) { (void)s; (void)d; }
QEMU_DECODER_GEN(LLWPCB)
QEMU_DECODER_GEN(SLWPCB)
QEMU_DECODER_GEN(LWPINS)
QEMU_DECODER_GEN(LWPVAL)

#endif
