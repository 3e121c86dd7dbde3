// SPDX-License-Identifier: GPL-2.0-or-later
// lwp-baseline: the LWP capabilities a pool of hosts has in common (AMD pub.
// 43724, 3.3 and 8.2.3), printed as QEMU -cpu properties and as a libvirt
// <cpu> fragment.  Each host is described by one of:
//   FILE     query-cpu-model-expansion output (JSON) or a raw CPUID dump
//            ("cpuid -r" lines or "CPUID 8000001C: eax-ebx-ecx-edx" lines)
//   --cpu S  a -cpu option string (family-15h defaults for unset fields)
// "-" reads a host description from standard input.

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

namespace {

struct Host {
    std::string name;
    LwpCaps caps;
};

struct FlagBit {
    const char *name;
    uint32_t edx_bit;        // 0 for ECX flags
    bool LwpCaps::*flag;     // nullptr for EDX bits
};

const FlagBit kFlags[] = {
    {"lwpval", LWP_FEAT_VAL, nullptr},   {"lwpire", LWP_FEAT_IRE, nullptr},
    {"lwpbre", LWP_FEAT_BRE, nullptr},   {"lwpdme", LWP_FEAT_DME, nullptr},
    {"lwpcnh", LWP_FEAT_CNH, nullptr},   {"lwprnh", LWP_FEAT_RNH, nullptr},
    {"lwpint", LWP_FEAT_INT, nullptr},
    {"lwpdaddr", 0, &LwpCaps::data_address},
    {"lwpbrpred", 0, &LwpCaps::branch_prediction},
    {"lwpipf", 0, &LwpCaps::ip_filtering},
    {"lwpcachelvl", 0, &LwpCaps::cache_levels},
    {"lwpcachelat", 0, &LwpCaps::cache_latency},
};

struct NumField {
    const char *name;
    uint8_t LwpCaps::*field;
};

const NumField kNumbers[] = {
    {"lwp-cb-size", &LwpCaps::cb_size},
    {"lwp-event-size", &LwpCaps::event_size},
    {"lwp-max-events", &LwpCaps::max_events},
    {"lwp-event-offset", &LwpCaps::event_offset},
    {"lwp-latency-max", &LwpCaps::latency_max},
    {"lwp-latency-rnd", &LwpCaps::latency_rnd},
    {"lwp-version", &LwpCaps::version},
    {"lwp-min-buffer-size", &LwpCaps::min_buffer_size},
};

[[noreturn]] void fail(const std::string &msg)
{
    std::cerr << "lwp-baseline: " << msg << "\n";
    std::exit(2);
}

// Defaults for fields a description leaves out: those of family 15h.
LwpCaps family15h_numbers()
{
    LwpCaps c;
    lwp_caps_family15h(&c);
    c.features = 0;
    return c;
}

std::string trim(const std::string &s)
{
    size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
    return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

bool parse_bool(const std::string &host, const std::string &key, const std::string &value)
{
    if (value == "on" || value == "true" || value == "yes") {
        return true;
    }
    if (value == "off" || value == "false" || value == "no") {
        return false;
    }
    fail(host + ": '" + value + "' is not a boolean for " + key);
}

// Applies one LWP property; false if @key is not an LWP property at all.
bool set_property(const std::string &host, LwpCaps &c, const std::string &key,
                  const std::string &raw)
{
    const std::string value = trim(raw);
    if (key == "lwp") {
        c.features = parse_bool(host, key, value) ? (c.features | LWP_FEAT_AVAIL) : 0;
        return true;
    }
    for (const FlagBit &f : kFlags) {
        if (key == f.name) {
            const bool on = parse_bool(host, key, value);
            if (f.flag) {
                c.*f.flag = on;
            } else if (on) {
                c.features |= f.edx_bit;
            } else {
                c.features &= ~f.edx_bit;
            }
            return true;
        }
    }
    for (const NumField &n : kNumbers) {
        if (key == n.name) {
            char *end;
            unsigned long v = std::strtoul(value.c_str(), &end, 0);
            if (value.empty() || *end || v > 255) {
                fail(host + ": bad value '" + value + "' for " + key);
            }
            c.*n.field = static_cast<uint8_t>(v);
            return true;
        }
    }
    if (key.rfind("lwp", 0) == 0) {
        fail(host + ": unknown LWP property '" + key + "'");
    }
    return false;
}

// "-cpu max,+lwp,lwpval=on,lwp-max-events=3": the model name is ignored.
LwpCaps parse_cpu_option(const std::string &s)
{
    const std::string host = "--cpu " + s;
    LwpCaps c = family15h_numbers();
    std::stringstream ss(s);
    std::string item;
    bool first = true;
    while (std::getline(ss, item, ',')) {
        if (first && item.find('=') == std::string::npos && item[0] != '+' && item[0] != '-') {
            first = false;
            continue;
        }
        first = false;
        std::string key = item, value = "on";
        if (item[0] == '+' || item[0] == '-') {
            key = item.substr(1);
            value = item[0] == '+' ? "on" : "off";
        } else if (item.find('=') != std::string::npos) {
            key = item.substr(0, item.find('='));
            value = item.substr(item.find('=') + 1);
        }
        set_property(host, c, key, value);
    }
    if (!(c.features & LWP_FEAT_AVAIL)) {
        c = LwpCaps{};
    }
    return c;
}

// query-cpu-model-expansion: "props": { "lwp": true, "lwp-cb-size": 19, ... }
LwpCaps parse_qmp(const std::string &host, const std::string &text)
{
    LwpCaps c = family15h_numbers();
    size_t pos = text.find("\"props\"");
    if (pos == std::string::npos) {
        fail(host + ": no \"props\" in the QMP reply");
    }
    size_t open = text.find_first_not_of(" \t\r\n:", pos + 7);
    if (open == std::string::npos || text[open] != '{' ||
        text.find('}', open) == std::string::npos) {
        fail(host + ": \"props\" is not a complete object");
    }
    // Walk "key": value pairs; string values are skipped as strings so that
    // their quotes are never taken for keys.
    pos = text.find('{', pos);
    while (pos != std::string::npos && (pos = text.find('"', pos + 1)) != std::string::npos) {
        size_t end = text.find('"', pos + 1);
        if (end == std::string::npos) {
            break;
        }
        std::string key = text.substr(pos + 1, end - pos - 1);
        size_t v = text.find_first_not_of(" \t\r\n", end + 1);
        if (v == std::string::npos || text[v] != ':') {
            pos = end;
            continue;
        }
        v = text.find_first_not_of(" \t\r\n", v + 1);
        if (v == std::string::npos) {
            break;
        }
        if (text[v] == '"') {
            pos = text.find('"', v + 1);
            continue;
        }
        size_t ve = text.find_first_of(",}\r\n", v);
        if (ve == std::string::npos) {
            fail(host + ": truncated QMP reply");
        }
        if (key.rfind("lwp", 0) == 0) {
            set_property(host, c, key, text.substr(v, ve - v));
        }
        pos = ve == std::string::npos ? ve : ve - 1;
        if (ve != std::string::npos && text[ve] == '}') {
            break;                      // end of "props"
        }
    }
    if (!(c.features & LWP_FEAT_AVAIL)) {
        c = LwpCaps{};
    }
    return c;
}

// Raw CPUID dumps: "0x8000001c 0x00: eax=0x0 ebx=0x80032013 ecx=... edx=..."
// or "CPUID 8000001C: 00000000-80032013-00010200-8000000F".
bool parse_cpuid_dump(const std::string &text, LwpCaps *out)
{
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        std::string lower;
        for (char ch : line) {
            lower += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        }
        size_t at = lower.find("8000001c");
        if (at == std::string::npos) {
            continue;
        }
        LwpCpuidRegs r{};
        unsigned a, b, c, d;
        if (std::sscanf(lower.c_str() + at, "8000001c%*[^:]: eax=%x ebx=%x ecx=%x edx=%x",
                        &a, &b, &c, &d) == 4 ||
            std::sscanf(lower.c_str() + at, "8000001c: %x-%x-%x-%x", &a, &b, &c, &d) == 4) {
            r = LwpCpuidRegs{a, b, c, d};
            lwp_caps_from_cpuid(&r, out);
            return true;
        }
    }
    return false;
}

LwpCaps parse_description(const std::string &name, const std::string &text)
{
    LwpCaps c;
    if (text.find("\"props\"") != std::string::npos) {
        return parse_qmp(name, text);
    }
    if (parse_cpuid_dump(text, &c)) {
        return c;
    }
    fail(name + ": neither a query-cpu-model-expansion reply nor a CPUID dump "
         "with leaf 8000001C");
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
    for (const FlagBit &f : kFlags) {
        bool on = f.flag ? b.*f.flag : (b.features & f.edx_bit) != 0;
        opts += std::string(",") + f.name + (on ? "=on" : "=off");
    }
    for (const NumField &n : kNumbers) {
        opts += std::string(",") + n.name + "=" + std::to_string(b.*n.field);
    }
    std::printf("-cpu ...,%s\n", opts.c_str());
    std::printf("<!-- the pool's LWP features: add the pool's <model>.  The numeric\n"
                "     fields have no libvirt element; where they differ from QEMU's\n"
                "     defaults pass them with <qemu:commandline>: %s -->\n",
                opts.substr(opts.find("lwp-cb-size")).c_str());
    std::printf("<cpu mode='custom' match='exact'>\n"
                "  <feature policy='require' name='lwp'/>\n");
    for (const FlagBit &f : kFlags) {
        bool on = f.flag ? b.*f.flag : (b.features & f.edx_bit) != 0;
        std::printf("  <feature policy='%s' name='%s'/>\n", on ? "require" : "disable", f.name);
    }
    std::printf("</cpu>\n");
}

} // namespace

int main(int argc, char **argv)
{
    std::vector<Host> hosts;
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
            hosts.push_back({std::string("--cpu ") + argv[i], parse_cpu_option(argv[i])});
        } else if (arg == "-") {
            hosts.push_back({"stdin", parse_description("stdin", read_all(std::cin))});
        } else {
            std::ifstream f(arg);
            if (!f) {
                fail("cannot read " + arg);
            }
            hosts.push_back({arg, parse_description(arg, read_all(f))});
        }
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
