/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * linux-user: when a record reaches the ring.  Instructions retired at the
 * minimum interval through two blocks of 250 NOPs, run in turn, each
 * ending by loading the ring slot the next record will take.  A record of
 * one of a block's NOPs is the record of an instruction that retired
 * before that block's load, and before everything the program ran after
 * it (the loop that reads the ring, the other block).  It is late if that
 * load did not see it, or if it shows up in the ring only after the other
 * block ran.
 *
 *   lwp-late-store exact   (-cpu max,lwp-sync-store=on): no record is
 *                          late -- a record is stored where its
 *                          instruction retires;
 *   lwp-late-store late    (-cpu max, the default, or latitude mode's
 *                          -cpu max,lwp-store-delay=511,lwp-seed=S): some
 *                          are -- spec 1.1 (Store): "the Store stage (and
 *                          subsequent stages) may complete some number of
 *                          cycles after the tagged instruction retires" --
 *                          and each is in the ring once LWP is stopped.
 *
 * Both: every record names a NOP of a block or an instruction outside
 * them, and none is lost (MissedEvents 0, the slots after the head
 * untouched).  And however late, a record is in the ring when the next
 * system call runs: write(2) after each block copies the ring's next
 * slots into a pipe, and every record of the block's NOPs is in that copy
 * (a record is stored before the CPU leaves CPL 3, docs/lwp-events.rst).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lwp-ire-session.h"

#define NOPS 250
#define ITERS 400
#define PERIOD 256
#define RING_RECORDS 4096

static struct lwpcb cb;
static struct lwp_record ring[RING_RECORDS] __attribute__((aligned(32)));
extern const char block_a[], block_a_end[], block_b[], block_b_end[];

/*
 * A block: page-aligned, so that it is one TB (250 NOPs, the load, the
 * jump back).  The asm text of block @name; %0 receives the first dword
 * of the slot at %1 as the load saw it.
 */
#define NOP_BLOCK_ASM(name) \
    "jmp 2f\n\t"                                   \
    ".p2align 12\n"                                 \
    name ":\n\t"                                    \
    ".rept 250\n\t"                                 \
    "nop\n\t"                                       \
    ".endr\n"                                       \
    name "_end:\n\t"                                \
    "movl (%1), %0\n\t"                             \
    "jmp 3f\n"                                      \
    "2:\n\t"                                        \
    "jmp " name "\n"                                \
    "3:\n"

static uint32_t __attribute__((noinline, noclone))
run_block_a(const volatile struct lwp_record *slot)
{
    uint32_t seen;

    asm volatile(NOP_BLOCK_ASM("block_a") : "=r"(seen) : "r"(slot) : "memory");
    return seen;
}

static uint32_t __attribute__((noinline, noclone))
run_block_b(const volatile struct lwp_record *slot)
{
    uint32_t seen;

    asm volatile(NOP_BLOCK_ASM("block_b") : "=r"(seen) : "r"(slot) : "memory");
    return seen;
}

/* Which block's NOPs @ip lies in: 'a', 'b' or 0. */
static char block_of(uint64_t ip)
{
    if (ip >= (uintptr_t)block_a && ip < (uintptr_t)block_a_end) {
        return 'a';
    }
    if (ip >= (uintptr_t)block_b && ip < (uintptr_t)block_b_end) {
        return 'b';
    }
    return 0;
}

int main(int argc, char **argv)
{
    unsigned next = 0, in_block = 0, late = 0, unseen = 0, stored, bad = 0;
    struct lwp_record syscall_saw[8];
    int pipefd[2];
    int expect_late;
    char what[200];

    if (argc != 2 || (strcmp(argv[1], "exact") && strcmp(argv[1], "late"))) {
        fprintf(stderr, "usage: %s exact|late\n", argv[0]);
        return 2;
    }
    expect_late = !strcmp(argv[1], "late");
    if (!lwp_ire_available()) {
        return 77;
    }
    if (pipe(pipefd)) {
        perror("pipe");
        return 1;
    }
    lwp_ire_start(&cb, ring, sizeof(ring), PERIOD);
    for (unsigned i = 0; i < ITERS && next < RING_RECORDS - 8; i++) {
        unsigned first = next;
        volatile struct lwp_record *slot = &ring[first];
        char block = i & 1 ? 'b' : 'a';
        uint32_t seen = block == 'a' ? run_block_a(slot) : run_block_b(slot);

        /* The ring's next slots as a system call reads them. */
        if (write(pipefd[1], &ring[first], sizeof(syscall_saw)) !=
                (ssize_t)sizeof(syscall_saw) ||
            read(pipefd[0], syscall_saw, sizeof(syscall_saw)) !=
                (ssize_t)sizeof(syscall_saw)) {
            perror("pipe copy");
            return 1;
        }
        /* Records of the blocks' NOPs, as the load saw them and now. */
        while (next < RING_RECORDS - 8 && ring[next].event_id) {
            char of = block_of(ring[next].ip);

            if (of) {
                in_block++;
                late += of != block ||
                        (next == first && !(seen & 0xff));
                unseen += of == block && next - first < 8 &&
                          !syscall_saw[next - first].event_id;
            }
            next++;
        }
    }
    lwp_ire_stop();

    stored = cb.head / sizeof(ring[0]);
    for (unsigned i = 0; i < stored; i++) {
        bad += ring[i].event_id != 2;
    }
    snprintf(what, sizeof(what),
             "%u records (%u seen in the loop), MissedEvents %llu, the slot "
             "after the head untouched", stored, next,
             (unsigned long long)cb.missed);
    report(next > ITERS / 2 && stored >= next && cb.missed == 0 &&
           !ring[stored].event_id, what);
    snprintf(what, sizeof(what),
             "every record is an instructions-retired record (%u are not)", bad);
    report(bad == 0, what);
    snprintf(what, sizeof(what),
             "%u records of the blocks' NOPs, %u of them not yet in the ring "
             "when their block's load ran or the other block ran (%s)",
             in_block, late,
             expect_late ? "some expected: stored late" :
                           "none expected: stored at the instruction");
    report(in_block > ITERS / 4 && (expect_late ? late > 0 : late == 0), what);
    snprintf(what, sizeof(what),
             "every record of a block's NOPs is in the ring when the system "
             "call after the block reads it (%u are not)", unseen);
    report(unseen == 0, what);
    return report_summary();
}
