/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Exactness oracle for the LWP hardware events (docs/lwp-events.rst), shared
 * by the guest test tests/guest/lwp-events.c and the linux-user test
 * tests/user/lwp-events.c.
 *
 * A test program is written in assembly with every instruction of its LWP
 * session wrapped in the T macro:
 *
 *     T <table>, <class>, <instruction>
 *
 * which records the instruction's start and end address and its class into
 * the table <table>_tab .. <table>_tab_end (in source order).  The test then
 * describes the path the program takes (which instructions execute, in
 * which order) with spans between labels, and tr_simulate() applies the
 * counting rules of docs/lwp-events.rst to that path: which instructions
 * decrement which counter (filters, IP filtering), where the records fall,
 * what each record holds (a branch's TKN and TargetAddress come from the
 * instruction executed after it), and the counters at every flush.  The
 * tests compare the ring buffer and the flushed counters with that.
 *
 * Nothing here depends on the guest library: the includer provides
 * report(pass, fmt, ...) and printf.
 */
#ifndef LWP_TRACE_H
#define LWP_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* struct lwp_record, the hardware record in the ring (figures 2-1 to 2-4). */
#include "../../common/lwp-user-abi.h"

/* Classes (the low 3 bits) and flags of a table entry. */
#define TR_X     0      /* not counted: LLWPCB, INT n, INT3, INT1, faulting (skipped) */
#define TR_P     1      /* counted instruction that is not a branch */
#define TR_C     2      /* conditional branch: Jcc, JCXZ/JECXZ/JRCXZ, LOOP/LOOPE/LOOPNE (NCB) */
#define TR_R     3      /* unconditional relative: JMP rel, CALL rel, RET (NRB) */
#define TR_A     4      /* absolute: JMP r/m, CALL r/m (NAB) */
#define TR_CLASS 7
#define TR_VAL   0x10   /* LWPVAL: also counts event 1 */
#define TR_INS   0x20   /* LWPINS: stores an EventId 255 record */
#define TR_SNAP  0x40   /* SLWPCB or LLWPCB 0: flushes the counters before it retires */
#define TR_FAR   0x80   /* far transfer / IRET: next instruction is not the following one */
#define TR_SAVE  0x100  /* XSAVE of the LWP state (counted after it retires) */
#define TR_RSTOR 0x200  /* XRSTOR of that image: counters and head back to it */

/*
 * The assembler side.  Put TR_ASM_MACROS at the start of every top-level
 * asm() that uses T (it defines the macros once per object file).
 */
#define TR_STR_(x) #x
#define TR_STR(x) TR_STR_(x)
#define TR_ASM_MACROS                                                       \
    ".ifndef TR_MACROS_DEFINED\n"                                           \
    ".set TR_MACROS_DEFINED, 1\n"                                           \
    ".set TX, " TR_STR(TR_X) "\n"                                           \
    ".set TP, " TR_STR(TR_P) "\n"                                           \
    ".set TC, " TR_STR(TR_C) "\n"                                           \
    ".set TR, " TR_STR(TR_R) "\n"                                           \
    ".set TA, " TR_STR(TR_A) "\n"                                           \
    ".set TVAL, " TR_STR(TR_VAL) "\n"                                       \
    ".set TINS, " TR_STR(TR_INS) "\n"                                       \
    ".set TSNAP, " TR_STR(TR_SNAP) "\n"                                     \
    ".set TFAR, " TR_STR(TR_FAR) "\n"                                       \
    ".set TSAVE, " TR_STR(TR_SAVE) "\n"                                     \
    ".set TRSTOR, " TR_STR(TR_RSTOR) "\n"                                   \
    ".macro T tab:req, cls:req, insn:vararg\n"                              \
    ".Ltr_s\\@:\n\t\\insn\n.Ltr_e\\@:\n"                                    \
    "\t.pushsection .rodata.tr_\\tab, \"a\"\n"                              \
    "\t.long .Ltr_s\\@, .Ltr_e\\@, \\cls\n"                                 \
    "\t.popsection\n"                                                       \
    ".endm\n"                                                               \
    ".macro TBEGIN tab:req\n"                                               \
    "\t.pushsection .rodata.tr_\\tab, \"a\"\n"                              \
    "\t.balign 4\n"                                                         \
    "\t.globl \\tab\\()_tab\n"                                              \
    "\\tab\\()_tab:\n"                                                      \
    "\t.popsection\n"                                                       \
    ".endm\n"                                                               \
    ".macro TEND tab:req\n"                                                 \
    "\t.pushsection .rodata.tr_\\tab, \"a\"\n"                              \
    "\t.globl \\tab\\()_tab_end\n"                                          \
    "\\tab\\()_tab_end:\n"                                                  \
    "\t.popsection\n"                                                       \
    ".endm\n"                                                               \
    ".endif\n"

