/*
 * metrics.c -- what the locks did, counted per handle and per process
 * (issue 31), and written in the OpenMetrics text format.
 *
 * Every count is a relaxed atomic: the caller's thread, the watchdog's
 * and a candidate's campaign thread add to the same handle's counts, and
 * a scrape may read them from any thread. Each addition goes to the
 * handle's struct and to the process's (one static struct), so that the
 * process's sums need no list of live handles. A scrape therefore sees
 * each count exact, though two counts read a moment apart may disagree by
 * a call still in progress.
 *
 * The leases held now are a gauge: a hold starts when a grant sets the
 * lease's granted_us and ends when that word is exchanged back to 0 (a
 * release, a loss, the handle freed), whoever gets there first -- the
 * renewer that finds the lease lost, or the caller whose release then
 * reports it -- so each hold is counted once, with its cause.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static sqllock__metrics process_m;

/* The bucket bounds of both histograms, in microseconds and as written. */
static const int64_t bucket_us[SQLLOCK__HIST_BUCKETS] = {
    1000, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000,
    2500000, 5000000, 10000000, 30000000, 60000000, 300000000,
    1800000000, 3600000000
};
static const char *const bucket_le[SQLLOCK__HIST_BUCKETS] = {
    "0.001", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1.0",
    "2.5", "5.0", "10.0", "30.0", "60.0", "300.0", "1800.0", "3600.0"
};

static const char *const kind_names[SQLLOCK__MK_COUNT] = {
    "lease", "fair", "many", "semaphore", "shared", "exclusive", "leader"
};
static const char *const outcome_names[SQLLOCK__MO_COUNT] = {
    "granted", "busy", "timeout", "error"
};
static const char *const op_names[SQLLOCK__OP_COUNT] = {
    "other", "acquire", "release", "renew", "row_lock", "record", "reap"
};
static const char *const renew_names[SQLLOCK__MR_COUNT] = {
    "on_time", "late", "failed"
};
static const char *const loss_names[SQLLOCK__ML_COUNT] = {
    "taken_over", "expired_locally", "connection"
};
static const char *const release_names[SQLLOCK__MREL_COUNT] = {
    "released", "lost", "error"
};
static const char *const rowlock_names[SQLLOCK__MRL_COUNT] = {
    "granted", "busy", "timeout", "deadlock", "error"
};
static const char *const cas_names[SQLLOCK__MC_COUNT] = {
    "ok", "conflict", "error"
};

#define ADD(field, n) \
    atomic_fetch_add_explicit(&(field), (uint64_t)(n), memory_order_relaxed)
#define GET(field) atomic_load_explicit(&(field), memory_order_relaxed)

/* Adds `n` to one counter of the handle (when there is one) and of the
 * process: `expr` names the field from a struct pointer `M`. */
#define BOTH(db, field, n)                                   \
    do {                                                     \
        ADD(process_m.field, n);                             \
        if ((db) != NULL)                                    \
            ADD((db)->metrics.field, n);                     \
    } while (0)

static void hist_observe(sqllock__hist *h, int64_t us)
{
    int i;

    if (us < 0)
        us = 0;
    for (i = 0; i < SQLLOCK__HIST_BUCKETS; i++)
        if (us <= bucket_us[i]) {
            ADD(h->bucket[i], 1);
            break;
        }
    ADD(h->count, 1);
    ADD(h->sum_us, us);
}

/* ---- the counting calls (internal.h) ---- */

int sqllock__op_set(sqllock_db *db, int op)
{
    int old;

    if (db == NULL)
        return SQLLOCK__OP_OTHER;
    old = db->op;
    db->op = op;
    return old;
}

void sqllock__m_statement(sqllock_db *db, int statements)
{
    int op = db != NULL ? db->op : SQLLOCK__OP_OTHER;

    atomic_fetch_add_explicit(&sqllock__statements_sent, (uint64_t)statements,
                              memory_order_relaxed);
    BOTH(db, stmts[op], statements);
    BOTH(db, trips[op], 1);
}

static int outcome_of(int rc)
{
    switch (rc) {
    case SQLLOCK_OK:
        return SQLLOCK__MO_GRANTED;
    case SQLLOCK_BUSY:
        return SQLLOCK__MO_BUSY;
    case SQLLOCK_TIMEOUT:
        return SQLLOCK__MO_TIMEOUT;
    default:
        return SQLLOCK__MO_ERROR;
    }
}

