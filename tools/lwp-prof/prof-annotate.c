/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `lwp-prof annotate [SYMBOL]`: a function's instructions, disassembled by
 * Capstone from the object's own bytes, each with the samples LWP recorded
 * on it -- LWP names the exact instruction, with no skid -- and, where the
 * object has DWARF line information, its source lines between them.
 */
#include <capstone/capstone.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prof-report.h"

/* A function of one object, with its samples by ELF address. */
struct func {
    char *symbol;
    const char *path, *object;
    uint64_t start, size;       /* ELF addresses */
    uint64_t count;
    GHashTable *by_addr;        /* uint64 ELF address -> uint64 count */
    Dwfl_Module *module;        /* any image's, to read bytes and lines */
    int bits;                   /* its ELF class: 64 or 32 */
};

static void func_free(gpointer p)
{
    struct func *f = p;

    g_free(f->symbol);
    g_hash_table_destroy(f->by_addr);
    g_free(f);
}

static int func_by_count(gconstpointer a, gconstpointer b)
{
    const struct func *x = *(struct func *const *)a, *y = *(struct func *const *)b;

    return x->count < y->count ? 1 : x->count > y->count ? -1 : strcmp(x->symbol, y->symbol);
}

/* @size bytes at ELF address @addr of @m's object, from the section holding them. */
static uint8_t *read_code(Dwfl_Module *m, uint64_t addr, uint64_t size)
{
    Dwarf_Addr bias;
    Elf *elf = dwfl_module_getelf(m, &bias);
    Elf_Scn *scn = NULL;

    while (elf && (scn = elf_nextscn(elf, scn))) {
        GElf_Shdr sh;
        Elf_Data *data;

        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
            !(sh.sh_flags & SHF_EXECINSTR) || addr < sh.sh_addr ||
            addr + size > sh.sh_addr + sh.sh_size) {
            continue;
        }
        data = elf_getdata(scn, NULL);
        if (!data || !data->d_buf || addr - sh.sh_addr + size > data->d_size) {
            return NULL;
        }
        return g_memdup2((uint8_t *)data->d_buf + (addr - sh.sh_addr), size);
    }
    return NULL;
}

/* Line @n of @file, or NULL; files are read once. */
static const char *source_line(GHashTable *files, const char *file, int n)
{
    gchar **lines = g_hash_table_lookup(files, file);

    if (!lines && !g_hash_table_contains(files, file)) {
        gchar *text = NULL;

        if (g_file_get_contents(file, &text, NULL, NULL)) {
            lines = g_strsplit(text, "\n", -1);
            g_free(text);
        }
        g_hash_table_insert(files, g_strdup(file), lines);
    }
    if (!lines || n <= 0 || (guint)n > g_strv_length(lines)) {
        return NULL;
    }
    return lines[n - 1];
}

static void annotate_one(const struct func *f, unsigned event_id, GHashTable *files)
{
    Dwarf_Addr bias;
    uint8_t *code;
    csh cs;
    cs_insn *insn;
    size_t n;
    const char *last_file = NULL;
    int last_line = -1;

    dwfl_module_getelf(f->module, &bias);
    printf(" Percent |  Samples | Source code & Disassembly of %s for %s (%" PRIu64
           " samples)\n", f->object, prof_event_name(event_id), f->count);
    printf("-----------------------------------------------------------------------------\n");
    printf("         :          : %016" PRIx64 " <%s>:\n", f->start, f->symbol);
    code = f->size ? read_code(f->module, f->start, f->size) : NULL;
    if (!code) {
        printf("         :          : (no code to disassemble in %s: %s)\n", f->path,
               f->size ? "not in an executable section" : "the symbol has no size");
        return;
    }
    if (cs_open(CS_ARCH_X86, f->bits == 32 ? CS_MODE_32 : CS_MODE_64, &cs) != CS_ERR_OK) {
        fprintf(stderr, "lwp-prof: capstone: cs_open failed\n");
        g_free(code);
        return;
    }
    cs_option(cs, CS_OPT_SYNTAX, CS_OPT_SYNTAX_ATT);    /* objdump's and perf's */
    n = cs_disasm(cs, code, f->size, f->start, 0, &insn);
    for (size_t i = 0; i < n; i++) {
        uint64_t a = insn[i].address;
        gpointer v = g_hash_table_lookup(f->by_addr, &a);
        uint64_t c = v ? *(uint64_t *)v : 0;
        Dwfl_Line *line = dwfl_module_getsrc(f->module, a + bias);

        if (line) {
            int lineno = 0;
            const char *file = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);
            if (file && (lineno != last_line || !last_file || strcmp(file, last_file))) {
                const char *dir = dwfl_line_comp_dir(line);
                char *full = file[0] != '/' && dir ? g_build_filename(dir, file, NULL)
                                                   : g_strdup(file);
                const char *text = source_line(files, full, lineno);
                const char *b = strrchr(file, '/');
                printf("         :          : %s:%d%s%s\n", b ? b + 1 : file, lineno,
                       text ? "  " : "", text ? g_strstrip(g_strdup(text)) : "");
                g_free(full);
                last_file = file;
                last_line = lineno;
            }
        }
        if (c) {
            printf("  %6.2f : %8" PRIu64 " : ", 100.0 * c / f->count, c);
        } else {
            printf("    0.00 :        0 : ");
        }
        printf("%8" PRIx64 ":\t%s%s%s\n", a, insn[i].mnemonic, insn[i].op_str[0] ? " " : "",
               insn[i].op_str);
    }
    if (n) {
        cs_free(insn, n);
    }
    cs_close(&cs);
    g_free(code);
    putchar('\n');
}

