// SPDX-License-Identifier: GPL-2.0-or-later
// The ring buffer protocol between LWP and the program emptying it (AMD
// pub. 43724 rev 3.08, sections 1.1, 6 and 8.3): store, full buffer,
// threshold interrupt, tail re-reads, head flushes, counter reset.

#include "lwp_ring.h"

#include <string.h>

#include "lwp_address.h"
#include "lwp_bytes.h"
#include "lwp_outcome.h"
#include "lwpcb.h"

namespace lwp {

namespace {

// After XRSTOR only the volatile state is back; the rest of what the store
// path needs is re-read from the LWPCB now that a #PF can be taken.
bool refresh_cache(LwpState &st, const LwpCpuEnv &env, Access &access)
{
    const LwpCaps &caps = *env.caps;
    uint8_t fixed[kCbStoreFieldsEnd];
    if (!access.read(st.cbaddr, fixed, sizeof(fixed))) {
        return false;
    }
    // The enabled events came from the XSAVE area; only INT is the LWPCB's.
    const uint32_t int_flag = load_le32(fixed + kCbFlags) & kFlagsInt &
                              available_flags(env);
    st.flags = (st.flags & kFlagsEvents) | int_flag;
    st.random = static_cast<uint8_t>(load_le32(fixed + kCbBufferSize) >>
                                     kRandomShift);
    st.threshold = load_le32(fixed + kCbThreshold) & ~(LWP_RECORD_SIZE - 1);
    st.base_ip = load_le64(fixed + kCbBaseIp);
    st.limit_ip = load_le64(fixed + kCbLimitIp);
    st.tail = load_le32(fixed + kCbTail);
    for (unsigned id = 1; id <= LWP_MAX_EVENT; id++) {
        st.interval[id] = 0;
        if (!(st.flags & event_bit(id))) {
            continue;
        }
        uint32_t raw;
        if (!access.read_u32(st.cbaddr + event_interval_offset(caps, id),
                             &raw)) {
            return false;
        }
        st.interval[id] = static_cast<uint32_t>(
            effective_interval(id, event_field_value(raw)));
    }
    st.cache_valid = 1;
    // Latitude mode: the refresh is a new start of the session as far as
    // caching goes (8.3: "refreshed from the LWPCB when LWP is enabled
    // ... implicitly ... after ... XRSTOR"), so the choice is drawn again.
    draw_interval_policy(st, env);
    return true;
}

template <typename Ring, typename Acc>
bool reread_tail(Ring &st, Acc &access)
{
    return access.read_u32(st.cbaddr + kCbTail, &st.tail);
}

// Step 3 (store) and 4 (report) of section 1.1 with section 8.3's rules,
// for a ring whose cached fields are valid.  Written once for the three
// ways the model runs it: on the whole state through Access (the general
// path), and on RingView through LeanAccess (lwp_store_fast) or
// FieldCopyAccess (lwp_store_lean).  @Ring has
// LwpState's ring fields; @Acc has Access's interface.  @tail_reread is
// latitude mode's n of 8.3's "every nth time" (0 or 1: every time).
template <typename Ring, typename Acc>
bool ring_store(Ring &st, Acc &access, const uint8_t record[LWP_RECORD_SIZE],
                uint8_t tail_reread, bool *missed)
{
    *missed = false;
    if (!access.write(st.buffer_base + st.head, record, LWP_RECORD_SIZE)) {
        return false;
    }

    // A stale tail may make the buffer look full: re-read before believing
    // it.  Latitude mode never relaxes this one (8.3: "It also rereads it
    // whenever the ring buffer appears to be full"), which is what keeps a
    // stale tail from ever costing a record: the tail only moves forward,
    // so a stale one only makes the ring look fuller, and only fullness
    // decides whether the head advances or a record is missed.
    bool tail_fresh = false;
    bool flush_head = false;
    const uint32_t next = next_head(st);
    if (next == st.tail) {
        if (!reread_tail(st, access)) {
            return false;
        }
        tail_fresh = true;
    }
    if (next == st.tail) {
        // Full: the record just written stays in the slot at the head and
        // will be overwritten by the next one.
        uint64_t missed_events;
        if (!access.read_u64(st.cbaddr + kCbMissedEvents, &missed_events) ||
            !access.write_u64(st.cbaddr + kCbMissedEvents, missed_events + 1)) {
            return false;
        }
        *missed = true;
        flush_head = true;
    } else {
        st.head = next;
    }

    // Table 6-1: the space used is computed when LWP advances the head, so a
    // full ring (head not advanced) does not interrupt again.  A threshold
    // of 0 interrupts on every advancing store.
    bool confirmed = false;
    if (!*missed && threshold_appears_met(st)) {
        if (!tail_fresh && tail_reread > 1 && st.tail_credit) {
            // Latitude mode, 8.3: the re-read "every time it stores an event
            // record while the threshold condition appears to be true" is
            // relaxed to "every nth time": this store believes the cached
            // tail, and interrupts even if the program has since emptied
            // the ring below the threshold.
            st.tail_credit--;
        } else {
            if (!tail_fresh && !reread_tail(st, access)) {
                return false;
            }
            tail_fresh = true;
        }
        if (space_used(st) >= st.threshold) {
            // The handler must see the head that crossed the threshold.
            flush_head = true;
            confirmed = true;
            access.signal_interrupt();
        }
    }
    if (tail_fresh) {
        // A threshold confirmed on a fresh tail opens a run of n - 1 stores
        // that may skip the re-read; anything else leaves none, so the
        // threshold's first appearance always re-reads.
        st.tail_credit = confirmed && tail_reread > 1 ? tail_reread - 1 : 0;
    }
    if (flush_head && !access.write_u32(st.cbaddr + kCbHead, st.head)) {
        return false;
    }
    return true;
}

// An access the fast path may make: in one piece, canonical in long mode,
// below 4 GiB after the truncation Access::split makes outside it.
// *@addr becomes the linear address.
bool lean_linear(bool long_mode, unsigned bits, uint64_t *addr, uint32_t len)
{
    if (long_mode) {
        return canonical_range(*addr, len, bits);
    }
    *addr &= kLinear32Mask;
    return *addr + len <= kLinear32Mask + 1;
}

// Access's interface for lwp_store_lean: the record's write, whose slot it
// keeps, and the LWPCB's fields a full ring or a threshold reads and writes
// (8.3: the tail, MissedEvents, the head), read from @fields, the caller's
// copy of the LWPCB's first kCbStoreFieldsEnd bytes, and kept as writes;
// without @fields, none (a quiet store).  Anything else -- the interrupt,
// a field outside the copy or one read after this store wrote it, a copy
// the record's slot overlaps -- makes the store decline.
class FieldCopyAccess {
public:
    FieldCopyAccess(bool long_mode, uint64_t cbaddr, const uint8_t *fields,
                    LwpLeanStore &s)
        : long_mode_(long_mode), cbaddr_(cbaddr), fields_(fields), s_(s)
    {
        s_.nfields = 0;
    }