void sqllock__m_acquire(sqllock_db *db, int kind, int rc, int64_t start_us,
                        const char *name, int64_t token)
{
    int64_t took = start_us != 0 ? sqllock__now_us() - start_us : 0;

    BOTH(db, acq[kind][outcome_of(rc)], 1);
    if (start_us != 0) {
        hist_observe(&process_m.acq_wait, took);
        if (db != NULL)
            hist_observe(&db->metrics.acq_wait, took);
    }
    if (rc == SQLLOCK_OK)
        sqllock__log(SQLLOCK_EVENT_ACQUIRED, SQLLOCK_LOG_INFO, db, name, token,
                     SQLLOCK_OK, took / 1000, "acquired %s '%s' (token %"
                     PRId64 ") in %" PRId64 " ms", kind_names[kind], name,
                     token, took / 1000);
}

void sqllock__m_enter(sqllock__mcall *c, sqllock_db *db, int op)
{
    c->db = db;
    c->start_us = sqllock__now_us();
    c->op = sqllock__op_set(db, op);
}

int sqllock__m_acquired(sqllock__mcall *c, int kind, int rc,
                        const char *name, int64_t token)
{
    sqllock__op_set(c->db, c->op);
    sqllock__m_acquire(c->db, kind, rc, c->start_us, name, token);
    return rc;
}

void sqllock__m_grant(sqllock_lease *l)
{
    int64_t zero = 0;

    if (atomic_compare_exchange_strong(&l->granted_us, &zero,
                                       sqllock__now_us()))
        BOTH(l->db, held, 1);
}

int sqllock__m_hold_end(sqllock_lease *l, int end, int64_t *held_us)
{
    int64_t g = atomic_exchange(&l->granted_us, 0), us;

    if (held_us != NULL)
        *held_us = 0;
    if (g == 0)
        return 0;
    us = sqllock__now_us() - g;
    if (held_us != NULL)
        *held_us = us;
    atomic_fetch_sub_explicit(&process_m.held, 1, memory_order_relaxed);
    if (l->db != NULL)
        atomic_fetch_sub_explicit(&l->db->metrics.held, 1,
                                  memory_order_relaxed);
    if (end == SQLLOCK__END_NONE)
        return 1;
    hist_observe(&process_m.hold, us);
    if (l->db != NULL)
        hist_observe(&l->db->metrics.hold, us);
    if (end >= 0 && end < SQLLOCK__ML_COUNT)
        BOTH(l->db, losses[end], 1);
    return 1;
}

void sqllock__m_release(sqllock_lease *l, int rc, int64_t token,
                        int64_t held_us)
{
    int r = rc == SQLLOCK_OK ? SQLLOCK__MREL_RELEASED
            : rc == SQLLOCK_LOST ? SQLLOCK__MREL_LOST : SQLLOCK__MREL_ERROR;

    BOTH(l->db, releases[r], 1);
    if (rc == SQLLOCK_OK)
        sqllock__log(SQLLOCK_EVENT_RELEASED, SQLLOCK_LOG_INFO, l->db, l->name,
                     token, SQLLOCK_OK, held_us / 1000, "released '%s' "
                     "(token %" PRId64 ") after %" PRId64 " ms", l->name,
                     token, held_us / 1000);
    else if (rc == SQLLOCK_LOST)
        sqllock__log(SQLLOCK_EVENT_RELEASE_LOST, SQLLOCK_LOG_ERROR, l->db,
                     l->name, token, rc, 0, "releasing '%s' (token %" PRId64
                     "): it had already been lost", l->name, token);
}

void sqllock__m_renewal(sqllock_db *db, int result)
{
    BOTH(db, renewals[result], 1);
}

void sqllock__m_pause(sqllock_db *db, int woke)
{
    if (woke)
        BOTH(db, wakeups, 1);
    else
        BOTH(db, polls, 1);
}

void sqllock__m_reaped(sqllock_db *db, int64_t rows)
{
    BOTH(db, reap_sweeps, 1);
    if (rows > 0)
        BOTH(db, reaped, rows);
}

void sqllock__m_rowlock(sqllock_db *db, int rc)
{
    int r;

    switch (rc) {
    case SQLLOCK_OK:
        r = SQLLOCK__MRL_GRANTED;
        break;
    case SQLLOCK_BUSY:
    case SQLLOCK_ELOCKED:
        r = SQLLOCK__MRL_BUSY;
        break;
    case SQLLOCK_TIMEOUT:
        r = SQLLOCK__MRL_TIMEOUT;
        break;
    case SQLLOCK_EDEADLOCK:
        r = SQLLOCK__MRL_DEADLOCK;
        break;
    default:
        r = SQLLOCK__MRL_ERROR;
    }
    BOTH(db, rowlocks[r], 1);
}

void sqllock__m_cas(sqllock_db *db, int rc)
{
    BOTH(db, cas[rc == SQLLOCK_OK ? SQLLOCK__MC_OK
                 : rc == SQLLOCK_CONFLICT ? SQLLOCK__MC_CONFLICT
                 : SQLLOCK__MC_ERROR], 1);
}

