/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `lwp-prof report`: samples to symbols and source lines with elfutils'
 * libdwfl (load biases, .symtab or .dynsym, separate debug info found by
 * build-id or debuglink), then a flat profile, a per-line view or the raw
 * samples.  Code covered by no symbol (a stripped library's hidden
 * functions) is named by the function its call-frame information
 * (.eh_frame) delimits: "[0xSTART]" in its object.
 */
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <errno.h>
#include <getopt.h>
#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lwp-prof.h"

/* The C++ ABI's demangler (libstdc++), as perf and gdb use. */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

#include "prof-report.h"

static void where_free(gpointer p);

static char *debuginfo_path;
static const Dwfl_Callbacks offline_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &debuginfo_path,
};

Dwfl *dwfl_for(const struct prof_data *d)
{
    Dwfl *dwfl = dwfl_begin(&offline_callbacks);

    if (!dwfl) {
        fprintf(stderr, "lwp-prof: libdwfl: %s\n", dwfl_errmsg(-1));
        exit(1);
    }
    dwfl_report_begin(dwfl);
    for (size_t i = 0; i < d->n_modules; i++) {
        const char *p = d->modules[i].path;
        const char *base = strrchr(p, '/') ? strrchr(p, '/') + 1 : p;

        if (!dwfl_report_elf(dwfl, base, p, -1, d->modules[i].bias, true)) {
            fprintf(stderr, "lwp-prof: %s: %s (its samples stay unresolved)\n", p,
                    dwfl_errmsg(-1));
        }
    }
    dwfl_report_end(dwfl, NULL, NULL);
    return dwfl;
}

/*
 * Function ranges of a module from its .eh_frame: libdw decodes each entry
 * (dwarf_next_cfi); the initial location and range of an FDE are encoded
 * as its CIE's augmentation ('R') says.  Used to delimit the functions a
 * stripped object has no symbol for.
 */
struct fde_range {
    uint64_t start, end;        /* ELF addresses, before the load bias */
};

struct fde_table {
    struct fde_range *r;
    size_t n;
};

static size_t encoded_size(uint8_t enc, const uint8_t *p, const uint8_t *end,
                           unsigned addr_size)
{
    size_t n = 0;

    switch (enc & 0x0f) {
    case 0x00:
        return addr_size;
    case 0x02: case 0x0a:
        return 2;
    case 0x03: case 0x0b:
        return 4;
    case 0x04: case 0x0c:
        return 8;
    case 0x01: case 0x09:               /* LEB128 */
        while (p + n < end && (p[n] & 0x80)) {
            n++;
        }
        return n + 1;
    default:
        return 0;
    }
}

static int read_encoded(uint8_t enc, const uint8_t *p, const uint8_t *end,
                        unsigned addr_size, uint64_t field_addr, uint64_t *out)
{
    size_t n = encoded_size(enc, p, end, addr_size);
    uint64_t v = 0;

    if (!n || n > 8 || p + n > end || (enc & 0x0f) == 0x01 || (enc & 0x0f) == 0x09) {
        return -1;
    }
    memcpy(&v, p, n);                   /* little-endian x86 */
    if ((enc & 0x08) && n < 8 && (v >> (8 * n - 1) & 1)) {
        v |= ~0ull << (8 * n);          /* signed forms */
    }
    switch (enc & 0x70) {
    case 0x00:
        break;
    case 0x10:
        v += field_addr;                /* pc-relative */
        break;
    default:
        return -1;
    }
    if (addr_size == 4) {
        v &= 0xffffffffull;
    }
    *out = v;
    return 0;
}

/* The FDE pointer encoding a CIE announces, or -1. */
static int cie_fde_encoding(const Dwarf_CIE *cie, unsigned addr_size)
{
    const char *a = cie->augmentation;
    const uint8_t *d = cie->augmentation_data;
    const uint8_t *end = d + cie->augmentation_data_size;

    if (!a || a[0] != 'z') {
        return 0x00;                    /* absolute pointers */
    }
    for (a++; *a && d && d < end; a++) {
        switch (*a) {
        case 'R':
            return *d;
        case 'P':
            d += 1 + encoded_size(*d, d + 1, end, addr_size);
            break;
        case 'L':
            d++;
            break;
        default:
            break;
        }
    }
    return -1;
}

static int by_start(const void *a, const void *b)
{
    const struct fde_range *x = a, *y = b;

    return x->start < y->start ? -1 : x->start > y->start;
}

