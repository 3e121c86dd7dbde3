/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * liblwp-prof's parts and what they share: the per-thread LWP sessions
 * and the process's life (lwp-prof-preload.c), the data file
 * (preload-output.c), draining from signals (preload-drain.c) and the
 * interposed libc functions (preload-interpose.c).  Built with
 * -fvisibility=hidden: only the interposed functions are exported.
 */
#ifndef LWP_PROF_PRELOAD_H
#define LWP_PROF_PRELOAD_H

#define _GNU_SOURCE
#include <cpuid.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <x86intrin.h>

#include "linux-lwp-abi.h"
#include "lwp-prof-format.h"

#define EXPORT __attribute__((visibility("default")))
#define TOOL_FAILURE 125            /* exit status when profiling cannot start */

/* LWPCB fields (figure 6-1); the event area is at LwpEventOffset. */
#define CB_FLAGS 0
#define CB_BUFFER_SIZE 4
#define CB_BUFFER_BASE 8
#define CB_HEAD 16
#define CB_MISSED 24
#define CB_THRESHOLD 32
#define CB_TAIL 64
#define FLAG_INT (1u << 31)
#define CB_SIZE_MASK 0x0fffffffu    /* BufferSize; Random is bits 31:28 */

/* The LWP component of an XSAVE image (figure 7-1). */
#define XS_LWPCB 0
#define XS_HEAD 12
#define SIGFRAME_XSTATE_MAGIC1 0x46505853u

struct lwp_caps {
    uint32_t eax, ebx, ecx, edx;    /* CPUID 8000_001Ch */
    unsigned cb_size;               /* bytes */
    unsigned event_offset;
    unsigned min_ring_records;
    unsigned xsave_offset;          /* CPUID 0Dh.3Eh EBX */
};

struct lwp_thread {
    struct lwp_thread *next;
    pid_t tid;
    uint8_t *cb;
    uint8_t *ring;
    size_t map_size;
    timer_t timer;
    int have_timer;
    volatile sig_atomic_t active;   /* read by the signal handler */
    volatile uint32_t drain_seq;    /* polled by the exiting thread */
    uint32_t drains;
    uint64_t samples;
    uint64_t missed_written;
};

/* The timer's sigev_value: how the handler knows its own timer's signal. */
#define TIMER_COOKIE ((void *)0x4c575046)

struct preload_config {
    const char *output;
    unsigned event;                 /* 2 = IRE, 3 = BRE */
    uint32_t interval;
    unsigned ring_records;
    unsigned drain_ms;
    int signal;                     /* timer signal */
    int threshold_signal;           /* OS-delivered threshold signal, or 0 */
    unsigned random;                /* LWPCB.Random: randomized low bits */
    /* the process tree (preload-exec.c) */
    int inherit;                    /* LWP_PROF_INHERIT: follow fork, exec, spawn */
    int emulated;                   /* started under an emulator (LWP_PROF_QEMU64/32 set) */
    const char *qemu64, *qemu32;    /* the emulators, by ELF class */
    const char *cpu;                /* their -cpu */
    const char *preload_spec;       /* LWP_PROF_PRELOAD: liblwp-prof's LD_PRELOAD entry */
    uint64_t session;               /* LWP_PROF_SESSION: one per record */
    long reexec_pid;                /* LWP_PROF_REEXEC: re-run under the emulator */
    char comm[64];                  /* this image's command name */
    const char *saved_env[16];      /* "NAME=value" of the configuration, for */
};                                  /* children given an environment of their own */

#define LWP_PROF_N_VARS 16

extern struct preload_config cfg;
extern struct lwp_caps caps;
extern int profiling;               /* set once the main thread profiles */
extern pid_t owner_pid;             /* the process this profile belongs to */
extern int owner_is_root;           /* it is the program record started */
extern int forked_child;            /* it is a child of fork() */
extern pthread_key_t thread_key;
extern pthread_mutex_t threads_lock;
extern struct lwp_thread *threads;
extern __thread struct lwp_thread *self __attribute__((tls_model("initial-exec")));
extern int out_fd;
extern struct sigaction program_action;     /* the program's, for the */
extern int program_action_set;              /* drain signal */
extern volatile sig_atomic_t exit_drain_requested;  /* for the handler */

static inline uint32_t cb32(struct lwp_thread *t, unsigned off)
{
    return *(volatile uint32_t *)(t->cb + off);    /* LWP writes it */
}

static inline uint64_t cb64(struct lwp_thread *t, unsigned off)
{
    return *(volatile uint64_t *)(t->cb + off);    /* LWP writes it */
}

/* lwp-prof-preload.c */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
struct lwp_thread *thread_begin(int check_interval);
void start_timer(struct lwp_thread *t);
void process_stop(uint32_t reason);

/* preload-output.c */
int output_ok(void);
void write_all(int fd, const void *buf, size_t len);
void open_output(const char *path, int exclusive);
void write_modules(void);
void output_reopen_after_fork(const char *path);
void write_thread_block(struct lwp_thread *t);
void write_end(uint32_t reason);

/* preload-exec.c */
void reexec_under_emulator(void);

/* preload-drain.c */
void drain(struct lwp_thread *t, uint32_t head);
void on_drain_signal(int sig, siginfo_t *si, void *uc);
int drain_signal(void);
int real_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
int real_sigmask(int how, const sigset_t *set, sigset_t *old);
void block_drain_signal(sigset_t *old);
void unblock_drain_signal(void);

#endif
