/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Precise faults (spec 5.1-5.4, 8.6): every LWPCB and ring-buffer access
 * honours present, read-only and user/supervisor page protections with the
 * architected #PF error code, and a faulting instruction changes neither LWP
 * state nor memory.  Segment-limit (legacy) and canonical (64-bit) #GP.
 */
#include "lwp.h"

static struct lwpcb *cb;
static struct lwp_record *ring;            /* two pages: 256 records */
static uint8_t snapshot[2 * 4096];

#define RING_SIZE (2 * 4096)

static int try_lwpins(uint32_t data1)
{
    asm volatile(ASM_TRY "lwpins $0, %0, %1\n\t" ASM_CATCH
                 : : "r"(data1), "r"(0) : "memory", "cc");
    return last_exc.vector;
}

static int try_llwpcb(const void *p)
{
    asm volatile(ASM_TRY "llwpcb %0\n\t" ASM_CATCH : : "r"(p) : "memory");
    return last_exc.vector;
}

static int try_slwpcb(uintptr_t *v)
{
    uintptr_t r = 0;
    asm volatile(ASM_TRY "slwpcb %0\n\t" ASM_CATCH : "+r"(r) : : "memory");
    *v = r;
    return last_exc.vector;
}

static void setup(uint32_t flags)
{
    memset(ring, 0, RING_SIZE);
    lwpcb_init(cb, ring, RING_SIZE, flags);
}

static bool ring_unchanged(void)
{
    return memcmp(snapshot, ring, RING_SIZE) == 0;
}

static void protect(void *p, uint64_t set, uint64_t clear)
{
    vm_set_flags((uintptr_t)p, PAGE_SIZE, set, clear);
}

static void test_store_faults(void)
{
    uintptr_t v;

    setup(0);
    cb->head = 127 * 32;                   /* the next record opens page 2 */
    llwpcb(cb);
    lwpins(0, 1, 0);                       /* slot 127, head -> 128 */
    memcpy(snapshot, ring, RING_SIZE);

    protect(&ring[128], 0, PTE_RW);
    report(try_lwpins(2) == PF_VECTOR &&
           last_exc.error_code == (PFERR_PRESENT | PFERR_WRITE) &&
           last_exc.cr2 == (uintptr_t)&ring[128],
           "LWPINS into a read-only ring page: #PF(P|W) at the slot, got %#lx at %#lx",
           (unsigned long)last_exc.error_code, (unsigned long)last_exc.cr2);
    protect(&ring[128], PTE_RW, PTE_P);
    report(try_lwpins(3) == PF_VECTOR && last_exc.error_code == PFERR_WRITE,
           "LWPINS into a not-present ring page: #PF(W)");
    protect(&ring[128], PTE_P, 0);
    report(ring_unchanged(), "faulting LWPINS wrote nothing");
    report(try_slwpcb(&v) == -1 && cb->head == 128 * 32 && cb->missed == 0,
           "faulting LWPINS changed no LWP state (head %u)", cb->head);
    lwpins(0, 4, 0);
    report(ring[128].data1 == 4, "the retried store lands where the faulting one would have");

    /* The LWPCB itself: SLWPCB's flush needs it writable; the session survives. */
    protect(cb, 0, PTE_RW);
    report(try_slwpcb(&v) == PF_VECTOR && last_exc.error_code == (PFERR_PRESENT | PFERR_WRITE) &&
           last_exc.cr2 >= (uintptr_t)cb && last_exc.cr2 < (uintptr_t)cb + PAGE_SIZE,
           "SLWPCB with a read-only LWPCB: #PF(P|W)");
    protect(cb, PTE_RW, 0);
    report(try_slwpcb(&v) == -1 && v == (uintptr_t)cb, "LWP still enabled after the flush fault");
    llwpcb(0);
}

static void test_llwpcb_faults(void)
{
    struct lwpcb *other = alloc_pages(1);

    setup(LWP_F_VAL | LWP_F_INT);
    protect(cb, 0, PTE_P);
    report(try_llwpcb(cb) == PF_VECTOR && last_exc.error_code == 0 && last_exc.cr2 == (uintptr_t)cb,
           "LLWPCB of a not-present LWPCB: #PF(0) at the LWPCB");
    protect(cb, PTE_P, PTE_RW);
    report(try_llwpcb(cb) == PF_VECTOR && last_exc.error_code == (PFERR_PRESENT | PFERR_WRITE),
           "LLWPCB of a read-only LWPCB: #PF(P|W)");
    report(cb->flags == (LWP_F_VAL | LWP_F_INT), "Flags not written back by the faulting LLWPCB");
    protect(cb, PTE_RW, 0);

    /*
     * Spec 5.1 step 4 and its exception table: LLWPCB reads and writes the
     * LWPCB only.  The ring is first touched by the first store.
     */
    setup(0);
    cb->head = 127 * 32;
    memcpy(snapshot, ring, RING_SIZE);
    protect(&ring[128], 0, PTE_P);
    protect(&ring[0], 0, PTE_RW);
    report(try_llwpcb(cb) == -1, "LLWPCB with a read-only and a not-present ring page: no fault");
    report(slwpcb() == (uintptr_t)cb, "LWP enabled with that ring");
    protect(&ring[0], PTE_RW, 0);
    report(memcmp(snapshot, ring, PAGE_SIZE) == 0, "LLWPCB wrote nothing to the ring");
    lwpins(0, 1, 0);                       /* slot 127 */
    report(try_lwpins(2) == PF_VECTOR && last_exc.error_code == PFERR_WRITE &&
           last_exc.cr2 == (uintptr_t)&ring[128],
           "the first store into the not-present page faults: #PF(W) at the slot");
    protect(&ring[128], PTE_P, 0);
    lwpins(0, 3, 0);
    report(ring[127].data1 == 1 && ring[128].data1 == 3,
           "once mapped, the retried store lands at the slot");
    llwpcb(0);
    setup(LWP_F_VAL | LWP_F_INT);

    /* An active session is flushed and disabled before the new LWPCB faults. */
    setup(0);
    llwpcb(cb);
    lwpins(0, 1, 0);
    lwpcb_init(other, ring, RING_SIZE, 0);
    protect(other, 0, PTE_P);
    report(try_llwpcb(other) == PF_VECTOR && last_exc.cr2 == (uintptr_t)other,
           "LLWPCB of a not-present new LWPCB: #PF");
    report(slwpcb() == 0 && cb->head == 32, "old session flushed (head %u) and LWP disabled", cb->head);
    protect(other, PTE_P, 0);

    /* A flush fault on the old LWPCB keeps the old session. */
    llwpcb(cb);
    protect(cb, 0, PTE_RW);
    report(try_llwpcb(other) == PF_VECTOR && last_exc.cr2 >= (uintptr_t)cb &&
           last_exc.cr2 < (uintptr_t)cb + PAGE_SIZE, "LLWPCB whose old-LWPCB flush faults: #PF");
    protect(cb, PTE_RW, 0);
    report(slwpcb() == (uintptr_t)cb, "the old session stays enabled");
    llwpcb(0);
}

