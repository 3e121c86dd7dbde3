/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The views of a profiled tree: `lwp-prof report` (a flat profile sorted
 * like perf's --sort, the per-process summary, CSV, raw samples, folded
 * stacks, speedscope's JSON) and `lwp-prof script` (perf script's text).
 * Each process image is resolved with its own load addresses.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prof-report.h"

/* ---- loading and selecting ---- */

static int in_list(const char *list, const char *item)
{
    gchar **v = g_strsplit(list, ",", -1);
    int hit = 0;

    for (int i = 0; v[i] && !hit; i++) {
        hit = !strcmp(v[i], item);
    }
    g_strfreev(v);
    return hit;
}

GPtrArray *images_load(const struct tree_opts *o)
{
    GPtrArray *tree = prof_tree_load(o->input, o->single);
    GPtrArray *images;

    if (!tree) {
        return NULL;
    }
    images = g_ptr_array_new();
    for (guint i = 0; i < tree->len; i++) {
        struct image *im = g_new0(struct image, 1);
        char pid[16];

        im->d = g_ptr_array_index(tree, i);
        im->comm = im->d->has_process && im->d->proc.comm[0] ? im->d->proc.comm
                                                             : im->d->hdr.program;
        snprintf(pid, sizeof(pid), "%u", im->d->hdr.pid);
        im->selected = (!o->pids || in_list(o->pids, pid)) &&
                       (!o->comms || in_list(o->comms, im->comm));
        if (im->selected) {
            resolver_init(&im->r, im->d);
        }
        g_ptr_array_add(images, im);
    }
    g_ptr_array_free(tree, FALSE);
    return images;
}

/* ---- sort keys, as perf report --sort ---- */

enum key { KEY_COMM, KEY_PID, KEY_DSO, KEY_SYM, KEY_SRCLINE, N_KEYS };

static const struct {
    const char *name, *csv, *title;
    int width;
} keys[N_KEYS] = {
    [KEY_COMM] = { "comm", "comm", "command", 16 },
    [KEY_PID] = { "pid", "pid", "pid", 7 },
    [KEY_DSO] = { "dso", "object", "shared object", 24 },
    [KEY_SYM] = { "sym", "symbol", "symbol", 40 },
    [KEY_SRCLINE] = { "srcline", "source", "source line", 28 },
};

static int parse_sort(const char *spec, enum key *out)
{
    gchar **v = g_strsplit(spec, ",", -1);
    int n = 0;

    for (int i = 0; v[i]; i++) {
        int k;
        const char *name = g_strstrip(v[i]);

        if (!strcmp(name, "symbol")) {
            name = "sym";
        } else if (!strcmp(name, "command")) {
            name = "comm";
        }
        for (k = 0; k < N_KEYS && strcmp(keys[k].name, name); k++) {
            continue;
        }
        if (k == N_KEYS || n == N_KEYS) {
            fprintf(stderr, "lwp-prof: --sort %s: unknown or repeated key '%s' (keys: "
                    "comm, pid, dso, sym, srcline)\n", spec, name);
            g_strfreev(v);
            return -1;
        }
        for (int j = 0; j < n; j++) {
            if (out[j] == (enum key)k) {
                fprintf(stderr, "lwp-prof: --sort %s: key '%s' given twice\n", spec, name);
                g_strfreev(v);
                return -1;
            }
        }
        out[n++] = (enum key)k;
    }
    g_strfreev(v);
    if (!n) {
        fprintf(stderr, "lwp-prof: --sort: no key given\n");
        return -1;
    }
    return n;
}

static char *key_value(enum key k, const struct image *im, const struct where *w)
{
    switch (k) {
    case KEY_COMM:
        return g_strdup(im->comm);
    case KEY_PID:
        return g_strdup_printf("%u", im->d->hdr.pid);
    case KEY_DSO:
        return g_strdup(w->object);
    case KEY_SYM:
        return g_strdup(w->symbol);
    case KEY_SRCLINE:
    default:
        return g_strdup(w->source ? w->source : "??:0");
    }
}

struct row {
    char *vals[N_KEYS];
    uint64_t count;
};

static int n_sort_keys;

