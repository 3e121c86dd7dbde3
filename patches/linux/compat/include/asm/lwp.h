/* SPDX-License-Identifier: GPL-2.0 */
/*
 * qemu-lwp, out-of-tree builds only (scripts/build-kvm-modules.sh): the
 * part of <asm/lwp.h> that KVM uses, for a kernel without the x86 LWP
 * patches of the series, such as Debian's.  The Kbuild file puts this
 * directory on the include path only when the kernel's headers lack
 * asm/lwp.h; lwp-compat.c implements it.  Not part of the series.
 */
#ifndef _ASM_X86_LWP_H
#define _ASM_X86_LWP_H

#include <linux/bits.h>
#include <linux/errno.h>

struct lwp_guest_ops {
	void (*threshold)(void *guest);
	/* Never called here: such a kernel has no guest fpstate with LWP. */
	void *(*loaded_guest)(void);
};

int lwp_register_guest_ops(const struct lwp_guest_ops *ops);
void lwp_unregister_guest_ops(const struct lwp_guest_ops *ops);
void lwp_note_guest_owner(void *guest);
void lwp_forget_guest_owner(void *guest);

#endif /* _ASM_X86_LWP_H */