static void fde_table_build(Elf *elf, struct fde_table *t)
{
    size_t shstrndx;
    Elf_Scn *scn = NULL;
    GArray *ranges = g_array_new(FALSE, FALSE, sizeof(struct fde_range));
    GHashTable *enc = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    const unsigned char *ident = (const unsigned char *)elf_getident(elf, NULL);
    unsigned addr_size = ident && ident[EI_CLASS] == ELFCLASS32 ? 4 : 8;

    if (ident && !elf_getshdrstrndx(elf, &shstrndx)) {
        while ((scn = elf_nextscn(elf, scn))) {
            GElf_Shdr sh;
            const char *name;
            Elf_Data *data;
            Dwarf_Off off = 0, next;
            Dwarf_CFI_Entry e;
            int rc;

            if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS) {
                continue;
            }
            name = elf_strptr(elf, shstrndx, sh.sh_name);
            if (!name || strcmp(name, ".eh_frame")) {
                continue;
            }
            data = elf_getdata(scn, NULL);
            if (!data) {
                continue;
            }
            /* CIEs first (an FDE may point back at any of them). */
            for (int pass = 0; pass < 2; pass++) {
                for (off = 0;
                     (rc = dwarf_next_cfi(ident, data, true, off, &next, &e)) != 1;
                     off = next) {
                    if (rc < 0) {
                        if (next == (Dwarf_Off)-1 || next <= off) {
                            break;
                        }
                        continue;
                    }
                    if (dwarf_cfi_cie_p(&e) && pass == 0) {
                        uint64_t *k = g_new(uint64_t, 1);
                        *k = off;
                        g_hash_table_insert(enc, k,
                            GINT_TO_POINTER(cie_fde_encoding(&e.cie, addr_size) + 1));
                    } else if (!dwarf_cfi_cie_p(&e) && pass == 1) {
                        uint64_t cie = e.fde.CIE_pointer;
                        int fe = GPOINTER_TO_INT(g_hash_table_lookup(enc, &cie)) - 1;
                        const uint8_t *p = e.fde.start;
                        uint64_t loc, range;
                        size_t n;

                        if (fe < 0) {
                            continue;
                        }
                        n = encoded_size((uint8_t)fe, p, e.fde.end, addr_size);
                        if (read_encoded((uint8_t)fe, p, e.fde.end, addr_size,
                                         sh.sh_addr + (p - (const uint8_t *)data->d_buf),
                                         &loc) ||
                            read_encoded((uint8_t)(fe & 0x0f), p + n, e.fde.end,
                                         addr_size, 0, &range) || !range) {
                            continue;
                        }
                        struct fde_range r = { loc, loc + range };
                        g_array_append_val(ranges, r);
                    }
                }
            }
        }
    }
    g_hash_table_destroy(enc);
    g_array_sort(ranges, by_start);
    t->n = ranges->len;
    t->r = (struct fde_range *)g_array_free(ranges, FALSE);
}

static GHashTable *fde_tables;  /* Dwfl_Module * -> struct fde_table * */

void resolver_init(struct resolver *r, const struct prof_data *d)
{
    if (!fde_tables) {
        fde_tables = g_hash_table_new(g_direct_hash, g_direct_equal);
    }
    r->dwfl = dwfl_for(d);
    r->cache = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, where_free);
}


static const struct fde_range *fde_lookup(Dwfl_Module *m, uint64_t addr)
{
    struct fde_table *t = g_hash_table_lookup(fde_tables, m);
    size_t lo = 0, hi;

    if (!t) {
        Dwarf_Addr bias;
        Elf *elf = dwfl_module_getelf(m, &bias);

        t = g_new0(struct fde_table, 1);
        if (elf) {
            fde_table_build(elf, t);
        }
        g_hash_table_insert(fde_tables, m, t);
    }
    hi = t->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (addr < t->r[mid].start) {
            hi = mid;
        } else if (addr >= t->r[mid].end) {
            lo = mid + 1;
        } else {
            return &t->r[mid];
        }
    }
    return NULL;
}

/*
 * A module's function symbols sorted by address, looked up by binary
 * search: dwfl_module_addrinfo scans every symbol for each address, too
 * slow for an exact count's hundreds of thousands of addresses in cc1.
 * At one address the preferred symbol is a global one, then a weak one,
 * as addrinfo prefers.
 */
struct sym_entry {
    uint64_t start, size;       /* run-time addresses */
    const char *name;
    int rank;                   /* 0 global, 1 weak, 2 local */
};

struct sym_table {
    struct sym_entry *e;
    size_t n;
};

static GHashTable *sym_tables;  /* Dwfl_Module * -> struct sym_table * */

static int sym_order(const void *a, const void *b)
{
    const struct sym_entry *x = a, *y = b;

    if (x->start != y->start) {
        return x->start < y->start ? -1 : 1;
    }
    if (x->rank != y->rank) {
        return x->rank - y->rank;
    }
    return (y->size > 0) - (x->size > 0);
}