static int by_count(const void *a, const void *b)
{
    const struct row *x = *(struct row *const *)a, *y = *(struct row *const *)b;

    if (x->count != y->count) {
        return x->count < y->count ? 1 : -1;
    }
    for (int i = 0; i < n_sort_keys; i++) {
        int c = strcmp(x->vals[i], y->vals[i]);
        if (c) {
            return c;
        }
    }
    return 0;
}

/* One weighted address of an image: a sample (weight 1) or a line of --weights. */
struct hit {
    struct image *im;
    uint64_t ip, weight;
};

static int read_weights(const char *path, struct image *im, GArray *hits)
{
    FILE *f = fopen(path, "r");
    char line[256];

    if (!f) {
        fprintf(stderr, "lwp-prof: cannot read %s: %s\n", path, strerror(errno));
        return -1;
    }
    while (fgets(line, sizeof(line), f)) {
        struct hit h = { .im = im };
        char *end;

        if (line[0] == '#' || line[0] == '\n') {
            continue;
        }
        h.ip = strtoull(line, &end, 0);
        h.weight = strtoull(end, &end, 0);
        if (h.weight) {
            g_array_append_val(hits, h);
        }
    }
    fclose(f);
    return 0;
}

/* ---- output helpers ---- */

static void csv_field(FILE *f, const char *s)
{
    if (strpbrk(s, ",\"\n") || strchr(s, ' ') || !*s) {
        fputc('"', f);
        for (; *s; s++) {
            if (*s == '"') {
                fputc('"', f);
            }
            fputc(*s, f);
        }
        fputc('"', f);
    } else {
        fputs(s, f);
    }
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            fprintf(f, "\\%c", c);
        } else if (c < 0x20) {
            fprintf(f, "\\u%04x", c);
        } else {
            fputc(c, f);
        }
    }
    fputc('"', f);
}

static const char *end_name(const struct prof_data *d)
{
    return d->end_reason == LWPPROF_END_EXEC ? "exec" :
           d->end_reason == LWPPROF_END_EXIT ? "exit" : "not closed";
}

/* The per-process summary: one line per process image, the tree indented. */
static void print_tasks(FILE *f, GPtrArray *images, int csv, unsigned limit)
{
    unsigned shown = 0, sel = 0;

    if (csv) {
        fputs("file,pid,ppid,comm,samples,missed,threads,end,exe,cmdline\n", f);
    } else {
        fprintf(f, "# %7s %7s %9s %8s %5s %-10s %s\n", "pid", "parent", "samples",
                "missed", "thr", "end", "command line");
    }
    for (guint i = 0; i < images->len; i++) {
        struct image *im = g_ptr_array_index(images, i);
        const struct prof_data *d = im->d;
        const char *cmd = d->cmdline && *d->cmdline ? d->cmdline : d->hdr.program;

        if (!im->selected) {
            continue;
        }
        if (limit && ++sel > limit) {
            continue;
        }
        shown++;
        if (csv) {
            csv_field(f, d->path);
            fprintf(f, ",%u,%u,", d->hdr.pid, d->hdr.ppid);
            csv_field(f, im->comm);
            fprintf(f, ",%zu,%" PRIu64 ",%u,%s,", d->n_samples, d->missed, d->n_threads,
                    d->ended ? end_name(d) : "");
            csv_field(f, d->n_modules ? d->modules[0].path : "");
            fputc(',', f);
            csv_field(f, cmd);
            fputc('\n', f);
        } else {
            /* depth in the tree: how many ancestors are in it */
            int depth = 0;
            uint32_t pp = d->hdr.ppid;

            for (int guard = 0; guard < 64; guard++) {
                guint j;
                for (j = 0; j < images->len; j++) {
                    struct image *o = g_ptr_array_index(images, j);
                    if (o->d->hdr.pid == pp && o->d->hdr.pid != d->hdr.pid) {
                        break;
                    }
                }
                if (j == images->len) {
                    break;
                }
                depth++;
                pp = ((struct image *)g_ptr_array_index(images, j))->d->hdr.ppid;
            }
            fprintf(f, "# %*s%-*u %7u %9zu %8" PRIu64 " %5u %-10s %.*s%s\n", depth, "",
                    7 - depth > 0 ? 7 - depth : 1, d->hdr.pid, d->hdr.ppid, d->n_samples,
                    d->missed, d->n_threads, end_name(d), 160, cmd,
                    strlen(cmd) > 160 ? "..." : "");
        }
    }
    if (limit && sel > shown) {
        fprintf(f, "# ... %u more processes (--tasks lists them all)\n", sel - shown);
    }
}

