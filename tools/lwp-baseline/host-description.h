// SPDX-License-Identifier: GPL-2.0-or-later
// lwp-baseline's host descriptions: the LWP capabilities of one host, read
// from what a user has at hand (AMD pub. 43724, 3.3):
//   - QMP JSON: a query-cpu-model-expansion reply ({"return":{"model":
//     {"props":{...}}}}), its "return" value or "model" object, or a whole
//     QMP transcript (one JSON document after another, e.g. `-qmp stdio`);
//   - a raw CPUID dump with leaf 8000_001C ("cpuid -r" or InstLatX64 lines);
//   - a -cpu option string ("max,+lwp,lwpval=on,lwp-max-events=3").
// Parsing never exits: bad input throws HostDescriptionError, whose message
// names the host and the problem (for malformed JSON, the line and column).
#ifndef LWP_BASELINE_HOST_DESCRIPTION_H
#define LWP_BASELINE_HOST_DESCRIPTION_H

#include <stdexcept>
#include <string>

#include "lwp/lwp-caps.h"

namespace lwp_baseline {

struct HostDescriptionError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// @text is the content of the description called @name in messages: JSON
// (first non-blank character '{') or a CPUID dump.
LwpCaps parse_host_description(const std::string &name, const std::string &text);

// A -cpu option string; the model name (first item) is ignored.  Fields it
// leaves unset take the family-15h values.
LwpCaps parse_cpu_option(const std::string &option);

// The names of the LWP properties, in QEMU's order, for printing.
struct FlagProperty {
    const char *name;
    uint32_t edx_bit;           // 0 for the ECX flags
    bool LwpCaps::*flag;        // nullptr for EDX bits
};
struct NumberProperty {
    const char *name;
    uint8_t LwpCaps::*field;
};
extern const FlagProperty kFlagProperties[12];
extern const NumberProperty kNumberProperties[8];

} // namespace lwp_baseline

#endif
