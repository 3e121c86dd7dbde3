/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "trace/trace-qemu_lwp_target_i386_lwp_glue.h"
