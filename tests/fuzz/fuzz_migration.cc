// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target: incoming migration state.  Arbitrary "cpu/lwp" field
// values go through the check QEMU's post_load runs (lwp_state_check); a
// state it accepts must keep the invariants the model relies on, and the
// model must then run on it -- instructions, hardware events, XSAVE --
// without a sanitizer report, over memory that may fault anywhere.

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    using namespace lwpfuzz;
    FuzzedDataProvider in(data, size);
    LwpCaps caps = pick_caps(in);
    LwpCpuEnv env = pick_env(in, &caps);
    env.lwp_cfg = in.ConsumeBool() ? in.ConsumeIntegral<uint64_t>() : env.lwp_cfg;

    LwpState st{};
    st.cbaddr = in.ConsumeBool() ? pick_address(in) : in.ConsumeIntegral<uint64_t>();
    st.buffer_base = in.ConsumeBool() ? pick_address(in) : in.ConsumeIntegral<uint64_t>();
    st.buffer_size = in.ConsumeBool() ? 32u * in.ConsumeIntegralInRange<uint32_t>(0, 300)
                                      : in.ConsumeIntegral<uint32_t>();
    st.head = in.ConsumeBool() ? 32u * in.ConsumeIntegralInRange<uint32_t>(0, 300)
                               : in.ConsumeIntegral<uint32_t>();
    st.flags = in.ConsumeIntegral<uint32_t>();
    st.filters = in.ConsumeIntegral<uint32_t>();
    for (int &c : st.counter) {
        c = in.ConsumeBool() ? in.ConsumeIntegralInRange<int>(-2, 300)
                             : in.ConsumeIntegral<int32_t>();
    }
    const std::vector<uint8_t> pending = in.ConsumeBytes<uint8_t>(LWP_RECORD_SIZE);
    if (!pending.empty()) {
        std::memcpy(st.pending, pending.data(), pending.size());
    }
    st.cache_valid = in.ConsumeIntegral<uint8_t>();
    st.random = in.ConsumeIntegral<uint8_t>();
    for (uint32_t &v : st.interval) {
        v = in.ConsumeBool() ? in.ConsumeIntegralInRange<uint32_t>(0, 300)
                             : in.ConsumeIntegral<uint32_t>();
    }
    st.threshold = in.ConsumeIntegral<uint32_t>();
    st.tail = in.ConsumeIntegral<uint32_t>();
    st.base_ip = in.ConsumeIntegral<uint64_t>();
    st.limit_ip = in.ConsumeIntegral<uint64_t>();
    st.rng = in.ConsumeIntegral<uint64_t>();

    const char *bad = lwp_state_check(&st, &env);
    if (bad) {
        LWP_FUZZ_CHECK(*bad);
        return 0;
    }
    // Accepted: what the model may rely on.
    LWP_FUZZ_CHECK(!(env.lwp_cfg >> 48));
    if (st.cbaddr) {
        LWP_FUZZ_CHECK(st.buffer_size && st.buffer_size % LWP_RECORD_SIZE == 0);
        LWP_FUZZ_CHECK(st.head % LWP_RECORD_SIZE == 0 && st.head < st.buffer_size);
    }
    FuzzMem mem;
    fill_memory(in, mem, st.cbaddr & ~(kPage - 1));
    fill_memory(in, mem, (st.buffer_base + st.head) & ~(kPage - 1));
    run_operations(in, mem, st, env);
    return 0;
}
