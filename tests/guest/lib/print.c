/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Minimal printf for freestanding guests: %d %i %u %x %X %p %s %c %%, with
 * '#', '0', '-' flags, a field width and the l/ll/z length modifiers.
 */
#include "libguest.h"

#define DEBUGCON_PORT 0xe9

struct out {
    char *buf;
    size_t size, len;
};

static void put(struct out *o, char c)
{
    if (o->len + 1 < o->size) {
        o->buf[o->len] = c;
    }
    o->len++;
}

static void put_num(struct out *o, unsigned long long v, unsigned base,
                    bool upper, bool neg, int width, char pad, bool left,
                    const char *prefix)
{
    char digits[24];
    int n = 0, plen = prefix ? strlen(prefix) : 0;
    const char *set = upper ? "0123456789ABCDEF" : "0123456789abcdef";

    do {
        digits[n++] = set[v % base];
        v /= base;
    } while (v);
    int total = n + neg + plen;
    if (!left && pad == ' ') {
        for (; total < width; total++) {
            put(o, ' ');
        }
    }
    if (neg) {
        put(o, '-');
    }
    for (int i = 0; i < plen; i++) {
        put(o, prefix[i]);
    }
    if (!left && pad == '0') {
        for (; total < width; total++) {
            put(o, '0');
        }
    }
    while (n) {
        put(o, digits[--n]);
    }
    for (; left && total < width; total++) {
        put(o, ' ');
    }
}

int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
    struct out o = { buf, size, 0 };

    for (; *fmt; fmt++) {
        if (*fmt != '%') {
            put(&o, *fmt);
            continue;
        }
        bool alt = false, left = false;
        char pad = ' ';
        int width = 0, lng = 0;
        for (;; fmt++) {
            if (fmt[1] == '#') {
                alt = true;
            } else if (fmt[1] == '0') {
                pad = '0';
            } else if (fmt[1] == '-') {
                left = true;
            } else {
                break;
            }
        }
        while (fmt[1] >= '0' && fmt[1] <= '9') {
            width = width * 10 + (*++fmt - '0');
        }
        while (fmt[1] == 'l' || fmt[1] == 'z') {
            lng += fmt[1] == 'z' ? (sizeof(size_t) == 8 ? 2 : 0) : 1;
            fmt++;
        }
        char conv = *++fmt;
        unsigned long long u;
        long long s;
        switch (conv) {
        case 'd':
        case 'i':
            s = lng >= 2 ? va_arg(ap, long long) :
                lng == 1 ? va_arg(ap, long) : va_arg(ap, int);
            put_num(&o, s < 0 ? -(unsigned long long)s : (unsigned long long)s,
                    10, false, s < 0, width, pad, left, NULL);
            break;
        case 'u':
        case 'x':
        case 'X':
            u = lng >= 2 ? va_arg(ap, unsigned long long) :
                lng == 1 ? va_arg(ap, unsigned long) : va_arg(ap, unsigned int);
            put_num(&o, u, conv == 'u' ? 10 : 16, conv == 'X', false, width,
                    pad, left, alt && conv != 'u' ? "0x" : NULL);
            break;
        case 'p':
            put_num(&o, (uintptr_t)va_arg(ap, void *), 16, false, false,
                    width, pad, left, "0x");
            break;
        case 's': {
            const char *str = va_arg(ap, const char *);
            int len = strlen(str ? str : "(null)");
            for (int i = len; !left && i < width; i++) {
                put(&o, ' ');
            }
            for (const char *p = str ? str : "(null)"; *p; p++) {
                put(&o, *p);
            }
            for (int i = len; left && i < width; i++) {
                put(&o, ' ');
            }
            break;
        }
        case 'c':
            put(&o, (char)va_arg(ap, int));
            break;
        case '%':
            put(&o, '%');
            break;
        default:
            put(&o, '%');
            put(&o, conv);
            break;
        }
    }
    if (size) {
        buf[o.len < size ? o.len : size - 1] = 0;
    }
    return o.len;
}

int snprintf(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    int n = vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    return n;
}

void puts_raw(const char *s)
{
    while (*s) {
        outb(DEBUGCON_PORT, *s++);
    }
}

int printf(const char *fmt, ...)
{
    char buf[512];
    va_list ap;

    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    puts_raw(buf);
    return n;
}

void *memset(void *d, int c, size_t n)
{
    unsigned char *p = d;

    while (n--) {
        *p++ = c;
    }
    return d;
}

void *memcpy(void *d, const void *s, size_t n)
{
    unsigned char *p = d;
    const unsigned char *q = s;

    while (n--) {
        *p++ = *q++;
    }
    return d;
}

int memcmp(const void *a, const void *b, size_t n)
{
    const unsigned char *p = a, *q = b;

    for (; n; n--, p++, q++) {
        if (*p != *q) {
            return *p - *q;
        }
    }
    return 0;
}

size_t strlen(const char *s)
{
    size_t n = 0;

    while (s[n]) {
        n++;
    }
    return n;
}
