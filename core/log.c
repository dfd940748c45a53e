/*
 * log.c -- the log hook (issue 31): one callback per process receives the
 * library's events (acquired, released, renewed late, uncertain, lost,
 * reconnected, refused), from whichever thread they happen on.
 *
 * The hook is read under a mutex and called without it, so that a hook
 * replaced while another thread is inside the old one is safe (the old
 * context may still be in use until that call returns: the header says
 * so). Whether any hook wants a level is one relaxed atomic, so an event
 * nobody listens to costs no formatting.
 */
#include <pthread.h>
#include <stdarg.h>
#include <string.h>

#include "internal.h"

typedef struct log_hook {
    sqllock_log_fn fn;
    void *ctx;
    int min_level;
} log_hook;

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static log_hook log_now;
static _Atomic int log_min = 1000;       /* above every level: no hook */

sqllock_log_fn sqllock_log_set(sqllock_log_fn fn, void *ctx, int min_level)
{
    sqllock_log_fn old;

    pthread_mutex_lock(&log_mu);
    old = log_now.fn;
    log_now.fn = fn;
    log_now.ctx = ctx;
    log_now.min_level = min_level;
    atomic_store(&log_min, fn != NULL ? min_level : 1000);
    pthread_mutex_unlock(&log_mu);
    return old;
}

int sqllock__log_on(int level)
{
    return level >= atomic_load_explicit(&log_min, memory_order_relaxed);
}

void sqllock__log(int type, int level, sqllock_db *db, const char *name,
                  int64_t token, int status, int64_t value_ms,
                  const char *fmt, ...)
{
    char msg[SQLLOCK__ERRMSG_MAX];
    sqllock_event ev;
    log_hook hook;
    va_list ap;

    if (!sqllock__log_on(level))
        return;
    pthread_mutex_lock(&log_mu);
    hook = log_now;
    pthread_mutex_unlock(&log_mu);
    if (hook.fn == NULL || level < hook.min_level)
        return;
    va_start(ap, fmt);
    sqllock__vformat(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* C4: a message that quotes a database's own words may name a
     * secret of the URL. */
    if (db != NULL)
        sqllock__scrub(msg, sizeof msg, db->secrets);
    memset(&ev, 0, sizeof ev);
    ev.struct_version = SQLLOCK_EVENT_VERSION;
    ev.type = type;
    ev.level = level;
    ev.status = status;
    ev.name = name;
    ev.token = token;
    ev.value_ms = value_ms;
    ev.msg = msg;
    ev.db = db != NULL ? db->url_redacted : NULL;
    hook.fn(hook.ctx, &ev);
}

const char *sqllock_event_name(int type)
{
    switch (type) {
    case SQLLOCK_EVENT_ACQUIRED: return "acquired";
    case SQLLOCK_EVENT_RELEASED: return "released";
    case SQLLOCK_EVENT_RENEWED_LATE: return "renewed_late";
    case SQLLOCK_EVENT_UNCERTAIN: return "uncertain";
    case SQLLOCK_EVENT_LOST: return "lost";
    case SQLLOCK_EVENT_RECONNECTED: return "reconnected";
    case SQLLOCK_EVENT_REFUSED: return "refused";
    case SQLLOCK_EVENT_RELEASE_LOST: return "release_lost";
    default: return "unknown";
    }
}