void sqllock__m_reconnected(sqllock_db *db)
{
    BOTH(db, reconnects, 1);
    sqllock__log(SQLLOCK_EVENT_RECONNECTED, SQLLOCK_LOG_INFO, db, NULL, 0,
                 SQLLOCK_OK, 0, "connected again to %s",
                 db->url_redacted != NULL ? db->url_redacted : "the database");
}

/* ---- leaders (the gauge of who leads) ---- */

static pthread_mutex_t leaders_mu = PTHREAD_MUTEX_INITIALIZER;
static sqllock_leader **leaders;
static size_t nleaders, leaders_cap;

void sqllock__m_leader_add(sqllock_leader *leader)
{
    sqllock_leader **grown;

    pthread_mutex_lock(&leaders_mu);
    if (nleaders == leaders_cap) {
        size_t cap = leaders_cap ? leaders_cap * 2 : 8;

        grown = realloc(leaders, cap * sizeof *leaders);
        if (grown == NULL) {            /* not shown: nothing else breaks */
            pthread_mutex_unlock(&leaders_mu);
            return;
        }
        leaders = grown;
        leaders_cap = cap;
    }
    leaders[nleaders++] = leader;
    pthread_mutex_unlock(&leaders_mu);
}

void sqllock__m_leader_remove(sqllock_leader *leader)
{
    size_t i;

    pthread_mutex_lock(&leaders_mu);
    for (i = 0; i < nleaders; i++)
        if (leaders[i] == leader) {
            leaders[i] = leaders[--nleaders];
            break;
        }
    if (nleaders == 0) {
        free(leaders);
        leaders = NULL;
        leaders_cap = 0;
    }
    pthread_mutex_unlock(&leaders_mu);
}

/* ---- the text ---- */

/* A counter family of one label: `family` is the name without _total. */
static void counter1(sqllock__mtext *t, const char *fam, const char *help,
                     const char *label, const char *const *values,
                     _Atomic uint64_t *counts, int n)
{
    int i;

    sqllock__mt_family(t, fam, "counter", NULL, help);
    for (i = 0; i < n; i++)
        sqllock__mt_printf(t, "%s_total{%s=\"%s\"} %" PRIu64 "\n", fam, label, values[i],
            GET(counts[i]));
}

