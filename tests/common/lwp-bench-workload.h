/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The CPU-bound workload of bench/run-bench.sh, shared by the linux-user
 * program (bench/workload-user.c) and the system guest (bench/bench-guest.c)
 * so that both run the same loop and print the same checksum.
 *
 * A round is a hashing loop with data-dependent branches and table updates,
 * then an insertion sort of a slice of the table: short translation blocks,
 * many conditional branches, loads and stores.  bench_run() runs the rounds
 * in one of four modes:
 *
 *   none  LWP is not touched at all;
 *   val   LWPVAL in the hot loop (event 1), interval N;
 *   ire   instructions retired (event 2), interval N;
 *   bre   branches retired (event 3), interval N.
 *
 * In the LWP modes the program empties its ring buffer after every round
 * (SLWPCB flushes the head, the program consumes up to it and moves the
 * tail), so records are really stored and the ring never fills.
 *
 * Before including, define NOINLINE and the primitives
 *   BENCH_CPUID(leaf, a, b, c, d)     assigns the four uint32_t lvalues;
 *   BENCH_LLWPCB(ptr), BENCH_SLWPCB() (returns the LWPCB address);
 *   BENCH_LWPVAL32(data2, data1, flags)  flags an immediate.
 * Only <stdint.h> types are used: the header works freestanding.
 */
#ifndef LWP_BENCH_WORKLOAD_H
#define LWP_BENCH_WORKLOAD_H

#include <stdint.h>

#define BENCH_TABLE   256
#define BENCH_INNER   4096
#define BENCH_SORT    32

/* Ring buffer: 8192 records (256 KiB), far more than one round stores. */
#define BENCH_RING_RECORDS 8192
#define BENCH_RECORD_SIZE  32

enum bench_mode { BENCH_NONE, BENCH_VAL, BENCH_IRE, BENCH_BRE };

/* LWPCB fixed fields (AMD pub. 43724, table 6-1). */
#define BENCH_CB_FLAGS     0x00
#define BENCH_CB_SIZE      0x04
#define BENCH_CB_BASE      0x08
#define BENCH_CB_HEAD      0x10
#define BENCH_CB_MISSED    0x18
#define BENCH_CB_TAIL      0x40

struct bench_state {
    uint32_t x, h, acc;
    uint32_t table[BENCH_TABLE];
    uint32_t slice[BENCH_SORT];
};

struct bench_result {
    uint32_t checksum;
    int status;                 /* 0 ok, 2 the event is not available */
    uint64_t records;           /* records consumed from the ring */
    uint64_t bad_records;       /* records of another EventId */
    uint64_t missed;            /* MissedEvents at the end */
};

static uint8_t bench_cb[1024] __attribute__((aligned(64)));
static uint8_t bench_ring[BENCH_RING_RECORDS * BENCH_RECORD_SIZE]
    __attribute__((aligned(4096)));

static inline volatile uint32_t *bench_cb32(uint32_t off)
{
    return (volatile uint32_t *)(bench_cb + off);
}

static inline volatile uint64_t *bench_cb64(uint32_t off)
{
    return (volatile uint64_t *)(bench_cb + off);
}

/*
 * The empty asm keeps each arm a real branch (gcc would otherwise turn the
 * if/else into CMOVs and the loop into one straight block).
 */
#define BENCH_ARM() asm volatile("")

typedef uint32_t (*bench_op_t)(uint32_t acc, uint32_t v);

NOINLINE static uint32_t bench_op_add(uint32_t acc, uint32_t v) { return acc + (v >> 3); }
NOINLINE static uint32_t bench_op_rot(uint32_t acc, uint32_t v) { return (acc << 5 | acc >> 27) ^ v; }
NOINLINE static uint32_t bench_op_mul(uint32_t acc, uint32_t v) { return acc * 33 + v; }
NOINLINE static uint32_t bench_op_sub(uint32_t acc, uint32_t v) { return acc - (v & 0xffff); }

static bench_op_t const bench_ops[4] = {
    bench_op_add, bench_op_rot, bench_op_mul, bench_op_sub,
};

static inline __attribute__((always_inline))
void bench_round_body(struct bench_state *s, uint32_t round, int val)
{
    uint32_t x = s->x, h = s->h, acc = s->acc;

    for (uint32_t i = 0; i < BENCH_INNER; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        h = (h ^ x) * 0x01000193u;
        uint32_t *slot = &s->table[h >> 24];
        if (h & 0x100) {
            BENCH_ARM();
            *slot += x;
        } else {
            BENCH_ARM();
            *slot ^= h >> 3;
        }
        if (*slot & 1) {
            BENCH_ARM();
            acc += *slot >> 7;
        } else {
            BENCH_ARM();
            acc ^= i;
        }
        if ((i & 7) == 0) {
            acc = bench_ops[x & 3](acc, h);      /* indirect call, return */
        }
        if (val) {
            BENCH_LWPVAL32(x, i, 0x7);
        }
    }

    /* Insertion sort of a slice of the table. */
    uint32_t first = (round * BENCH_SORT) % BENCH_TABLE;
    for (uint32_t i = 0; i < BENCH_SORT; i++) {
        uint32_t v = s->table[first + i], j = i;
        while (j > 0 && s->slice[j - 1] > v) {
            s->slice[j] = s->slice[j - 1];
            j--;
        }
        s->slice[j] = v;
    }
    acc += s->slice[acc % BENCH_SORT] ^ s->slice[BENCH_SORT / 2];
    s->x = x;
    s->h = h;
    s->acc = acc;
}

