// SPDX-License-Identifier: GPL-2.0-or-later
// One LWP operation's view of guest memory: reads go through LwpMem, writes
// are checked with probe_write and recorded in the LwpOutcome instead of
// being performed, and later reads see the recorded writes.  The first
// access that fails records the fault; the caller then abandons the
// operation.

#ifndef LWP_CORE_ACCESS_H
#define LWP_CORE_ACCESS_H

#include <stdint.h>

#include "lwp/lwp-model.h"

namespace lwp {

// Worst case of guest-memory writes in one operation (LLWPCB): flushing the
// old session stores the pending record (record, MissedEvents, head) and
// writes every counter and the head; the new LWPCB gets Flags and every
// interval written back.  Outside 64-bit mode any write may be split in two
// where linear addresses wrap at 4 GiB.
constexpr unsigned kMaxStoreWrites = 3;
constexpr unsigned kMaxFlushWrites = kMaxStoreWrites + LWP_MAX_EVENT + 1;
constexpr unsigned kMaxLoadWrites = 1 + LWP_MAX_EVENT;
constexpr unsigned kMaxLogicalWrites = kMaxFlushWrites + kMaxLoadWrites;
static_assert(2 * kMaxLogicalWrites <= LWP_MAX_WRITES,
              "LWP_MAX_WRITES cannot hold LLWPCB's worst case");

class Access {
public:
    Access(const LwpCpuEnv &env, const LwpMem &mem, LwpOutcome &out);

    bool read(uint64_t addr, void *buf, uint32_t len);
    bool read_u32(uint64_t addr, uint32_t *value);
    bool read_u64(uint64_t addr, uint64_t *value);

    // @len is 1..LWP_RECORD_SIZE.
    bool write(uint64_t addr, const void *data, uint32_t len);
    bool write_u32(uint64_t addr, uint32_t value);
    bool write_u64(uint64_t addr, uint64_t value);

    // Fails like a write would if any byte of the range is not writable;
    // records nothing.  For memory LWP will write later (the ring buffer).
    bool check_writable(uint64_t addr, uint64_t len);

    // Records #GP(0); returns false so callers can "return access.fail_gp()".
    bool fail_gp();

    void signal_interrupt();

private:
    struct Piece {
        uint64_t addr;
        uint64_t len;
    };

    // Splits [addr, addr + len) where linear addresses wrap; false (and #GP
    // recorded) for a range that is not canonical in 64-bit mode.
    bool split(uint64_t addr, uint64_t len, Piece pieces[2], unsigned *count);
    bool read_piece(uint64_t addr, uint8_t *buf, uint64_t len);
    bool writable_piece(uint64_t addr, uint64_t len);
    void overlay_writes(uint64_t addr, uint8_t *buf, uint64_t len) const;
    void record_write(uint64_t addr, const uint8_t *data, uint32_t len);
    bool fail_pf(uint64_t addr, bool write);

    const LwpCpuEnv &env_;
    const LwpMem &mem_;
    LwpOutcome &out_;
};

} // namespace lwp

#endif // LWP_CORE_ACCESS_H
