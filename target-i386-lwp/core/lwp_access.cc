// SPDX-License-Identifier: GPL-2.0-or-later
// Guest-memory transaction of one LWP operation: permission-checked,
// buffered writes with read-your-own-writes.

#include "lwp_access.h"

#include <assert.h>
#include <string.h>

#include "lwp_address.h"
#include "lwp_bytes.h"

namespace lwp {

namespace {

constexpr uint64_t kPageSize = 4096;
constexpr uint64_t kLinear32Size = 1ull << 32;
constexpr uint64_t kMaxCallbackLen = 0xFFFFFFFFull;

uint64_t bytes_to_page_end(uint64_t addr)
{
    return kPageSize - (addr & (kPageSize - 1));
}

// Calls @check on [addr, addr + len) page by page and returns the start of
// the first chunk it rejects: with page-granular permissions that is the
// first inaccessible byte.  @len is non-zero.
template <typename Check>
bool find_inaccessible(uint64_t addr, uint64_t len, Check check,
                       uint64_t *bad)
{
    uint64_t pos = addr;
    uint64_t left = len;
    while (left) {
        const uint64_t room = bytes_to_page_end(pos);
        const uint64_t chunk = left < room ? left : room;
        if (!check(pos, chunk)) {
            *bad = pos;
            return true;
        }
        pos += chunk;
        left -= chunk;
    }
    return false;
}

} // namespace

Access::Access(const LwpCpuEnv &env, const LwpMem &mem, LwpOutcome &out)
    : env_(env), mem_(mem), out_(out)
{
}

bool Access::split(uint64_t addr, uint64_t len, Piece pieces[2],
                   unsigned *count)
{
    // In long mode (compatibility mode too) the kept linear addresses are
    // used as they are (spec 4.3); only legacy mode wraps at 4 GiB.
    if (env_.mode64 || env_.long_mode) {
        if (!canonical_range(addr, len, canonical_bits(env_))) {
            return fail_gp();
        }
        pieces[0] = {addr, len};
        *count = 1;
        return true;
    }
    addr &= kLinear32Mask;
    const uint64_t first = kLinear32Size - addr;
    if (len <= first) {
        pieces[0] = {addr, len};
        *count = 1;
    } else {
        pieces[0] = {addr, first};
        pieces[1] = {0, len - first};
        *count = 2;
    }
    return true;
}

bool Access::read_piece(uint64_t addr, uint8_t *buf, uint64_t len)
{
    // Whole piece first; page by page only to locate a fault.
    if (len <= kMaxCallbackLen &&
        mem_.read(mem_.opaque, addr, buf, static_cast<uint32_t>(len))) {
        return true;
    }
    uint64_t bad = addr;
    find_inaccessible(addr, len, [&](uint64_t pos, uint64_t chunk) {
        return mem_.read(mem_.opaque, pos, buf + (pos - addr),
                         static_cast<uint32_t>(chunk));
    }, &bad);
    return fail_pf(bad, false);
}

bool Access::writable_piece(uint64_t addr, uint64_t len)
{
    if (len <= kMaxCallbackLen &&
        mem_.probe_write(mem_.opaque, addr, static_cast<uint32_t>(len))) {
        return true;
    }
    uint64_t bad = addr;
    find_inaccessible(addr, len, [&](uint64_t pos, uint64_t chunk) {
        return mem_.probe_write(mem_.opaque, pos,
                                static_cast<uint32_t>(chunk));
    }, &bad);
    return fail_pf(bad, true);
}

void Access::overlay_writes(uint64_t addr, uint8_t *buf, uint64_t len) const
{
    // In order, so that a later write to the same bytes wins.
    for (uint32_t i = 0; i < out_.nwrites; i++) {
        const LwpWrite &w = out_.writes[i];
        const uint64_t begin = w.addr > addr ? w.addr : addr;
        const uint64_t w_end = w.addr + w.len;
        const uint64_t end = w_end < addr + len ? w_end : addr + len;
        if (begin < end) {
            memcpy(buf + (begin - addr), w.data + (begin - w.addr),
                   end - begin);
        }
    }
}

bool Access::read(uint64_t addr, void *buf, uint32_t len)
{
    Piece pieces[2];
    unsigned count;
    if (!split(addr, len, pieces, &count)) {
        return false;
    }
    uint8_t *dst = static_cast<uint8_t *>(buf);
    for (unsigned i = 0; i < count; i++) {
        if (!read_piece(pieces[i].addr, dst, pieces[i].len)) {
            return false;
        }
        overlay_writes(pieces[i].addr, dst, pieces[i].len);
        dst += pieces[i].len;
    }
    return true;
}

bool Access::read_u32(uint64_t addr, uint32_t *value)
{
    uint8_t raw[4];
    if (!read(addr, raw, sizeof(raw))) {
        return false;
    }
    *value = load_le32(raw);
    return true;
}

bool Access::read_u64(uint64_t addr, uint64_t *value)
{
    uint8_t raw[8];
    if (!read(addr, raw, sizeof(raw))) {
        return false;
    }
    *value = load_le64(raw);
    return true;
}

void Access::record_write(uint64_t addr, const uint8_t *data, uint32_t len)
{
    // Writing the same field again (the head is flushed more than once in
    // an LLWPCB) replaces the earlier write, provided nothing recorded
    // after it overlaps: then the order of the list is unaffected.
    for (uint32_t i = out_.nwrites; i-- > 0;) {
        LwpWrite &w = out_.writes[i];
        const bool overlaps = w.addr < addr + len && addr < w.addr + w.len;
        if (!overlaps) {
            continue;
        }
        if (w.addr == addr && w.len == len) {
            memcpy(w.data, data, len);
            return;
        }
        break;
    }
    // kMaxLogicalWrites bounds every operation (see lwp_access.h).
    assert(out_.nwrites < LWP_MAX_WRITES);
    if (out_.nwrites >= LWP_MAX_WRITES) {
        fail_gp();
        return;
    }
    LwpWrite &w = out_.writes[out_.nwrites++];
    w = LwpWrite{};
    w.addr = addr;
    w.len = len;
    memcpy(w.data, data, len);
}

bool Access::write(uint64_t addr, const void *data, uint32_t len)
{
    assert(len >= 1 && len <= LWP_RECORD_SIZE);
    Piece pieces[2];
    unsigned count;
    if (!check_writable(addr, len) || !split(addr, len, pieces, &count)) {
        return false;
    }
    const uint8_t *src = static_cast<const uint8_t *>(data);
    for (unsigned i = 0; i < count; i++) {
        record_write(pieces[i].addr, src, static_cast<uint32_t>(pieces[i].len));
        src += pieces[i].len;
    }
    return out_.status == LWP_OK;
}

bool Access::write_u32(uint64_t addr, uint32_t value)
{
    uint8_t raw[4];
    store_le32(raw, value);
    return write(addr, raw, sizeof(raw));
}

bool Access::write_u64(uint64_t addr, uint64_t value)
{
    uint8_t raw[8];
    store_le64(raw, value);
    return write(addr, raw, sizeof(raw));
}

bool Access::check_writable(uint64_t addr, uint64_t len)
{
    Piece pieces[2];
    unsigned count;
    if (!split(addr, len, pieces, &count)) {
        return false;
    }
    for (unsigned i = 0; i < count; i++) {
        if (!writable_piece(pieces[i].addr, pieces[i].len)) {
            return false;
        }
    }
    return true;
}

bool Access::fail_gp()
{
    if (out_.status == LWP_OK) {
        out_.status = LWP_FAULT_GP;
        out_.fault_addr = 0;
        out_.fault_write = false;
    }
    return false;
}

bool Access::fail_pf(uint64_t addr, bool write)
{
    if (out_.status == LWP_OK) {
        out_.status = LWP_FAULT_PF;
        out_.fault_addr = addr;
        out_.fault_write = write;
    }
    return false;
}

void Access::signal_interrupt()
{
    out_.interrupt = true;
}

} // namespace lwp
