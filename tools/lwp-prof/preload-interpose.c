/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * liblwp-prof: the libc functions it interposes, to start a session in
 * every new thread (pthread_create), to keep the drain signal its own
 * (sigprocmask, pthread_sigmask, sigaction, signal).  exec and spawn are
 * in preload-exec.c.
 */
#include "preload.h"

struct start_args {
    void *(*fn)(void *);
    void *arg;
};

static void *thread_trampoline(void *p)
{
    struct start_args a = *(struct start_args *)p;
    struct lwp_thread *t;

    free(p);
    /* Creators often block every signal around pthread_create (xz does). */
    unblock_drain_signal();
    write_modules();
    t = thread_begin(0);
    if (t) {
        pthread_setspecific(thread_key, t);
    }
    return a.fn(a.arg);
}

EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr,
                          void *(*fn)(void *), void *arg)
{
    static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    struct start_args *a;
    int rc;

    if (!real) {
        real = dlsym(RTLD_NEXT, "pthread_create");
    }
    a = profiling ? malloc(sizeof(*a)) : NULL;
    if (!a) {
        return real(th, attr, fn, arg);
    }
    a->fn = fn;
    a->arg = arg;
    rc = real(th, attr, thread_trampoline, a);
    if (rc) {
        free(a);
    }
    return rc;
}

/*
 * A thread that blocks every signal (worker threads often do) would never
 * drain: the drain signal stays unblocked while the thread is profiled.
 */
static const sigset_t *without_drain_signal(int how, const sigset_t *set, sigset_t *copy)
{
    if (!profiling || !set || how == SIG_UNBLOCK || !self || !self->active ||
        !sigismember(set, drain_signal())) {
        return set;
    }
    *copy = *set;
    sigdelset(copy, drain_signal());
    return copy;
}

EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
    sigset_t copy;

    return real_sigmask(how, without_drain_signal(how, set, &copy), old);
}

EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
    static int (*real)(int, const sigset_t *, sigset_t *);
    sigset_t copy;

    if (!real) {
        real = (int (*)(int, const sigset_t *, sigset_t *))
               dlsym(RTLD_NEXT, "sigprocmask");
    }
    return real(how, without_drain_signal(how, set, &copy), old);
}

EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (!profiling || sig != drain_signal()) {
        return real_sigaction(sig, act, old);
    }
    if (old) {
        if (program_action_set) {
            *old = program_action;
        } else {
            memset(old, 0, sizeof(*old));
            old->sa_handler = SIG_DFL;
        }
    }
    if (act) {
        program_action = *act;
        program_action_set = 1;
    }
    return 0;
}

/* glibc's signal() calls its internal sigaction, not the interposed one. */
EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
    static sighandler_t (*real)(int, sighandler_t);
    struct sigaction sa, old;

    if (!profiling || sig != drain_signal()) {
        if (!real) {
            real = (sighandler_t (*)(int, sighandler_t))dlsym(RTLD_NEXT, "signal");
        }
        return real(sig, handler);
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = handler;
    sa.sa_flags = SA_RESTART;
    sigaction(sig, &sa, &old);
    return old.sa_handler;
}
