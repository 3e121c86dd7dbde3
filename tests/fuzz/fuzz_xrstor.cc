// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target: XRSTOR of an arbitrary 128-byte image of XSAVE
// component 62 (present or not) in an arbitrary CPU environment, then
// XSAVE of the result, and LWP instructions and hardware events on the
// restored session, over memory that may fault anywhere.

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    using namespace lwpfuzz;
    FuzzedDataProvider in(data, size);
    uint8_t area[LWP_XSAVE_SIZE] = {};
    const std::vector<uint8_t> image = in.ConsumeBytes<uint8_t>(LWP_XSAVE_SIZE);
    if (!image.empty()) {
        std::memcpy(area, image.data(), image.size());
    }
    const bool present = in.ConsumeBool();
    const LwpCaps caps = pick_caps(in);
    const LwpCpuEnv env = pick_env(in, &caps);
    FuzzMem mem;
    uint64_t cbaddr, ring;
    std::memcpy(&cbaddr, area, sizeof(cbaddr));
    std::memcpy(&ring, area + 16, sizeof(ring));  // BufferBase
    fill_memory(in, mem, cbaddr & ~(kPage - 1));
    fill_memory(in, mem, ring & ~(kPage - 1));

    LwpState st{};
    st.rng = in.ConsumeIntegral<uint64_t>();
    lwp_xrstor(&st, &env, area, present);
    if (st.cbaddr) {
        LWP_FUZZ_CHECK(st.buffer_size && st.buffer_size % LWP_RECORD_SIZE == 0);
        LWP_FUZZ_CHECK(st.head % LWP_RECORD_SIZE == 0 && st.head < st.buffer_size);
        LWP_FUZZ_CHECK(!(st.flags & ~(static_cast<uint32_t>(env.lwp_cfg) & caps.features)));
    }
    // XSAVE then XRSTOR of what was restored gives the same session.
    uint8_t again[LWP_XSAVE_SIZE];
    const bool saved = lwp_xsave(&st, again);
    LWP_FUZZ_CHECK(saved == (st.cbaddr != 0));
    if (saved) {
        LwpState copy{};
        copy.rng = st.rng;
        lwp_xrstor(&copy, &env, again, true);
        LWP_FUZZ_CHECK(copy.cbaddr == st.cbaddr && copy.head == st.head &&
                       copy.flags == st.flags && copy.buffer_base == st.buffer_base &&
                       copy.buffer_size == st.buffer_size);
    }
    run_operations(in, mem, st, env);
    return 0;
}
