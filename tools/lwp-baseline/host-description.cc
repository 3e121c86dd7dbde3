// SPDX-License-Identifier: GPL-2.0-or-later
// lwp-baseline's host descriptions (see host-description.h).  JSON is read
// with nlohmann::json; its parse errors are reported with line and column.

#include "host-description.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

namespace lwp_baseline {

const FlagProperty kFlagProperties[12] = {
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

const NumberProperty kNumberProperties[8] = {
    {"lwp-cb-size", &LwpCaps::cb_size},
    {"lwp-event-size", &LwpCaps::event_size},
    {"lwp-max-events", &LwpCaps::max_events},
    {"lwp-event-offset", &LwpCaps::event_offset},
    {"lwp-latency-max", &LwpCaps::latency_max},
    {"lwp-latency-rnd", &LwpCaps::latency_rnd},
    {"lwp-version", &LwpCaps::version},
    {"lwp-min-buffer-size", &LwpCaps::min_buffer_size},
};

namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string &msg)
{
    throw HostDescriptionError(msg);
}

// Defaults for fields a description leaves out: those of family 15h.
LwpCaps family15h_numbers()
{
    LwpCaps c;
    lwp_caps_family15h(&c);
    c.features = 0;
    return c;
}

LwpCaps without_lwp_if_unavailable(const LwpCaps &c)
{
    return (c.features & LWP_FEAT_AVAIL) ? c : LwpCaps{};
}

// Sets flag @key; false if @key is not a flag property.
bool set_flag(LwpCaps &c, const std::string &key, bool on)
{
    if (key == "lwp") {
        c.features = on ? (c.features | LWP_FEAT_AVAIL) : 0;
        return true;
    }
    for (const FlagProperty &f : kFlagProperties) {
        if (key == f.name) {
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
    return false;
}

const NumberProperty *number_property(const std::string &key)
{
    for (const NumberProperty &n : kNumberProperties) {
        if (key == n.name) {
            return &n;
        }
    }
    return nullptr;
}

// How QEMU times LWP's events (lwp-sync-store, and latitude mode's
// settings, docs/lwp-latitude.rst), not what CPUID offers, so no part of a
// pool's baseline.
bool is_emulation_setting(const std::string &key)
{
    return key == "lwp-seed" || key == "lwp-irq-delay" ||
           key == "lwp-store-delay" || key == "lwp-tail-reread" ||
           key == "lwp-interval-reread" || key == "lwp-sync-store";
}

bool is_flag(const std::string &key)
{
    LwpCaps scratch{};
    return set_flag(scratch, key, false);
}

std::string trim(const std::string &s)
{
    size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
    return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// ---- -cpu option strings

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

void set_option(const std::string &host, LwpCaps &c, const std::string &key,
                const std::string &raw)
{
    const std::string value = trim(raw);
    if (is_emulation_setting(key)) {
        return;
    }
    if (is_flag(key)) {
        set_flag(c, key, parse_bool(host, key, value));
    } else if (const NumberProperty *n = number_property(key)) {
        char *end;
        unsigned long v = std::strtoul(value.c_str(), &end, 0);
        if (value.empty() || *end || v > 255) {
            fail(host + ": bad value '" + value + "' for " + key);
        }
        c.*n->field = static_cast<uint8_t>(v);
    } else if (key.rfind("lwp", 0) == 0) {
        fail(host + ": unknown LWP property '" + key + "'");
    }
}

// ---- JSON

// Line and column (both from 1) of byte @offset of @text.
std::string line_column(const std::string &text, size_t offset)
{
    size_t line = 1, column = 1;
    for (size_t i = 0; i < offset && i < text.size(); i++) {
        if (text[i] == '\n') {
            line++;
            column = 1;
        } else {
            column++;
        }
    }
    return std::to_string(line) + ":" + std::to_string(column);
}

// nlohmann's message without its "[json.exception...] parse error at ...: ".
std::string parse_error_detail(const json::parse_error &e)
{
    std::string what = e.what();
    size_t colon = what.find(": ");
    return colon == std::string::npos ? what : what.substr(colon + 2);
}

// Every JSON document of @text, in order (one, or a QMP transcript).
std::vector<json> parse_json_documents(const std::string &host, const std::string &text)
{
    std::vector<json> docs;
    std::istringstream in(text);
    for (;;) {
        in >> std::ws;
        if (in.peek() == std::char_traits<char>::eof()) {
            break;
        }
        const size_t start = static_cast<size_t>(in.tellg());
        try {
            json doc;
            in >> doc;
            docs.push_back(std::move(doc));
        } catch (const json::parse_error &e) {
            // e.byte counts from this document's first byte, 1-based.
            size_t at = start + (e.byte ? e.byte - 1 : 0);
            fail(host + ":" + line_column(text, at) + ": malformed JSON: " +
                 parse_error_detail(e));
        } catch (const json::exception &e) {
            // Well-formed but unrepresentable, e.g. a number out of range.
            fail(host + ": unusable JSON in the document at " + line_column(text, start) +
                 ": " + e.what());
        }
    }
    return docs;
}

// The "props" object of a reply, of its "return" value or of a "model".
const json *find_props(const json &doc)
{
    const json *at = &doc;
    if (at->is_object() && at->contains("return")) {
        at = &(*at)["return"];
    }
    if (at->is_object() && at->contains("model")) {
        at = &(*at)["model"];
    }
    if (at->is_object() && at->contains("props") && (*at)["props"].is_object()) {
        return &(*at)["props"];
    }
    return nullptr;
}

LwpCaps caps_from_props(const std::string &host, const json &props)
{
    LwpCaps c = family15h_numbers();
    for (const auto &item : props.items()) {
        const std::string &key = item.key();
        const json &value = item.value();
        if (key.rfind("lwp", 0) != 0 || is_emulation_setting(key)) {
            continue;
        }
        if (is_flag(key)) {
            if (!value.is_boolean()) {
                fail(host + ": \"" + key + "\" is " + value.type_name() + ", not a boolean");
            }
            set_flag(c, key, value.get<bool>());
        } else if (const NumberProperty *n = number_property(key)) {
            if (!value.is_number_unsigned() || value.get<uint64_t>() > 255) {
                fail(host + ": \"" + key + "\" is " + value.dump() +
                     ", not a number from 0 to 255");
            }
            c.*n->field = static_cast<uint8_t>(value.get<uint64_t>());
        } else {
            fail(host + ": unknown LWP property '" + key + "'");
        }
    }
    return without_lwp_if_unavailable(c);
}

LwpCaps parse_qmp_json(const std::string &host, const std::string &text)
{
    for (const json &doc : parse_json_documents(host, text)) {
        if (const json *props = find_props(doc)) {
            return caps_from_props(host, *props);
        }
    }
    fail(host + ": JSON without a query-cpu-model-expansion reply "
         "(no \"return\": {\"model\": {\"props\": {...}}})");
}

// ---- raw CPUID dumps

// "0x8000001c 0x00: eax=0x0 ebx=0x80032013 ecx=... edx=..." or
// "CPUID 8000001C: 00000000-80032013-00010200-8000000F".
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
        unsigned a, b, c, d;
        if (std::sscanf(lower.c_str() + at, "8000001c%*[^:]: eax=%x ebx=%x ecx=%x edx=%x",
                        &a, &b, &c, &d) == 4 ||
            std::sscanf(lower.c_str() + at, "8000001c: %x-%x-%x-%x", &a, &b, &c, &d) == 4) {
            LwpCpuidRegs r{a, b, c, d};
            lwp_caps_from_cpuid(&r, out);
            return true;
        }
    }
    return false;
}

} // namespace

LwpCaps parse_cpu_option(const std::string &s)
{
    const std::string host = "--cpu " + s;
    LwpCaps c = family15h_numbers();
    std::stringstream ss(s);
    std::string item;
    bool first = true;
    while (std::getline(ss, item, ',')) {
        if (item.empty()) {
            fail(host + ": empty item");
        }
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
        set_option(host, c, key, value);
    }
    return without_lwp_if_unavailable(c);
}

LwpCaps parse_host_description(const std::string &name, const std::string &text)
{
    size_t first = text.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && (text[first] == '{' || text[first] == '[')) {
        return parse_qmp_json(name, text);
    }
    LwpCaps c;
    if (parse_cpuid_dump(text, &c)) {
        return c;
    }
    fail(name + ": neither a query-cpu-model-expansion reply (JSON) nor a CPUID dump "
         "with leaf 8000001C");
}

} // namespace lwp_baseline
