// SPDX-License-Identifier: GPL-2.0-or-later
// lwp-baseline: the LWP capabilities a pool of hosts has in common (AMD pub.
// 43724, 3.3 and 8.2.3), printed as QEMU -cpu properties and as a libvirt
// <cpu> fragment.  Each host is described by one of:
//   FILE     query-cpu-model-expansion output (JSON, read by host-description.cc)
//            or a raw CPUID dump
//            ("cpuid -r" lines or "CPUID 8000001C: eax-ebx-ecx-edx" lines)
//   --cpu S  a -cpu option string (family-15h defaults for unset fields)
// "-" reads a host description from standard input.

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "host-description.h"
#include "lwp/lwp-caps.h"
#include "lwp/lwp-policy.h"

using lwp_baseline::kFlagProperties;
using lwp_baseline::kNumberProperties;

namespace {

struct Host {
    std::string name;
    LwpCaps caps;
};

[[noreturn]] void fail(const std::string &msg)
{
    std::cerr << "lwp-baseline: " << msg << "\n";
    std::exit(2);
}

std::string read_all(std::istream &in)
{
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void print_baseline(const LwpCaps &b, size_t hosts)
{
    std::printf("# LWP capabilities common to %zu host(s)\n", hosts);
    if (!(b.features & LWP_FEAT_AVAIL)) {
        std::printf("-cpu ...,lwp=off\n<cpu mode='custom' match='exact'>\n"
                    "  <feature policy='disable' name='lwp'/>\n</cpu>\n");
        return;
    }
    std::string opts = "lwp=on";
    for (const auto &f : kFlagProperties) {
        bool on = f.flag ? b.*f.flag : (b.features & f.edx_bit) != 0;
        opts += std::string(",") + f.name + (on ? "=on" : "=off");
    }
    for (const auto &n : kNumberProperties) {
        opts += std::string(",") + n.name + "=" + std::to_string(b.*n.field);
    }
    std::printf("-cpu ...,%s\n", opts.c_str());
    std::printf("<!-- the pool's LWP features: add the pool's <model>.  The numeric\n"
                "     fields have no libvirt element; where they differ from QEMU's\n"
                "     defaults pass them with <qemu:commandline>: %s -->\n",
                opts.substr(opts.find("lwp-cb-size")).c_str());
    std::printf("<cpu mode='custom' match='exact'>\n"
                "  <feature policy='require' name='lwp'/>\n");
    for (const auto &f : kFlagProperties) {
        bool on = f.flag ? b.*f.flag : (b.features & f.edx_bit) != 0;
        std::printf("  <feature policy='%s' name='%s'/>\n", on ? "require" : "disable", f.name);
    }
    std::printf("</cpu>\n");
}

} // namespace

int main(int argc, char **argv)
{
    std::vector<Host> hosts;
    try {
        for (int i = 1; i < argc; i++) {
            std::string arg = argv[i];
            if (arg == "-h" || arg == "--help") {
                std::printf("usage: lwp-baseline HOST...  (HOST: FILE | - | --cpu OPTIONS)\n");
                return 0;
            }
            if (arg == "--cpu") {
                if (++i == argc) {
                    fail("--cpu needs an option string");
                }
                hosts.push_back({std::string("--cpu ") + argv[i],
                                 lwp_baseline::parse_cpu_option(argv[i])});
            } else if (arg == "-") {
                hosts.push_back({"stdin", lwp_baseline::parse_host_description(
                                              "stdin", read_all(std::cin))});
            } else {
                std::ifstream f(arg);
                if (!f) {
                    fail("cannot read " + arg);
                }
                hosts.push_back({arg, lwp_baseline::parse_host_description(arg, read_all(f))});
            }
        }
    } catch (const lwp_baseline::HostDescriptionError &e) {
        fail(e.what());
    }
    if (hosts.empty()) {
        fail("no hosts given (see --help)");
    }
    std::vector<LwpCaps> caps;
    for (const Host &h : hosts) {
        const char *field, *why;
        if (!lwp_caps_check(&h.caps, &field, &why)) {
            fail(h.name + ": inconsistent LWP capabilities: '" + field + "' " + why);
        }
        caps.push_back(h.caps);
    }
    LwpCaps base;
    LwpPolicyConflict conflict{};
    if (!lwp_caps_baseline(caps.data(), static_cast<unsigned>(caps.size()), &base, &conflict)) {
        std::fprintf(stderr, "lwp-baseline: incompatible pool: %s and %s disagree on %s "
                     "(the LWP record/LWPCB layout must be identical)\n",
                     hosts[conflict.host_a].name.c_str(), hosts[conflict.host_b].name.c_str(),
                     conflict.field);
        return 1;
    }
    const char *field, *why;
    if (!lwp_caps_check(&base, &field, &why)) {
        fail(std::string("internal error: the baseline is inconsistent: '") + field + "' " + why);
    }
    print_baseline(base, hosts.size());
    return 0;
}