struct tr_ent {
    uint32_t start, end, cls;
};

#define TR_TABLE(name) extern const struct tr_ent name##_tab[], name##_tab_end[]
#define TR_LABEL(name) extern char name[]
#define TR_ADDR(name) ((uint32_t)(uintptr_t)(name))

/* LWP_CFG / LWPCB.Flags event bits and Filters bits (table 6-2). */
#define TR_EV_VAL (1u << 1)
#define TR_EV_IRE (1u << 2)
#define TR_EV_BRE (1u << 3)
#define TR_F_NMB  (1u << 25)
#define TR_F_NPB  (1u << 26)
#define TR_F_NAB  (1u << 27)
#define TR_F_NCB  (1u << 28)
#define TR_F_NRB  (1u << 29)
#define TR_F_IPI  (1u << 30)
#define TR_F_IPF  (1u << 31)

#define TR_MAX_PATH 24000
#define TR_MAX_REC  200
#define TR_MAX_SNAP 6

/* The path a program takes: indices into its table. */
struct tr_path {
    const struct tr_ent *tab;
    unsigned ntab;
    unsigned n;
    bool bad;                   /* a span was empty or the path overflowed */
    uint16_t idx[TR_MAX_PATH];
};

struct tr_cfg {
    uint32_t events;            /* TR_EV_* enabled */
    int32_t counter[4];         /* as LLWPCB loads them, by EventId */
    int32_t interval[4];        /* as LLWPCB writes them back, by EventId */
    uint32_t filters;
    uint64_t base_ip, limit_ip;
    bool ipf_supported;         /* CPUID 8000_001C ECX[29] */
    int fault_rec;              /* ordinal of a record whose store faults, or -1 */
    /* Code in [eff_lo, eff_hi) runs in a segment with base eff_sub. */
    uint32_t eff_lo, eff_hi, eff_sub;
};

/* Events at the minimum interval, every counter starting at @counter. */
static inline void tr_cfg_init(struct tr_cfg *m, uint32_t events, int32_t counter,
                               bool ipf_supported)
{
    memset(m, 0, sizeof(*m));
    m->events = events;
    for (int id = 1; id <= 3; id++) {
        m->interval[id] = 255;
        m->counter[id] = counter;
    }
    m->ipf_supported = ipf_supported;
    m->fault_rec = -1;
}

/* The LWPCB fields a configuration sets (the rest the caller's). */
static inline void tr_cfg_to_lwpcb(const struct tr_cfg *m, struct lwpcb *c)
{
    c->filters = m->filters;
    c->base_ip = m->base_ip;
    c->limit_ip = m->limit_ip;
    for (int id = 1; id <= 3; id++) {
        c->event[id - 1].interval = (uint32_t)m->interval[id] & 0x3ffffff;
        c->event[id - 1].counter = (uint32_t)m->counter[id] & 0x3ffffff;
    }
}

/* The effective address (before the CS base) of the instruction at a. */
static inline uint32_t tr_eff(const struct tr_cfg *c, uint32_t a)
{
    return a >= c->eff_lo && a < c->eff_hi ? a - c->eff_sub : a;
}

struct tr_rec {
    uint8_t id;
    uint8_t tkn;
    uint32_t ip, target;
    uint32_t next;              /* address executed after the instruction */
    unsigned pos;               /* index in the path */
};

struct tr_out {
    struct tr_rec rec[TR_MAX_REC];
    unsigned nrec;
    bool overflow;
    int32_t snap[TR_MAX_SNAP][4];
    unsigned nsnap;
    int32_t end[4];
    unsigned counted[4];        /* occurrences counted per event */
    unsigned discarded;         /* records discarded after a faulting store */
};

/*
 * Under a hypervisor that intercepts an instruction and emulates it (KVM
 * always intercepts CPUID), the instruction never retires in the guest, so
 * LWP does not count it -- as on LWP hardware.  Mark the entry at @addr so.
 */
static inline void tr_mark_emulated(const struct tr_ent *tab, const struct tr_ent *end,
                                    const void *addr)
{
    for (struct tr_ent *e = (struct tr_ent *)tab; e < end; e++) {
        if (e->start == (uint32_t)(uintptr_t)addr) {
            e->cls = (e->cls & ~TR_CLASS) | TR_X;
        }
    }
}