NOINLINE static void bench_round_plain(struct bench_state *s, uint32_t round)
{
    bench_round_body(s, round, 0);
}

NOINLINE static void bench_round_val(struct bench_state *s, uint32_t round)
{
    bench_round_body(s, round, 1);
}

/* Consume what LWP stored since the last call; the tail follows the head. */
static inline void bench_drain(struct bench_result *r, unsigned event_id)
{
    BENCH_SLWPCB();                                 /* flushes the head */
    asm volatile("" ::: "memory");
    uint32_t head = *bench_cb32(BENCH_CB_HEAD);
    uint32_t tail = *bench_cb32(BENCH_CB_TAIL);
    uint32_t size = sizeof(bench_ring);

    if (head != tail) {
        uint32_t last = (head + size - BENCH_RECORD_SIZE) % size;
        r->records += ((head + size - tail) % size) / BENCH_RECORD_SIZE;
        r->bad_records += bench_ring[last] != event_id;
        *bench_cb32(BENCH_CB_TAIL) = head;
    }
}

static void bench_init(struct bench_state *s)
{
    s->x = 2463534242u;
    s->h = 2166136261u;
    s->acc = 0;
    for (uint32_t i = 0; i < BENCH_TABLE; i++) {
        s->table[i] = i * 0x9E3779B9u;
    }
    for (uint32_t i = 0; i < BENCH_SORT; i++) {
        s->slice[i] = 0;
    }
}

/*
 * Run the workload.  interval is the event's EventInterval (LLWPCB raises a
 * hardware event's interval to the implementation's minimum).
 */
static void bench_run(struct bench_state *s, enum bench_mode mode,
                      uint32_t interval, uint32_t rounds,
                      struct bench_result *r)
{
    uint32_t a, b, c, d;
    unsigned event = mode == BENCH_VAL ? 1 : mode == BENCH_IRE ? 2 :
                     mode == BENCH_BRE ? 3 : 0;

    r->checksum = 0;
    r->status = 0;
    r->records = r->bad_records = r->missed = 0;
    bench_init(s);

    if (mode == BENCH_NONE) {
        for (uint32_t n = 0; n < rounds; n++) {
            bench_round_plain(s, n);
        }
        r->checksum = s->acc ^ s->h;
        return;
    }

    /* The event must be available (8000_001C.EAX) and fit our LWPCB. */
    BENCH_CPUID(0x80000000u, a, b, c, d);
    if (a < 0x8000001Cu) {
        r->status = 2;
        return;
    }
    BENCH_CPUID(0x8000001Cu, a, b, c, d);
    uint32_t cb_size = (b & 0xff) * 8, event_offset = b >> 24;
    uint32_t min_ring = ((c >> 16) & 0xff) * 32 * BENCH_RECORD_SIZE;
    if (!(a & 1) || !(a >> event & 1) || cb_size > sizeof(bench_cb) ||
        event_offset + 8 * event > cb_size || min_ring > sizeof(bench_ring)) {
        r->status = 2;
        return;
    }

    for (uint32_t i = 0; i < sizeof(bench_cb); i++) {
        bench_cb[i] = 0;
    }
    *bench_cb32(BENCH_CB_FLAGS) = 1u << event;
    *bench_cb32(BENCH_CB_SIZE) = sizeof(bench_ring);
    *bench_cb64(BENCH_CB_BASE) = (uintptr_t)bench_ring;
    *bench_cb32(event_offset + 8 * (event - 1)) = interval;
    *bench_cb32(event_offset + 8 * (event - 1) + 4) = interval;
    asm volatile("" ::: "memory");
    BENCH_LLWPCB(bench_cb);
    asm volatile("" ::: "memory");
    if (!(*bench_cb32(BENCH_CB_FLAGS) >> event & 1)) {
        BENCH_LLWPCB(0);
        r->status = 2;                  /* LLWPCB masked the event off */
        return;
    }

    for (uint32_t n = 0; n < rounds; n++) {
        if (mode == BENCH_VAL) {
            bench_round_val(s, n);
        } else {
            bench_round_plain(s, n);
        }
        bench_drain(r, event);
    }
    BENCH_LLWPCB(0);                    /* flushes and stops */
    asm volatile("" ::: "memory");
    r->missed = *bench_cb64(BENCH_CB_MISSED);
    r->checksum = s->acc ^ s->h;
}

/* "none", "val", "ire", "bre" -> mode; -1 for anything else. */
static inline int bench_parse_mode(const char *m, unsigned len)
{
    static const char names[4][5] = { "none", "val", "ire", "bre" };

    for (int i = 0; i < 4; i++) {
        unsigned n = 0;
        while (names[i][n] && n < len && names[i][n] == m[n]) {
            n++;
        }
        if (!names[i][n] && n == len) {
            return i;
        }
    }
    return -1;
}

#endif
