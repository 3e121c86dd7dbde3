/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A TCG plugin that counts, exactly, how often each guest instruction
 * executed: the independent count lwp-prof's samples are checked against.
 *
 *   -plugin liblwp-count.so,out=FILE[,kind=insn|branch][,bits=64|32]
 *
 * kind=insn counts every instruction; kind=branch only the branches LWP's
 * branches-retired event counts (AMD pub. 43724 section 2.3: Jcc, JCXZ,
 * LOOPcc, near JMP/CALL relative and indirect, near RET).  At exit FILE
 * gets one line "ADDRESS COUNT" per instruction that ran.
 *
 * Counting is per translation block: a callback adds one to the block's
 * counter each time it runs, and every instruction of the block is charged
 * that count.  (A block left in the middle, by a fault, over-charges the
 * instructions after the fault; the tests' programs do not fault.)
 *
 * For a process tree (every process of it runs under its own emulator,
 * with QEMU_PLUGIN inherited): "%p" in FILE stands for the pid, and an
 * existing FILE gets ".1", ".2", ... appended, so each process image
 * writes its own.  An image that execs writes its count at the execve
 * (and takes it back if the execve fails); a child of fork starts from
 * zero; a child of vfork (or of posix_spawn's clone with CLONE_VFORK,
 * which qemu-user runs as a fork) writes nothing: it only execs, and
 * lwp-prof does not profile it either.  So the files of one pid, in the
 * order written (FILE, FILE.1, ...), are its images in exec order.  The
 * first line says whose it is: "# lwp-count: KIND executed, per address;
 * pid PID".
 */
#include <glib.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

struct block {
    uint64_t count;
    size_t n;
    uint64_t vaddr[];
};

static GMutex lock;
static GPtrArray *blocks;
static char *out_path;
static int count_branches;
static int bits = 64;
static pid_t counted_pid;           /* the process the counts belong to */
static char *exec_written;          /* the file written at a pending execve */
static int vfork_pending;           /* a vfork-like clone is under way */
static int vfork_child;             /* this process is its child */

static int is_lwp_branch(const uint8_t *b, size_t n)
{
    size_t i = 0;
    uint8_t op;

    while (i < n && (b[i] == 0x66 || b[i] == 0x67 || b[i] == 0xf2 || b[i] == 0xf3 ||
                     b[i] == 0x2e || b[i] == 0x3e || b[i] == 0x26 || b[i] == 0x36 ||
                     b[i] == 0x64 || b[i] == 0x65 || b[i] == 0xf0)) {
        i++;
    }
    if (bits == 64 && i < n && (b[i] & 0xf0) == 0x40) {
        i++;                                    /* REX */
    }
    if (i >= n) {
        return 0;
    }
    op = b[i];
    if ((op >= 0x70 && op <= 0x7f) || (op >= 0xe0 && op <= 0xe3) ||
        op == 0xe8 || op == 0xe9 || op == 0xeb || op == 0xc2 || op == 0xc3) {
        return 1;
    }
    if (op == 0x0f && i + 1 < n) {
        return (b[i + 1] & 0xf0) == 0x80;       /* Jcc rel32 */
    }
    if (op == 0xff && i + 1 < n) {
        unsigned reg = (b[i + 1] >> 3) & 7;
        return reg == 2 || reg == 4;            /* CALL/JMP near r/m */
    }
    return 0;
}

static void block_exec(unsigned int vcpu, void *udata)
{
    struct block *blk = udata;

    (void)vcpu;
    __atomic_fetch_add(&blk->count, 1, __ATOMIC_RELAXED);
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    size_t n = qemu_plugin_tb_n_insns(tb);
    struct block *blk = g_malloc0(sizeof(*blk) + n * sizeof(uint64_t));

    (void)id;
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        uint8_t bytes[16];
        size_t len = qemu_plugin_insn_data(insn, bytes, sizeof(bytes));

        if (!count_branches || is_lwp_branch(bytes, len)) {
            blk->vaddr[blk->n++] = qemu_plugin_insn_vaddr(insn);
        }
    }
    if (!blk->n) {
        g_free(blk);
        return;
    }
    g_mutex_lock(&lock);
    g_ptr_array_add(blocks, blk);
    g_mutex_unlock(&lock);
    qemu_plugin_register_vcpu_tb_exec_cb(tb, block_exec, QEMU_PLUGIN_CB_NO_REGS, blk);
}