static inline void tr_begin(struct tr_path *p, const struct tr_ent *tab, const struct tr_ent *end)
{
    p->tab = tab;
    p->ntab = end - tab;
    p->n = 0;
    p->bad = false;
}

static inline void tr_push(struct tr_path *p, unsigned i)
{
    if (p->n == TR_MAX_PATH) {
        p->bad = true;
        return;
    }
    p->idx[p->n++] = i;
}

/* Append the entries starting in [from, to), in source order. */
static inline void tr_span(struct tr_path *p, const void *from, const void *to)
{
    uint32_t f = (uint32_t)(uintptr_t)from, t = (uint32_t)(uintptr_t)to;
    unsigned added = 0;

    for (unsigned i = 0; i < p->ntab; i++) {
        if (p->tab[i].start >= f && p->tab[i].start < t) {
            tr_push(p, i);
            added++;
        }
    }
    if (!added) {
        p->bad = true;
    }
}

static inline void tr_span_n(struct tr_path *p, const void *from, const void *to, unsigned n)
{
    while (n--) {
        tr_span(p, from, to);
    }
}

/* Path index of the nth (0-based) execution of the instruction at addr, or -1. */
static inline int tr_find(const struct tr_path *p, const void *addr, unsigned nth)
{
    for (unsigned i = 0; i < p->n; i++) {
        if (p->tab[p->idx[i]].start == (uint32_t)(uintptr_t)addr && nth-- == 0) {
            return i;
        }
    }
    return -1;
}

/*
 * Every non-branch, non-far instruction in the path must be followed by the
 * instruction after it in memory: catches a path that does not describe the
 * program (a mistake of the test, not of the implementation).
 */
static inline bool tr_path_consistent(const struct tr_path *p, unsigned *where)
{
    if (p->bad) {
        *where = p->n;
        return false;
    }
    for (unsigned i = 0; i + 1 < p->n; i++) {
        const struct tr_ent *e = &p->tab[p->idx[i]];
        unsigned cls = e->cls & TR_CLASS;
        if ((cls == TR_P || cls == TR_X) && !(e->cls & TR_FAR) &&
            p->tab[p->idx[i + 1]].start != e->end) {
            *where = i;
            return false;
        }
    }
    return true;
}

static inline bool tr_in_range(const struct tr_cfg *c, uint32_t ip)
{
    if (!(c->filters & TR_F_IPF) || !c->ipf_supported) {
        return true;
    }
    ip = tr_eff(c, ip);
    bool in = ip >= c->base_ip && ip <= c->limit_ip;
    return (c->filters & TR_F_IPI) ? !in : in;
}

static inline bool tr_branch_filtered(const struct tr_cfg *c, unsigned cls)
{
    return (cls == TR_C && (c->filters & TR_F_NCB)) ||
           (cls == TR_R && (c->filters & TR_F_NRB)) ||
           (cls == TR_A && (c->filters & TR_F_NAB));
}

struct tr_sim {
    const struct tr_cfg *cfg;
    struct tr_out *out;
    int32_t c[4];
    bool discard;               /* a store of this instruction faulted */
};

static inline void tr_emit(struct tr_sim *s, uint8_t id, uint8_t tkn, uint32_t ip,
                           uint32_t target, uint32_t next, unsigned pos)
{
    struct tr_out *o = s->out;

    if (o->nrec == TR_MAX_REC) {
        o->overflow = true;
        return;
    }
    struct tr_rec *r = &o->rec[o->nrec];
    r->id = id;
    r->tkn = tkn;
    r->ip = ip;
    r->target = target;
    r->next = next;
    r->pos = pos;
    if ((int)o->nrec == s->cfg->fault_rec) {
        s->discard = true;      /* pending; later records of this instruction are dropped */
    }
    o->nrec++;
}

/* One occurrence of event id; a record when the counter goes negative. */
static inline void tr_count(struct tr_sim *s, unsigned id, uint8_t tkn, uint32_t ip,
                            uint32_t target, uint32_t next, unsigned pos)
{
    s->out->counted[id]++;
    if (--s->c[id] >= 0) {
        return;
    }
    if (s->discard) {
        s->out->discarded++;    /* counter stays negative (1.1 step 2) */
        return;
    }
    tr_emit(s, id, tkn, ip, target, next, pos);
    /* Reset to the interval, shortened by an overrun (1.1 step 5). */
    int32_t v = s->cfg->interval[id] + s->c[id] + 1;
    s->c[id] = v < 0 ? 0 : v;
}

