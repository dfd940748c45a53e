/*
 * omtext.c -- a growing text in the OpenMetrics format: the process's
 * metrics (metrics.c) and the database's view (metrics_db.c) write their
 * families, samples and label values through it.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static void grow(sqllock__mtext *t, size_t more)
{
    size_t cap;
    char *nb;

    if (t->oom || t->len + more + 1 <= t->cap)
        return;
    cap = t->cap != 0 ? t->cap : 4096;
    while (cap < t->len + more + 1)
        cap *= 2;
    nb = realloc(t->buf, cap);
    if (nb == NULL) {
        t->oom = 1;
        return;
    }
    t->buf = nb;
    t->cap = cap;
}

void sqllock__mt_printf(sqllock__mtext *t, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        t->oom = 1;
        return;
    }
    grow(t, (size_t)n);
    if (t->oom)
        return;
    va_start(ap, fmt);
    vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

void sqllock__mt_append(sqllock__mtext *t, const char *s, size_t n)
{
    grow(t, n);
    if (t->oom)
        return;
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    t->buf[t->len] = '\0';
}

/* A label value, escaped as OpenMetrics says: backslash, double quote
 * and line feed. Names have no control characters, but a value read
 * from the database is escaped whatever it holds. */
void sqllock__mt_label(sqllock__mtext *t, const char *s, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (s[i] == '\\')
            sqllock__mt_append(t, "\\\\", 2);
        else if (s[i] == '"')
            sqllock__mt_append(t, "\\\"", 2);
        else if (s[i] == '\n')
            sqllock__mt_append(t, "\\n", 2);
        else
            sqllock__mt_append(t, s + i, 1);
    }
}

void sqllock__mt_free(sqllock__mtext *t)
{
    free(t->buf);
    t->buf = NULL;
    t->len = t->cap = 0;
}

/* The lines that introduce a family: its type, its unit (NULL: none; a
 * family with a unit has it as the last part of its name) and its
 * help. */
void sqllock__mt_family(sqllock__mtext *t, const char *name, const char *type,
                   const char *unit, const char *help)
{
    sqllock__mt_printf(t, "# TYPE %s %s\n", name, type);
    if (unit != NULL)
        sqllock__mt_printf(t, "# UNIT %s %s\n", name, unit);
    sqllock__mt_printf(t, "# HELP %s %s\n", name, help);
}
