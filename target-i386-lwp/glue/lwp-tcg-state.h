/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qemu-lwp: per-vCPU data of the TCG event counting, kept in CPUX86State
 * next to the architectural LwpState.  Derived or transient: recomputed by
 * x86_lwp_state_changed(), never migrated.
 */
#ifndef QEMU_LWP_TCG_STATE_H
#define QEMU_LWP_TCG_STATE_H

#include "../include/lwp/lwp-model.h"

typedef struct QemuLwpKnownPage {
    uint64_t page;
    uint32_t gen;
    int flags;                /* PAGE_*; 0: the entry is empty */
} QemuLwpKnownPage;

typedef struct QemuLwpTcg {
    uint32_t tb_flags;        /* HF_LWP_* for the current LWP state */
    int32_t branch_weight[LWP_BRANCH_CLASSES];   /* BRE charge per class */
    uint64_t insn_ip;         /* the instruction helper_lwp_retire retires */
    uint32_t tb_icount;       /* instructions of the cut TB (-icount) */
    uint8_t tb_uncharged;     /* the running TB was not charged at its start */
    /*
     * The TB whose last instruction, a branch at insn_ip, was not charged
     * at its start (LWP_TB_RETIRE_LAST): that TB's exit counts it when it
     * retires, and a fault in that TB before then gives back no charge
     * for it.  NULL: none.  The TB itself, not a flag, so that only its
     * own exits can ever count its branch.
     */
    const void *exit_tb;
    /*
     * Branch records are frequent (EventInterval3 < LWP_EXIT_HOOK_INTERVAL):
     * TBs translated now count a crossing branch at their exits.
     */
    uint8_t exit_hooks;
    /*
     * The running TB's record in lwp.pending was gathered at its start
     * (lwp_tb_defer): a fault whose unwind gives back at least this many
     * instructions came before the tagged one retired.  0: none.  Only
     * while the instructions-retired counter is still deferred_counter,
     * as the TB's start left it: the record's counter may have restarted
     * there (lwp_tb_defer_restart), and TBs after it run with no call.
     */
    uint32_t deferred_unwind;
    int32_t deferred_counter;
    /*
     * linux-user: the last two pages (the ring's and the LWPCB's) that
     * page_get_flags was asked about, its answer and page_flags_generation()
     * then.  LWP goes on using them without another look-up until a mapping
     * changes (lwp_probe).
     */
    QemuLwpKnownPage known[2];
    uint8_t known_victim;
    /*
     * Which of them holds the ring's page the lean store writes to, and
     * the LWPCB's page a full ring's store reads and writes.
     */
    uint8_t ring_known;
    uint8_t cb_known;
    /*
     * The last lean store wrote LWPCB fields (a full ring): the next one
     * copies them before it decides (lwp_store_pending_lean).
     */
    uint8_t store_writes_fields;
} QemuLwpTcg;

#endif
