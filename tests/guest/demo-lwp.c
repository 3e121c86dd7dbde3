/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The bundled demo guest.  It brings LWP up the way an operating system
 * should (spec 8.7.1: check CPUID, CR4.OSXSAVE, XCR0[62], LWP_CFG with the
 * supported features, COREID and a threshold vector), then runs a workload in
 * user mode (CPL 3) that profiles itself with LWPVAL and LWPINS, and prints
 * the records it reads back from its ring buffer.
 */
#include "lwp.h"
#include "apic.h"

#define NOINLINE __attribute__((noinline))
#define LWPVAL32(d2, d1, f) lwpval(d2, d1, f)
#define LWPINS32(d2, d1, f) lwpins(d2, d1, f)
#include "../common/lwp-workload.h"

#define NREC 32
#define VECTOR 0x51

static struct lwpcb cb;
static struct lwp_record ring[NREC] __attribute__((aligned(64)));
static volatile unsigned threshold_irqs;

static const char *const feature_names[32] = {
    [0] = "LwpAvail", [1] = "LwpVAL", [2] = "LwpIRE", [3] = "LwpBRE",
    [4] = "LwpDME", [5] = "LwpCNH", [6] = "LwpRNH", [31] = "LwpInt",
};

static void print_features(const char *what, uint32_t bits)
{
    printf("  %-22s %#010x", what, bits);
    for (int i = 0; i < 32; i++) {
        if ((bits >> i & 1) && feature_names[i]) {
            printf(" %s", feature_names[i]);
        }
    }
    printf("\n");
}

static void on_threshold(struct ex_regs *regs)
{
    threshold_irqs++;
    apic_eoi();
}

/* The profiled application: runs at CPL 3. */
static uintptr_t application(uintptr_t unused)
{
    memset(&cb, 0, sizeof(cb));
    cb.flags = LWP_F_VAL | LWP_F_INT;
    cb.buffer_size = sizeof(ring);
    cb.buffer_base = (uintptr_t)ring;
    cb.threshold = 2 * 32;
    cb.event[0].interval = 3;              /* every 4th sample */
    llwpcb(&cb);
    return Workload(1000);
}

int main(void)
{
    uint32_t a, b, c, d, max_ext;
    bool amd;

    printf("qemu-lwp demo guest (%s)\n",
           sizeof(void *) == 8 ? "64-bit long mode" : "32-bit protected mode");
    cpuid_count(0, 0, &a, &b, &c, &d);
    amd = b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163;
    cpuid_count(0x80000000, 0, &max_ext, &b, &c, &d);
    cpuid_count(0x80000001, 0, &a, &b, &c, &d);
    bool lwp = c >> 15 & 1;
    printf("  vendor AuthenticAMD: %s, LWP supported (8000_0001.ECX[15]): %s\n",
           amd ? "yes" : "no", lwp ? "yes" : "no");
    if (!lwp || max_ext < 0x8000001C) {
        printf("LWP is not present on this CPU.\n");
        return 0;
    }
    lwp_cpuid(&a, &b, &c, &d);
    print_features("8000_001C.EDX supported", d);
    printf("  LwpCbSize %u, LwpEventSize %u, LwpMaxEvents %u, LwpEventOffset %u,"
           " LwpVersion %u, LwpMinBufferSize %u\n", b & 0xff, b >> 8 & 0xff,
           b >> 16 & 0xff, b >> 24, c >> 9 & 0x7f, c >> 16 & 0xff);

    /* The operating system's part (spec 8.7.1). */
    set_irq_handler(VECTOR, on_threshold);
    apic_enable();
    lwp_os_enable(apic_read(APIC_ID) >> 24, VECTOR);
    lwp_cpuid(&a, &b, &c, &d);
    print_features("8000_001C.EAX available", a);
    asm volatile("sti");

    unsigned sum = run_in_user(application, 0);

    asm volatile("cli");
    llwpcb(0);                             /* flushes the head to the LWPCB */
    uint32_t head = cb.head, tail = cb.tail;
    printf("LWP records read back from the ring buffer (threshold interrupts: %u):\n",
           threshold_irqs);
    printf("sum %u, missed %llu\n", sum, (unsigned long long)cb.missed);
    for (uint32_t off = tail; off != head; off = (off + 32) % sizeof(ring)) {
        const struct lwp_record *e = &ring[off / 32];
        printf(WORKLOAD_RECORD_FORMAT, e->event_id, e->flags, e->data1,
               (unsigned long long)e->data2, WORKLOAD_IP_NAME((uintptr_t)e->ip));
    }
    return 0;
}