/* speedscope's file format: one sampled profile per thread of each process. */
static void print_speedscope(FILE *f, GPtrArray *images)
{
    GHashTable *frames = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    GPtrArray *names = g_ptr_array_new(), *files = g_ptr_array_new();
    const char *root = "lwp-prof";
    int first_profile = 1;

    for (guint i = 0; i < images->len; i++) {
        struct image *im = g_ptr_array_index(images, i);
        for (size_t k = 0; im->selected && k < im->d->n_samples; k++) {
            const struct where *w = lookup(&im->r, im->d->samples[k].rec.ip);
            char *key = g_strdup_printf("%s\t%s", w->symbol, w->path);

            if (!g_hash_table_contains(frames, key)) {
                g_hash_table_insert(frames, key, GUINT_TO_POINTER(names->len));
                g_ptr_array_add(names, w->symbol);
                g_ptr_array_add(files, (gpointer)w->path);
            } else {
                g_free(key);
            }
        }
    }
    if (images->len) {
        root = ((struct image *)g_ptr_array_index(images, 0))->comm;
    }
    fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\n"
          " \"exporter\":\"lwp-prof\",\"name\":", f);
    json_str(f, root);
    fputs(",\"activeProfileIndex\":0,\n \"shared\":{\"frames\":[\n", f);
    for (guint i = 0; i < names->len; i++) {
        fputs(i ? ",\n  {\"name\":" : "  {\"name\":", f);
        json_str(f, g_ptr_array_index(names, i));
        fputs(",\"file\":", f);
        json_str(f, g_ptr_array_index(files, i));
        fputc('}', f);
    }
    fputs("]},\n \"profiles\":[", f);
    for (guint i = 0; i < images->len; i++) {
        struct image *im = g_ptr_array_index(images, i);
        GArray *tids = g_array_new(FALSE, FALSE, sizeof(uint32_t));

        if (!im->selected) {
            g_array_free(tids, TRUE);
            continue;
        }
        for (size_t k = 0; k < im->d->n_samples; k++) {
            uint32_t tid = im->d->samples[k].tid;
            guint t;
            for (t = 0; t < tids->len && g_array_index(tids, uint32_t, t) != tid; t++) {
                continue;
            }
            if (t == tids->len) {
                g_array_append_val(tids, tid);
            }
        }
        for (guint t = 0; t < tids->len; t++) {
            uint32_t tid = g_array_index(tids, uint32_t, t);
            size_t n = 0;
            char *pname = g_strdup_printf("%s %u/%u", im->comm, im->d->hdr.pid, tid);

            fputs(first_profile ? "\n  {\"type\":\"sampled\",\"name\":"
                                : ",\n  {\"type\":\"sampled\",\"name\":", f);
            first_profile = 0;
            json_str(f, pname);
            g_free(pname);
            fputs(",\"unit\":\"none\",\"startValue\":0,\"samples\":[", f);
            for (size_t k = 0; k < im->d->n_samples; k++) {
                const struct where *w;
                char *key;

                if (im->d->samples[k].tid != tid) {
                    continue;
                }
                w = lookup(&im->r, im->d->samples[k].rec.ip);
                key = g_strdup_printf("%s\t%s", w->symbol, w->path);
                fprintf(f, "%s[%u]", n++ ? "," : "",
                        GPOINTER_TO_UINT(g_hash_table_lookup(frames, key)));
                g_free(key);
            }
            fputs("],\"weights\":[", f);
            for (size_t k = 0; k < n; k++) {
                fputs(k ? ",1" : "1", f);
            }
            fprintf(f, "],\"endValue\":%zu}", n);
        }
        g_array_free(tids, TRUE);
    }
    fputs("]}\n", f);
    g_hash_table_destroy(frames);
    g_ptr_array_free(names, TRUE);
    g_ptr_array_free(files, TRUE);
}

