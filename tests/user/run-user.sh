#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Run one linux-user test program: run-user.sh QEMU PROGRAM [ARGS...]
qemu=$1; shift
exec "$qemu" -cpu max "$@"
