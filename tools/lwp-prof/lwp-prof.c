/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * lwp-prof: profile an unmodified, dynamically linked program with AMD
 * Lightweight Profiling.
 *
 *   lwp-prof record [-e ire|bre] [-i INTERVAL] [-o FILE] -- PROGRAM ARGS...
 *   lwp-prof report [OPTIONS] FILE
 *
 * `record` preloads liblwp-prof (liblwp-prof-i386 for a 32-bit program)
 * and runs the program: directly when this CPU has LWP, otherwise under an
 * emulator that has it: --qemu PATH, else $LWP_PROF_QEMU, else qemu-lwp's
 * own qemu-x86_64 / qemu-i386 from the build tree that built lwp-prof,
 * else qemu-x86_64 / qemu-i386 from PATH; always with -cpu max (--cpu).
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <getopt.h>
#include <glib.h>
#include <libelf.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lwp-prof.h"

#ifndef LWP_PROF_QEMU_DIR
#define LWP_PROF_QEMU_DIR ""
#endif
#define TOOL_FAILURE 125

static void usage(FILE *f)
{
    fputs("usage: lwp-prof record [OPTIONS] -- PROGRAM [ARGS...]\n"
          "       lwp-prof report [OPTIONS] FILE\n"
          "\n"
          "Profile an unmodified, dynamically linked x86 program with AMD Lightweight\n"
          "Profiling (LWP): every thread samples into its own ring buffer.\n"
          "\n"
          "record options:\n"
          "  -e, --event EVENT     ire (instructions retired, default) or bre (branches\n"
          "                        retired)\n"
          "  -i, --interval N      a sample every N+1 events (default 65535; LWP's\n"
          "                        EventInterval, at least the CPU's minimum)\n"
          "  -o, --output FILE     data file (default lwp-prof.data); a child of fork()\n"
          "                        writes FILE.<pid>\n"
          "      --qemu PATH       run the program under this linux-user emulator (must\n"
          "                        offer LWP, like qemu-lwp's qemu-x86_64); 'none' runs it\n"
          "                        directly.  Default: $LWP_PROF_QEMU, else directly if\n"
          "                        this CPU has LWP, else qemu-lwp's build, else PATH\n"
          "      --cpu MODEL       the emulator's -cpu (default max)\n"
          "      --ring N          ring buffer of N records per thread (default: sized for\n"
          "                        the interval)\n"
          "      --drain-ms MS     drain every MS ms of a thread's CPU time (default 10)\n"
          "      --random BITS     randomize the low BITS (0-15) of each interval\n"
          "                        (LWPCB.Random; default 0)\n"
          "      --signal SIG      the drain timer's signal (default RTMAX-8)\n"
          "      --threshold-signal SIG\n"
          "                        drain when the OS delivers LWP's threshold interrupt\n"
          "                        as signal SIG, instead of from a timer\n"
          "  -q, --quiet           no summary line\n"
          "\n"
          "report options: see lwp-prof report --help.\n"
          "The program's exit status is lwp-prof record's; 125 means profiling could not\n"
          "start.  Documentation: docs/lwp-prof.rst.\n", f);
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...)
{
    va_list ap;

    fputs("lwp-prof: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(TOOL_FAILURE);
}

static int host_has_lwp(void)
{
    unsigned a, b, c, d;

    __cpuid(0x80000000, a, b, c, d);
    if (a < 0x8000001C) {
        return 0;
    }
    __cpuid(0x80000001, a, b, c, d);
    if (!(c & (1u << 15))) {
        return 0;
    }
    __cpuid(0x8000001C, a, b, c, d);
    return a & 1;
}

/* PROGRAM as execvp would find it. */
static char *find_program(const char *name)
{
    const char *path = getenv("PATH");
    gchar **dirs;
    char *found = NULL;

    if (strchr(name, '/')) {
        return access(name, X_OK) ? NULL : g_strdup(name);
    }
    dirs = g_strsplit(path ? path : "/usr/local/bin:/usr/bin:/bin", ":", -1);
    for (int i = 0; dirs[i] && !found; i++) {
        char *p = g_build_filename(*dirs[i] ? dirs[i] : ".", name, NULL);
        struct stat st;
        if (!stat(p, &st) && S_ISREG(st.st_mode) && !access(p, X_OK)) {
            found = p;
        } else {
            g_free(p);
        }
    }
    g_strfreev(dirs);
    return found;
}

/* Returns 64 or 32; fails for anything lwp-prof cannot preload into. */
static int inspect_program(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    Elf *e;
    GElf_Ehdr eh;
    size_t n;
    int dynamic = 0, bits;

    if (fd < 0) {
        fail("cannot open %s: %s", path, strerror(errno));
    }
    elf_version(EV_CURRENT);
    e = elf_begin(fd, ELF_C_READ, NULL);
    if (!e || elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh)) {
        fail("%s is not an ELF executable (lwp-prof runs ELF programs; for a "
             "script, name its interpreter: lwp-prof record -- python3 script.py)",
             path);
    }
    if (eh.e_machine != EM_X86_64 && eh.e_machine != EM_386) {
        fail("%s is not an x86 program (ELF machine %u)", path, eh.e_machine);
    }
    bits = gelf_getclass(e) == ELFCLASS64 ? 64 : 32;
    if (elf_getphdrnum(e, &n)) {
        fail("%s: %s", path, elf_errmsg(-1));
    }
    for (size_t i = 0; i < n; i++) {
        GElf_Phdr ph;
        if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_INTERP) {
            dynamic = 1;
        }
    }
    elf_end(e);
    close(fd);
    if (!dynamic) {
        fail("%s is statically linked: lwp-prof preloads a library, which only a "
             "dynamically linked program loads (relink it without -static, or "
             "make the program use LWP itself)", path);
    }
    return bits;
}