    bool read_u32(uint64_t addr, uint32_t *value)
    {
        const uint8_t *p = field(addr, 4);
        if (!p) {
            return false;
        }
        *value = load_le32(p);
        return true;
    }

    bool read_u64(uint64_t addr, uint64_t *value)
    {
        const uint8_t *p = field(addr, 8);
        if (!p) {
            return false;
        }
        *value = load_le64(p);
        return true;
    }

    bool write_u32(uint64_t addr, uint32_t value)
    {
        return write_field(addr, 4, value);
    }

    bool write_u64(uint64_t addr, uint64_t value)
    {
        return write_field(addr, 8, value);
    }

    void signal_interrupt() { loud_ = true; }

    bool write(uint64_t addr, const void *, uint32_t len)
    {
        if (slot_known_ || len != LWP_RECORD_SIZE ||
            !linear_in_found_page(long_mode_, &addr, len)) {
            return false;
        }
        slot_known_ = true;
        s_.slot = addr;
        fields_usable_ = fields_ && clear_of_fields(addr);
        return true;
    }

    bool decided() const { return slot_known_ && !loud_; }

private:
    // The copy of the field at @addr, if the store may read it there.
    const uint8_t *field(uint64_t addr, uint32_t len) const
    {
        const uint64_t off = addr - cbaddr_;
        if (!in_copy(off, len)) {
            return nullptr;
        }
        for (uint32_t i = 0; i < s_.nfields; i++) {
            const LwpFieldWrite &w = s_.fields[i];
            if (w.off < off + len && off < w.off + w.len) {
                return nullptr;
            }
        }
        return fields_ + off;
    }

