# SPDX-License-Identifier: GPL-2.0-or-later
# One PASS:/FAIL: line per check and the closing 'N passed, N failed' line,
# for the shell test programs (sourced).
passed=0 failed=0
report() {
    if [ "$1" = 0 ]; then echo "PASS: $2"; passed=$((passed + 1));
    else echo "FAIL: $2"; failed=$((failed + 1)); fi
}
summary_exit() {
    echo "$passed passed, $failed failed"
    [ "$failed" = 0 ] && [ "$passed" != 0 ]
    exit
}