static uintptr_t user_lwpins(uintptr_t data1)
{
    return try_lwpins(data1) << 16 | (last_exc.error_code & 0xffff);
}

static uintptr_t user_llwpcb(uintptr_t p)
{
    return try_llwpcb((void *)p) << 16 | (last_exc.error_code & 0xffff);
}

static void test_user_isolation(void)
{
    uintptr_t r;

    setup(0);
    llwpcb(cb);
    memcpy(snapshot, ring, RING_SIZE);
    protect(&ring[0], 0, PTE_US);
    r = run_in_user(user_lwpins, 5);
    report(r == (PF_VECTOR << 16 | PFERR_PRESENT | PFERR_WRITE | PFERR_USER),
           "CPL 3 LWPINS into a supervisor ring page: #PF(P|W|U), got %#lx", (unsigned long)r);
    report(ring_unchanged(), "nothing written to the supervisor page");
    report(lwpins(0, 6, 0) == 0 && ring[0].data1 == 6, "the same store at CPL 0 succeeds");
    protect(&ring[0], PTE_US, 0);
    llwpcb(0);

    setup(0);
    protect(cb, 0, PTE_US);
    r = run_in_user(user_llwpcb, (uintptr_t)cb);
    report(r == (PF_VECTOR << 16 | PFERR_PRESENT | PFERR_USER),
           "CPL 3 LLWPCB of a supervisor LWPCB: #PF(P|U), got %#lx", (unsigned long)r);
    protect(cb, PTE_US, 0);
    report(slwpcb() == 0, "LWP disabled");
}

static void test_address_checks(void)
{
    setup(0);
#ifdef __x86_64__
    cb->buffer_base = 0x0000800000000000ull - 4096;
    report(try_llwpcb(cb) == GP_VECTOR && last_exc.error_code == 0,
           "ring buffer crossing the canonical boundary: #GP(0)");
    cb->buffer_base = 0xffff800000000000ull - 4096;
    report(try_llwpcb(cb) == GP_VECTOR, "non-canonical ring buffer: #GP(0)");
#else
    extern uint64_t gdt[];
    /* A user data segment limited to 16 MiB in the spare GDT slot 0x48. */
    gdt[9] = 0x00c0f30000000fffull;    /* limit 0xfff pages, G = 1 */
    asm volatile("mov %0, %%ds" : : "r"(0x4b));
    cb->buffer_base = 0x00fff000;
    report(try_llwpcb(cb) == GP_VECTOR, "ring buffer beyond the DS limit: #GP");
    cb->buffer_base = (uintptr_t)ring;
    report(try_llwpcb(cb) == -1, "within the DS limit: accepted");
    llwpcb(0);
    cb->buffer_base = 1ull << 32 | (uintptr_t)ring;
    report(try_llwpcb(cb) == GP_VECTOR, "BufferBase upper 32 bits set outside 64-bit mode: #GP");
    cb->buffer_base = (uintptr_t)ring;

    /* A read-only data segment: LWP stores through DS, so #GP. */
    gdt[9] = 0x00cff1000000ffffull;
    asm volatile("mov %0, %%ds" : : "r"(0x4b));
    report(try_llwpcb(cb) == GP_VECTOR, "read-only DS: #GP");

    /* Expand-down, byte-granular, B = 1, limit 0xfffff: offsets from 1 MiB. */
    gdt[9] = 0x004ff6000000ffffull;
    asm volatile("mov %0, %%ds" : : "r"(0x4b));
    report(try_llwpcb(cb) == -1, "expand-down DS: LWPCB and ring above the limit accepted");
    llwpcb(0);
    cb->buffer_base = 0x80000;
    report(try_llwpcb(cb) == GP_VECTOR, "expand-down DS: ring below the limit: #GP");
    cb->buffer_base = (uintptr_t)ring;
    asm volatile("mov %0, %%ds" : : "r"(USER_DS));
#endif
    report(slwpcb() == 0, "LWP disabled after the #GP");
}

int main(void)
{
    cb = alloc_pages(1);
    ring = alloc_pages(2);
    lwp_os_enable(3, 0x51);
    test_store_faults();
    test_llwpcb_faults();
    test_user_isolation();
    test_address_checks();
    return 0;
}