    bool write_field(uint64_t addr, uint32_t len, uint64_t value)
    {
        const uint64_t off = addr - cbaddr_;
        if (!in_copy(off, len) ||
            s_.nfields == sizeof(s_.fields) / sizeof(s_.fields[0])) {
            return false;
        }
        LwpFieldWrite &w = s_.fields[s_.nfields++];
        w.off = static_cast<uint32_t>(off);
        w.len = len;
        w.value = value;
        return true;
    }

    // ring_store writes the record first, then reads and writes fields.
    bool in_copy(uint64_t off, uint32_t len) const
    {
        return fields_usable_ && off < kCbStoreFieldsEnd &&
               len <= kCbStoreFieldsEnd - off;
    }

    // The copy was made before the record's write: a slot over it is the
    // general path's to order.
    bool clear_of_fields(uint64_t slot) const
    {
        uint64_t cb = cbaddr_;
        return linear_in_found_page(long_mode_, &cb, kCbStoreFieldsEnd) &&
               slot - cb >= kCbStoreFieldsEnd && cb - slot >= LWP_RECORD_SIZE;
    }

    bool long_mode_;
    uint64_t cbaddr_;
    const uint8_t *fields_;
    LwpLeanStore &s_;
    bool slot_known_ = false;
    bool fields_usable_ = false;
    bool loud_ = false;
};

// Guest memory through the glue's callbacks (LwpMem), which find faults.
class CallbackMem {
public:
    explicit CallbackMem(const LwpMem &mem) : mem_(mem) {}

    static bool linear(bool long_mode, unsigned bits, uint64_t *addr,
                       uint32_t len)
    {
        return lean_linear(long_mode, bits, addr, len);
    }

    bool probe_write(uint64_t addr, uint32_t len)
    {
        return mem_.probe_write(mem_.opaque, addr, len);
    }

    bool read(uint64_t addr, uint8_t *buf, uint32_t len)
    {
        return mem_.read(mem_.opaque, addr, buf, len);
    }

private:
    const LwpMem &mem_;
};

// Access's interface for the common case only: every access allowed, none
// wrapping around the top of the linear address space (4 GiB outside long
// mode), none touching bytes an earlier write of the same store wrote.
// Anything else answers false with nothing recorded, and the store is left
// to the general path, which reports the fault or gets the corner right;
// so this class decides no rule itself.
class LeanAccess {
public:
    LeanAccess(bool long_mode, unsigned bits, CallbackMem &mem, LwpOutcome &out)
        : long_mode_(long_mode), bits_(bits), mem_(mem), out_(out)
    {
    }

    bool read_u32(uint64_t addr, uint32_t *value)
    {
        uint8_t raw[4];
        if (!read(addr, raw, sizeof(raw))) {
            return false;
        }
        *value = load_le32(raw);
        return true;
    }

    bool read_u64(uint64_t addr, uint64_t *value)
    {
        uint8_t raw[8];
        if (!read(addr, raw, sizeof(raw))) {
            return false;
        }
        *value = load_le64(raw);
        return true;
    }

    bool write(uint64_t addr, const void *data, uint32_t len)
    {
        // ring_store makes at most three writes: record, MissedEvents, head.
        if (out_.nwrites == kMaxStoreWrites || !usable(&addr, len) ||
            !mem_.probe_write(addr, len)) {
            return false;
        }
        LwpWrite &w = out_.writes[out_.nwrites++];
        w.addr = addr;
        w.len = len;
        memcpy(w.data, data, len);
        return true;
    }

    bool write_u32(uint64_t addr, uint32_t value)
    {
        uint8_t raw[4];
        store_le32(raw, value);
        return write(addr, raw, sizeof(raw));
    }

