/* SPDX-License-Identifier: GPL-2.0-or-later */
/* lwp-prof's launcher and report: what the two halves share. */
#ifndef LWP_PROF_H
#define LWP_PROF_H

#include <stddef.h>
#include <stdint.h>
#include <glib.h>

#include "lwp-prof-format.h"

struct prof_module {
    uint64_t bias, start, end;
    char *path;
};

struct prof_sample {
    uint32_t tid;
    struct lwpprof_record rec;
};

/* A data file, read whole. */
struct prof_data {
    const char *path;
    struct lwpprof_file_header hdr;
    struct prof_module *modules;
    size_t n_modules;
    struct prof_sample *samples;
    size_t n_samples;
    uint64_t missed;            /* MissedEvents, summed over threads */
    unsigned n_threads;
    uint64_t drains;            /* drains that wrote records (sample blocks) */
    int ended;                  /* an LWPPROF_END block was seen */
    uint32_t end_reason;        /* LWPPROF_END_*, 0 if not closed */
    /* the process block (0/NULL in files written before it existed) */
    int has_process;
    struct lwpprof_process proc;
    char *cmdline;              /* argv joined by spaces */
};

/*
 * The data of a whole profiled tree: FILE and, when FILE is the root's,
 * every FILE.<pid>[.<n>] of the same record beside it.  Root first, then
 * by pid and file.  Returns NULL after printing why FILE cannot be read.
 */
GPtrArray *prof_tree_load(const char *path, int single);

/* Returns 0, or -1 after printing why the file cannot be read. */
int prof_data_load(const char *path, struct prof_data *d);
void prof_data_free(struct prof_data *d);
const char *prof_event_name(unsigned event_id);

int report_main(int argc, char **argv);

#endif