/* Write the counts to a new file; returns its name. */
static char *write_counts(void)
{
    GHashTable *counts = g_hash_table_new_full(g_int64_hash, g_int64_equal,
                                               g_free, g_free);
    GHashTableIter it;
    gpointer k, v;
    GString *path = g_string_new(NULL);
    char *name;
    FILE *f = NULL;
    int fd = -1;

    g_mutex_lock(&lock);
    for (guint b = 0; b < blocks->len; b++) {
        struct block *blk = g_ptr_array_index(blocks, b);
        for (size_t i = 0; i < blk->n && blk->count; i++) {
            uint64_t *c = g_hash_table_lookup(counts, &blk->vaddr[i]);
            if (!c) {
                uint64_t *key = g_new(uint64_t, 1);
                *key = blk->vaddr[i];
                c = g_new0(uint64_t, 1);
                g_hash_table_insert(counts, key, c);
            }
            *c += blk->count;
        }
    }
    g_mutex_unlock(&lock);
    for (const char *p = out_path; *p; p++) {
        if (p[0] == '%' && p[1] == 'p') {
            g_string_append_printf(path, "%d", (int)getpid());
            p++;
        } else {
            g_string_append_c(path, *p);
        }
    }
    name = g_strdup(path->str);
    for (int n = 1; n < 100000; n++) {
        fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd >= 0 || errno != EEXIST) {
            break;
        }
        g_free(name);
        name = g_strdup_printf("%s.%d", path->str, n);
    }
    g_string_free(path, TRUE);
    if (fd >= 0) {
        f = fdopen(fd, "w");
    }
    if (!f) {
        perror(name);
        g_free(name);
        g_hash_table_destroy(counts);
        return NULL;
    }
    fprintf(f, "# lwp-count: %s executed, per address; pid %d\n",
            count_branches ? "branches" : "instructions", (int)getpid());
    g_hash_table_iter_init(&it, counts);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        fprintf(f, "0x%" PRIx64 " %" PRIu64 "\n", *(uint64_t *)k, *(uint64_t *)v);
    }
    fclose(f);
    g_hash_table_destroy(counts);
    return name;
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
    (void)id;
    (void)p;
    if (!vfork_child) {
        g_free(write_counts());
    }
}

static int is_execve(int64_t num)
{
    return bits == 64 ? num == 59 || num == 322 : num == 11 || num == 358;
}

static void on_syscall(qemu_plugin_id_t id, unsigned int vcpu, int64_t num, uint64_t a1,
                       uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5, uint64_t a6,
                       uint64_t a7, uint64_t a8)
{
    (void)id; (void)vcpu; (void)a1; (void)a2; (void)a3; (void)a4; (void)a5; (void)a6;
    (void)a7; (void)a8;
    if (is_execve(num) && !vfork_child) {
        g_free(exec_written);
        exec_written = write_counts();  /* no at_exit after a successful exec */
    }
    /* vfork; clone with CLONE_VFORK (0x4000), flags in the first argument */
    vfork_pending = bits == 64 ? num == 58 || (num == 56 && (a1 & 0x4000))
                               : num == 190 || (num == 120 && (a1 & 0x4000));
}

static void on_syscall_ret(qemu_plugin_id_t id, unsigned int vcpu, int64_t num, int64_t ret)
{
    (void)id;
    (void)vcpu;
    (void)ret;
    if (is_execve(num) && exec_written) {
        unlink(exec_written);           /* it failed: this image goes on */
        g_free(exec_written);
        exec_written = NULL;
    }
    if (getpid() != counted_pid) {
        /* a child of fork (or vfork, which qemu-user runs as fork): its own count */
        counted_pid = getpid();
        vfork_child = vfork_pending;
        g_mutex_lock(&lock);
        for (guint b = 0; b < blocks->len; b++) {
            ((struct block *)g_ptr_array_index(blocks, b))->count = 0;
        }
        g_mutex_unlock(&lock);
    }
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
                                           int argc, char **argv)
{
    /* one QEMU_PLUGIN serves the 64- and 32-bit emulators of a tree */
    bits = info && info->target_name && !strcmp(info->target_name, "i386") ? 32 : 64;
    for (int i = 0; i < argc; i++) {
        if (g_str_has_prefix(argv[i], "out=")) {
            out_path = g_strdup(argv[i] + 4);
        } else if (!strcmp(argv[i], "kind=branch")) {
            count_branches = 1;
        } else if (!strcmp(argv[i], "kind=insn")) {
            count_branches = 0;
        } else if (!strcmp(argv[i], "bits=32")) {
            bits = 32;
        } else if (strcmp(argv[i], "bits=64")) {
            fprintf(stderr, "lwp-count: unknown argument %s\n", argv[i]);
            return -1;
        }
    }
    if (!out_path) {
        fprintf(stderr, "lwp-count: out=FILE is required\n");
        return -1;
    }
    blocks = g_ptr_array_new();
    counted_pid = getpid();
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
    qemu_plugin_register_vcpu_syscall_cb(id, on_syscall);
    qemu_plugin_register_vcpu_syscall_ret_cb(id, on_syscall_ret);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    return 0;
}
