/*
 * lease.c -- the lease handle (DESIGN L1-L8): its options, its owner id,
 * its state word and local deadline, which the renewer thread shares
 * (L6, L7), and what an application reads of it.
 *
 * The statements on the lease row are lease_row.c's; the public acquire
 * is lease_acquire.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static int apply_options(sqllock_db *db, sqllock_lease *l,
                         const sqllock_lease_options *opts)
{
    if (opts == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "lease options are "
                             "required: ttl_ms must be set");
    if (opts->ttl_ms <= 0)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the lease ttl must be "
                             "positive (got %lld ms)", (long long)opts->ttl_ms);
    /* The server adds the ttl to its clock in microseconds on some
     * databases; keep far from overflow (about 292 years). */
    if (opts->ttl_ms > INT64_C(9000000000000))
        return sqllock__fail(db, SQLLOCK_EINVAL, "the lease ttl of %lld ms is "
                             "too large", (long long)opts->ttl_ms);
    if (opts->safety_margin_ms < 0 || opts->backoff_min_ms < 0 ||
        opts->backoff_max_ms < 0)
        return sqllock__fail(db, SQLLOCK_EINVAL, "lease margins and backoff "
                             "times must not be negative");
    l->ttl_ms = opts->ttl_ms;
    l->margin_ms = opts->safety_margin_ms ? opts->safety_margin_ms
                                          : opts->ttl_ms / 10;
    l->margin_default = opts->safety_margin_ms == 0;
    if (l->margin_ms >= l->ttl_ms)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the safety margin (%lld ms) "
                             "must be smaller than the ttl (%lld ms)",
                             (long long)l->margin_ms, (long long)l->ttl_ms);
    l->flags = opts->struct_version >= 2 ? opts->flags : 0;
    if (l->flags & ~(SQLLOCK_LEASE_NO_WAKEUP | SQLLOCK_LEASE_FAST |
                     SQLLOCK_LEASE_FAIR))
        return sqllock__fail(db, SQLLOCK_EINVAL, "unknown lease flags 0x%x",
                             l->flags & ~(SQLLOCK_LEASE_NO_WAKEUP |
                                          SQLLOCK_LEASE_FAST |
                                          SQLLOCK_LEASE_FAIR));
    if ((l->flags & SQLLOCK_LEASE_FAST) && db->drv != NULL) {
        const sqllock_sql *a, *r;
        a = sqllock__sql_of(db->drv, SQLLOCK_SQL_LEASE_ACQUIRE_FAST);
        r = sqllock__sql_of(db->drv, SQLLOCK_SQL_LEASE_RENEW_FAST);
        if (a == NULL || r == NULL ||
            !(db->drv->caps & SQLLOCK_CAP_RETURNING))
            return sqllock__fail(db, SQLLOCK_EUNSUPPORTED, "fast mode "
                                 "(SQLLOCK_LEASE_FAST) needs a commit that "
                                 "is asynchronous for one transaction; the "
                                 "%s driver has none (MySQL's "
                                 "innodb_flush_log_at_trx_commit is global), "
                                 "so its leases are always durable",
                                 db->drv->name);
    }
    l->release_timeout_ms = opts->struct_version >= 3 ?
                            opts->release_timeout_ms : 0;
    if (l->release_timeout_ms < 0)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the release timeout must "
                             "not be negative (got %lld ms)",
                             (long long)l->release_timeout_ms);
    if (l->release_timeout_ms == 0)
        l->release_timeout_ms = SQLLOCK__RELEASE_TIMEOUT_MS;
    l->backoff_min_ms = opts->backoff_min_ms ? opts->backoff_min_ms : 5;
    l->backoff_max_ms = opts->backoff_max_ms ? opts->backoff_max_ms : 500;
    if (l->backoff_max_ms < l->backoff_min_ms)
        l->backoff_max_ms = l->backoff_min_ms;
    if (opts->holder != NULL) {
        size_t len = strlen(opts->holder);
        if (len > SQLLOCK_HOLDER_MAX)
            return sqllock__fail(db, SQLLOCK_EINVAL, "the holder text is %zu "
                                 "bytes long; the limit is %d", len,
                                 SQLLOCK_HOLDER_MAX);
        if (!sqllock__name_ok(opts->holder, len))
            return sqllock__fail(db, SQLLOCK_EINVAL, "the holder text is not "
                                 "valid UTF-8 or has control characters");
        memcpy(l->holder, opts->holder, len + 1);
    } else {
        char host[128];
        if (gethostname(host, sizeof host) != 0)
            strcpy(host, "?");
        host[sizeof host - 1] = '\0';
        if (!sqllock__name_ok(host, strlen(host)))
            strcpy(host, "?");
        snprintf(l->holder, sizeof l->holder, "%s:%ld", host, (long)getpid());
    }
    return SQLLOCK_OK;
}