static const struct sym_table *sym_table_for(Dwfl_Module *m)
{
    struct sym_table *t;
    GArray *a;
    int n;

    if (!sym_tables) {
        sym_tables = g_hash_table_new(g_direct_hash, g_direct_equal);
    }
    t = g_hash_table_lookup(sym_tables, m);
    if (t) {
        return t;
    }
    t = g_new0(struct sym_table, 1);
    a = g_array_new(FALSE, FALSE, sizeof(struct sym_entry));
    n = dwfl_module_getsymtab(m);
    for (int i = 1; i < n; i++) {
        GElf_Sym sym;
        GElf_Addr addr;
        const char *name = dwfl_module_getsym_info(m, i, &sym, &addr, NULL, NULL, NULL);
        int type = GELF_ST_TYPE(sym.st_info), bind = GELF_ST_BIND(sym.st_info);
        struct sym_entry e;

        if (!name || !*name || sym.st_shndx == SHN_UNDEF ||
            (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE &&
             type != STT_OBJECT)) {
            continue;
        }
        e.start = addr;
        e.size = sym.st_size;
        e.name = name;
        e.rank = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
        g_array_append_val(a, e);
    }
    g_array_sort(a, sym_order);
    /* one entry per address: the preferred one */
    {
        guint k = 0;

        for (guint i = 0; i < a->len; i++) {
            struct sym_entry e = g_array_index(a, struct sym_entry, i);
            if (k && g_array_index(a, struct sym_entry, k - 1).start == e.start) {
                continue;
            }
            g_array_index(a, struct sym_entry, k++) = e;
        }
        g_array_set_size(a, k);
    }
    t->n = a->len;
    t->e = (struct sym_entry *)g_array_free(a, FALSE);
    g_hash_table_insert(sym_tables, m, t);
    return t;
}

/* The symbol covering @ip: the last one starting at or below it. */
static const char *sym_lookup(Dwfl_Module *m, uint64_t ip, GElf_Off *off, GElf_Sym *sym)
{
    const struct sym_table *t = sym_table_for(m);
    size_t lo = 0, hi = t->n;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (t->e[mid].start <= ip) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if (!lo) {
        return NULL;
    }
    /* a sized symbol before a zero-sized one at a lower address covers it */
    for (size_t i = lo; i-- > 0 && lo - i <= 8;) {
        const struct sym_entry *e = &t->e[i];
        if (ip - e->start < e->size || (ip == e->start)) {
            *off = ip - e->start;
            sym->st_size = e->size;
            return e->name;
        }
        if (e->size) {
            break;
        }
    }
    return NULL;
}

int resolve_sources = 1;        /* resolve source lines too */

static void resolve(Dwfl *dwfl, uint64_t ip, struct where *w)
{
    Dwfl_Module *m = dwfl_addrmodule(dwfl, ip);
    GElf_Off off = 0;
    GElf_Sym sym;
    Dwarf_Addr bias, low;
    Dwfl_Line *line;
    const char *name, *modname;

    memset(w, 0, sizeof(*w));
    if (!m) {
        w->object = "[unknown]";
        w->path = "[unknown]";
        w->symbol = g_strdup("[unknown]");
        w->offset = ip;
        return;
    }
    modname = dwfl_module_info(m, NULL, &low, NULL, NULL, NULL, &w->path, NULL);
    if (!w->path) {
        w->path = modname;
    }
    w->object = modname;
    w->module = m;
    dwfl_module_getelf(m, &bias);
    w->offset = ip - bias;
    name = sym_lookup(m, ip, &off, &sym);
    if (name && (sym.st_size == 0 ? off == 0 : off < sym.st_size)) {
        w->sym_start = ip - off - bias;
        w->sym_size = sym.st_size;
        /* "memcpy@@GLIBC_2.14" -> "memcpy"; C++ names demangled */
        char *plain = g_strndup(name, strcspn(name, "@"));
        int status = -1;
        char *demangled = plain[0] == '_' && plain[1] == 'Z'
                          ? __cxa_demangle(plain, NULL, NULL, &status) : NULL;

        if (demangled && status == 0) {
            w->symbol = g_strdup(demangled);
            g_free(plain);
        } else {
            w->symbol = plain;
        }
        free(demangled);
    } else {
        const struct fde_range *f = fde_lookup(m, ip - bias);
        if (f) {
            w->symbol = g_strdup_printf("[0x%" PRIx64 "]", f->start);
            w->sym_start = f->start;
            w->sym_size = f->end - f->start;
        }
    }
    if (!w->symbol) {
        w->symbol = g_strdup("[unknown]");
        w->sym_start = w->offset;
    }
    line = resolve_sources ? dwfl_module_getsrc(m, ip) : NULL;
    if (line) {
        int lineno = 0;
        const char *src = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);
        if (src) {
            const char *b = strrchr(src, '/');
            w->source = g_strdup_printf("%s:%d", b ? b + 1 : src, lineno);
        }
    }
}

/* Addresses are resolved once each (struct resolver: prof-report.h). */
static void where_free(gpointer p)
{
    struct where *w = p;

    g_free(w->symbol);
    g_free(w->source);
    g_free(w);
}

const struct where *lookup(struct resolver *r, uint64_t ip)
{
    struct where *w = g_hash_table_lookup(r->cache, &ip);

    if (!w) {
        uint64_t *key = g_new(uint64_t, 1);
        *key = ip;
        w = g_new(struct where, 1);
        resolve(r->dwfl, ip, w);
        g_hash_table_insert(r->cache, key, w);
    }
    return w;
}

