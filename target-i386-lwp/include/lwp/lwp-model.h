/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qemu-lwp: C ABI of the LWP architectural model (AMD pub. 43724 rev 3.08).
 *
 * The model is C++ behind this header.  Every entry point is noexcept, takes
 * plain data and never calls anything that can unwind (longjmp) through it:
 * memory is reached only through LwpMem, whose callbacks must report an
 * inaccessible page by returning false, never by raising the fault.
 *
 * Precision: an operation that needs a fault (#GP, #PF) returns it in
 * LwpOutcome with no change to LwpState and no guest memory written; the
 * caller then raises the fault.  An operation that succeeds returns the
 * guest-memory writes it made in LwpOutcome.writes: the model has already
 * checked with probe_write that every one of them is permitted, and the
 * caller performs them in order, then keeps the updated LwpState.
 * (The model updates *st only when it returns LWP_OK.)
 */
#ifndef LWP_MODEL_H
#define LWP_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "lwp-caps.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LWP_RECORD_SIZE   32      /* LwpEventSize of LWP version 1 */
#define LWP_XSAVE_SIZE    128     /* XSAVE component 62 */
#define LWP_XSAVE_OFFSET  0x340
#define LWP_MAX_EVENT     6       /* highest EventId version 1 defines */
#define LWP_EVENT_VAL     1
#define LWP_EVENT_IRE     2
#define LWP_EVENT_BRE     3
#define LWP_EVENT_INS     255

/* Smallest reset interval for hardware events (EventId 2..6); LWPVAL has 0. */
#define LWP_MIN_HW_INTERVAL 0xFF

/* LWP_CFG (MSR C000_0105) fields. */
#define LWP_MSR_CFG        0xC0000105
#define LWP_MSR_CBADDR     0xC0000106
#define LWP_CFG_COREID(cfg) ((uint8_t)((cfg) >> 32))
#define LWP_CFG_VECTOR(cfg) ((uint8_t)((cfg) >> 40))

/*
 * Per-vCPU LWP state: the internal ("shadowed") state of the LWP unit.  Plain
 * data so that QEMU can reset it with the CPU and migrate it field by field.
 */
typedef struct LwpState {
    uint64_t cbaddr;          /* LWP_CBADDR: linear LWPCB address; 0 = disabled */
    uint64_t buffer_base;     /* linear address of the ring buffer */
    uint32_t buffer_size;     /* bytes, a multiple of LWP_RECORD_SIZE */
    uint32_t head;            /* internal BufferHeadOffset */
    uint32_t flags;           /* enabled events (bits 1..6) and INT (bit 31) */
    uint32_t filters;         /* LWPCB.Filters */
    int32_t counter[LWP_MAX_EVENT + 1];   /* [id], 26-bit signed values */
    uint8_t pending[LWP_RECORD_SIZE];     /* record waiting to be stored; EventId 0 = none */
    /*
     * Cached from the LWPCB by LLWPCB; after XRSTOR (cache_valid = 0) they are
     * re-read from the LWPCB the next time a record is stored.
     */
    uint8_t cache_valid;
    uint8_t random;           /* LWPCB.Random */
    uint32_t interval[LWP_MAX_EVENT + 1];
    uint32_t threshold;       /* bytes, a multiple of LWP_RECORD_SIZE */
    uint32_t tail;            /* last BufferTailOffset read */
    uint64_t base_ip, limit_ip;
    uint64_t rng;             /* state of the generator behind Random */
    /*
     * Latitude mode only (LwpLatitudeCfg); always zero in exact mode, and
     * not part of the XSAVE area.  Stores to come that may act on the
     * cached tail while the threshold appears met, without re-reading it.
     */
    uint8_t tail_credit;
    /* This session reads EventIntervaln from the LWPCB at each overflow. */
    uint8_t intervals_live;
    /*
     * The pending record's counter restarted when the record was gathered,
     * ahead of its store (lwp_tb_defer_restart): the counter holds this
     * much more than its architectural value until the store
     * (lwp_store_commit) or lwp_settle.  0 otherwise, and in every state
     * the model hands out (XSAVE image, migration).
     */
    int32_t restarted;
} LwpState;

/*
 * Latitude mode's freedoms of section 8.3 (docs/lwp-latitude.rst), as the
 * CPU's properties configure them.  All zero: exact mode.
 */
#define LWP_LATITUDE_TAIL_REREAD_MAX 16

typedef struct LwpLatitudeCfg {
    /*
     * n of "every nth time": while the threshold appears met, the tail is
     * re-read at one store in n (0 or 1: every time).
     */
    uint8_t tail_reread;
    /* At each LLWPCB or refresh after XRSTOR, draw cached or live intervals. */
    bool interval_draw;
    uint64_t seed;            /* this vCPU's stream of those draws */
} LwpLatitudeCfg;

/* Where and how the instruction executes. */
typedef struct LwpCpuEnv {
    const LwpCaps *caps;      /* what the CPU supports */
    uint64_t lwp_cfg;         /* LWP_CFG: bits 31:0 say what is available */
    uint8_t cpl;
    bool mode64;              /* 64-bit mode (long mode with CS.L = 1) */
    /*
     * DS as the segment of every LWPCB/ring-buffer effective address outside
     * 64-bit mode: base, byte-granular limit, and type.
     */
    uint64_t ds_base;
    uint32_t ds_limit;
    bool ds_expand_down;      /* valid offsets are (limit, ds_big ? 4G-1 : 64K-1] */
    bool ds_big;
    bool ds_writable;
    bool ds_usable;           /* false for a null selector */
    uint8_t va_bits;          /* linear address width for canonical checks (48 or 57) */
    bool long_mode;           /* EFER.LMA: linear addresses are 64-bit */
    LwpLatitudeCfg latitude;  /* zero: exact mode */
} LwpCpuEnv;

/* Guest memory as the model sees it: linear addresses, no faults raised. */
typedef struct LwpMem {
    void *opaque;
    /* Read len bytes at addr with the current privilege; false if any page is not readable. */
    bool (*read)(void *opaque, uint64_t addr, void *buf, uint32_t len);
    /* True if [addr, addr + len) may be written with the current privilege. */
    bool (*probe_write)(void *opaque, uint64_t addr, uint32_t len);
} LwpMem;

typedef enum LwpStatus {
    LWP_OK = 0,
    LWP_FAULT_GP,             /* #GP(0) */
    LWP_FAULT_PF,             /* #PF at fault_addr (fault_write: on a write) */
} LwpStatus;

/*
 * Worst case of one operation (LLWPCB flushing the old session and writing
 * back the new LWPCB's Flags and intervals): 17 field writes, each of which
 * may be split in two where linear addresses wrap at 4 GiB.
 */
#define LWP_MAX_WRITES 34

typedef struct LwpWrite {
    uint64_t addr;            /* linear */
    uint32_t len;             /* 1..32 */
    uint8_t data[LWP_RECORD_SIZE];
} LwpWrite;

/*
 * For an LwpOutcome on the stack, which its producer fills before anyone
 * reads it: exempt from -ftrivial-auto-var-init, with which QEMU builds and
 * which would clear its 1.6 KiB at every record stored.  QEMU 10.1 has
 * QEMU_UNINITIALIZED for the same reason.
 */
#if defined(__has_attribute)
#if __has_attribute(uninitialized)
#define LWP_UNINITIALIZED __attribute__((uninitialized))
#endif
#endif
#ifndef LWP_UNINITIALIZED
#define LWP_UNINITIALIZED
#endif

typedef struct LwpOutcome {
    LwpStatus status;
    uint64_t fault_addr;
    bool fault_write;
    uint32_t nwrites;
    LwpWrite writes[LWP_MAX_WRITES];
    bool interrupt;           /* signal the threshold interrupt (LWP_CFG vector) */
    uint64_t value;           /* SLWPCB: effective address; LWPINS: CF */
} LwpOutcome;

/* True if LWP_CFG may be written with @value (else WRMSR raises #GP). */
bool lwp_cfg_write_ok(const LwpCaps *caps, uint64_t value) LWP_NOEXCEPT;
/* LWP_CFG after an accepted WRMSR of @value: write-ignored bits kept. */
uint64_t lwp_cfg_written(uint64_t old_value, uint64_t value) LWP_NOEXCEPT;
/* WRMSR LWP_CBADDR: false (#GP) for non-zero; zero disables LWP and discards state. */
bool lwp_cbaddr_write(LwpState *st, uint64_t value) LWP_NOEXCEPT;
/*
 * Incoming state (migration) for a CPU described by @env (caps, LWP_CFG,
 * va_bits, long_mode): NULL if the model may run on it, else the name of
 * the offending field.
 */
const char *lwp_state_check(const LwpState *st, const LwpCpuEnv *env) LWP_NOEXCEPT;
/* Reset state (power-on, INIT, XRSTOR init): LWP disabled, everything zero. */
void lwp_state_reset(LwpState *st) LWP_NOEXCEPT;

/* LLWPCB with the (operand-size truncated) effective address @ea. */
void lwp_llwpcb(LwpState *st, const LwpCpuEnv *env, const LwpMem *mem,
                uint64_t ea, LwpOutcome *out) LWP_NOEXCEPT;
/* SLWPCB: flush; out->value = effective LWPCB address or 0. */
void lwp_slwpcb(LwpState *st, const LwpCpuEnv *env, const LwpMem *mem,
                LwpOutcome *out) LWP_NOEXCEPT;
/*
 * Whether LWPVAL would store a record now; the caller reads a memory operand
 * only when this is true (spec 5.3).
 */
bool lwp_lwpval_stores(const LwpState *st, const LwpCpuEnv *env,
                       uint64_t ip) LWP_NOEXCEPT;
/* LWPVAL: data2 = vvvv register, data1 = r/m value, flags = imm (low 16 bits used). */
void lwp_lwpval(LwpState *st, const LwpCpuEnv *env, const LwpMem *mem,
                uint64_t data2, uint32_t data1, uint32_t imm, uint64_t ip,
                LwpOutcome *out) LWP_NOEXCEPT;
/* LWPINS: as LWPVAL; out->value = new CF. */
void lwp_lwpins(LwpState *st, const LwpCpuEnv *env, const LwpMem *mem,
                uint64_t data2, uint32_t data1, uint32_t imm, uint64_t ip,
                LwpOutcome *out) LWP_NOEXCEPT;

/* XSAVE of component 62; returns the XSTATE_BV bit (false: LWP disabled, area untouched). */
bool lwp_xsave(const LwpState *st,
               uint8_t area[LWP_XSAVE_SIZE]) LWP_NOEXCEPT;
/*
 * XRSTOR of component 62 with XSTATE_BV[62] = @present (false: processor
 * supplied values, LWP disabled).  At CPL != 0 the addresses are validated
 * against DS / canonical form; a failure disables LWP without a fault.
 */
void lwp_xrstor(LwpState *st, const LwpCpuEnv *env,
                const uint8_t area[LWP_XSAVE_SIZE], bool present) LWP_NOEXCEPT;

/*
 * Hardware events counted by the emulator (AMD pub. 43724 sections 1.1,
 * 2.2, 2.3, 6 and 8.1): instructions retired (2) and branches retired (3).
 */

/* The branch kinds of section 2.3, as the filters of table 6-2 see them. */
typedef enum LwpBranchClass {
    LWP_BRANCH_NONE = 0,      /* not a branch LWP counts */
    LWP_BRANCH_COND,          /* Jcc, JrCXZ, LOOP, LOOPcc: NCB */
    LWP_BRANCH_REL,           /* JMP rel, CALL rel, RET near: NRB */
    LWP_BRANCH_ABS,           /* JMP r/m (FF /4), CALL r/m (FF /2): NAB */
} LwpBranchClass;
#define LWP_BRANCH_CLASSES 4

/* Filters bits (figure 6-3) the emulator honours. */
#define LWP_FILTER_NAB (1u << 27)
#define LWP_FILTER_NCB (1u << 28)
#define LWP_FILTER_NRB (1u << 29)
#define LWP_FILTER_IPI (1u << 30)
#define LWP_FILTER_IPF (1u << 31)

/* What translated code has to count for the current state. */
typedef struct LwpHwConfig {
    bool val;                 /* LWPVAL decrements event 1 */
    bool ire;                 /* instructions retired is counted */
    bool bre;                 /* branches retired is counted */
    bool ipf;                 /* IP filtering decides which instructions count */
    int32_t branch_weight[LWP_BRANCH_CLASSES];   /* BRE decrement per class */
} LwpHwConfig;

void lwp_hw_config(const LwpState *st, const LwpCaps *caps,
                   LwpHwConfig *cfg) LWP_NOEXCEPT;

/*
 * Whether an instruction at effective address @ip is eligible for counting
 * under the IP filter (always true when IP filtering does not apply).  The
 * filter range is cached state: call only with st->cache_valid.
 */
bool lwp_ip_counted(const LwpState *st, const LwpCaps *caps,
                    uint64_t ip) LWP_NOEXCEPT;

/*
 * A translation block as counted at its start: its first @charged
 * instructions count as instructions retired (the rest, at most its last
 * instruction, is counted when it retires or not at all), and its last
 * instruction is a branch of class @branch.
 */
typedef struct LwpTbShape {
    uint64_t first_ip;        /* effective address of the first instruction */
    uint64_t last_ip;         /* ... and of the last one */
    uint32_t icount;
    uint32_t charged;
    uint8_t branch;           /* LwpBranchClass */
    /*
     * A record of a charged instruction may be gathered at the TB's start
     * and stored after the TB (LWP_TB_DEFER): nothing in the TB reads or
     * writes LWP state, and every charged instruction that runs retires.
     */
    bool may_defer;
    /*
     * Its last instruction, charged and a branch, can be counted where it
     * retires, at the TB's exit (LWP_TB_RETIRE_LAST).
     */
    bool last_at_exit;
    /*
     * The lengths of its first LWP_TB_LENS instructions, LWP_TB_LEN_BITS
     * each from bit 0 of lens[0], then of lens[1], as far as the
     * translator knew them (0: not known), and its code size (0: 64-bit,
     * 1: 32-bit, 2: 16-bit), which wraps effective addresses.
     */
    uint64_t lens[2];
    uint8_t csize;
} LwpTbShape;

#define LWP_TB_WORD_LENS 16
#define LWP_TB_LENS (2 * LWP_TB_WORD_LENS)
#define LWP_TB_LEN_BITS 4
#define LWP_TB_LEN_MASK 0xfull

/*
 * Record @len (1 to LWP_TB_LEN_MASK) as the length of instruction @index
 * (0 to LWP_TB_LENS - 1) in @lens, the translator's packing, which
 * lwp_tb_insn_ip_known reads.
 */
static inline void lwp_tb_lens_put(uint64_t lens[2], uint32_t index,
                                   uint64_t len)
{
    lens[index / LWP_TB_WORD_LENS] |=
        len << (LWP_TB_LEN_BITS * (index % LWP_TB_WORD_LENS));
}

/* An effective address of code of size @csize, wrapped to it. */
static inline uint64_t lwp_ip_wrap(uint64_t ip, unsigned csize)
{
    return csize == 0 ? ip : csize == 1 ? (uint32_t)ip : (uint16_t)ip;
}

/*
 * The sum of the first @n (1 to LWP_TB_WORD_LENS) lengths in @lens, or 0 if
 * they are not known: the translator fills the lengths in order and
 * passes none if one did not fit, so the nth alone says.  Nibbles are
 * added pairwise into bytes, which one multiplication adds up (at most
 * 16 * 15 = 240: no carry between bytes).
 */
static inline uint32_t lwp_tb_lens_sum(uint64_t lens, uint32_t n)
{
    const uint64_t nibbles = 0x0f0f0f0f0f0f0f0full;
    uint64_t x = n < LWP_TB_WORD_LENS ?
                 lens & ((1ull << (LWP_TB_LEN_BITS * n)) - 1) : lens;

    if (!((lens >> (LWP_TB_LEN_BITS * (n - 1))) & LWP_TB_LEN_MASK)) {
        return 0;
    }
    x = (x & nibbles) + ((x >> LWP_TB_LEN_BITS) & nibbles);
    return (uint32_t)((x * 0x0101010101010101ull) >> 56);
}

/*
 * The effective address of instruction @index of @tb, if its shape tells
 * it: the first, the last, or one whose offset the lengths give.
 */
static inline bool lwp_tb_insn_ip_known(const LwpTbShape *tb, uint32_t index,
                                        uint64_t *ip)
{
    uint32_t off;

    if (index + 1 == tb->icount) {
        *ip = tb->last_ip;
        return true;
    }
    if (!index) {
        *ip = tb->first_ip;
        return true;
    }
    if (index <= LWP_TB_WORD_LENS) {
        off = lwp_tb_lens_sum(tb->lens[0], index);
    } else if (index <= LWP_TB_LENS) {
        uint32_t head = lwp_tb_lens_sum(tb->lens[0], LWP_TB_WORD_LENS);
        uint32_t rest = lwp_tb_lens_sum(tb->lens[1],
                                        index - LWP_TB_WORD_LENS);

        off = head && rest ? head + rest : 0;
    } else {
        off = 0;
    }
    if (!off) {
        return false;
    }
    *ip = lwp_ip_wrap(tb->first_ip + off, tb->csize);
    return true;
}

typedef enum LwpTbAction {
    LWP_TB_CHARGE,            /* counters charged for the whole TB: run it */
    LWP_TB_SKIP,              /* none of its instructions counts: run it */
    LWP_TB_SPLIT,             /* run only the first *split instructions, then decide again */
    LWP_TB_DEFER,             /* run it; instruction *split's record: lwp_tb_defer */
    LWP_TB_RETIRE_LAST,       /* run it; its last one: lwp_retire at its exit */
    LWP_TB_DEFERRED,          /* run it; lwp_tb_cross gathered the record */
} LwpTbAction;

/*
 * Decide how a TB runs, given the counters before it (no record pending;
 * the IP range cached if IP filtering applies).  Charges the counters for
 * LWP_TB_CHARGE (and LWP_TB_RETIRE_LAST, below) and leaves the state alone
 * otherwise.  A counter that crosses
 * zero at instruction k of a TB splits it after k (k + 1 instructions),
 * so that the crossing instruction is the last one, seen retiring.  When
 * k is the last one already and can be counted at the TB's exit
 * (@tb->last_at_exit), the TB is not cut: LWP_TB_RETIRE_LAST charges the
 * counters for the instructions before it, and lwp_retire counts it when
 * it retires.
 */
LwpTbAction lwp_tb_plan(LwpState *st, const LwpCaps *caps,
                        const LwpTbShape *tb, uint32_t *split) LWP_NOEXCEPT;

/*
 * After lwp_tb_plan said LWP_TB_DEFER for instruction k (*split), at
 * effective address @ip: the TB runs whole and k's record is stored after
 * it (section 1.1: "the Store stage (and subsequent stages) may complete
 * some number of cycles after the tagged instruction retires. The data
 * about the event and the instruction are precise").  lwp_tb_plan says so
 * only when that store cannot raise the threshold interrupt, and this
 * only when the slot at the head takes the record now (@mem probes it):
 * the interrupt and a fault of the store stay where the instruction
 * retires.  Then it charges the counters for the whole TB, puts k's record
 * in st->pending (its counter's overrun restarts it after the store
 * exactly where a store at k would have) and returns true; else it
 * changes nothing, and the TB is split after k.  A fault before k retires
 * must take the record back.
 */
bool lwp_tb_defer(LwpState *st, const LwpCpuEnv *env, const LwpMem *mem,
                  const LwpTbShape *tb, uint64_t ip) LWP_NOEXCEPT;

/* One instruction that retired at CPL 3 and is counted when it retires. */
typedef struct LwpRetired {
    uint64_t ip;              /* its effective address */
    uint64_t fallthrough;     /* the effective address after it */
    uint64_t next_ip;         /* the effective address executed next */
    uint8_t branch;           /* LwpBranchClass */
    bool counted;             /* counts as an instruction retired */
    bool taken;               /* a conditional branch's condition held */
} LwpRetired;

/*
 * Count @insn; every enabled event whose counter is now negative gathers a
 * record into @records (instructions retired first), with CoreId @core_id.
 * Returns how many.  Needs no memory: the IP range, if IP filtering
 * applies, was read already (lwp_prepare).
 */
unsigned lwp_retire(LwpState *st, const LwpCaps *caps, uint8_t core_id,
                    const LwpRetired *insn,
                    uint8_t records[2][LWP_RECORD_SIZE]) LWP_NOEXCEPT;

/*
 * Store the pending record (st->pending) into the ring buffer and reset its
 * event's counter.  Nothing pending: nothing to do.  A fault leaves the
 * record pending.
 */
void lwp_store_pending(LwpState *st, const LwpCpuEnv *env, const LwpMem *mem,
                       LwpOutcome *out) LWP_NOEXCEPT;

/*
 * The fast path of lwp_store_pending, for the record of every counter
 * that crosses zero: the same ring protocol (store, full ring and
 * MissedEvents, threshold, the tail re-read only when the ring looks full
 * or past its threshold, section 8.3), without copying the state or going
 * through the general memory transaction.  It changes nothing: true when
 * it could decide the store, with its writes (at most three: the record,
 * MissedEvents, BufferHeadOffset) and interrupt in @out and the new ring
 * position in @commit.  The caller performs @out as for any operation,
 * then calls lwp_store_commit.  False when the general path must decide
 * (a fault to report, the cache to re-read after XRSTOR, an access that
 * wraps around the top of the linear address space, a ring over the
 * LWPCB's fields): then lwp_store_pending, and @out means nothing.
 */
typedef struct LwpStoreCommit {
    uint32_t head;            /* internal BufferHeadOffset after the store */
    uint32_t tail;            /* the tail last read */
    uint8_t tail_credit;      /* latitude mode's LwpState.tail_credit after it */
} LwpStoreCommit;

bool lwp_store_fast(const LwpState *st, const LwpCpuEnv *env,
                    const LwpMem *mem, LwpOutcome *out,
                    LwpStoreCommit *commit) LWP_NOEXCEPT;
/*
 * The store lwp_store_fast decided is done: clear the pending record,
 * reset its counter (unless that restarted already, LwpState.restarted).
 */
void lwp_store_commit(LwpState *st, const LwpCaps *caps,
                      const LwpStoreCommit *commit) LWP_NOEXCEPT;

/*
 * The record path at its floor (issue 25): the deferred crossing's record
 * gathered, and every record stored that raises no threshold interrupt
 * (the full ring's missed event included), with no callback and no copy of
 * the state.  The rules are the same code as lwp_tb_defer's and
 * lwp_store_fast's (ring_store): only the way to memory differs.  The
 * caller finds the record's slot writable (lwp_record_slot) and, for a
 * store that reads the LWPCB (a full ring, a threshold: section 8.3), the
 * LWPCB's first LWP_STORE_FIELDS_LEN bytes readable and writable
 * (lwp_store_fields), and copies them for the model to read.
 */
#define LWP_STORE_FIELDS_LEN 68   /* up to BufferTailOffset's end */

/* A write of an LWPCB field: @len bytes of @value at @off from its start. */
typedef struct LwpFieldWrite {
    uint32_t off;
    uint32_t len;             /* 4 or 8 */
    uint64_t value;
} LwpFieldWrite;

/*
 * A store lwp_store_lean decided: the pending record goes at @slot, then
 * the LWPCB's fields are written (MissedEvents, the head flushed), then
 * lwp_store_commit(@commit).
 */
typedef struct LwpLeanStore {
    uint64_t slot;            /* linear */
    uint32_t nfields;
    LwpFieldWrite fields[2];
    LwpStoreCommit commit;
} LwpLeanStore;

/*
 * The linear address of the slot at the head, where the next record goes,
 * for the caller to check that it may be written before the two below
 * (no canonical check: the caller finds it in a page it may write).
 * False if the record would wrap around 4 GiB (outside long mode).
 */
bool lwp_record_slot(const LwpState *st, bool long_mode,
                     uint64_t *slot) LWP_NOEXCEPT;
/*
 * lwp_tb_defer once the caller found the slot writable: gather instruction
 * *split's record into st->pending and charge the TB.
 */
void lwp_tb_defer_known(LwpState *st, const LwpCaps *caps, uint8_t core_id,
                        const LwpTbShape *tb, uint64_t ip) LWP_NOEXCEPT;
/*
 * lwp_tb_defer_known, and the counter restarted now from the overrun the
 * TB leaves, as the store after the TB would restart it: the record may
 * then wait in st->pending past the TB (section 1.1, "the Store stage (and
 * subsequent stages) may complete some number of cycles after the tagged
 * instruction retires") with no counter below zero to call for its store.
 * The caller stores it (lwp_store_lean) before anything else reads or
 * changes LWP state, or settles it (lwp_settle); the model's other entry
 * points settle it first.
 */
void lwp_tb_defer_restart(LwpState *st, const LwpCaps *caps, uint8_t core_id,
                          const LwpTbShape *tb, uint64_t ip) LWP_NOEXCEPT;
/*
 * The state without a restart ahead of the store: the pending record
 * waits with its counter below zero, as for a store that faulted.
 */
void lwp_settle(LwpState *st) LWP_NOEXCEPT;
/*
 * The deferred record's instruction did not retire (a fault before it):
 * the record is gone and its counter as before it was gathered, but for
 * the TB's charge, which the caller gives back.
 */
void lwp_tb_defer_undo(LwpState *st) LWP_NOEXCEPT;
/*
 * The store of st->pending, decided on what the caller knows of memory:
 * without @fields, the common store that reads nothing (the ring looks
 * neither full nor past its threshold, so section 8.3 reads no tail) and
 * writes the record alone; with @fields (the caller's copy of the LWPCB's
 * first LWP_STORE_FIELDS_LEN bytes), also a full ring's missed event and a
 * threshold the re-read tail clears.  Changes nothing; the caller performs
 * *@s.  False: not such a store (an interrupt, a fault, a ring over the
 * LWPCB's fields...): lwp_store_fast or lwp_store_pending decides it.
 */
bool lwp_store_lean(const LwpState *st, bool long_mode, uint8_t tail_reread,
                    const uint8_t *fields, LwpLeanStore *s) LWP_NOEXCEPT;
/*
 * The linear address of the LWPCB fields a store that lwp_store_lean
 * declined without @fields would read (LWP_STORE_FIELDS_LEN bytes), for the
 * caller to copy.  False if lwp_store_lean would decline it anyway.
 */
bool lwp_store_fields(const LwpState *st, bool long_mode,
                      uint64_t *addr) LWP_NOEXCEPT;

/*
 * Linear addresses the caller knows may be written now as plain RAM,
 * [lo, hi), in modular arithmetic (hi may wrap to 0 at the top of the
 * address space); empty when lo == hi.  Only a precondition of
 * lwp_tb_cross's gather, in the call it is given to: the record is
 * written at a later crossing, which finds its slot writable again.
 */
typedef struct LwpWritable {
    uint64_t lo;
    uint64_t hi;
} LwpWritable;

/* Whether a record at linear address @slot lies wholly in @w. */
static inline bool lwp_writable_holds(const LwpWritable *w, uint64_t slot)
{
    return w->hi - w->lo >= LWP_RECORD_SIZE &&
           slot - w->lo <= w->hi - w->lo - LWP_RECORD_SIZE;
}

/* What lwp_tb_cross needs to know of the TB, the CPU and memory. */
typedef struct LwpCrossing {
    LwpTbShape tb;
    LwpWritable writable;     /* a record's slot there may be written */
    uint8_t core_id;          /* LWP_CFG.COREID */
    bool long_mode;           /* linear addresses are 64-bit */
    bool gather;              /* exact mode: LWP_TB_DEFERRED allowed */
} LwpCrossing;

/*
 * The common crossing, in one step: the store lwp_store_lean decided and
 * the caller performed is committed (@stored; NULL if none), the TB is
 * planned (lwp_tb_plan), and a record the plan defers is gathered with its
 * counter restarted (lwp_tb_defer_restart) when @c->gather allows it, its
 * slot lies in @c->writable and the TB's shape gives its address:
 * LWP_TB_DEFERRED.  LWP_TB_DEFER then means the caller gathers it; any
 * other answer is lwp_tb_plan's.
 */
LwpTbAction lwp_tb_cross(LwpState *st, const LwpCaps *caps,
                         const LwpCrossing *c, const LwpStoreCommit *stored,
                         uint32_t *split) LWP_NOEXCEPT;

/*
 * lwp_tb_cross's common case in its shortest form (issue 25): the pending
 * record, its counter restarted when it was gathered, goes to the slot at
 * the head by a plain store (one that reads and writes nothing of the
 * LWPCB: the ring does not look full and no threshold appears met, 8.3),
 * and the crossing's record of instructions retired, the only hardware
 * event enabled and no IP filter, is gathered with its counter restarted,
 * its own store to come plain as well.  lwp_tb_cross_plain decides and
 * changes nothing: false otherwise, and the caller goes the general way
 * (the lean store, then lwp_tb_cross).  True: the caller writes
 * st->pending at @slot, finds @next_slot in what it may write (the
 * precondition of lwp_tb_cross's gather) and commits with
 * lwp_tb_cross_plain_commit, which leaves the state as lwp_tb_cross after
 * that store would (LWP_TB_DEFERRED, at instruction @split).
 * @c->writable is not read.
 */
typedef struct LwpPlainCross {
    uint64_t slot;            /* linear: the pending record's slot */
    uint64_t next_slot;       /* ... and the gathered record's */
    uint64_t ip;              /* the crossing instruction's address */
    uint32_t split;           /* its index in the TB */
    LwpStoreCommit stored;    /* the ring after the pending record's store */
} LwpPlainCross;

bool lwp_tb_cross_plain(const LwpState *st, const LwpCaps *caps,
                        const LwpCrossing *c, LwpPlainCross *p) LWP_NOEXCEPT;
void lwp_tb_cross_plain_commit(LwpState *st, const LwpCaps *caps,
                               const LwpCrossing *c,
                               const LwpPlainCross *p) LWP_NOEXCEPT;

/*
 * Re-read what XRSTOR did not restore (interval, threshold, IP range...)
 * from the LWPCB, if that has not happened yet.
 */
void lwp_prepare(LwpState *st, const LwpCpuEnv *env, const LwpMem *mem,
                 LwpOutcome *out) LWP_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* LWP_MODEL_H */
