/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What an exec of PATH would run, decided as the kernel decides it: a
 * "#!" script names its interpreter (binfmt_script: the first line, at
 * most 256 bytes, the interpreter and at most one argument, up to four
 * levels of scripts), and the ELF at the end of that chain is what runs.
 * Shared by the launcher (`lwp-prof record -- SCRIPT`) and the preload
 * library (every exec of the profiled tree): plain system calls on caller
 * storage, no allocation, so that a vfork child may call it.
 */
#ifndef LWP_PROF_EXEC_TARGET_H
#define LWP_PROF_EXEC_TARGET_H

#include <elf.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#define EXEC_SCRIPT_MAX 4       /* the kernel's BINPRM_MAX_RECURSION */
#define EXEC_BUF 256            /* the kernel's BINPRM_BUF_SIZE */

enum exec_kind {
    EXEC_UNREADABLE,            /* cannot open or read it: let exec say why */
    EXEC_DYNAMIC,               /* a dynamically linked x86 ELF: profiled */
    EXEC_STATIC,                /* statically linked x86: no preload reaches it */
    EXEC_FOREIGN,               /* not an x86 ELF (other machine, x32, no format) */
    EXEC_PRIVILEGED,            /* set-user-ID, set-group-ID or file capabilities */
    EXEC_BAD_SCRIPT,            /* a #! line the kernel would refuse */
};

struct exec_target {
    enum exec_kind kind;
    int bits;                   /* 64 or 32 for an x86 ELF */
    const char *elf;            /* the ELF that runs (PATH, or the last interpreter) */
    int n_prefix;               /* the arguments the #! lines put before argv[1] */
    const char *prefix[3 * EXEC_SCRIPT_MAX];
    char store[EXEC_SCRIPT_MAX + 1][EXEC_BUF + 1];
};

/* Parse a "#!" line in @buf (NUL-terminated, @n bytes read) in place. */
static inline int exec_parse_shebang(char *buf, size_t n, char **name, char **arg)
{
    char *p = buf + 2, *end, *nl = memchr(buf, '\n', n);

    if (nl) {
        *nl = 0;
    } else if (n >= EXEC_BUF) {
        /* no newline within the buffer: the kernel accepts it only if the
         * interpreter's name ends inside it */
        buf[EXEC_BUF] = 0;
    }
    while (*p == ' ' || *p == '\t') {
        p++;
    }
    if (!*p) {
        return -1;
    }
    *name = p;
    while (*p && *p != ' ' && *p != '\t') {
        p++;
    }
    if (!nl && n >= EXEC_BUF && !*p) {
        return -1;              /* the name may be cut: ENOEXEC, as Linux 5.1+ */
    }
    if (*p) {
        *p++ = 0;
    }
    while (*p == ' ' || *p == '\t') {
        p++;
    }
    end = p + strlen(p);
    while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r')) {
        *--end = 0;
    }
    *arg = *p ? p : NULL;
    return 0;
}

static inline int exec_privileged(int fd, const struct stat *st)
{
    if ((st->st_mode & S_ISUID) ||
        ((st->st_mode & S_ISGID) && (st->st_mode & S_IXGRP))) {
        return 1;
    }
    return fgetxattr(fd, "security.capability", NULL, 0) > 0;
}

/* Classify an ELF image from its first bytes and program headers. */
static inline enum exec_kind exec_classify_elf(int fd, const unsigned char *id, size_t n,
                                               int *bits)
{
    if (n < EI_NIDENT + 4 || memcmp(id, ELFMAG, SELFMAG) || id[EI_DATA] != ELFDATA2LSB) {
        return EXEC_FOREIGN;
    }
    if (id[EI_CLASS] == ELFCLASS64) {
        Elf64_Ehdr eh;
        if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) || eh.e_machine != EM_X86_64 ||
            eh.e_phentsize != sizeof(Elf64_Phdr)) {
            return EXEC_FOREIGN;
        }
        *bits = 64;
        for (unsigned i = 0; i < eh.e_phnum; i++) {
            Elf64_Phdr ph;
            if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) != sizeof(ph)) {
                return EXEC_UNREADABLE;
            }
            if (ph.p_type == PT_INTERP) {
                return EXEC_DYNAMIC;
            }
        }
        return EXEC_STATIC;
    }
    if (id[EI_CLASS] == ELFCLASS32) {
        Elf32_Ehdr eh;
        if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) || eh.e_machine != EM_386 ||
            eh.e_phentsize != sizeof(Elf32_Phdr)) {
            return EXEC_FOREIGN;    /* x32 (EM_X86_64 in ELFCLASS32) too */
        }
        *bits = 32;
        for (unsigned i = 0; i < eh.e_phnum; i++) {
            Elf32_Phdr ph;
            if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) != sizeof(ph)) {
                return EXEC_UNREADABLE;
            }
            if (ph.p_type == PT_INTERP) {
                return EXEC_DYNAMIC;
            }
        }
        return EXEC_STATIC;
    }
    return EXEC_FOREIGN;
}

/*
 * Resolve @path.  For a script, t->prefix holds what the kernel puts in
 * front of the original argv[1..]: for each level the interpreter, its
 * argument if any, and the file it runs (argv[0] of the original is
 * dropped).  For an ELF, n_prefix is 0.
 */
static inline void exec_resolve(const char *path, struct exec_target *t)
{
    const char *file = path;
    int level;

    memset(t, 0, sizeof(*t));
    for (level = 0;; level++) {
        char *buf = t->store[level];
        struct stat st;
        ssize_t n;
        int fd = open(file, O_RDONLY | O_CLOEXEC);

        if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) ||
            access(file, X_OK)) {
            if (fd >= 0) {
                close(fd);
            }
            t->kind = EXEC_UNREADABLE;
            return;
        }
        n = pread(fd, buf, EXEC_BUF, 0);
        if (n < 0) {
            close(fd);
            t->kind = EXEC_UNREADABLE;
            return;
        }
        buf[n] = 0;
        if (n >= 2 && buf[0] == '#' && buf[1] == '!') {
            char *name, *arg;
            int first = t->n_prefix;

            close(fd);
            if (level >= EXEC_SCRIPT_MAX || exec_parse_shebang(buf, (size_t)n, &name, &arg)) {
                t->kind = EXEC_BAD_SCRIPT;
                return;
            }
            /* the new level's arguments go in front of the previous ones */
            /* [name, arg, file] + the previous prefix less its first
             * element, which named the file run at this level */
            memmove(&t->prefix[arg ? 3 : 2], &t->prefix[1],
                    (size_t)(first > 0 ? first - 1 : 0) * sizeof(char *));
            t->n_prefix = (arg ? 3 : 2) + (first > 0 ? first - 1 : 0);
            t->prefix[arg ? 2 : 1] = file;
            t->prefix[0] = name;
            if (arg) {
                t->prefix[1] = arg;
            }
            file = name;
            continue;
        }
        t->elf = file;
        if (exec_privileged(fd, &st)) {
            t->kind = EXEC_PRIVILEGED;
        } else {
            t->kind = exec_classify_elf(fd, (unsigned char *)buf, (size_t)n, &t->bits);
        }
        close(fd);
        return;
    }
}

#endif