    bool write_u64(uint64_t addr, uint64_t value)
    {
        uint8_t raw[8];
        store_le64(raw, value);
        return write(addr, raw, sizeof(raw));
    }

    void signal_interrupt()
    {
        out_.interrupt = true;
    }

private:
    // In one piece (CallbackMem::linear), and clear of every write recorded
    // so far (a ring laid over the LWPCB's own fields is the general
    // path's business).  *@addr becomes the linear address.
    bool usable(uint64_t *addr_io, uint32_t len) const
    {
        if (!CallbackMem::linear(long_mode_, bits_, addr_io, len)) {
            return false;
        }
        const uint64_t addr = *addr_io;
        for (uint32_t i = 0; i < out_.nwrites; i++) {
            const LwpWrite &w = out_.writes[i];
            if (w.addr < addr + len && addr < w.addr + w.len) {
                return false;
            }
        }
        return true;
    }
    bool read(uint64_t addr, uint8_t *buf, uint32_t len)
    {
        return usable(&addr, len) && mem_.read(addr, buf, len);
    }

    bool long_mode_;
    unsigned bits_;
    CallbackMem &mem_;
    LwpOutcome &out_;
};

// ring_store through LeanAccess on the ring's fields alone, for
// st.pending; *@commit is where the ring stands after it.
bool lean_store(const LwpState &st, bool long_mode, unsigned bits,
                uint8_t tail_reread, CallbackMem &mem, LwpOutcome *out,
                LwpStoreCommit *commit)
{
    outcome_begin(out);
    LeanAccess access(long_mode, bits, mem, *out);
    RingView ring(st);
    bool missed;
    if (!ring_store(ring, access, st.pending, tail_reread, &missed)) {
        return false;
    }
    commit->head = ring.head;
    commit->tail = ring.tail;
    commit->tail_credit = ring.tail_credit;
    return true;
}

} // namespace

// Step 5 for the event a stored record reports: its counter restarts like
// after any other store.
[[gnu::hot]] void restart_counter(LwpState &st, const LwpCaps &caps,
                                  unsigned id)
{
    if (event_in_cb(st, caps, id)) {
        reset_counter(st, id);
    }
}

bool record_slot_writable(const LwpState &st, const LwpCpuEnv &env,
                          const LwpMem &mem)
{
    // The write ring_store starts with, probed as LeanAccess would.
    uint64_t addr = st.buffer_base + st.head;
    return lean_linear(env.mode64 || env.long_mode, canonical_bits(env), &addr,
                       LWP_RECORD_SIZE) &&
           mem.probe_write(mem.opaque, addr, LWP_RECORD_SIZE);
}

bool ensure_cache(LwpState &st, const LwpCpuEnv &env, Access &access)
{
    return st.cache_valid || refresh_cache(st, env, access);
}

bool store_pending(LwpState &st, const LwpCpuEnv &env, Access &access)
{
    if (!st.pending[0]) {
        return true;
    }
    uint8_t record[LWP_RECORD_SIZE];
    memcpy(record, st.pending, sizeof(record));
    bool missed;
    if (!store_record(st, env, access, record, &missed)) {
        return false;
    }
    const unsigned id = record[0];
    if (id >= 1 && id <= cb_event_count(*env.caps) &&
        (st.flags & event_bit(id)) && !reread_interval(st, env, access, id)) {
        return false;
    }
    memset(st.pending, 0, sizeof(st.pending));
    restart_counter(st, *env.caps, id);
    return true;
}

bool reread_interval(LwpState &st, const LwpCpuEnv &env, Access &access,
                     unsigned id)
{
    if (!intervals_live(st, env)) {
        return true;
    }
    // The minimum applies as at LLWPCB; unlike LLWPCB, nothing is written
    // back (8.3 speaks of a read only).
    uint32_t raw;
    if (!access.read_u32(st.cbaddr + event_interval_offset(*env.caps, id),
                         &raw)) {
        return false;
    }
    st.interval[id] = static_cast<uint32_t>(
        effective_interval(id, event_field_value(raw)));
    return true;
}

bool intervals_live(const LwpState &st, const LwpCpuEnv &env)
{
    // Both: a session migrated to a CPU without the freedom goes cached.
    return env.latitude.interval_draw && st.intervals_live;
}

void draw_interval_policy(LwpState &st, const LwpCpuEnv &env)
{
    if (!env.latitude.interval_draw) {
        return;
    }
    // splitmix64's finaliser over the seed and the session's generator:
    // reproducible for a seed, and a different stream for each seed.
    uint64_t z = env.latitude.seed ^ next_random(&st.rng);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    st.intervals_live = static_cast<uint8_t>(z >> 63);
}

bool store_record(LwpState &st, const LwpCpuEnv &env, Access &access,
                  const uint8_t record[LWP_RECORD_SIZE], bool *missed)
{
    // LLWPCB and XRSTOR never enable a ring smaller than one record; a
    // state that claims otherwise did not come from the model.
    if (st.buffer_size < LWP_RECORD_SIZE) {
        return access.fail_gp();
    }
    if (!ensure_cache(st, env, access)) {
        return false;
    }
    return ring_store(st, access, record, env.latitude.tail_reread, missed);
}

[[gnu::hot]] bool count_event(LwpState &st, unsigned id)
{
    // Counters are 26-bit fields in the LWPCB and the XSAVE area: saturate
    // rather than wrap to a large positive value.
    if (st.counter[id] > kEventFieldMin) {
        st.counter[id]--;
    }
    return st.counter[id] < 0;
}

} // namespace lwp

