/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NOPs of every length from 1 to 15 bytes, for the tests that check a
 * record's InstructionAddress in a TB of instructions of every length
 * (tests/user/lwp-long-tb.c, tests/guest/lwp-events.c).
 *
 * LEN_NOPS_MACRO defines the assembler macro "len_nop LEN": 0F 1F /0 with
 * a ModRM, SIB and displacement as long as needed, then 66 prefixes (at
 * most 7: 15 bytes in all).  LEN_NOPS_ORDER lists 1 + 7k mod 15 for k = 0
 * to 14, a permutation of 1 to 15 that lwp_len_nop() gives by index.
 * Put LEN_NOPS_MACRO before the first use in an asm() and ".purgem len_nop"
 * after the last.
 */
#ifndef LWP_LEN_NOPS_H
#define LWP_LEN_NOPS_H

#define LEN_NOPS_MACRO                                                      \
    ".macro len_nop len\n\t"                                                \
    ".if \\len == 1\n\t.byte 0x90\n\t"                                      \
    ".elseif \\len == 2\n\t.byte 0x66, 0x90\n\t"                            \
    ".elseif \\len == 3\n\t.byte 0x0f, 0x1f, 0x00\n\t"                      \
    ".elseif \\len == 4\n\t.byte 0x0f, 0x1f, 0x40, 0x00\n\t"                \
    ".elseif \\len == 5\n\t.byte 0x0f, 0x1f, 0x44, 0, 0\n\t"                \
    ".elseif \\len == 6\n\t.byte 0x66, 0x0f, 0x1f, 0x44, 0, 0\n\t"          \
    ".elseif \\len == 7\n\t.byte 0x0f, 0x1f, 0x80, 0, 0, 0, 0\n\t"          \
    ".else\n\t"                                                             \
    ".rept \\len - 8\n\t.byte 0x66\n\t.endr\n\t"                            \
    ".byte 0x0f, 0x1f, 0x84, 0x00, 0, 0, 0, 0\n\t"                          \
    ".endif\n"                                                              \
    ".endm\n"

#define LEN_NOPS_ORDER "1, 8, 15, 7, 14, 6, 13, 5, 12, 4, 11, 3, 10, 2, 9"

/* The length of NOP @i of a run of LEN_NOPS_ORDER repeated. */
static inline unsigned lwp_len_nop(unsigned i)
{
    return (i * 7) % 15 + 1;
}

#endif
