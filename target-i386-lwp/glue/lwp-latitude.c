/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qemu-lwp: latitude mode (docs/lwp-latitude.rst).  Off by default, when
 * the model takes the most convenient legal choice everywhere.  Its first
 * freedom is the late threshold interrupt, spec 1.1 (Report): "the
 * interrupt may occur significantly later than the event that caused the
 * threshold to be reached".  With "lwp-irq-delay=N", each threshold
 * interrupt stays pending for a seeded draw of 0..N instructions of guest
 * time, through CPL changes, other interrupts and system calls, and then
 * reaches the local APIC at the vector LWP_CFG held when the threshold was
 * met.  Thresholds met while one is pending join it: one edge, as the
 * APIC's IRR would merge them.
 *
 * The freedoms of section 8.3 are the model's (lwp_ring.cc), configured
 * here: "lwp-tail-reread=n" re-reads BufferTailOffset only every nth store
 * while the threshold appears met, and "lwp-interval-reread=on" lets each
 * session draw whether its intervals are cached at its start or read from
 * the LWPCB at each overflow.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "cpu.h"
#include "lwp-irq.h"
#include "lwp-latitude.h"
#include "lwp-qemu.h"
#ifndef CONFIG_USER_ONLY
#include "migration/vmstate.h"
#include "qemu/error-report.h"
#include "qemu/timer.h"
#include "system/kvm.h"
#include "system/cpu-timers.h"
#endif

bool x86_lwp_latitude_on(X86CPU *cpu)
{
    QemuLwpLatitude *lat = &cpu->lwp_latitude;

    return lat->irq_delay || lat->store_delay || lat->tail_reread ||
           lat->interval_reread;
}

/* True if the model takes a freedom of section 8.3 (state in LwpState). */
static bool latitude_ring_on(X86CPU *cpu)
{
    return cpu->lwp_latitude.tail_reread || cpu->lwp_latitude.interval_reread;
}