extern "C" {

[[gnu::flatten]] bool lwp_store_fast(const LwpState *st, const LwpCpuEnv *env,
                    const LwpMem *mem, LwpOutcome *out,
                    LwpStoreCommit *commit) noexcept
{
    using namespace lwp;

    if (!store_is_lean(*st, intervals_live(*st, *env))) {
        return false;
    }
    CallbackMem callbacks(*mem);
    return lean_store(*st, env->mode64 || env->long_mode, canonical_bits(*env),
                      env->latitude.tail_reread, callbacks, out, commit);
}

[[gnu::hot]] bool lwp_record_slot(const LwpState *st, bool long_mode,
                                  uint64_t *slot) noexcept
{
    return lwp::record_slot(*st, long_mode, slot);
}

[[gnu::flatten, gnu::hot]]
bool lwp_store_lean(const LwpState *st, bool long_mode, uint8_t tail_reread,
                    const uint8_t *fields, LwpLeanStore *s) noexcept
{
    using namespace lwp;

    static_assert(kCbStoreFieldsEnd == LWP_STORE_FIELDS_LEN,
                  "the fields ring_store may read");
    if (!store_is_lean(*st, st->intervals_live)) {
        return false;
    }
    FieldCopyAccess access(long_mode, st->cbaddr, fields, *s);
    RingView ring(*st);
    bool missed;
    if (!ring_store(ring, access, st->pending, tail_reread, &missed) ||
        !access.decided()) {
        return false;
    }
    s->commit.head = ring.head;
    s->commit.tail = ring.tail;
    s->commit.tail_credit = ring.tail_credit;
    return true;
}

bool lwp_store_fields(const LwpState *st, bool long_mode,
                      uint64_t *addr) noexcept
{
    // A live interval needs a read at the reset: the general path's.
    if (!lwp::store_is_lean(*st, st->intervals_live)) {
        return false;
    }
    *addr = st->cbaddr;
    return lwp::linear_in_found_page(long_mode, addr, lwp::kCbStoreFieldsEnd);
}

[[gnu::flatten, gnu::hot]] void lwp_store_commit(LwpState *st, const LwpCaps *caps,
                      const LwpStoreCommit *commit) noexcept
{
    lwp::commit_store(*st, *caps, *commit);
}

void lwp_settle(LwpState *st) noexcept
{
    if (st->restarted) {
        // Only an instructions-retired record restarts ahead of its store.
        st->counter[LWP_EVENT_IRE] -= st->restarted;
        st->restarted = 0;
    }
}

void lwp_tb_defer_undo(LwpState *st) noexcept
{
    lwp_settle(st);
    memset(st->pending, 0, sizeof(st->pending));
}

} // extern "C"