static void histogram(sqllock__mtext *t, const char *fam, const char *help,
                      sqllock__hist *h)
{
    uint64_t cum = 0, count = GET(h->count), sum = GET(h->sum_us);
    int i;

    sqllock__mt_family(t, fam, "histogram", "seconds", help);
    for (i = 0; i < SQLLOCK__HIST_BUCKETS; i++) {
        cum += GET(h->bucket[i]);
        sqllock__mt_printf(t, "%s_bucket{le=\"%s\"} %" PRIu64 "\n", fam, bucket_le[i], cum);
    }
    /* +Inf is the count (read once: a bucket added meanwhile shows in
     * neither, or in the count only: never more below than above). */
    if (count < cum)
        count = cum;
    sqllock__mt_printf(t, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n", fam, count);
    sqllock__mt_printf(t, "%s_count %" PRIu64 "\n", fam, count);
    sqllock__mt_printf(t, "%s_sum %" PRIu64 ".%06" PRIu64 "\n", fam, sum / 1000000,
        sum % 1000000);
}

static void write_all(sqllock__mtext *t, sqllock__metrics *m, int process)
{
    int k, o;

    sqllock__mt_family(t, "sqllock_acquires", "counter", NULL,
           "Acquire calls by kind of lock and outcome.");
    for (k = 0; k < SQLLOCK__MK_COUNT; k++)
        for (o = 0; o < SQLLOCK__MO_COUNT; o++)
            sqllock__mt_printf(t, "sqllock_acquires_total{kind=\"%s\",outcome=\"%s\"} %"
                PRIu64 "\n", kind_names[k], outcome_names[o],
                GET(m->acq[k][o]));
    histogram(t, "sqllock_acquire_wait_seconds", "How long each acquire "
              "call took, waiting included, whatever its outcome.",
              &m->acq_wait);
    histogram(t, "sqllock_hold_seconds", "How long each lease was held, "
              "from its grant to its release or loss.", &m->hold);
    sqllock__mt_family(t, "sqllock_leases_held", "gauge", NULL,
           "Leases held now (grants not yet released or lost).");
    sqllock__mt_printf(t, "sqllock_leases_held %" PRId64 "\n", GET(m->held));
    counter1(t, "sqllock_renewals", "Renewals by result: on time, late "
             "(after a failed try, while the lease's time lasted), failed "
             "(each failed try).", "result", renew_names, m->renewals,
             SQLLOCK__MR_COUNT);
    counter1(t, "sqllock_losses", "Leases lost by cause: taken over (a "
             "renewal or release found another owner, or none), expired "
             "locally (the local deadline passed with no failed renewal: "
             "a paused or starved process), connection (it passed while "
             "renewals failed).", "cause", loss_names, m->losses,
             SQLLOCK__ML_COUNT);
    counter1(t, "sqllock_releases", "Releases by outcome.", "outcome",
             release_names, m->releases, SQLLOCK__MREL_COUNT);
    sqllock__mt_family(t, "sqllock_wait_wakeups", "counter", NULL, "Pauses of waiting "
           "acquires ended by a wake-up (a release pushed or seen).");
    sqllock__mt_printf(t, "sqllock_wait_wakeups_total %" PRIu64 "\n", GET(m->wakeups));
    sqllock__mt_family(t, "sqllock_wait_polls", "counter", NULL, "Pauses of waiting "
           "acquires that ran to their end (the next try is a poll).");
    sqllock__mt_printf(t, "sqllock_wait_polls_total %" PRIu64 "\n", GET(m->polls));
    counter1(t, "sqllock_statements", "Statements sent, by operation.",
             "operation", op_names, m->stmts, SQLLOCK__OP_COUNT);
    counter1(t, "sqllock_round_trips", "Round trips to the database, by "
             "operation (a BEGIN sent with the next statement shares its "
             "round trip).", "operation", op_names, m->trips,
             SQLLOCK__OP_COUNT);
    counter1(t, "sqllock_row_locks", "Row-lock calls by outcome.", "outcome",
             rowlock_names, m->rowlocks, SQLLOCK__MRL_COUNT);
    counter1(t, "sqllock_cas", "Compare-and-set writes of versioned "
             "records and tables, by outcome.", "outcome", cas_names, m->cas,
             SQLLOCK__MC_COUNT);
    sqllock__mt_family(t, "sqllock_reaped_rows", "counter", NULL,
           "Expired lease rows deleted by reapers.");
    sqllock__mt_printf(t, "sqllock_reaped_rows_total %" PRIu64 "\n", GET(m->reaped));
    sqllock__mt_family(t, "sqllock_reaper_sweeps", "counter", NULL, "Reaper sweeps.");
    sqllock__mt_printf(t, "sqllock_reaper_sweeps_total %" PRIu64 "\n", GET(m->reap_sweeps));
    sqllock__mt_family(t, "sqllock_reconnects", "counter", NULL,
           "Connections made again after one was lost.");
    sqllock__mt_printf(t, "sqllock_reconnects_total %" PRIu64 "\n", GET(m->reconnects));
    if (process) {
        size_t i;

        sqllock__mt_family(t, "sqllock_leader", "gauge", NULL, "1 for each election "
               "this process leads now, 0 for one it campaigns in; alert "
               "when the sum over processes exceeds 1.");
        pthread_mutex_lock(&leaders_mu);
        for (i = 0; i < nleaders; i++) {
            sqllock__mt_printf(t, "sqllock_leader{name=\"");
            const char *name = sqllock_leader_name(leaders[i]);

            sqllock__mt_label(t, name, strlen(name));
            sqllock__mt_printf(t, "\"} %d\n", sqllock_leader_is_leader(leaders[i]) ? 1 : 0);
        }
        pthread_mutex_unlock(&leaders_mu);
    }
    sqllock__mt_printf(t, "# EOF\n");
}

int sqllock_metrics_text(sqllock_db *db, char **out)
{
    sqllock__mtext t;

    if (out == NULL)
        return db != NULL ? sqllock__fail(db, SQLLOCK_EINVAL, "no place "
                                          "for the metrics' text (out is "
                                          "NULL)")
                          : SQLLOCK_EINVAL;
    *out = NULL;
    memset(&t, 0, sizeof t);
    write_all(&t, db != NULL ? &db->metrics : &process_m, db == NULL);
    if (t.oom) {
        sqllock__mt_free(&t);
        return db != NULL ? sqllock__fail(db, SQLLOCK_ENOMEM, "no memory "
                                          "for the metrics' text")
                          : SQLLOCK_ENOMEM;
    }
    *out = t.buf;
    return db != NULL ? sqllock__ok(db) : SQLLOCK_OK;
}

int sqllock_metrics_write(sqllock_db *db, FILE *out)
{
    char *s = NULL;
    size_t n;
    int rc;

    if (out == NULL)
        return db != NULL ? sqllock__fail(db, SQLLOCK_EINVAL, "no FILE to "
                                          "write the metrics to")
                          : SQLLOCK_EINVAL;
    rc = sqllock_metrics_text(db, &s);
    if (rc != SQLLOCK_OK)
        return rc;
    n = strlen(s);
    rc = fwrite(s, 1, n, out) == n ? SQLLOCK_OK : SQLLOCK_ESYS;
    free(s);
    if (rc != SQLLOCK_OK && db != NULL)
        return sqllock__fail(db, rc, "writing the metrics failed");
    return rc;
}