/* splitmix64: a seed of any value gives a well-mixed stream. */
static uint64_t latitude_draw(QemuLwpLatitude *lat)
{
    uint64_t z = (lat->rng += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/*
 * Spec 1.1 (Store): "the Store stage (and subsequent stages) may complete
 * some number of cycles after the tagged instruction retires".  A record
 * that could be stored after its TB, @after instructions after its own,
 * is stored there if a draw of 0 to "lwp-store-delay" reaches @after;
 * else where its instruction retires.
 */
bool x86_lwp_latitude_store_late(X86CPU *cpu, uint32_t after)
{
    QemuLwpLatitude *lat = &cpu->lwp_latitude;

    return lat->store_delay &&
           latitude_draw(lat) % ((uint64_t)lat->store_delay + 1) >= after;
}

/* Checks that both linux-user and system mode make. */
static bool latitude_store_delay_ok(X86CPU *cpu, Error **errp)
{
    QemuLwpLatitude *lat = &cpu->lwp_latitude;

    if (lat->store_delay > LWP_LATITUDE_STORE_DELAY_MAX) {
        error_setg(errp, "lwp-store-delay=%" PRIu32 " is out of range: at "
                   "most %u instructions (the end of a translation block)",
                   lat->store_delay, LWP_LATITUDE_STORE_DELAY_MAX);
        return false;
    }
    if (lat->store_delay && !(cpu->env.features[FEAT_8000_0001_ECX] &
                              CPUID_EXT3_LWP)) {
        error_setg(errp, "lwp-store-delay needs the CPU feature 'lwp'");
        return false;
    }
    return true;
}

void x86_lwp_latitude_reset(X86CPU *cpu)
{
    QemuLwpLatitude *lat = &cpu->lwp_latitude;

    /* Each vCPU its own stream, the same after every reset. */
    lat->rng = lat->seed ^ (0xd1342543de82ef95ull * (CPU(cpu)->cpu_index + 1));
    lat->irq_pending = 0;
    /*
     * The model's draws mix in a stream of their own, so that they do not
     * move with the late interrupt's and the late store's draws.
     */
    lat->model.tail_reread = lat->tail_reread;
    lat->model.interval_draw = lat->interval_reread;
    lat->model.seed = lat->interval_reread ?
                      lat->rng ^ 0x5bd1e9955bd1e995ull : 0;
#ifndef CONFIG_USER_ONLY
    if (lat->irq_timer) {
        timer_del(lat->irq_timer);
    }
#endif
}

/* What both modes check of the section 8.3 freedoms' properties. */
static bool latitude_ring_realize(X86CPU *cpu, Error **errp)
{
    QemuLwpLatitude *lat = &cpu->lwp_latitude;

    if (lat->tail_reread > LWP_LATITUDE_TAIL_REREAD_MAX) {
        error_setg(errp, "lwp-tail-reread=%" PRIu32 " is out of range: "
                   "0 (off) to %u, the n of \"every nth time\" (spec 8.3 "
                   "allows some small value)", lat->tail_reread,
                   LWP_LATITUDE_TAIL_REREAD_MAX);
        return false;
    }
    if (latitude_ring_on(cpu) && !(cpu->env.features[FEAT_8000_0001_ECX] &
                                   CPUID_EXT3_LWP)) {
        error_setg(errp, "%s needs the CPU feature 'lwp'",
                   lat->tail_reread ? "lwp-tail-reread" :
                   "lwp-interval-reread");
        return false;
    }
    return true;
}

#ifdef CONFIG_USER_ONLY

bool x86_lwp_latitude_realize(X86CPU *cpu, Error **errp)
{
    if (!latitude_store_delay_ok(cpu, errp)) {
        return false;
    }
    if (cpu->lwp_latitude.irq_delay) {
        error_setg(errp, "lwp-irq-delay: linux-user has no LWP threshold "
                   "interrupt to delay");
        return false;
    }
    /* The threshold is evaluated only with interrupts, which it lacks. */
    if (cpu->lwp_latitude.tail_reread) {
        error_setg(errp, "lwp-tail-reread: linux-user has no LWP threshold "
                   "interrupt, so no threshold condition to re-read the "
                   "tail for");
        return false;
    }
    return latitude_ring_realize(cpu, errp);
}

void x86_lwp_latitude_unrealize(X86CPU *cpu)
{
}

#else

static void latitude_irq_fire(void *opaque)
{
    X86CPU *cpu = opaque;
    QemuLwpLatitude *lat = &cpu->lwp_latitude;

    if (lat->irq_pending) {
        lat->irq_pending = 0;
        x86_lwp_deliver_threshold_irq(&cpu->env, lat->irq_vector);
    }
}

bool x86_lwp_latitude_realize(X86CPU *cpu, Error **errp)
{
    QemuLwpLatitude *lat = &cpu->lwp_latitude;

    if (!latitude_store_delay_ok(cpu, errp)) {
        return false;
    }
    if (lat->store_delay && kvm_enabled()) {
        error_setg(errp, "lwp-store-delay needs TCG: under KVM the host CPU "
                   "stores the records");
        return false;
    }
    if (lat->irq_delay > LWP_LATITUDE_IRQ_DELAY_MAX) {
        error_setg(errp, "lwp-irq-delay=%" PRIu32 " is out of range: at most "
                   "%u instructions", lat->irq_delay,
                   LWP_LATITUDE_IRQ_DELAY_MAX);
        return false;
    }
    if (lat->irq_delay && !(cpu->env.features[FEAT_8000_0001_ECX] &
                            CPUID_EXT3_LWP)) {
        error_setg(errp, "lwp-irq-delay needs the CPU feature 'lwp'");
        return false;
    }
    if (lat->irq_delay && kvm_enabled()) {
        error_setg(errp, "lwp-irq-delay needs TCG: under KVM the host CPU "
                   "delivers the LWP threshold interrupt");
        return false;
    }
    if (!latitude_ring_realize(cpu, errp)) {
        return false;
    }
    if (latitude_ring_on(cpu) && kvm_enabled()) {
        error_setg(errp, "%s needs TCG: under KVM the host CPU stores the "
                   "records", lat->tail_reread ? "lwp-tail-reread" :
                   "lwp-interval-reread");
        return false;
    }
    /* Also without the property: an incoming pending interrupt is kept. */
    lat->irq_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, latitude_irq_fire, cpu);
    return true;
}

void x86_lwp_latitude_unrealize(X86CPU *cpu)
{
    QemuLwpLatitude *lat = &cpu->lwp_latitude;

    if (lat->irq_timer) {
        timer_free(lat->irq_timer);
        lat->irq_timer = NULL;
    }
}

/*
 * Called at an I/O point (the raise is one under -icount), so the virtual
 * clock may be read.  Under -icount a draw of d instructions is exactly d
 * instructions; otherwise the virtual clock follows the host, and d counts
 * as d nanoseconds.
 */
void x86_lwp_raise_threshold_irq(CPUX86State *env, uint8_t vector)
{
    X86CPU *cpu = env_archcpu(env);
    QemuLwpLatitude *lat = &cpu->lwp_latitude;
    uint64_t delay;

    if (!lat->irq_delay) {
        x86_lwp_deliver_threshold_irq(env, vector);
        return;
    }
    if (lat->irq_pending) {
        return;
    }
    delay = latitude_draw(lat) % ((uint64_t)lat->irq_delay + 1);
    if (!delay) {
        x86_lwp_deliver_threshold_irq(env, vector);
        return;
    }
    lat->irq_pending = 1;
    lat->irq_vector = vector;
    lat->irq_deadline = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) +
                        (icount_enabled() ? icount_to_ns(delay) : delay);
    timer_mod(lat->irq_timer, lat->irq_deadline);
}

