// SPDX-License-Identifier: GPL-2.0-or-later
// A C++ program for lwp-prof's report: its hot function has a mangled
// name (work::Loop::run(unsigned long)) that the report demangles.
#include <cstdio>

namespace work {
struct Loop {
    __attribute__((noinline)) static unsigned long run(unsigned long n)
    {
        unsigned long acc = 0;
        asm volatile("1: add %1, %0\n\t"
                     "dec %1\n\t"
                     "jnz 1b"
                     : "+r"(acc), "+r"(n) : : "cc");
        return acc;
    }
};
}

int main()
{
    std::printf("%lu\n", work::Loop::run(3000000));
    return 0;
}