static void usage_report(FILE *f)
{
    fputs("usage: lwp-prof report [OPTIONS] [FILE]\n"
          "FILE (default lwp-prof.data) and the files of every other process of its\n"
          "tree beside it (FILE.<pid>[.<n>]) make one profile.\n"
          "  -i, --input FILE     the data file (or give it as the last argument)\n"
          "  -s, --sort KEYS      group and sort by KEYS, comma-separated, any of comm, pid,\n"
          "                       dso, sym, srcline, in the columns' order (default sym,dso)\n"
          "  -l, --lines          per source line: --sort srcline,sym,dso\n"
          "  -n, --limit N        print the N largest rows (default 40; 0 = all)\n"
          "      --pid LIST       only these processes (comma-separated pids)\n"
          "      --comm LIST      only these commands\n"
          "      --single         FILE alone, not the other files of its tree\n"
          "      --tasks          only the per-process summary: pid, parent, samples,\n"
          "                       MissedEvents, threads, how it ended, command line\n"
          "      --csv            CSV: percent,samples and the sort keys (comm, pid, object,\n"
          "                       symbol, source); with --tasks the summary as CSV\n"
          "      --format FMT     text (default), csv, or speedscope (speedscope's JSON file\n"
          "                       format, one sampled profile per thread)\n"
          "  -o, --output FILE    write to FILE instead of standard output\n"
          "      --raw=csv        every sample: tid,event,core,ip,target,taken,object,offset,symbol,source\n"
          "      --raw=folded     folded stacks for flame graphs: program;object;symbol COUNT\n"
          "      --weights=COUNTS attribute the ADDRESS COUNT lines of COUNTS (for example\n"
          "                       an exact count from a QEMU plugin) instead of FILE's samples,\n"
          "                       using FILE's modules (FILE alone, not its tree)\n", f);
}

