// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target: LLWPCB over an arbitrary memory image -- pages placed,
// filled and protected by the input, so any read or write may fault --
// in an arbitrary CPU environment, then a sequence of LWP instructions and
// hardware events on whatever session resulted.

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    using namespace lwpfuzz;
    FuzzedDataProvider in(data, size);
    const LwpCaps caps = pick_caps(in);
    const LwpCpuEnv env = pick_env(in, &caps);
    FuzzMem mem;
    const uint64_t ea = pick_address(in);
    fill_memory(in, mem, ea & ~(kPage - 1));
    fill_memory(in, mem, pick_address(in) & ~(kPage - 1));

    LwpState st{};
    LwpState next = st;
    LwpOutcome out{};
    lwp_llwpcb(&next, &env, mem.mem(), ea, &out);
    check_outcome(mem, st, next, out);
    if (out.status == LWP_OK) {
        // LLWPCB writes the LWPCB only (spec 5.1 step 4).
        for (uint32_t i = 0; i < out.nwrites; i++) {
            LWP_FUZZ_CHECK(out.writes[i].addr >= next.cbaddr &&
                           out.writes[i].addr - next.cbaddr < caps.cb_size * 8u);
        }
        mem.apply(out);
        st = next;
    }
    run_operations(in, mem, st, env);
    return 0;
}