static int lease_make(sqllock_db *db, const char *name, int derived,
                      const sqllock_lease_options *opts, sqllock_lease **out)
{
    sqllock_lease *l;
    int rc;

    if (out != NULL)
        *out = NULL;
    if (db == NULL)
        return SQLLOCK_EINVAL;
    if (out == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the output pointer is NULL");
    rc = sqllock__refuse_borrowed(db, "a lease");
    if (rc != SQLLOCK_OK)
        return rc;
    if (derived) {
        if (name == NULL || strlen(name) > SQLLOCK__DERIVED_MAX)
            return sqllock__fail(db, SQLLOCK_EINVAL, "bad derived name");
    } else if ((rc = sqllock__check_name(db, name, "lock name")) !=
               SQLLOCK_OK) {
        return rc;
    }
    l = calloc(1, sizeof *l);
    if (l == NULL)
        return sqllock__fail(db, SQLLOCK_ENOMEM, "out of memory");
    rc = apply_options(db, l, opts);
    if (rc != SQLLOCK_OK) {
        free(l);
        return rc;
    }
    /* A fair lease's queue rows are derived names (lease_fair.c, M3). */
    if ((l->flags & SQLLOCK_LEASE_FAIR) &&
        strlen(name) > SQLLOCK_PRIMITIVE_NAME_MAX) {
        free(l);
        return sqllock__fail(db, SQLLOCK_EINVAL, "the lock name of a fair "
                             "lease (SQLLOCK_LEASE_FAIR) is %zu bytes long; "
                             "the limit is %d bytes "
                             "(SQLLOCK_PRIMITIVE_NAME_MAX)", strlen(name),
                             SQLLOCK_PRIMITIVE_NAME_MAX);
    }
    l->db = db;
    l->derived = derived;
    strcpy(l->name, name);
    l->wake_key = sqllock__wake_key(db->url, name);
    atomic_init(&l->state, SQLLOCK_STATE_NOT_HELD);
    atomic_init(&l->deadline_us, 0);
    *out = l;
    return SQLLOCK_OK;
}

int sqllock_lease_new(sqllock_db *db, const char *name,
                      const sqllock_lease_options *opts, sqllock_lease **out)
{
    int rc = lease_make(db, name, 0, opts, out);

    return rc == SQLLOCK_OK ? sqllock__ok(db) : rc;
}

int sqllock__lease_new_derived(sqllock_db *db, const char *derived,
                               const sqllock_lease_options *opts,
                               sqllock_lease **out)
{
    int rc = lease_make(db, derived, 1, opts, out);

    return rc == SQLLOCK_OK ? sqllock__ok(db) : rc;
}

/* 1 when `name` is a primitive's row as sqllock_list() reports it: a
 * lock name of at most SQLLOCK_PRIMITIVE_NAME_MAX bytes, the separator,
 * and a tag of printable ASCII (issue 27 item 4); else 0, and the name
 * is checked as a lock name. */
static int derived_row(sqllock_db *db, const char *name)
{
    const char *sep = name != NULL ? strchr(name, SQLLOCK__SEP) : NULL;
    char base[SQLLOCK_PRIMITIVE_NAME_MAX + 1];
    size_t blen, i;

    if (db == NULL || sep == NULL || sep == name || sep[1] == '\0' ||
        strlen(name) > SQLLOCK__DERIVED_MAX)
        return 0;
    blen = (size_t)(sep - name);
    if (blen > SQLLOCK_PRIMITIVE_NAME_MAX)
        return 0;
    for (i = 1; sep[i] != '\0'; i++)
        if (sep[i] < 0x21 || sep[i] > 0x7e)
            return 0;
    memcpy(base, name, blen);
    base[blen] = '\0';
    if (sqllock__check_name(db, base, "lock name") != SQLLOCK_OK) {
        sqllock__ok(db);
        return 0;
    }
    return 1;
}

int sqllock_lease_attach(sqllock_db *db, const char *name, const char *owner,
                         int64_t token, const sqllock_lease_options *opts,
                         sqllock_lease **out)
{
    size_t i;
    int rc;

    if (out != NULL)
        *out = NULL;
    if (db != NULL && owner == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the owner id is NULL");
    if (db != NULL) {
        if (strlen(owner) != SQLLOCK_OWNER_LEN)
            return sqllock__fail(db, SQLLOCK_EINVAL, "the owner id must be "
                                 "%d hexadecimal digits", SQLLOCK_OWNER_LEN);
        for (i = 0; i < SQLLOCK_OWNER_LEN; i++)
            if (!((owner[i] >= '0' && owner[i] <= '9') ||
                  (owner[i] >= 'a' && owner[i] <= 'f')))
                return sqllock__fail(db, SQLLOCK_EINVAL, "the owner id must "
                                     "be %d lower-case hexadecimal digits",
                                     SQLLOCK_OWNER_LEN);
        if (token <= 0)
            return sqllock__fail(db, SQLLOCK_EINVAL, "the fencing token must "
                                 "be positive (got %lld)", (long long)token);
    }
    rc = lease_make(db, name, derived_row(db, name), opts, out);
    if (rc != SQLLOCK_OK)
        return rc;
    memcpy((*out)->owner, owner, SQLLOCK_OWNER_LEN + 1);
    (*out)->token = token;
    (*out)->count = 1;
    /* The deadline stays 0, unknown until a renew: the lease is not
     * trusted (held() is 0) until then. */
    atomic_store(&(*out)->state, SQLLOCK_STATE_HELD);
    sqllock__m_grant(*out);
    return sqllock__ok(db);
}

void sqllock__lease_unwatch(sqllock_lease *l)
{
    if (l->db != NULL && l->db->renewer != NULL)
        l->db->renewer_ops->forget(l->db->renewer, l);
}

void sqllock_lease_free(sqllock_lease *lease)
{
    if (lease == NULL)
        return;
    sqllock__lease_unwatch(lease);
    sqllock__m_hold_end(lease, SQLLOCK__END_RELEASED, NULL);
    free(lease);
}

/* The handle no longer holds: renewal stops first (L7), so a renewer
 * never renews what the handle has let go. */
void sqllock__lease_forget(sqllock_lease *l)
{
    sqllock__lease_unwatch(l);
    l->count = 0;
    l->token = 0;
    l->companion = 0;
    l->owner[0] = '\0';
    atomic_store(&l->state, SQLLOCK_STATE_NOT_HELD);
    atomic_store(&l->deadline_us, 0);
}

void sqllock__lease_set_state(sqllock_lease *l, int state)
{
    atomic_store(&l->state, state);
}

/* Moves the local deadline forward, never back: the caller's own renew and
 * the renewer's may finish in either order. */
void sqllock__lease_extend(sqllock_lease *l, int64_t deadline_us)
{
    int64_t cur = atomic_load(&l->deadline_us);

    while (cur < deadline_us &&
           !atomic_compare_exchange_weak(&l->deadline_us, &cur, deadline_us))
        ;
}

void sqllock__lease_shorten(sqllock_lease *l, int64_t deadline_us)
{
    int64_t cur = atomic_load(&l->deadline_us);

    while (cur > deadline_us &&
           !atomic_compare_exchange_weak(&l->deadline_us, &cur, deadline_us))
        ;
}

int64_t sqllock__lease_deadline(const sqllock_lease *l)
{
    return atomic_load(&l->deadline_us);
}

int sqllock__lease_new_owner(sqllock_lease *l)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char raw[SQLLOCK_OWNER_LEN / 2];
    int i;

    if (sqllock__random(raw, sizeof raw) != SQLLOCK_OK)
        return sqllock__fail(l->db, SQLLOCK_ESYS, "cannot read the OS's "
                             "random source for an owner id");
    for (i = 0; i < (int)sizeof raw; i++) {
        l->owner[2 * i] = hex[raw[i] >> 4];
        l->owner[2 * i + 1] = hex[raw[i] & 15];
    }
    l->owner[SQLLOCK_OWNER_LEN] = '\0';
    return SQLLOCK_OK;
}

const char *sqllock_lease_name(const sqllock_lease *l)
{
    return l != NULL ? l->name : "";
}

int sqllock_lease_state(const sqllock_lease *l)
{
    int state;

    if (l == NULL)
        return SQLLOCK_STATE_NOT_HELD;
    state = atomic_load(&l->state);
    if (state == SQLLOCK_STATE_HELD || state == SQLLOCK_STATE_UNCERTAIN) {
        int64_t deadline = atomic_load(&l->deadline_us);
        /* An attached lease's deadline is unknown until a renew. */
        if (deadline == 0)
            return SQLLOCK_STATE_UNCERTAIN;
        if (sqllock__now_us() >= deadline)
            return SQLLOCK_STATE_LOST;
    }
    return state;
}

const char *sqllock_lease_state_name(int state)
{
    switch (state) {
    case SQLLOCK_STATE_NOT_HELD: return "not-held";
    case SQLLOCK_STATE_HELD: return "held";
    case SQLLOCK_STATE_UNCERTAIN: return "uncertain";
    case SQLLOCK_STATE_LOST: return "lost";
    default: return "?";
    }
}

int sqllock_lease_held(const sqllock_lease *l)
{
    return sqllock_lease_remaining_ms(l) > 0;
}

int sqllock_lease_count(const sqllock_lease *l)
{
    return l != NULL ? l->count : 0;
}

int64_t sqllock_lease_token(const sqllock_lease *l)
{
    /* A fast lease keeps its token only to name its row: a crash can
     * make the database draw it again (see SQLLOCK_LEASE_FAST). */
    if (l == NULL || l->count == 0 || (l->flags & SQLLOCK_LEASE_FAST))
        return 0;
    return l->token;
}

const char *sqllock_lease_owner(const sqllock_lease *l)
{
    return l != NULL && l->count > 0 ? l->owner : "";
}

int64_t sqllock_lease_remaining_ms(const sqllock_lease *l)
{
    int64_t left, state;

    if (l == NULL)
        return 0;
    state = atomic_load(&l->state);
    if (state != SQLLOCK_STATE_HELD && state != SQLLOCK_STATE_UNCERTAIN)
        return 0;
    left = (atomic_load(&l->deadline_us) - sqllock__now_us()) / 1000;
    return left > 0 ? left : 0;
}

int64_t sqllock_lease_deadline_us(const sqllock_lease *lease)
{
    return lease != NULL ? sqllock__lease_deadline(lease) : 0;
}
