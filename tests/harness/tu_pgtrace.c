/*
 * tu_pgtrace.c -- round trips counted in libpq's protocol trace
 * (tu_pgtrace.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "tu_pgtrace.h"

/* libpq's calls, when it is linked in (weak: NULL otherwise). */
extern void PQtrace(void *conn, FILE *f) __attribute__((weak));
extern void PQuntrace(void *conn) __attribute__((weak));
extern void PQsetTraceFlags(void *conn, int flags) __attribute__((weak));
#define TRACE_SUPPRESS_TIMESTAMPS 1   /* PQTRACE_SUPPRESS_TIMESTAMPS */

int tu_pgtrace_linked(void)
{
    return PQtrace != NULL && PQuntrace != NULL && PQsetTraceFlags != NULL;
}

/* The message of a client line of a protocol trace ("F", length, type
 * and fields, after a timestamp unless suppressed), or NULL. */
static char *tu_client_msg(char *line)
{
    char *p = strncmp(line, "F\t", 2) == 0 ? line : strstr(line, "\tF\t");

    if (p == NULL)
        return NULL;
    p = strchr(p + (p == line ? 2 : 3), '\t');
    return p != NULL ? p + 1 : NULL;
}

void tu_pgtrace_start(tu_pgtrace *t, void *pg)
{
    t->pg = pg;
    t->f = tmpfile();
    assert_non_null(t->f);
    PQtrace(pg, t->f);
    PQsetTraceFlags(pg, TRACE_SUPPRESS_TIMESTAMPS);
}

int tu_pgtrace_stop(tu_pgtrace *t, void (*look)(void *ctx, const char *msg),
                    void *ctx)
{
    char line[2048];
    int n = 0;

    PQuntrace(t->pg);
    rewind(t->f);
    while (fgets(line, sizeof line, t->f) != NULL) {
        char *msg = tu_client_msg(line);
        if (msg == NULL)
            continue;
        if (look != NULL)
            look(ctx, msg);
        if (strncmp(msg, "Sync", 4) == 0 || strncmp(msg, "Query", 5) == 0) {
            n++;
            if (look != NULL)
                look(ctx, NULL);
        }
    }
    fclose(t->f);
    t->f = NULL;
    return n;
}