static char *self_dir(void)
{
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);

    if (n <= 0) {
        fail("cannot find my own directory (/proc/self/exe): %s", strerror(errno));
    }
    buf[n] = 0;
    return g_path_get_dirname(buf);
}

static char *choose_qemu(const char *opt, int bits)
{
    const char *name = bits == 64 ? "qemu-x86_64" : "qemu-i386";
    const char *env = getenv("LWP_PROF_QEMU");
    char *p;

    if (opt) {
        return strcmp(opt, "none") ? g_strdup(opt) : NULL;
    }
    if (env && *env) {
        return strcmp(env, "none") ? g_strdup(env) : NULL;
    }
    if (host_has_lwp()) {
        return NULL;
    }
    if (*LWP_PROF_QEMU_DIR) {
        p = g_build_filename(LWP_PROF_QEMU_DIR, name, NULL);
        if (!access(p, X_OK)) {
            return p;
        }
        g_free(p);
    }
    p = find_program(name);
    if (!p) {
        fail("this CPU has no LWP and no emulator was found: build qemu-lwp "
             "(bash scripts/run.sh build) or name one with --qemu PATH");
    }
    return p;
}

static void summarize(const char *output)
{
    struct prof_data d;

    if (prof_data_load(output, &d)) {
        return;
    }
    fprintf(stderr,
            "lwp-prof: %zu samples (%s every %u), %u thread(s), %llu missed, in %s\n",
            d.n_samples, prof_event_name(d.hdr.event_id), d.hdr.interval + 1,
            d.n_threads, (unsigned long long)d.missed, output);
    {
        /* children of fork() profiled themselves into OUTPUT.<pid> */
        char *dir = g_path_get_dirname(output), *base = g_path_get_basename(output);
        GDir *gd = g_dir_open(dir, 0, NULL);
        const char *name;
        unsigned children = 0;

        while (gd && (name = g_dir_read_name(gd))) {
            const char *rest = name + strlen(base);
            if (g_str_has_prefix(name, base) && rest[0] == '.' && rest[1] &&
                strspn(rest + 1, "0123456789") == strlen(rest + 1)) {
                children++;
            }
        }
        if (children) {
            fprintf(stderr, "lwp-prof: and %u profile(s) of forked children: %s.<pid>\n",
                    children, output);
        }
        if (gd) {
            g_dir_close(gd);
        }
        g_free(dir);
        g_free(base);
    }
    if (d.missed) {
        fprintf(stderr, "lwp-prof: %llu samples were lost to a full ring buffer: raise "
                "--ring or lower --drain-ms\n", (unsigned long long)d.missed);
    }
    prof_data_free(&d);
}

static pid_t child_pid;

static void forward_signal(int sig)
{
    if (child_pid > 0) {
        kill(child_pid, sig);
    }
}

