// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Exits per second of a CPUID or VMMCALL loop in a KVM guest, with the
 * guest's XCR0[62] (LWP) clear, set, and set with an LWPCB loaded: what
 * KVM's LWP switching costs per VMRUN/#VMEXIT (issue 22, item 1).
 * Built against the KVM selftest library of the patched tree; run in L1
 * of the nested setup, so the loop runs in L2 (bench/kvm-exits.sh).  A
 * measurement, not a test: it prints rates and judges nothing.  The three
 * configurations run in turn in every round, so that a machine whose load
 * changes slows them alike; min and median are over the rounds.
 *
 *   kvm_exit_bench [ITERATIONS [ROUNDS]]     (default 1000 15)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test_util.h"
#include "kvm_util.h"
#include "processor.h"

#define X86_FEATURE_LWP		KVM_X86_CPU_FEATURE(0x80000001, 0, ECX, 15)
#define XFEATURE_MASK_LWP	BIT_ULL(62)
#define NMODES			3

static const char * const mode_name[NMODES] = {
	"XCR0[62]=0", "XCR0[62]=1, no LWPCB", "XCR0[62]=1, LWPCB loaded",
};

static void guest_code(u64 mode, u64 iters, u64 cb, u64 use_vmmcall)
{
	u32 eax, ebx, ecx, edx;
	u64 i;

	if (mode >= 1) {
		set_cr4(get_cr4() | X86_CR4_OSXSAVE);
		asm volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
		asm volatile("xsetbv" : : "a"(eax), "d"(edx | (u32)(XFEATURE_MASK_LWP >> 32)), "c"(0));
	}
	if (mode >= 2)
		asm volatile("llwpcb %0" : : "r"(cb) : "memory");
	for (;;) {
		GUEST_SYNC(0);
		for (i = 0; i < iters; i++) {
			if (use_vmmcall) {
				eax = 0xffff;	/* not a hypercall KVM knows */
				asm volatile("vmmcall" : "+a"(eax) : : "rbx", "rcx", "rdx", "rsi", "memory");
			} else {
				cpuid(0, &eax, &ebx, &ecx, &edx);
			}
		}
	}
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void run_sync(struct kvm_vcpu *vcpu)
{
	struct ucall uc;

	vcpu_run(vcpu);
	TEST_ASSERT(vcpu->run->exit_reason == KVM_EXIT_IO, "exit reason %u",
		    vcpu->run->exit_reason);
	if (get_ucall(vcpu, &uc) == UCALL_ABORT)
		REPORT_GUEST_ASSERT(uc);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void measure(u64 iters, int rounds, int vmmcall)
{
	struct kvm_vcpu *vcpu[NMODES];
	struct kvm_vm *vm[NMODES];
	double *rate[NMODES], *ratio = calloc(rounds, sizeof(double));
	int m, r, nmodes = NMODES;

	if (!kvm_cpu_has(X86_FEATURE_LWP))
		nmodes = 1;
	for (m = 0; m < nmodes; m++) {
		vm_vaddr_t cb = 0, ring;
		u32 *p;

		vm[m] = vm_create_with_one_vcpu(&vcpu[m], guest_code);
		if (m == 2) {
			cb = vm_vaddr_alloc_page(vm[m]);
			ring = vm_vaddr_alloc_page(vm[m]);
			p = addr_gva2hva(vm[m], cb);
			memset(p, 0, 4096);
			p[1] = 4096;				/* BufferSize */
			*(u64 *)(p + 2) = ring;			/* BufferBase */
		}
		vcpu_args_set(vcpu[m], 4, (u64)m, iters, (u64)cb, (u64)vmmcall);
		run_sync(vcpu[m]);	/* set up, at the first GUEST_SYNC */
		rate[m] = calloc(rounds, sizeof(double));
	}
	for (r = 0; r < rounds; r++) {
		for (m = 0; m < nmodes; m++) {
			double t = now();

			run_sync(vcpu[m]);
			rate[m][r] = iters / (now() - t);
		}
	}
	printf("%s loop, %llu exits per round, %d rounds (exits/s)\n",
	       vmmcall ? "VMMCALL" : "CPUID", (unsigned long long)iters, rounds);
	/* Each round's rate against the same round's XCR0[62]=0 one. */
	for (m = 1; m < nmodes; m++) {
		for (r = 0; r < rounds; r++)
			ratio[r] = rate[m][r] / rate[0][r];
		qsort(ratio, rounds, sizeof(double), cmp);
		printf("%-26s relative to XCR0[62]=0, median of the rounds: %.3f\n",
		       mode_name[m], ratio[rounds / 2]);
	}
	for (m = 0; m < nmodes; m++) {
		printf("%-26s", mode_name[m]);
		for (r = 0; r < rounds; r++)
			printf(" %.0f", rate[m][r]);
		qsort(rate[m], rounds, sizeof(double), cmp);
		printf("  min %.0f median %.0f max %.0f\n", rate[m][0],
		       rate[m][rounds / 2], rate[m][rounds - 1]);
	}
	for (m = 0; m < nmodes; m++) {
		kvm_vm_free(vm[m]);
		free(rate[m]);
	}
	free(ratio);
}

int main(int argc, char *argv[])
{
	u64 iters = argc > 1 ? strtoull(argv[1], NULL, 0) : 1000;
	int rounds = argc > 2 ? atoi(argv[2]) : 15;

	TEST_REQUIRE(rounds > 0 && iters > 0);
	measure(iters, rounds, 0);
	measure(iters, rounds, 1);
	return 0;
}
