/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Linux's LWP threshold signal ABI (Documentation/x86/lwp.rst of the kernel
 * series in patches/linux), for lwp-prof and the Linux guest's tests, until
 * the C library's headers carry it: each thread opts in and chooses the
 * signal, which arrives with si_code SI_LWP_THRESHOLD.
 */
#ifndef LINUX_LWP_ABI_H
#define LINUX_LWP_ABI_H

#ifndef ARCH_LWP_SET_SIGNAL
#define ARCH_LWP_SET_SIGNAL 0x6001
#define ARCH_LWP_GET_SIGNAL 0x6002
#endif
#ifndef SI_LWP_THRESHOLD
#define SI_LWP_THRESHOLD 0x40
#endif

#endif
