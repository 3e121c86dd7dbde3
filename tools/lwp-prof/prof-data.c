/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Reading an lwp-prof data file (lwp-prof-format.h). */
#include <errno.h>
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lwp-prof.h"

const char *prof_event_name(unsigned event_id)
{
    switch (event_id) {
    case 2:
        return "ire";
    case 3:
        return "bre";
    default:
        return "?";
    }
}

struct thread_missed {
    uint32_t tid;
    uint64_t missed;
};

int prof_data_load(const char *path, struct prof_data *d)
{
    gchar *buf = NULL;
    gsize len = 0, off;
    GError *err = NULL;
    GArray *mods, *samples, *threads;
    guint i;

    memset(d, 0, sizeof(*d));
    d->path = path;
    if (!g_file_get_contents(path, &buf, &len, &err)) {
        fprintf(stderr, "lwp-prof: cannot read %s: %s\n", path, err->message);
        g_error_free(err);
        return -1;
    }
    if (len < sizeof(d->hdr) || memcmp(buf, LWPPROF_MAGIC, 8)) {
        fprintf(stderr, "lwp-prof: %s is not an lwp-prof data file%s\n", path,
                len ? "" : " (it is empty: the program did not start profiling)");
        g_free(buf);
        return -1;
    }
    memcpy(&d->hdr, buf, sizeof(d->hdr));
    if (d->hdr.version != LWPPROF_VERSION || d->hdr.header_size < sizeof(d->hdr) ||
        d->hdr.header_size > len) {
        fprintf(stderr, "lwp-prof: %s: unsupported data file version %u\n", path,
                d->hdr.version);
        g_free(buf);
        return -1;
    }
    d->hdr.program[sizeof(d->hdr.program) - 1] = 0;
    mods = g_array_new(FALSE, TRUE, sizeof(struct prof_module));
    samples = g_array_new(FALSE, FALSE, sizeof(struct prof_sample));
    threads = g_array_new(FALSE, FALSE, sizeof(struct thread_missed));
    for (off = d->hdr.header_size; off + sizeof(struct lwpprof_block) <= len;) {
        struct lwpprof_block b;

        memcpy(&b, buf + off, sizeof(b));
        if (b.size < sizeof(b) || b.size > len - off) {
            fprintf(stderr, "lwp-prof: %s: truncated block at offset %zu (ignored)\n",
                    path, (size_t)off);
            break;
        }
        if (b.type == LWPPROF_SAMPLES && b.size >= sizeof(struct lwpprof_samples)) {
            struct lwpprof_samples s;
            struct thread_missed *tm = NULL;

            memcpy(&s, buf + off, sizeof(s));
            d->drains++;
            for (i = 0; i < threads->len; i++) {
                if (g_array_index(threads, struct thread_missed, i).tid == s.tid) {
                    tm = &g_array_index(threads, struct thread_missed, i);
                }
            }
            if (!tm) {
                struct thread_missed n = { s.tid, 0 };
                g_array_append_val(threads, n);
                tm = &g_array_index(threads, struct thread_missed, threads->len - 1);
            }
            if (s.missed > tm->missed) {
                tm->missed = s.missed;
            }
            for (i = 0; i < s.count && sizeof(s) + (i + 1) * 32ull <= b.size; i++) {
                struct prof_sample ps = { .tid = s.tid };
                memcpy(&ps.rec, buf + off + sizeof(s) + i * 32, 32);
                g_array_append_val(samples, ps);
            }
        } else if (b.type == LWPPROF_MODULE && b.size > sizeof(struct lwpprof_module)) {
            struct lwpprof_module m;
            struct prof_module pm;
            const char *name = buf + off + sizeof(m);
            gboolean dup = FALSE;

            memcpy(&m, buf + off, sizeof(m));
            pm.bias = m.bias;
            pm.start = m.start;
            pm.end = m.end;
            pm.path = g_strndup(name, b.size - sizeof(m));
            for (i = 0; i < mods->len; i++) {
                struct prof_module *o = &g_array_index(mods, struct prof_module, i);
                dup |= o->start == pm.start && !strcmp(o->path, pm.path);
            }
            if (dup) {
                g_free(pm.path);
            } else {
                g_array_append_val(mods, pm);
            }
        } else if (b.type == LWPPROF_THREAD && b.size >= sizeof(struct lwpprof_thread)) {
            struct lwpprof_thread t;
            gboolean found = FALSE;

            memcpy(&t, buf + off, sizeof(t));
            for (i = 0; i < threads->len; i++) {
                struct thread_missed *tm =
                    &g_array_index(threads, struct thread_missed, i);
                if (tm->tid == t.tid) {
                    found = TRUE;
                    if (t.missed > tm->missed) {
                        tm->missed = t.missed;
                    }
                }
            }
            if (!found) {
                struct thread_missed n = { t.tid, t.missed };
                g_array_append_val(threads, n);
            }
        } else if (b.type == LWPPROF_END) {
            struct lwpprof_end e = { 0 };

            memcpy(&e, buf + off, MIN(sizeof(e), (size_t)b.size));
            d->ended = 1;
            d->end_reason = e.reason;
        } else if (b.type == LWPPROF_PROCESS && b.size >= sizeof(struct lwpprof_process)) {
            size_t n;

            memcpy(&d->proc, buf + off, sizeof(d->proc));
            d->proc.comm[sizeof(d->proc.comm) - 1] = 0;
            n = MIN((size_t)d->proc.cmdline_size, b.size - sizeof(d->proc));
            d->cmdline = g_malloc0(n + 1);
            memcpy(d->cmdline, buf + off + sizeof(d->proc), n);
            while (n > 0 && !d->cmdline[n - 1]) {
                n--;
            }
            for (size_t k = 0; k < n; k++) {
                if (!d->cmdline[k]) {
                    d->cmdline[k] = ' ';
                }
            }
            d->has_process = 1;
        }
        off += b.size;
    }
    for (i = 0; i < threads->len; i++) {
        d->missed += g_array_index(threads, struct thread_missed, i).missed;
    }
    d->n_threads = threads->len;
    d->n_modules = mods->len;
    d->modules = (struct prof_module *)g_array_free(mods, FALSE);
    d->n_samples = samples->len;
    d->samples = (struct prof_sample *)g_array_free(samples, FALSE);
    g_array_free(threads, TRUE);
    g_free(buf);
    return 0;
}

