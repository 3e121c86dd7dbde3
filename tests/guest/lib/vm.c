/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Page-level control over the identity map built by boot.S: 2 MiB pages are
 * split into 4 KiB page tables on first use, so a test can make single pages
 * read-only, supervisor-only or not present.
 */
#include "libguest.h"

extern uint64_t pd[];                /* 2048 entries: 4 GiB of 2 MiB pages */

#define PT_POOL 32
static uint64_t pt_pool[PT_POOL][512] __attribute__((aligned(4096)));
static unsigned pt_used;

static uint64_t *pte_of(uintptr_t addr)
{
    uint64_t *pde = &pd[addr >> 21];

    if (*pde & PTE_PS) {
        if (pt_used == PT_POOL) {
            printf("FAIL: vm: out of page tables\n");
            guest_exit(1);
        }
        uint64_t *pt = pt_pool[pt_used++];
        uint64_t base = *pde & ~0x1fffffull & ~(1ull << 63);
        uint64_t flags = *pde & 0xfff & ~PTE_PS;
        for (int i = 0; i < 512; i++) {
            pt[i] = (base + i * PAGE_SIZE) | flags;
        }
        *pde = (uintptr_t)pt | PTE_P | PTE_RW | PTE_US;
    }
    uint64_t *pt = (uint64_t *)(uintptr_t)(*pde & 0xfffff000ull);
    return &pt[(addr >> 12) & 511];
}

void vm_set_flags(uintptr_t addr, size_t len, uint64_t set, uint64_t clear)
{
    uintptr_t end = addr + len;

    for (addr &= ~(PAGE_SIZE - 1); addr < end; addr += PAGE_SIZE) {
        uint64_t *pte = pte_of(addr);
        *pte = (*pte & ~clear) | set;
        invlpg(addr);
    }
}

uint64_t vm_map_page(uintptr_t addr, uint64_t phys)
{
    uint64_t *pte = pte_of(addr);
    uint64_t old = *pte & 0xffffff000ull;

    *pte = (*pte & ~0xffffff000ull) | (phys & 0xffffff000ull);
    invlpg(addr);
    return old;
}

void *alloc_pages(unsigned n)
{
    static uint8_t heap[256 * 4096] __attribute__((aligned(4096)));
    static unsigned next;

    if (next + n > 256) {
        printf("FAIL: alloc_pages: out of memory\n");
        guest_exit(1);
    }
    void *p = &heap[next * PAGE_SIZE];
    next += n;
    memset(p, 0, n * PAGE_SIZE);
    return p;
}
