/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The lwp-prof data file: what the preloaded library writes and
 * `lwp-prof report` reads.  Host byte order (little-endian x86), no
 * padding surprises: every field is naturally aligned.
 *
 *   struct lwpprof_file_header
 *   then blocks, each starting with struct lwpprof_block:
 *     LWPPROF_SAMPLES  struct lwpprof_samples + count raw 32-byte LWP
 *                      event records, exactly as LWP stored them
 *                      (AMD pub. 43724, figures 2-1..2-4)
 *     LWPPROF_MODULE   struct lwpprof_module + NUL-terminated path
 *     LWPPROF_THREAD   struct lwpprof_thread (a thread stopped profiling)
 *     LWPPROF_END      struct lwpprof_end (the process image stopped)
 *     LWPPROF_PROCESS  struct lwpprof_process + the command line (one per
 *                      file, right after the header: which process image
 *                      of the profiled tree this file is)
 *
 * Each block is written by one write()/writev() to a file opened with
 * O_APPEND, so blocks of different threads never interleave.  A reader
 * skips blocks of unknown type by their size.
 */
#ifndef LWP_PROF_FORMAT_H
#define LWP_PROF_FORMAT_H

#include <stdint.h>

#define LWPPROF_MAGIC "LWPPROF\0"
#define LWPPROF_VERSION 1

struct lwpprof_file_header {
    char magic[8];
    uint32_t version;
    uint32_t header_size;       /* sizeof(struct lwpprof_file_header) */
    uint32_t event_id;          /* LWP EventId: 2 = IRE, 3 = BRE */
    uint32_t interval;          /* EventIntervaln as LLWPCB left it */
    uint32_t pid, ppid;         /* the profiled process and its parent */
    uint32_t ptr_bits;          /* 64 (x86_64) or 32 (i386) */
    uint32_t drain;             /* LWPPROF_DRAIN_* */
    uint32_t ring_records;      /* ring-buffer size of each thread */
    uint32_t cb_size;           /* LWPCB size, from CPUID 8000_001Ch */
    char program[64];           /* the program's name, NUL-terminated */
};

enum { LWPPROF_DRAIN_TIMER = 1, LWPPROF_DRAIN_THRESHOLD = 2 };

enum {
    LWPPROF_SAMPLES = 1,
    LWPPROF_MODULE = 2,
    LWPPROF_THREAD = 3,
    LWPPROF_END = 4,
    LWPPROF_PROCESS = 5,
};

struct lwpprof_block {
    uint32_t type;
    uint32_t size;              /* bytes, this header included */
};

struct lwpprof_samples {
    struct lwpprof_block b;
    uint32_t tid;
    uint32_t count;             /* records that follow */
    uint64_t missed;            /* this thread's LWPCB.MissedEvents so far */
};

struct lwpprof_module {
    struct lwpprof_block b;
    uint64_t bias;              /* load bias (dl_iterate_phdr's dlpi_addr) */
    uint64_t start, end;        /* the executable PT_LOAD range, biased */
    /* char path[] follows, NUL-terminated, padded to 8 bytes */
};

struct lwpprof_thread {
    struct lwpprof_block b;
    uint32_t tid;
    uint32_t drains;            /* how many times its ring was drained */
    uint64_t samples;           /* records it drained in total */
    uint64_t missed;            /* its final MissedEvents */
};

struct lwpprof_end {
    struct lwpprof_block b;
    uint32_t reason;            /* LWPPROF_END_* */
    uint32_t status;            /* exit status where known */
};

enum { LWPPROF_END_EXIT = 1, LWPPROF_END_EXEC = 2 };

/*
 * One process image of the tree: the root (the program record started)
 * writes FILE, every other image FILE.<pid> or, when that exists (an
 * image exec'd by an earlier one of the same pid), FILE.<pid>.<n>.
 */
struct lwpprof_process {
    struct lwpprof_block b;
    uint32_t pid, ppid;
    uint32_t flags;             /* LWPPROF_PROC_* */
    uint32_t cmdline_size;      /* bytes of the command line that follow */
    uint64_t session;           /* the same in every file of one record */
    char comm[32];              /* the command: basename of what was exec'd */
    /* the command line follows: argv[] NUL-separated, padded to 8 bytes */
};

enum {
    LWPPROF_PROC_ROOT = 1,      /* the program record started */
    LWPPROF_PROC_FORKED = 2,    /* a child of fork() still running its parent's image */
};

/* An LWP event record, version 1 (32 bytes). */
struct lwpprof_record {
    uint8_t event_id, core_id;
    uint16_t flags;
    uint32_t data1;
    uint64_t ip, data2, reserved;
};

#endif
