// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target: lwp-baseline's host descriptions (a QMP
// query-cpu-model-expansion reply, a CPUID dump, or a -cpu option string),
// parsed as the tool parses a file, then checked and pooled as the tool
// does.  A description the tool refuses ends in its fail(), which exits;
// here that exit is a C++ exception caught below, so that refusing bad
// input is an outcome and only a crash or a sanitizer report is a finding.
// Kept to this one file: it fuzzes the parser entry points of
// tools/lwp-baseline/lwp-baseline.cc as they are.

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "lwp/lwp-caps.h"
#include "lwp/lwp-policy.h"

#define LWP_FUZZ_ASSERT(cond) \
    do { if (!(cond)) { std::fprintf(stderr, "broken: %s\n", #cond); std::abort(); } } while (0)

namespace std {
struct lwp_fuzz_exit_called {};
[[noreturn]] inline void lwp_fuzz_exit(int) { throw lwp_fuzz_exit_called{}; }
} // namespace std

#define exit lwp_fuzz_exit
#define main lwp_baseline_main
#include "../../tools/lwp-baseline/lwp-baseline.cc"
#undef main
#undef exit

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    const std::string text(reinterpret_cast<const char *>(data) + 1, size - 1);
    try {
        LwpCaps caps[2];
        caps[0] = data[0] & 1 ? parse_cpu_option(text) : parse_description("fuzz", text);
        lwp_caps_family15h(&caps[1]);
        const char *field = nullptr, *why = nullptr;
        if (!lwp_caps_check(&caps[0], &field, &why)) {
            LWP_FUZZ_ASSERT(field && why);
            return 0;
        }
        LwpCaps base;
        LwpPolicyConflict conflict{};
        if (lwp_caps_baseline(caps, 2, &base, &conflict)) {
            LWP_FUZZ_ASSERT(lwp_caps_check(&base, &field, &why));
            LWP_FUZZ_ASSERT(!(base.features & ~caps[0].features));
        }
    } catch (const std::lwp_fuzz_exit_called &) {
        // The tool refused the description, naming the problem.
    }
    return 0;
}