/*
 * The model's state of the section 8.3 freedoms, a subsection of its own so
 * that a QEMU which knows only the late interrupt refuses it by name.
 */
static bool latitude_ring_needed(void *opaque)
{
    X86CPU *cpu = opaque;

    return latitude_ring_on(cpu) || cpu->env.lwp.tail_credit ||
           cpu->env.lwp.intervals_live;
}

static int latitude_ring_post_load(void *opaque, int version_id)
{
    X86CPU *cpu = opaque;
    LwpState *st = &cpu->env.lwp;

    if (st->tail_credit >= LWP_LATITUDE_TAIL_REREAD_MAX) {
        error_report("cpu/lwp/latitude/ring: refusing incoming state: "
                     "tail_credit is %u, above %u", st->tail_credit,
                     LWP_LATITUDE_TAIL_REREAD_MAX - 1);
        return -EINVAL;
    }
    if (st->intervals_live > 1) {
        error_report("cpu/lwp/latitude/ring: refusing incoming state: "
                     "intervals_live is %u, not 0 or 1", st->intervals_live);
        return -EINVAL;
    }
    return 0;
}

static const VMStateDescription vmstate_x86_lwp_latitude_ring = {
    .name = "cpu/lwp/latitude/ring",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = latitude_ring_needed,
    .post_load = latitude_ring_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8(env.lwp.tail_credit, X86CPU),
        VMSTATE_UINT8(env.lwp.intervals_live, X86CPU),
        VMSTATE_END_OF_LIST()
    }
};

static bool latitude_needed(void *opaque)
{
    X86CPU *cpu = opaque;

    return x86_lwp_latitude_on(cpu) || cpu->lwp_latitude.irq_pending ||
           latitude_ring_needed(opaque);
}

static int latitude_post_load(void *opaque, int version_id)
{
    X86CPU *cpu = opaque;
    QemuLwpLatitude *lat = &cpu->lwp_latitude;

    if (lat->irq_pending > 1) {
        error_report("cpu/lwp/latitude: refusing incoming state: "
                     "irq_pending is %u, not 0 or 1", lat->irq_pending);
        return -EINVAL;
    }
    if (lat->irq_pending) {
        timer_mod(lat->irq_timer, lat->irq_deadline);
    } else {
        timer_del(lat->irq_timer);
    }
    return 0;
}

/*
 * Sent while latitude mode is on, so that an older QEMU, which cannot take
 * a pending late interrupt, refuses the stream by this name.
 */
const VMStateDescription vmstate_x86_lwp_latitude = {
    .name = "cpu/lwp/latitude",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = latitude_needed,
    .post_load = latitude_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(lwp_latitude.rng, X86CPU),
        VMSTATE_INT64(lwp_latitude.irq_deadline, X86CPU),
        VMSTATE_UINT8(lwp_latitude.irq_pending, X86CPU),
        VMSTATE_UINT8(lwp_latitude.irq_vector, X86CPU),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &vmstate_x86_lwp_latitude_ring,
        NULL
    }
};

#endif