static void usage_annotate(FILE *f)
{
    fputs("usage: lwp-prof annotate [OPTIONS] [SYMBOL]\n"
          "The instructions of SYMBOL (by default the hottest function) with the samples\n"
          "LWP recorded on each, disassembled by Capstone, and the source lines where the\n"
          "object has DWARF line information.  Samples of every process of the tree that\n"
          "ran the same object are added up.\n"
          "  -i, --input FILE     the data file (default lwp-prof.data)\n"
          "  -d, --dso NAME       only the function in this object (basename)\n"
          "  -n, --limit N        without SYMBOL, the N hottest functions (default 1)\n"
          "      --pid LIST       only these processes\n"
          "      --comm LIST      only these commands\n"
          "      --stdio          accepted for perf's sake: the output is always text\n", f);
}

int annotate_main(int argc, char **argv)
{
    enum { OPT_PID = 256, OPT_COMM, OPT_STDIO };
    static const struct option opts[] = {
        { "input", required_argument, NULL, 'i' },
        { "dso", required_argument, NULL, 'd' },
        { "limit", required_argument, NULL, 'n' },
        { "pid", required_argument, NULL, OPT_PID },
        { "comm", required_argument, NULL, OPT_COMM },
        { "stdio", no_argument, NULL, OPT_STDIO },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    struct tree_opts to = { .input = NULL };
    const char *symbol = NULL, *dso = NULL;
    GHashTable *funcs, *files;
    GPtrArray *images, *list;
    GHashTableIter it;
    gpointer value;
    unsigned event_id = 2;
    int limit = 1, c, shown = 0;

    optind = 1;
    while ((c = getopt_long(argc, argv, "+i:d:n:h", opts, NULL)) != -1) {
        switch (c) {
        case 'i':
            to.input = optarg;
            break;
        case 'd':
            dso = optarg;
            break;
        case 'n':
            limit = atoi(optarg);
            break;
        case OPT_PID:
            to.pids = optarg;
            break;
        case OPT_COMM:
            to.comms = optarg;
            break;
        case OPT_STDIO:
            break;
        case 'h':
            usage_annotate(stdout);
            return 0;
        default:
            usage_annotate(stderr);
            return 2;
        }
    }
    if (optind < argc - 1) {
        usage_annotate(stderr);
        return 2;
    }
    symbol = optind == argc - 1 ? argv[optind] : NULL;
    if (!to.input) {
        to.input = "lwp-prof.data";
    }
    images = images_load(&to);
    if (!images) {
        return 1;
    }
    funcs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, func_free);
    for (guint i = 0; i < images->len; i++) {
        struct image *im = g_ptr_array_index(images, i);

        if (!im->selected) {
            continue;
        }
        event_id = im->d->hdr.event_id;
        for (size_t k = 0; k < im->d->n_samples; k++) {
            const struct where *w = lookup(&im->r, im->d->samples[k].rec.ip);
            char *key;
            struct func *f;
            uint64_t *cnt;

            if (!w->module || (symbol && strcmp(w->symbol, symbol)) ||
                (dso && strcmp(w->object, dso))) {
                continue;
            }
            key = g_strdup_printf("%s\t%" PRIx64, w->path, w->sym_start);
            f = g_hash_table_lookup(funcs, key);
            if (!f) {
                f = g_new0(struct func, 1);
                f->symbol = g_strdup(w->symbol);
                f->path = w->path;
                f->object = w->object;
                f->start = w->sym_start;
                f->size = w->sym_size;
                f->module = w->module;
                f->by_addr = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free,
                                                   g_free);
                g_hash_table_insert(funcs, key, f);
                f->bits = im->d->hdr.ptr_bits == 32 ? 32 : 64;
            } else {
                g_free(key);
            }
            cnt = g_hash_table_lookup(f->by_addr, &w->offset);
            if (!cnt) {
                uint64_t *a = g_new(uint64_t, 1);
                *a = w->offset;
                cnt = g_new0(uint64_t, 1);
                g_hash_table_insert(f->by_addr, a, cnt);
            }
            (*cnt)++;
            f->count++;
        }
    }
    list = g_ptr_array_new();
    g_hash_table_iter_init(&it, funcs);
    while (g_hash_table_iter_next(&it, NULL, &value)) {
        g_ptr_array_add(list, value);
    }
    g_ptr_array_sort(list, func_by_count);
    if (!list->len) {
        fprintf(stderr, "lwp-prof: %s%s%s has no samples in %s\n",
                symbol ? "symbol " : "no function", symbol ? symbol : "",
                dso ? " (in that object)" : "", to.input);
        return 1;
    }
    files = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)g_strfreev);
    for (guint i = 0; i < list->len && (symbol || !limit || shown < limit); i++) {
        annotate_one(g_ptr_array_index(list, i), event_id, files);
        shown++;
    }
    g_hash_table_destroy(files);
    fflush(stdout);
    return 0;
}
