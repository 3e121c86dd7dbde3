/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * lwp-prof's readers: address resolution (prof-report.c), the views of a
 * profiled tree (prof-views.c: report, script, speedscope) and annotate
 * (prof-annotate.c).
 */
#ifndef LWP_PROF_REPORT_H
#define LWP_PROF_REPORT_H

#include <elfutils/libdwfl.h>
#include <glib.h>
#include <stdint.h>

#include "lwp-prof.h"

struct where {
    const char *object;         /* basename of the module, or "[unknown]" */
    const char *path;           /* the module's file */
    char *symbol;
    char *source;               /* "file:line", or NULL */
    uint64_t offset;            /* address relative to the module's bias */
    uint64_t sym_start;         /* the symbol's ELF address (bias removed) */
    uint64_t sym_size;
    Dwfl_Module *module;        /* NULL for [unknown] */
};

struct resolver {
    Dwfl *dwfl;
    GHashTable *cache;          /* uint64 ip -> struct where * */
};

Dwfl *dwfl_for(const struct prof_data *d);
extern int resolve_sources;      /* 0: no source lines (faster) */
void resolver_init(struct resolver *r, const struct prof_data *d);
const struct where *lookup(struct resolver *r, uint64_t ip);

/* One process image of a tree, with its own resolver (its own load addresses). */
struct image {
    struct prof_data *d;
    struct resolver r;
    const char *comm;           /* the command (process block, else header) */
    int selected;               /* passes --pid / --comm */
};

/* Input and filter options common to report, script and annotate. */
struct tree_opts {
    const char *input;
    const char *pids;           /* --pid LIST */
    const char *comms;          /* --comm LIST */
    int single;                 /* only the named file */
};

/* Loads and selects; NULL after printing why. */
GPtrArray *images_load(const struct tree_opts *o);

int report_main(int argc, char **argv);
int script_main(int argc, char **argv);
int annotate_main(int argc, char **argv);

#endif