static inline void tr_simulate(const struct tr_path *p, const struct tr_cfg *cfg, struct tr_out *o)
{
    struct tr_sim s = { .cfg = cfg, .out = o };
    int32_t saved_c[4] = { 0 };
    unsigned saved_nrec = 0;

    memset(o, 0, sizeof(*o));
    for (int id = 1; id <= 3; id++) {
        s.c[id] = cfg->counter[id];
    }
    for (unsigned i = 0; i < p->n; i++) {
        const struct tr_ent *e = &p->tab[p->idx[i]];
        unsigned cls = e->cls & TR_CLASS;
        uint32_t next = i + 1 < p->n ? p->tab[p->idx[i + 1]].start : 0;

        s.discard = false;
        if (e->cls & TR_SAVE) {
            memcpy(saved_c, s.c, sizeof(saved_c));
            saved_nrec = o->nrec;
        }
        if (e->cls & TR_RSTOR) {
            /* Later records overwrite those stored after the XSAVE. */
            memcpy(s.c, saved_c, sizeof(saved_c));
            o->nrec = saved_nrec;
        }
        if ((e->cls & TR_SNAP) && o->nsnap < TR_MAX_SNAP) {
            for (int id = 1; id <= 3; id++) {
                o->snap[o->nsnap][id] = s.c[id];
            }
            o->nsnap++;
        }
        if (cls == TR_X) {
            continue;
        }
        bool in = tr_in_range(cfg, e->start);
        uint32_t ip = tr_eff(cfg, e->start), target = tr_eff(cfg, next);
        if (e->cls & TR_INS) {
            tr_emit(&s, 255, 0, ip, 0, target, i);
        }
        if ((e->cls & TR_VAL) && (cfg->events & TR_EV_VAL) && in) {
            tr_count(&s, 1, 0, ip, 0, target, i);
        }
        if ((cfg->events & TR_EV_IRE) && in) {
            tr_count(&s, 2, 0, ip, 0, target, i);
        }
        if (cls != TR_P && (cfg->events & TR_EV_BRE) && in && !tr_branch_filtered(cfg, cls)) {
            uint8_t tkn = cls == TR_C ? next != e->end : 1;
            tr_count(&s, 3, tkn, ip, target, target, i);
        }
    }
    for (int id = 1; id <= 3; id++) {
        o->end[id] = s.c[id];
    }
}

/*
 * The number of occurrences of event id up to and including path index
 * pos: a counter of (that - 1) goes negative exactly there.
 */
static inline int32_t tr_occurrences(const struct tr_path *p, const struct tr_cfg *cfg,
                                     unsigned id, unsigned pos)
{
    int32_t n = 0;

    for (unsigned i = 0; i <= pos && i < p->n; i++) {
        const struct tr_ent *e = &p->tab[p->idx[i]];
        unsigned cls = e->cls & TR_CLASS;
        if (cls == TR_X || !tr_in_range(cfg, e->start)) {
            continue;
        }
        n += id == 1 ? !!(e->cls & TR_VAL) :
             id == 2 ? 1 : (cls != TR_P && !tr_branch_filtered(cfg, cls));
    }
    return n;
}

/*
 * Compare the records in the ring, from slot first for nrec records, with
 * the model.  One report per property.  LWPVAL and LWPINS records are only
 * checked for EventId and address (their contents are lwp-insn's business).
 */
