// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target: lwp-baseline's host descriptions (a QMP
// query-cpu-model-expansion reply or transcript, a CPUID dump, or a -cpu
// option string), parsed as the tool parses a file, then checked and pooled
// as the tool does.  Refusing bad input (HostDescriptionError, naming the
// problem) is an outcome; only a crash or a sanitizer report is a finding.

#include <cstdio>
#include <cstdlib>
#include <string>

#include "lwp/lwp-caps.h"
#include "lwp/lwp-policy.h"

#define LWP_FUZZ_ASSERT(cond) \
    do { if (!(cond)) { std::fprintf(stderr, "broken: %s\n", #cond); std::abort(); } } while (0)

// The parser is compiled into this target; it reports bad input by throwing
// HostDescriptionError, never by exiting.
#include "../../tools/lwp-baseline/host-description.cc"

using lwp_baseline::HostDescriptionError;
using lwp_baseline::parse_cpu_option;
using lwp_baseline::parse_host_description;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    const std::string text(reinterpret_cast<const char *>(data) + 1, size - 1);
    try {
        LwpCaps caps[2];
        caps[0] = data[0] & 1 ? parse_cpu_option(text) : parse_host_description("fuzz", text);
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
    } catch (const HostDescriptionError &e) {
        // Refused, naming the host and the problem.
        LWP_FUZZ_ASSERT(e.what()[0] != '\0');
    }
    return 0;
}