int report_main(int argc, char **argv)
{
    enum { OPT_PID = 256, OPT_COMM, OPT_TASKS, OPT_FORMAT, OPT_SINGLE };
    static const struct option opts[] = {
        { "input", required_argument, NULL, 'i' },
        { "sort", required_argument, NULL, 's' },
        { "lines", no_argument, NULL, 'l' },
        { "limit", required_argument, NULL, 'n' },
        { "csv", no_argument, NULL, 'c' },
        { "raw", required_argument, NULL, 'r' },
        { "weights", required_argument, NULL, 'w' },
        { "pid", required_argument, NULL, OPT_PID },
        { "comm", required_argument, NULL, OPT_COMM },
        { "tasks", no_argument, NULL, OPT_TASKS },
        { "format", required_argument, NULL, OPT_FORMAT },
        { "output", required_argument, NULL, 'o' },
        { "single", no_argument, NULL, OPT_SINGLE },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    struct tree_opts to = { .input = NULL };
    int single = 0;
    int lines = 0, csv = 0, limit = 40, tasks = 0, speedscope = 0, c, nk;
    const char *raw = NULL, *weights = NULL, *sort = NULL, *outpath = NULL;
    enum key sk[N_KEYS];
    GPtrArray *images;
    GArray *hits;
    GHashTable *rows;
    GHashTableIter it;
    gpointer value;
    struct row **sorted;
    guint n_rows, i;
    uint64_t total = 0, n_samples = 0, missed = 0, drains = 0;
    unsigned n_threads = 0, n_sel = 0, not_closed = 0;
    FILE *out = stdout;

    optind = 1;
    while ((c = getopt_long(argc, argv, "+i:s:ln:o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'i':
            to.input = optarg;
            break;
        case 's':
            sort = optarg;
            break;
        case 'l':
            lines = 1;
            break;
        case 'n':
            limit = atoi(optarg);
            break;
        case 'c':
            csv = 1;
            break;
        case 'r':
            raw = optarg;
            if (strcmp(raw, "csv") && strcmp(raw, "folded")) {
                fprintf(stderr, "lwp-prof: --raw=%s: expected csv or folded\n", raw);
                return 2;
            }
            break;
        case 'w':
            weights = optarg;
            break;
        case OPT_PID:
            to.pids = optarg;
            break;
        case OPT_COMM:
            to.comms = optarg;
            break;
        case OPT_TASKS:
            tasks = 1;
            break;
        case OPT_SINGLE:
            single = 1;
            break;
        case OPT_FORMAT:
            if (!strcmp(optarg, "csv")) {
                csv = 1;
            } else if (!strcmp(optarg, "speedscope")) {
                speedscope = 1;
            } else if (strcmp(optarg, "text")) {
                fprintf(stderr, "lwp-prof: --format %s: expected text, csv or speedscope\n",
                        optarg);
                return 2;
            }
            break;
        case 'o':
            outpath = optarg;
            break;
        case 'h':
            usage_report(stdout);
            return 0;
        default:
            usage_report(stderr);
            return 2;
        }
    }
    if (optind < argc - 1 || (optind == argc - 1 && to.input)) {
        usage_report(stderr);
        return 2;
    }
    if (optind == argc - 1) {
        to.input = argv[optind];
    } else if (!to.input) {
        to.input = "lwp-prof.data";
    }
    nk = parse_sort(sort ? sort : lines ? "srcline,sym,dso" : "sym,dso", sk);
    if (nk < 0) {
        return 2;
    }
    n_sort_keys = nk;
    resolve_sources = raw != NULL;
    for (int k = 0; k < nk; k++) {
        resolve_sources |= sk[k] == KEY_SRCLINE;
    }
    to.single = single || weights != NULL;
    images = images_load(&to);
    if (!images) {
        return 1;
    }
    if (outpath && !(out = fopen(outpath, "w"))) {
        fprintf(stderr, "lwp-prof: cannot write %s: %s\n", outpath, strerror(errno));
        return 1;
    }
    for (i = 0; i < images->len; i++) {
        struct image *im = g_ptr_array_index(images, i);
        if (im->selected) {
            n_sel++;
            n_samples += im->d->n_samples;
            missed += im->d->missed;
            drains += im->d->drains;
            n_threads += im->d->n_threads;
            not_closed += !im->d->ended;
        }
    }
    if (!n_sel) {
        fprintf(stderr, "lwp-prof: no process of %s matches --pid/--comm\n", to.input);
        return 1;
    }
    if (tasks) {
        print_tasks(out, images, csv, 0);
        goto out;
    }
    if (speedscope) {
        print_speedscope(out, images);
        goto out;
    }
    if (raw && !strcmp(raw, "csv")) {
        fputs("tid,event,core,ip,target,taken,object,offset,symbol,source\n", out);
        for (i = 0; i < images->len; i++) {
            struct image *im = g_ptr_array_index(images, i);
            for (size_t k = 0; im->selected && k < im->d->n_samples; k++) {
                const struct lwpprof_record *rec = &im->d->samples[k].rec;
                const struct where *w = lookup(&im->r, rec->ip);
                fprintf(out, "%u,%s,%u,0x%" PRIx64 ",", im->d->samples[k].tid,
                        prof_event_name(rec->event_id), rec->core_id, rec->ip);
                if (rec->event_id == 3) {
                    fprintf(out, "0x%" PRIx64 ",%u,", rec->data2, rec->flags >> 15);
                } else {
                    fputs(",,", out);
                }
                fprintf(out, "%s,0x%" PRIx64 ",\"%s\",%s\n", w->object, w->offset, w->symbol,
                        w->source ? w->source : "");
            }
        }
        goto out;
    }

    hits = g_array_new(FALSE, FALSE, sizeof(struct hit));
    if (weights) {
        if (read_weights(weights, g_ptr_array_index(images, 0), hits)) {
            return 1;
        }
    } else {
        for (i = 0; i < images->len; i++) {
            struct image *im = g_ptr_array_index(images, i);
            for (size_t k = 0; im->selected && k < im->d->n_samples; k++) {
                struct hit h = { im, im->d->samples[k].rec.ip, 1 };
                g_array_append_val(hits, h);
            }
        }
    }
    rows = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (i = 0; i < hits->len; i++) {
        struct hit *h = &g_array_index(hits, struct hit, i);
        const struct where *w = lookup(&h->im->r, h->ip);
        char *vals[N_KEYS];
        char *key;
        struct row *row;

        for (int k = 0; k < nk; k++) {
            vals[k] = key_value(sk[k], h->im, w);
        }
        vals[nk] = NULL;
        key = g_strjoinv("\t", vals);
        row = g_hash_table_lookup(rows, key);
        if (!row) {
            row = g_new0(struct row, 1);
            memcpy(row->vals, vals, sizeof(vals));
            g_hash_table_insert(rows, key, row);
        } else {
            for (int k = 0; k < nk; k++) {
                g_free(vals[k]);
            }
            g_free(key);
        }
        row->count += h->weight;
        total += h->weight;
    }
    n_rows = g_hash_table_size(rows);
    sorted = g_new(struct row *, n_rows ? n_rows : 1);
    i = 0;
    g_hash_table_iter_init(&it, rows);
    while (g_hash_table_iter_next(&it, NULL, &value)) {
        sorted[i++] = value;
    }
    qsort(sorted, n_rows, sizeof(*sorted), by_count);

    if (raw) {                                  /* folded */
        const struct image *root = g_ptr_array_index(images, 0);
        int ko = -1, ks = -1, kc = -1;
        for (int k = 0; k < nk; k++) {
            ko = sk[k] == KEY_DSO ? k : ko;
            ks = sk[k] == KEY_SYM ? k : ks;
            kc = sk[k] == KEY_COMM ? k : kc;
        }
        for (i = 0; i < n_rows; i++) {
            fprintf(out, "%s;%s;%s %" PRIu64 "\n",
                    kc >= 0 ? sorted[i]->vals[kc] : root->d->hdr.program,
                    ko >= 0 ? sorted[i]->vals[ko] : "",
                    ks >= 0 ? sorted[i]->vals[ks] : "", sorted[i]->count);
        }
    } else if (csv) {
        fputs("percent,samples", out);
        for (int k = 0; k < nk; k++) {
            fprintf(out, ",%s", keys[sk[k]].csv);
        }
        fputc('\n', out);
        for (i = 0; i < n_rows && (!limit || i < (guint)limit); i++) {
            fprintf(out, "%.4f,%" PRIu64, total ? 100.0 * sorted[i]->count / total : 0.0,
                    sorted[i]->count);
            for (int k = 0; k < nk; k++) {
                fputc(',', out);
                if (sk[k] == KEY_SYM) {
                    fprintf(out, "\"%s\"", sorted[i]->vals[k]);
                } else {
                    csv_field(out, sorted[i]->vals[k]);
                }
            }
            fputc('\n', out);
        }
    } else {
        const struct image *root = g_ptr_array_index(images, 0);
        const struct prof_data *d = root->d;

        if (n_sel == 1) {
            for (i = 0; i < images->len; i++) {
                const struct image *im = g_ptr_array_index(images, i);
                if (im->selected) {
                    d = im->d;
                }
            }
            fprintf(out, "# lwp-prof report of %s: program %s, pid %u\n", d->path,
                    d->hdr.program, d->hdr.pid);
        } else {
            fprintf(out, "# lwp-prof report of %s: %u processes, the program %s, pid %u\n",
                    to.input, n_sel, root->comm, d->hdr.pid);
        }
        fprintf(out, "# event %s (%s), a sample every %u events, %u thread(s)\n",
                prof_event_name(d->hdr.event_id),
                d->hdr.event_id == 2 ? "instructions retired" : "branches retired",
                d->hdr.interval + 1, n_threads);
        if (weights) {
            fprintf(out, "# weights from %s: %" PRIu64 " events\n", weights, total);
        } else {
            fprintf(out, "# %" PRIu64 " samples, %" PRIu64 " missed (MissedEvents), %" PRIu64
                    " ring drains", n_samples, missed, drains);
            if (not_closed) {
                fprintf(out, ", profile not closed (killed?)%s",
                        n_sel > 1 ? g_strdup_printf(" in %u process(es)", not_closed) : "");
            }
            fputc('\n', out);
            fprintf(out, "# drained %s\n", d->hdr.drain == LWPPROF_DRAIN_THRESHOLD
                    ? "at the threshold interrupt (--threshold-signal)"
                    : "by a CPU-time timer (--drain-ms)");
        }
        if (n_sel > 1) {
            fputs("#\n# processes:\n", out);
            print_tasks(out, images, 0, 40);
        }
        fprintf(out, "#\n# %8s %10s ", "percent", weights ? "events" : "samples");
        for (int k = 0; k < nk; k++) {
            if (k == nk - 1) {
                fprintf(out, " %s", keys[sk[k]].title);
            } else {
                fprintf(out, " %-*s", keys[sk[k]].width, keys[sk[k]].title);
            }
        }
        fputc('\n', out);
        for (i = 0; i < n_rows && (!limit || i < (guint)limit); i++) {
            fprintf(out, "  %8.2f%% %10" PRIu64 " ",
                    total ? 100.0 * sorted[i]->count / total : 0.0, sorted[i]->count);
            for (int k = 0; k < nk; k++) {
                if (k == nk - 1) {
                    fprintf(out, " %s", sorted[i]->vals[k]);
                } else {
                    fprintf(out, " %-*s", keys[sk[k]].width, sorted[i]->vals[k]);
                }
            }
            fputc('\n', out);
        }
        if (limit && n_rows > (guint)limit) {
            fprintf(out, "# ... %u more rows (--limit 0 shows all)\n", n_rows - limit);
        }
    }
out:
    if (out != stdout) {
        fclose(out);
    }
    fflush(stdout);
    return 0;
}

/* ---- lwp-prof script: perf script's text ---- */

static void usage_script(FILE *f)
{
    fputs("usage: lwp-prof script [OPTIONS] [FILE]\n"
          "Every sample of FILE's tree in perf script's text format, one event per\n"
          "sample with a one-frame stack, which FlameGraph's stackcollapse-perf.pl,\n"
          "speedscope, Firefox Profiler and hotspot import:\n"
          "  COMM PID/TID [CORE] TIME: PERIOD EVENT:\n"
          "  \\tADDRESS SYMBOL+0xOFFSET (OBJECT)\n"
          "TIME is the sample's number in its thread, as seconds: LWP records carry no\n"
          "time stamp, and viewers that weigh a sample by the time to the next one\n"
          "(speedscope) then weigh every sample alike.\n"
          "  -i, --input FILE     the data file (default lwp-prof.data)\n"
          "      --pid LIST       only these processes\n"
          "      --comm LIST      only these commands\n", f);
}

int script_main(int argc, char **argv)
{
    enum { OPT_PID = 256, OPT_COMM };
    static const struct option opts[] = {
        { "input", required_argument, NULL, 'i' },
        { "pid", required_argument, NULL, OPT_PID },
        { "comm", required_argument, NULL, OPT_COMM },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    struct tree_opts to = { .input = NULL };
    GPtrArray *images;
    int c;

    optind = 1;
    while ((c = getopt_long(argc, argv, "+i:h", opts, NULL)) != -1) {
        switch (c) {
        case 'i':
            to.input = optarg;
            break;
        case OPT_PID:
            to.pids = optarg;
            break;
        case OPT_COMM:
            to.comms = optarg;
            break;
        case 'h':
            usage_script(stdout);
            return 0;
        default:
            usage_script(stderr);
            return 2;
        }
    }
    if (optind < argc - 1 || (optind == argc - 1 && to.input)) {
        usage_script(stderr);
        return 2;
    }
    to.input = optind == argc - 1 ? argv[optind] : to.input ? to.input : "lwp-prof.data";
    resolve_sources = 0;
    images = images_load(&to);
    if (!images) {
        return 1;
    }
    for (guint i = 0; i < images->len; i++) {
        struct image *im = g_ptr_array_index(images, i);
        GHashTable *events = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
        uint64_t period = (uint64_t)im->d->hdr.interval + 1;
        const char *ev = im->d->hdr.event_id == 3 ? "lwp-bre" : "lwp-ire";

        for (size_t k = 0; im->selected && k < im->d->n_samples; k++) {
            const struct prof_sample *s = &im->d->samples[k];
            const struct where *w = lookup(&im->r, s->rec.ip);
            uint64_t *t = g_hash_table_lookup(events, GUINT_TO_POINTER(s->tid));

            if (!t) {
                t = g_new0(uint64_t, 1);
                g_hash_table_insert(events, GUINT_TO_POINTER(s->tid), t);
            }
            *t += 1;
            printf("%s %u/%u [%03u] %" PRIu64 ".000000000: %" PRIu64 " %s:\n",
                   im->comm, im->d->hdr.pid, s->tid, s->rec.core_id, *t, period, ev);
            printf("\t%16" PRIx64 " %s+0x%" PRIx64 " (%s)\n\n", s->rec.ip, w->symbol,
                   w->offset - w->sym_start, w->path);
        }
        g_hash_table_destroy(events);
    }
    fflush(stdout);
    return 0;
}
