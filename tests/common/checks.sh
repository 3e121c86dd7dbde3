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

# expect_one_error WHAT PATTERN COMMAND...: COMMAND must fail and print
# exactly one 'qemu-lwp: error:' line, which matches PATTERN.
expect_one_error() {
    local what=$1 pattern=$2 out rc errs
    shift 2
    out=$("$@" 2>&1); rc=$?
    errs=$(grep -c '^qemu-lwp: error:' <<<"$out")
    if [ $rc -ne 0 ] && [ "$errs" = 1 ] && grep -q "^qemu-lwp: error: .*$pattern" <<<"$out"; then
        report 0 "$what"
    else
        report 1 "$what (rc $rc): $out"
    fi
}