static int record_main(int argc, char **argv)
{
    enum { OPT_QEMU = 256, OPT_CPU, OPT_RING, OPT_DRAIN, OPT_SIGNAL, OPT_THRESHOLD,
           OPT_RANDOM };
    static const struct option opts[] = {
        { "event", required_argument, NULL, 'e' },
        { "interval", required_argument, NULL, 'i' },
        { "output", required_argument, NULL, 'o' },
        { "qemu", required_argument, NULL, OPT_QEMU },
        { "cpu", required_argument, NULL, OPT_CPU },
        { "ring", required_argument, NULL, OPT_RING },
        { "drain-ms", required_argument, NULL, OPT_DRAIN },
        { "signal", required_argument, NULL, OPT_SIGNAL },
        { "threshold-signal", required_argument, NULL, OPT_THRESHOLD },
        { "random", required_argument, NULL, OPT_RANDOM },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *event = "ire", *output = "lwp-prof.data", *qemu_opt = NULL;
    const char *cpu = "max", *ring = NULL, *drain = NULL, *sig = NULL, *thr = NULL;
    const char *random_bits = NULL;
    unsigned long interval = 65535;
    int quiet = 0, c, bits, fd, status;
    char *prog, *qemu, *dir, *lib, *end;
    GPtrArray *av;
    pid_t pid;

    optind = 1;
    while ((c = getopt_long(argc, argv, "+e:i:o:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'e':
            event = optarg;
            if (strcmp(event, "ire") && strcmp(event, "bre")) {
                fail("-e %s: unknown event; LWP's hardware events here are ire "
                     "(instructions retired) and bre (branches retired)", event);
            }
            break;
        case 'i':
            errno = 0;
            interval = strtoul(optarg, &end, 0);
            if (errno || *end || !*optarg || interval == 0 || interval >= 1ul << 25) {
                fail("-i %s: the interval must be a number from 1 to 33554431 "
                     "(EventInterval is 25 bits)", optarg);
            }
            break;
        case 'o':
            output = optarg;
            break;
        case OPT_QEMU:
            qemu_opt = optarg;
            break;
        case OPT_CPU:
            cpu = optarg;
            break;
        case OPT_RING:
            ring = optarg;
            break;
        case OPT_DRAIN:
            drain = optarg;
            break;
        case OPT_SIGNAL:
            sig = optarg;
            break;
        case OPT_THRESHOLD:
            thr = optarg;
            break;
        case OPT_RANDOM:
            random_bits = optarg;
            break;
        case 'q':
            quiet = 1;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "lwp-prof: record: no program given\n");
        usage(stderr);
        return 2;
    }
    prog = find_program(argv[optind]);
    if (!prog) {
        fail("%s: program not found or not executable", argv[optind]);
    }
    bits = inspect_program(prog);

    fd = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        fail("cannot write the output %s: %s", output, strerror(errno));
    }
    close(fd);

    dir = self_dir();
    lib = g_build_filename(dir, bits == 64 ? "liblwp-prof.so" : "liblwp-prof-i386.so",
                           NULL);
    if (access(lib, R_OK)) {
        fail("the preload library %s is missing", lib);
    }
    qemu = choose_qemu(qemu_opt, bits);

    av = g_ptr_array_new();
    if (qemu) {
        const char *pre = getenv("LD_PRELOAD");
        g_ptr_array_add(av, qemu);
        g_ptr_array_add(av, "-cpu");
        g_ptr_array_add(av, (char *)cpu);
        g_ptr_array_add(av, "-0");              /* argv[0] as given */
        g_ptr_array_add(av, argv[optind]);
        g_ptr_array_add(av, "-E");
        g_ptr_array_add(av, pre && *pre ? g_strdup_printf("LD_PRELOAD=%s:%s", lib, pre)
                                        : g_strdup_printf("LD_PRELOAD=%s", lib));
        /* in qemu's own environment it would be preloaded into qemu */
        unsetenv("LD_PRELOAD");
    } else {
        const char *pre = getenv("LD_PRELOAD");
        char *v = pre && *pre ? g_strdup_printf("%s:%s", lib, pre) : g_strdup(lib);
        setenv("LD_PRELOAD", v, 1);
    }
    /* The library's configuration (docs/lwp-prof.rst): qemu-user passes its
     * environment to the program. */
    setenv("LWP_PROF_OUTPUT", output, 1);
    setenv("LWP_PROF_EVENT", event, 1);
    setenv("LWP_PROF_INTERVAL", g_strdup_printf("%lu", interval), 1);
    if (ring) {
        setenv("LWP_PROF_RING", ring, 1);
    }
    if (drain) {
        setenv("LWP_PROF_DRAIN_MS", drain, 1);
    }
    if (sig) {
        setenv("LWP_PROF_SIGNAL", sig, 1);
    }
    if (thr) {
        setenv("LWP_PROF_THRESHOLD_SIGNAL", thr, 1);
    }
    if (random_bits) {
        setenv("LWP_PROF_RANDOM", random_bits, 1);
    }
    /* under an emulator, the program's path; run directly, argv[0] as given */
    g_ptr_array_add(av, qemu ? prog : argv[optind]);
    for (int i = optind + 1; i < argc; i++) {
        g_ptr_array_add(av, argv[i]);
    }
    g_ptr_array_add(av, NULL);

    pid = fork();
    if (pid < 0) {
        fail("fork: %s", strerror(errno));
    }
    if (pid == 0) {
        char **a = (char **)av->pdata;
        execv(qemu ? a[0] : prog, a);
        fprintf(stderr, "lwp-prof: cannot run %s: %s\n", a[0], strerror(errno));
        _exit(127);
    }
    /* The terminal's signals reach the program anyway; pass on the others. */
    child_pid = pid;
    {
        struct sigaction sa = { .sa_handler = forward_signal };
        struct sigaction ign = { .sa_handler = SIG_IGN };

        sigaction(SIGINT, &ign, NULL);
        sigaction(SIGQUIT, &ign, NULL);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGHUP, &sa, NULL);
        sigaction(SIGUSR1, &sa, NULL);
        sigaction(SIGUSR2, &sa, NULL);
    }
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            fail("waitpid: %s", strerror(errno));
        }
    }
    if (!quiet && !(WIFEXITED(status) && WEXITSTATUS(status) == TOOL_FAILURE)) {
        summarize(output);
    }
    if (WIFSIGNALED(status)) {
        return 128 + WTERMSIG(status);
    }
    return WEXITSTATUS(status);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
        !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "record")) {
        return record_main(argc - 1, argv + 1);
    }
    if (!strcmp(argv[1], "report")) {
        return report_main(argc - 1, argv + 1);
    }
    fprintf(stderr, "lwp-prof: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