void prof_data_free(struct prof_data *d)
{
    for (size_t i = 0; i < d->n_modules; i++) {
        g_free(d->modules[i].path);
    }
    g_free(d->modules);
    g_free(d->samples);
    g_free(d->cmdline);
    memset(d, 0, sizeof(*d));
}

static int tree_order(gconstpointer a, gconstpointer b)
{
    const struct prof_data *x = *(struct prof_data *const *)a;
    const struct prof_data *y = *(struct prof_data *const *)b;
    int rx = x->has_process && (x->proc.flags & LWPPROF_PROC_ROOT);
    int ry = y->has_process && (y->proc.flags & LWPPROF_PROC_ROOT);

    if (rx != ry) {
        return ry - rx;
    }
    if (x->hdr.pid != y->hdr.pid) {
        return x->hdr.pid < y->hdr.pid ? -1 : 1;
    }
    /* FILE.<pid> before FILE.<pid>.1 before FILE.<pid>.2: exec order */
    if (strlen(x->path) != strlen(y->path)) {
        return strlen(x->path) < strlen(y->path) ? -1 : 1;
    }
    return strcmp(x->path, y->path);
}

GPtrArray *prof_tree_load(const char *path, int single)
{
    GPtrArray *tree = g_ptr_array_new();
    struct prof_data *root = g_new0(struct prof_data, 1);
    char *dir, *base;
    GDir *gd;
    const char *name;

    if (prof_data_load(path, root)) {
        g_free(root);
        g_ptr_array_free(tree, TRUE);
        return NULL;
    }
    root->path = g_strdup(path);
    g_ptr_array_add(tree, root);
    if (single || !root->has_process || !(root->proc.flags & LWPPROF_PROC_ROOT)) {
        return tree;
    }
    dir = g_path_get_dirname(path);
    base = g_path_get_basename(path);
    gd = g_dir_open(dir, 0, NULL);
    while (gd && (name = g_dir_read_name(gd))) {
        const char *rest = name + strlen(base);
        struct prof_data *d;
        char *p;

        if (!g_str_has_prefix(name, base) || rest[0] != '.' ||
            !g_regex_match_simple("^\\.[0-9]+(\\.[0-9]+)?$", rest, 0, 0)) {
            continue;
        }
        p = g_build_filename(dir, name, NULL);
        d = g_new0(struct prof_data, 1);
        if (prof_data_load(p, d)) {
            g_free(d);
            g_free(p);
            continue;
        }
        if (!d->has_process || d->proc.session != root->proc.session) {
            prof_data_free(d);  /* another record's, left behind */
            g_free(d);
            g_free(p);
            continue;
        }
        d->path = p;
        g_ptr_array_add(tree, d);
    }
    if (gd) {
        g_dir_close(gd);
    }
    g_free(dir);
    g_free(base);
    g_ptr_array_sort(tree, tree_order);
    return tree;
}
