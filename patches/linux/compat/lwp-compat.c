// SPDX-License-Identifier: GPL-2.0
/*
 * qemu-lwp, out-of-tree builds only (scripts/build-kvm-modules.sh): the LWP
 * guest interface of the series' x86 core (arch/x86/kernel/cpu/lwp.c), for
 * a kernel that lacks the core, such as Debian's, which has no vector of
 * its own for the LWP threshold interrupt.  Not part of the series.
 *
 * Such a kernel never enables LWP for its own tasks, so every threshold
 * interrupt belongs to a guest.  Lacking the core's LWP_THRESHOLD_VECTOR,
 * this borrows POSTED_INTR_WAKEUP_VECTOR: every CONFIG_HAVE_KVM kernel has
 * an IDT entry for it that acknowledges the interrupt and calls the hook
 * of kvm_set_posted_intr_wakeup_handler(), and its only other user,
 * kvm-intel, cannot be loaded on an AMD processor.  The attribution is the
 * core's: the vCPU that KVM last noted as the CPU's LWP owner.
 */
#include <linux/export.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <asm/irq.h>
#include <asm/irq_vectors.h>
#include <asm/lwp.h>

static DEFINE_PER_CPU(void *, lwp_compat_guest_owner);
static const struct lwp_guest_ops __rcu *lwp_compat_ops;

static void lwp_compat_interrupt(void)
{
	const struct lwp_guest_ops *ops;
	void *guest;

	rcu_read_lock();
	ops = rcu_dereference(lwp_compat_ops);
	guest = this_cpu_read(lwp_compat_guest_owner);
	if (ops && guest)
		ops->threshold(guest);
	rcu_read_unlock();
}

int lwp_register_guest_ops(const struct lwp_guest_ops *ops)
{
	if (rcu_access_pointer(lwp_compat_ops))
		return -EBUSY;
	rcu_assign_pointer(lwp_compat_ops, ops);
	kvm_set_posted_intr_wakeup_handler(lwp_compat_interrupt);
	return POSTED_INTR_WAKEUP_VECTOR;
}
EXPORT_SYMBOL_GPL(lwp_register_guest_ops);

void lwp_unregister_guest_ops(const struct lwp_guest_ops *ops)
{
	/* Waits for running handlers (synchronize_rcu()). */
	kvm_set_posted_intr_wakeup_handler(NULL);
	RCU_INIT_POINTER(lwp_compat_ops, NULL);
	synchronize_rcu();
}
EXPORT_SYMBOL_GPL(lwp_unregister_guest_ops);

void lwp_note_guest_owner(void *guest)
{
	this_cpu_write(lwp_compat_guest_owner, guest);
}
EXPORT_SYMBOL_GPL(lwp_note_guest_owner);

void lwp_forget_guest_owner(void *guest)
{
	int cpu;

	for_each_possible_cpu(cpu)
		cmpxchg(per_cpu_ptr(&lwp_compat_guest_owner, cpu), guest, NULL);
	synchronize_rcu();
}
EXPORT_SYMBOL_GPL(lwp_forget_guest_owner);
