/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The bundled demo guest: reports whether this CPU offers AMD Lightweight
 * Profiling and what CPUID says about it.
 */
#include "libguest.h"

static const char *const feature_names[] = {
    [0] = "LwpAvail", [1] = "LwpVAL", [2] = "LwpIRE", [3] = "LwpBRE",
    [4] = "LwpDME", [5] = "LwpCNH", [6] = "LwpRNH", [31] = "LwpInt",
};

static void print_features(const char *what, uint32_t bits)
{
    printf("  %-22s %#010x ", what, bits);
    for (int i = 0; i < 32; i++) {
        if ((bits >> i & 1) && i < (int)(sizeof(feature_names) / sizeof(feature_names[0])) &&
            feature_names[i]) {
            printf(" %s", feature_names[i]);
        }
    }
    printf("\n");
}

int main(void)
{
    uint32_t a, b, c, d, max_ext;

    printf("qemu-lwp demo guest (%s)\n",
           sizeof(void *) == 8 ? "64-bit long mode" : "32-bit protected mode");
    cpuid_count(0x80000000, 0, &max_ext, &b, &c, &d);
    cpuid_count(0x80000001, 0, &a, &b, &c, &d);
    bool lwp = c >> 15 & 1;
    printf("  CPUID 8000_0001.ECX[15] (LWP supported): %u\n", lwp);
    cpuid_count(0xd, 0, &a, &b, &c, &d);
    printf("  CPUID 0000_000D.0 EDX[30] (XCR0[62] supported): %u\n", d >> 30 & 1);
    if (!lwp) {
        printf("LWP is not present on this CPU.\n");
        return 0;
    }
    if (max_ext < 0x8000001C) {
        printf("LWP is present but CPUID leaf 8000_001C is beyond the maximum %#x\n", max_ext);
        return 0;
    }
    cpuid_count(0x8000001C, 0, &a, &b, &c, &d);
    printf("LWP is present.  CPUID 8000_001C:\n");
    print_features("EDX (supported)", d);
    print_features("EAX (available)", a);
    printf("  LwpCbSize %u quadwords, LwpEventSize %u, LwpMaxEvents %u, LwpEventOffset %u\n",
           b & 0xff, b >> 8 & 0xff, b >> 16 & 0xff, b >> 24);
    printf("  LwpVersion %u, LwpMinBufferSize %u, LwpIpFiltering %u\n",
           c >> 9 & 0x7f, c >> 16 & 0xff, c >> 29 & 1);
    return 0;
}
