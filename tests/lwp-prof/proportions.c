/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A program that retires instructions (and branches) in known proportions,
 * for lwp-prof's accuracy tests: work60, work30 and work10 each run the
 * same five-instruction loop (one branch per iteration) 6, 3 and 1 times
 * BASE iterations, so 60 %, 30 % and 10 % of the instructions and of the
 * branches the program retires are theirs (the rest of the program is a
 * few thousand instructions).
 *
 *   proportions serial    the three in a row
 *   proportions threads   work60 in the main thread, work30 and work10 in
 *                         two threads of their own
 *   proportions fork      work60 and work10 in the parent, work30 in a
 *                         child of fork() (profiled into FILE.<pid>)
 *   proportions signals   serial, interrupted by 100 SIGUSR1s that its own
 *                         handler must all see
 *   proportions exec      serial, then exec's a shell that prints the
 *                         LD_PRELOAD it got
 *   proportions masked    threads, every one with all signals blocked (the
 *                         way xz starts its workers, and then some)
 *   proportions rtsig     serial, with 100 of lwp-prof's own drain signal
 *                         (SIGRTMAX-8) raised and handled by the program,
 *                         installed with signal() and then sigaction()
 *   proportions system CMD  system(CMD) (glibc spawns /bin/sh in a way no
 *                         preload sees), exits with its status
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define BASE 1000000ul

#define WORK(name) \
    __attribute__((noinline)) void name(unsigned long n) \
    { \
        asm volatile("1: addl $1, %%eax\n\t" \
                     "addl $3, %%edx\n\t" \
                     "xorl %%eax, %%edx\n\t" \
                     "dec %0\n\t" \
                     "jnz 1b" \
                     : "+c"(n) : : "eax", "edx", "cc"); \
    }

WORK(work60)
WORK(work30)
WORK(work10)

static int block_all;

static void *thread_main(void *arg)
{
    if (block_all) {
        sigset_t all;
        sigfillset(&all);
        sigprocmask(SIG_BLOCK, &all, NULL);
    }
    work30 == arg ? work30(3 * BASE) : work10(BASE);
    return NULL;
}

static volatile sig_atomic_t usr1_seen, info_seen;

static void on_usr1(int sig)
{
    (void)sig;
    usr1_seen++;
}

static void on_info(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    info_seen += sig == SIGRTMAX - 8 && si->si_code == SI_TKILL && si->si_pid == getpid();
}

/* Serial work in 100 slices; @raise_between(i) after the first of each. */
static void sliced(void (*raise_between)(int))
{
    for (int i = 0; i < 100; i++) {
        work60(6 * BASE / 100);
        raise_between(i);
        work30(3 * BASE / 100);
        work10(BASE / 100);
    }
}

static void raise_usr1(int i)
{
    (void)i;
    raise(SIGUSR1);
}

static void raise_rt(int i)
{
    struct sigaction sa = { .sa_sigaction = on_info, .sa_flags = SA_SIGINFO }, old;

    if (i == 50) {
        sigaction(SIGRTMAX - 8, &sa, &old);
        if (old.sa_handler != on_usr1) {
            fprintf(stderr, "proportions: sigaction did not return "
                    "the signal() handler\n");
            exit(1);
        }
    }
    raise(SIGRTMAX - 8);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "serial";

    if (!strcmp(mode, "serial")) {
        work60(6 * BASE);
        work30(3 * BASE);
        work10(BASE);
    } else if (!strcmp(mode, "threads") || !strcmp(mode, "masked")) {
        pthread_t a, b;
        sigset_t all, old;
        block_all = !strcmp(mode, "masked");
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, block_all ? &all : NULL, &old);
        pthread_create(&a, NULL, thread_main, (void *)work30);
        pthread_create(&b, NULL, thread_main, (void *)work10);
        work60(6 * BASE);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
    } else if (!strcmp(mode, "fork")) {
        int status;
        pid_t pid = fork();
        if (pid == 0) {
            work30(3 * BASE);
            exit(0);
        }
        work60(6 * BASE);
        work10(BASE);
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
            WEXITSTATUS(status)) {
            fprintf(stderr, "proportions: the child failed\n");
            return 1;
        }
        printf("child %d\n", (int)pid);
    } else if (!strcmp(mode, "signals")) {
        struct sigaction sa = { .sa_handler = on_usr1 };
        sigaction(SIGUSR1, &sa, NULL);
        sliced(raise_usr1);
        if (usr1_seen != 100) {
            fprintf(stderr, "proportions: %d of 100 SIGUSR1 seen\n", (int)usr1_seen);
            return 1;
        }
        printf("100 signals handled\n");
    } else if (!strcmp(mode, "rtsig")) {
        if (signal(SIGRTMAX - 8, on_usr1) != SIG_DFL) {
            fprintf(stderr, "proportions: signal() found a handler already\n");
            return 1;
        }
        sliced(raise_rt);
        if (usr1_seen != 50 || info_seen != 50) {
            fprintf(stderr, "proportions: %d + %d of 50 + 50 signals seen\n",
                    (int)usr1_seen, (int)info_seen);
            return 1;
        }
        printf("100 signals handled\n");
    } else if (!strcmp(mode, "exec")) {
        work60(6 * BASE);
        work30(3 * BASE);
        work10(BASE);
        fflush(stdout);
        execl("/bin/sh", "sh", "-c", "echo \"LD_PRELOAD=[$LD_PRELOAD]\"", (char *)NULL);
        perror("execl");
        return 1;
    } else if (!strcmp(mode, "system") && argc > 2) {
        int status = system(argv[2]);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    } else {
        fprintf(stderr, "usage: proportions "
                "[serial|threads|fork|signals|exec|masked|rtsig|system CMD]\n");
        return 2;
    }
    return 0;
}
