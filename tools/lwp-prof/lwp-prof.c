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
#include <inttypes.h>
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

#include "prof-report.h"
#include "exec-target.h"

#ifndef LWP_PROF_QEMU_DIR
#define LWP_PROF_QEMU_DIR ""
#endif
#define TOOL_FAILURE 125

static void usage(FILE *f)
{
    fputs("usage: lwp-prof record [OPTIONS] -- PROGRAM [ARGS...]\n"
          "       lwp-prof report [OPTIONS] [FILE]\n"
          "       lwp-prof annotate [OPTIONS] [SYMBOL]\n"
          "       lwp-prof script [OPTIONS]\n"
          "\n"
          "Profile an unmodified, dynamically linked x86 program with AMD Lightweight\n"
          "Profiling (LWP): every thread samples into its own ring buffer, in every\n"
          "process the program starts (fork, exec, posix_spawn, #! scripts).\n"
          "\n"
          "record options:\n"
          "  -e, --event EVENT     ire (instructions retired, default) or bre (branches\n"
          "                        retired)\n"
          "  -i, --interval N      a sample every N+1 events (default 65535; LWP's\n"
          "                        EventInterval, at least the CPU's minimum)\n"
          "  -o, --output FILE     data file (default lwp-prof.data); every other process\n"
          "                        of the tree writes FILE.<pid>[.<n>]\n"
          "      --no-inherit      profile the program only (and its forked children):\n"
          "                        the programs it execs or spawns run unprofiled\n"
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
          "report, annotate, script options: see lwp-prof COMMAND --help.\n"
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

/*
 * What PATH runs (a "#!" script followed as the kernel does): fails for
 * anything lwp-prof cannot preload into.
 */
static void inspect_program(const char *path, struct exec_target *t)
{
    exec_resolve(path, t);
    switch (t->kind) {
    case EXEC_DYNAMIC:
        return;
    case EXEC_UNREADABLE:
        fail("cannot read %s%s%s: %s", t->elf ? t->elf : path,
             t->n_prefix ? ", the interpreter of " : "", t->n_prefix ? path : "",
             strerror(errno ? errno : EACCES));
    case EXEC_BAD_SCRIPT:
        fail("%s: its #! line names no interpreter the kernel would run "
             "(empty, longer than 255 bytes, or more than 4 scripts deep)", path);
    case EXEC_PRIVILEGED:
        fail("%s is set-user-ID, set-group-ID or has file capabilities: lwp-prof does "
             "not profile privileged programs (an LD_PRELOAD library is not loaded "
             "into them)", t->elf);
    case EXEC_STATIC:
        fail("%s is statically linked: lwp-prof preloads a library, which only a "
             "dynamically linked program loads (relink it without -static, or "
             "make the program use LWP itself)", t->elf);
    case EXEC_FOREIGN:
        fail("%s is not an x86 ELF executable nor a #! script whose interpreter is "
             "one (lwp-prof runs dynamically linked x86 programs)", t->elf);
    }
}

/* Remove the per-process files a previous record left beside OUTPUT. */
static void remove_old_children(const char *output)
{
    char *dir = g_path_get_dirname(output), *base = g_path_get_basename(output);
    GDir *gd = g_dir_open(dir, 0, NULL);
    const char *name;

    while (gd && (name = g_dir_read_name(gd))) {
        const char *rest = name + strlen(base);
        char *p;
        char magic[8];
        FILE *f;

        if (!g_str_has_prefix(name, base) || rest[0] != '.' ||
            !g_regex_match_simple("^\\.[0-9]+(\\.[0-9]+)?$", rest, 0, 0)) {
            continue;
        }
        p = g_build_filename(dir, name, NULL);
        f = fopen(p, "rb");
        if (f && (fread(magic, 1, 8, f) == 0 || !memcmp(magic, LWPPROF_MAGIC, 8))) {
            unlink(p);          /* only lwp-prof's own files (or empty ones) */
        }
        if (f) {
            fclose(f);
        }
        g_free(p);
    }
    if (gd) {
        g_dir_close(gd);
    }
    g_free(dir);
    g_free(base);
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

/*
 * The emulator of the other class beside @qemu (qemu-x86_64 <-> qemu-i386),
 * if it is there: the one for programs of that class the tree runs.
 */
static char *sibling_qemu(const char *qemu, int bits)
{
    char *dir = g_path_get_dirname(qemu), *base = g_path_get_basename(qemu), *p = NULL;
    const char *from = bits == 64 ? "qemu-i386" : "qemu-x86_64";
    const char *to = bits == 64 ? "qemu-x86_64" : "qemu-i386";
    char *hit = strstr(base, from);

    if (hit) {
        char *name = g_strdup_printf("%.*s%s%s", (int)(hit - base), base, to,
                                     hit + strlen(from));
        p = g_build_filename(dir, name, NULL);
        g_free(name);
        if (access(p, X_OK)) {
            g_free(p);
            p = NULL;
        }
    }
    g_free(dir);
    g_free(base);
    return p;
}

static char *choose_qemu(const char *opt, int bits, int required)
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
    if (!p && required) {
        fail("this CPU has no LWP and no emulator was found: build qemu-lwp "
             "(bash scripts/run.sh build) or name one with --qemu PATH");
    }
    return p;
}

static void summarize(const char *output)
{
    GPtrArray *tree = prof_tree_load(output, 0);
    struct prof_data *d;
    size_t samples = 0;
    uint64_t missed = 0;
    unsigned threads = 0;

    if (!tree) {
        return;
    }
    d = g_ptr_array_index(tree, 0);
    fprintf(stderr,
            "lwp-prof: %zu samples (%s every %u), %u thread(s), %llu missed, in %s\n",
            d->n_samples, prof_event_name(d->hdr.event_id), d->hdr.interval + 1,
            d->n_threads, (unsigned long long)d->missed, output);
    for (guint i = 0; i < tree->len; i++) {
        struct prof_data *x = g_ptr_array_index(tree, i);
        samples += x->n_samples;
        missed += x->missed;
        threads += x->n_threads;
    }
    if (tree->len > 1) {
        fprintf(stderr, "lwp-prof: the tree: %u processes, %zu samples, %u thread(s), %llu "
                "missed, in %s and %s.<pid>[.<n>] (lwp-prof report %s reads them all)\n",
                tree->len, samples, threads, (unsigned long long)missed, output, output, output);
    }
    if (missed) {
        fprintf(stderr, "lwp-prof: %llu samples were lost to a full ring buffer: raise "
                "--ring or lower --drain-ms\n", (unsigned long long)missed);
    }
    for (guint i = 0; i < tree->len; i++) {
        prof_data_free(g_ptr_array_index(tree, i));
    }
    g_ptr_array_free(tree, TRUE);
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
           OPT_RANDOM, OPT_NO_INHERIT };
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
        { "no-inherit", no_argument, NULL, OPT_NO_INHERIT },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *event = "ire", *output = "lwp-prof.data", *qemu_opt = NULL;
    const char *cpu = "max", *ring = NULL, *drain = NULL, *sig = NULL, *thr = NULL;
    const char *random_bits = NULL;
    unsigned long interval = 65535;
    int quiet = 0, inherit = 1, c, bits, fd, status;
    char *prog, *qemu, *dir, *lib, *end, *spec, *qemu64 = NULL, *qemu32 = NULL;
    char abs_output[PATH_MAX];
    struct exec_target target;
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
        case OPT_NO_INHERIT:
            inherit = 0;
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
    inspect_program(prog, &target);
    bits = target.bits;

    fd = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        fail("cannot write the output %s: %s", output, strerror(errno));
    }
    close(fd);
    if (!realpath(output, abs_output)) {
        fail("cannot write the output %s: %s", output, strerror(errno));
    }
    remove_old_children(abs_output);

    dir = self_dir();
    lib = g_build_filename(dir, bits == 64 ? "liblwp-prof.so" : "liblwp-prof-i386.so",
                           NULL);
    if (access(lib, R_OK)) {
        fail("the preload library %s is missing", lib);
    }
    /*
     * The LD_PRELOAD entry every process of the tree gets: the dynamic
     * loader expands $PLATFORM (x86_64, i686, ...) to the library of its
     * own class, so no program loads one of the wrong class.
     */
    {
        char *probe = g_build_filename(dir, "preload", "x86_64", "liblwp-prof.so", NULL);
        spec = access(probe, R_OK) ? g_strdup(lib)
                                   : g_build_filename(dir, "preload", "$PLATFORM",
                                                      "liblwp-prof.so", NULL);
        g_free(probe);
    }
    qemu = choose_qemu(qemu_opt, bits, 1);
    if (qemu) {
        /* the other class's emulator, for the programs of that class the tree runs */
        char *other = sibling_qemu(qemu, bits == 64 ? 32 : 64);

        if (!other && !qemu_opt && !(getenv("LWP_PROF_QEMU") && *getenv("LWP_PROF_QEMU"))) {
            other = choose_qemu(NULL, bits == 64 ? 32 : 64, 0);
        }
        qemu64 = bits == 64 ? qemu : other;
        qemu32 = bits == 64 ? other : qemu;
        /* the tree's processes may run anywhere: absolute paths */
        for (char **q = &qemu64; q; q = q == &qemu64 ? &qemu32 : NULL) {
            char *abs = *q ? realpath(*q, NULL) : NULL;
            if (abs) {
                *q = abs;
            }
        }
    }

    av = g_ptr_array_new();
    if (qemu) {
        const char *pre = getenv("LD_PRELOAD");
        const char *entry = inherit ? spec : lib;
        g_ptr_array_add(av, qemu);
        g_ptr_array_add(av, "-cpu");
        g_ptr_array_add(av, (char *)cpu);
        g_ptr_array_add(av, "-0");              /* argv[0] as given, or the #! interpreter */
        g_ptr_array_add(av, target.n_prefix ? (char *)target.prefix[0] : argv[optind]);
        g_ptr_array_add(av, "-E");
        g_ptr_array_add(av, pre && *pre ? g_strdup_printf("LD_PRELOAD=%s:%s", entry, pre)
                                        : g_strdup_printf("LD_PRELOAD=%s", entry));
        /* in qemu's own environment it would be preloaded into qemu */
        unsetenv("LD_PRELOAD");
    } else {
        const char *pre = getenv("LD_PRELOAD");
        const char *entry = inherit ? spec : lib;
        char *v = pre && *pre ? g_strdup_printf("%s:%s", entry, pre) : g_strdup(entry);
        setenv("LD_PRELOAD", v, 1);
    }
    /* The library's configuration (docs/lwp-prof.rst): qemu-user passes its
     * environment to the program, and the program to its children. */
    setenv("LWP_PROF_OUTPUT", abs_output, 1);
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
    {
        char *base = g_path_get_basename(prog);
        setenv("LWP_PROF_COMM", base, 1);
        g_free(base);
    }
    setenv("LWP_PROF_SESSION", g_strdup_printf("0x%" G_GINT64_MODIFIER "x",
           (guint64)g_get_real_time() ^ ((guint64)getpid() << 40)), 1);
    if (inherit) {
        setenv("LWP_PROF_INHERIT", "1", 1);
        setenv("LWP_PROF_PRELOAD", spec, 1);
        setenv("LWP_PROF_CPU", cpu, 1);
        if (qemu64) {
            setenv("LWP_PROF_QEMU64", qemu64, 1);
        }
        if (qemu32) {
            setenv("LWP_PROF_QEMU32", qemu32, 1);
        }
    } else {
        setenv("LWP_PROF_INHERIT", "0", 1);
    }
    /*
     * Under an emulator: the ELF to run, then what the #! lines put before
     * the arguments; run directly, the program as given (the kernel
     * follows #!), argv[0] as given.
     */
    if (qemu) {
        g_ptr_array_add(av, (char *)target.elf);
        for (int i = 1; i < target.n_prefix; i++) {
            g_ptr_array_add(av, (char *)target.prefix[i]);
        }
    } else {
        g_ptr_array_add(av, argv[optind]);
    }
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
        char root[32];

        snprintf(root, sizeof(root), "%d", (int)getpid());
        setenv("LWP_PROF_ROOT", root, 1);   /* the library's root image */
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
    if (!strcmp(argv[1], "annotate")) {
        return annotate_main(argc - 1, argv + 1);
    }
    if (!strcmp(argv[1], "script")) {
        return script_main(argc - 1, argv + 1);
    }
    fprintf(stderr, "lwp-prof: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