static inline void tr_check_ring(const char *what, const struct tr_out *o,
                                 const struct lwp_record *ring, unsigned nslots,
                                 unsigned first, unsigned nrec, uint8_t core_id)
{
    unsigned n = nrec < o->nrec ? nrec : o->nrec;
    int bad;

#define TR_SLOT(k) (&ring[((first) + (k)) % (nslots)])
    report(!o->overflow && nrec == o->nrec, "%s: %u records in the ring (want %u)",
           what, nrec, o->nrec);

    bad = -1;
    for (unsigned k = 0; k < n && bad < 0; k++) {
        if (TR_SLOT(k)->event_id != o->rec[k].id) {
            bad = k;
        }
    }
    if (bad < 0) {
        report(true, "%s: EventId sequence", what);
    } else {
        report(false, "%s: EventId sequence: record %d is %u, want %u (ip %#llx, want %#x)",
               what, bad, TR_SLOT(bad)->event_id, o->rec[bad].id,
               (unsigned long long)TR_SLOT(bad)->ip, o->rec[bad].ip);
    }

    bad = -1;
    for (unsigned k = 0; k < n && bad < 0; k++) {
        if (TR_SLOT(k)->ip != o->rec[k].ip) {
            bad = k;
        }
    }
    if (bad < 0) {
        report(true, "%s: InstructionAddress of every record", what);
    } else {
        report(false, "%s: InstructionAddress: record %d (EventId %u) has %#llx, want %#x",
               what, bad, TR_SLOT(bad)->event_id, (unsigned long long)TR_SLOT(bad)->ip,
               o->rec[bad].ip);
    }

    bad = -1;
    unsigned nbr = 0;
    for (unsigned k = 0; k < n && bad < 0; k++) {
        const struct lwp_record *r = TR_SLOT(k);
        if (o->rec[k].id != 3 || r->event_id != 3) {
            continue;
        }
        nbr++;
        if (r->data2 != o->rec[k].target || (r->flags >> 15) != o->rec[k].tkn) {
            bad = k;
        }
    }
    if (bad < 0) {
        report(true, "%s: TargetAddress and TKN of the %u branch records", what, nbr);
    } else {
        report(false, "%s: branch record %d at %#x: target %#llx TKN %u, want %#x TKN %u",
               what, bad, o->rec[bad].ip, (unsigned long long)TR_SLOT(bad)->data2,
               TR_SLOT(bad)->flags >> 15, o->rec[bad].target, o->rec[bad].tkn);
    }

    bad = -1;
    for (unsigned k = 0; k < n && bad < 0; k++) {
        const struct lwp_record *r = TR_SLOT(k);
        bool ok = r->core_id == core_id;
        if (r->event_id == 2) {
            ok &= r->flags == 0 && r->data1 == 0 && r->data2 == 0 && r->reserved == 0;
        } else if (r->event_id == 3) {
            ok &= (r->flags & 0x7fff) == 0 && r->data1 == 0 && r->reserved == 0;
        }
        if (!ok) {
            bad = k;
        }
    }
    if (bad < 0) {
        report(true, "%s: CoreId %#x, Flags (FUS/PRV/PRD 0), zero fields", what, core_id);
    } else {
        const struct lwp_record *r = TR_SLOT(bad);
        report(false, "%s: record %d: EventId %u CoreId %#x Flags %#x data1 %#x data2 %#llx "
               "rsvd %#llx", what, bad, r->event_id, r->core_id, r->flags, r->data1,
               (unsigned long long)r->data2, (unsigned long long)r->reserved);
    }
#undef TR_SLOT
}

/* A flushed 26-bit EventCountern field as a signed value. */
static inline int32_t tr_field(uint32_t v)
{
    v &= 0x03ffffff;
    return (v & 0x02000000) ? (int32_t)(v | 0xfc000000) : (int32_t)v;
}

/*
 * The flush at the end of each lwp-events program (guest and linux-user):
 * SLWPCB, then its result and EventCounter1..3 and BufferHeadOffset copied
 * into struct prog_args at [R_DI] (offsets 12..28), then LLWPCB 0.  The
 * including file defines R_AX and R_DI for its mode.
 */
#define PROG_MACROS                                                         \
    TR_ASM_MACROS                                                           \
    ".ifndef PROG_MACROS_DEFINED\n"                                         \
    ".set PROG_MACROS_DEFINED, 1\n"                                         \
    ".macro TFLUSH tab:req\n"                                               \
    "T \\tab, TP|TSNAP, slwpcb %eax\n"                                      \
    "T \\tab, TP, mov %eax, 12(" R_DI ")\n"                                 \
    "T \\tab, TP, mov 0x84(" R_AX "), %edx\n"                               \
    "T \\tab, TP, mov %edx, 16(" R_DI ")\n"                                 \
    "T \\tab, TP, mov 0x8c(" R_AX "), %edx\n"                               \
    "T \\tab, TP, mov %edx, 20(" R_DI ")\n"                                 \
    "T \\tab, TP, mov 0x94(" R_AX "), %edx\n"                               \
    "T \\tab, TP, mov %edx, 24(" R_DI ")\n"                                 \
    "T \\tab, TP, mov 0x10(" R_AX "), %edx\n"                               \
    "T \\tab, TP, mov %edx, 28(" R_DI ")\n"                                 \
    "T \\tab, TP, xor %edx, %edx\n"                                         \
    "T \\tab, TX|TSNAP, llwpcb %edx\n"                                      \
    ".endm\n"                                                               \
    ".endif\n"

#endif
