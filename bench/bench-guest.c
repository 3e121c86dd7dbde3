/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The system guest of bench/run-bench.sh: a 64-bit multiboot kernel built on
 * the guest test library (tests/guest/lib).  It reads
 *     -append "mode=none|val|ire|bre interval=N rounds=R"
 * and, for the LWP modes, makes LWP available the way an operating system
 * does (spec 8.7.1: CR4.OSXSAVE, XCR0[62], LWP_CFG), then runs the workload
 * of tests/common/lwp-bench-workload.h at CPL 3 and prints the same "bench:"
 * line as the linux-user program.  It exits through isa-debug-exit with code
 * 0 (QEMU exit status 1), or code 2 when the event is not available.
 */
#include "lwp.h"

#define NOINLINE __attribute__((noinline))
#define BENCH_CPUID(leaf, a, b, c, d) cpuid_count(leaf, 0, &(a), &(b), &(c), &(d))
#define BENCH_LLWPCB(p) llwpcb((const void *)(p))
#define BENCH_SLWPCB() slwpcb()
#define BENCH_LWPVAL32(d2, d1, f) lwpval(d2, d1, f)
#include "../tests/common/lwp-bench-workload.h"

static struct bench_state state;
static struct bench_result result;
static struct {
    int mode;
    uint32_t interval, rounds;
} job;

/* The application: runs at CPL 3. */
static uintptr_t application(uintptr_t unused)
{
    bench_run(&state, job.mode, job.interval, job.rounds, &result);
    return 0;
}

/* The value of "key=" on the command line, and its length. */
static const char *cmdline_word(const char *key, unsigned *len)
{
    const char *p = guest_cmdline(), *start = p;
    size_t n = strlen(key);

    for (; *p; p++) {
        if ((p == start || p[-1] == ' ') && !memcmp(p, key, n) && p[n] == '=') {
            p += n + 1;
            for (*len = 0; p[*len] && p[*len] != ' '; (*len)++) {
            }
            return p;
        }
    }
    *len = 0;
    return "";
}

static const char *const mode_names[] = { "none", "val", "ire", "bre" };

int main(void)
{
    unsigned len;
    const char *m = cmdline_word("mode", &len);
    uint32_t a, b, c, d;

    job.mode = len ? bench_parse_mode(m, len) : BENCH_NONE;
    job.interval = cmdline_ulong("interval", 65535);
    job.rounds = cmdline_ulong("rounds", 2000);
    if (job.mode < 0) {
        printf("bench: bad mode on the command line: %s\n", guest_cmdline());
        guest_exit(1);
    }
    if (job.mode != BENCH_NONE) {
        cpuid_count(0x80000001, 0, &a, &b, &c, &d);
        if (!(c >> 15 & 1)) {
            printf("bench: mode %s unavailable\n", mode_names[job.mode]);
            guest_exit(2);
        }
        lwp_os_enable(0, 0);           /* no threshold interrupt: INT is off */
    }
    run_in_user(application, 0);
    if (result.status) {
        printf("bench: mode %s unavailable\n", mode_names[job.mode]);
        guest_exit(result.status);
    }
    printf("bench: mode %s interval %u rounds %u checksum %08x records %llu bad %llu missed %llu\n",
           mode_names[job.mode], job.interval, job.rounds, result.checksum,
           (unsigned long long)result.records, (unsigned long long)result.bad_records,
           (unsigned long long)result.missed);
    guest_exit(0);
}
