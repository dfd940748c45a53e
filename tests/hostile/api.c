/*
 * api.c -- test_hostile: the API table (api_cases), run on every URL,
 * and a name with an embedded NUL.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "hostile.h"

/* ------------------------------------------------------------------ */
/* The API table                                                       */
/* ------------------------------------------------------------------ */

typedef enum api_kind {
    K_NEW,          /* sqllock_lease_new(name, ttl = num or 10 s) */
    K_TRY,          /* new + try_acquire; OK: round trip and release */
    K_ACQUIRE,      /* new + acquire(wait = num) */
    K_RENEW,        /* new + renew, never acquired */
    K_RELEASE,      /* new + release, never acquired */
    K_TXN,          /* row-lock transaction on [name] */
    K_TXN_TIMEOUT,  /* a transaction with lock_timeout_ms = num */
    K_REC,          /* record create/get/cas/delete with key name */
    K_REC_VALUE,    /* record create with a value of num bytes */
    K_REC_CAS,      /* record cas on the victim with expected = num */
    K_TBL_GET,      /* table_get with the text key name */
    K_TBL_NAME,     /* table_update with the table name name */
    K_TBL_COL,      /* table_update assigning column name */
    K_TBL_VALUE,    /* table_update setting qty of key "plain" to text */
    K_TBL_ADD,      /* table_update adding num to qty of key "plain" */
    K_FENCE_COL,    /* fenced update with fence column name */
    K_FENCE_TOKEN,  /* fenced update with token num */
    K_OPEN,         /* sqllock_open(url template name) */
    K_OPEN_TRY      /* open (must succeed) + try_acquire, round trip */
} api_kind;

/* Name flags. */
#define F_RAW 1u      /* the name as written (else after the prefix) */
#define F_NULL 2u     /* a NULL name */

typedef struct api_case {
    const char *label;
    api_kind kind;
    const char *drv;          /* only on this driver; NULL: all */
    const char *name;         /* the input (a URL template for K_OPEN*) */
    unsigned flags;
    size_t big;               /* > 0: a name of this many bytes instead */
    int64_t num;
    int want;
    const char *msg;          /* the message mentions one of these */
} api_case;

#define MB (1024 * 1024)

static const api_case api_cases[] = {
    /* Names no call may take: NULL, empty, 1 MB, invalid UTF-8, control
     * characters -- on the entry points test_badinput.c does not try. */
    { "lease NULL name", K_TRY, NULL, NULL, F_NULL, 0, 0, SQLLOCK_EINVAL,
      "NULL" },
    { "lease 1 MB name", K_TRY, NULL, NULL, 0, MB, 0, SQLLOCK_EINVAL,
      "255" },
    { "lease 1 MB name, 4-byte UTF-8", K_TRY, NULL, "\xf0\x9d\x84\x9e", 0,
      MB, 0, SQLLOCK_EINVAL, "255" },
    { "txn NULL name", K_TXN, NULL, NULL, F_NULL, 0, 0, SQLLOCK_EINVAL,
      "NULL" },
    { "txn empty name", K_TXN, NULL, "", F_RAW, 0, 0, SQLLOCK_EINVAL,
      "empty" },
    { "txn 1 MB name", K_TXN, NULL, NULL, 0, MB, 0, SQLLOCK_EINVAL, "255" },
    { "txn \\xff\\xfe", K_TXN, NULL, "\xff\xfe", 0, 0, 0, SQLLOCK_EINVAL,
      "UTF-8" },
    { "txn overlong '/'", K_TXN, NULL, "\xc0\xaf", 0, 0, 0, SQLLOCK_EINVAL,
      "UTF-8" },
    { "txn surrogate", K_TXN, NULL, "\xed\xa0\x80", 0, 0, 0,
      SQLLOCK_EINVAL, "UTF-8" },
    { "txn Latin-1 e-acute", K_TXN, NULL, "caf\xe9", 0, 0, 0,
      SQLLOCK_EINVAL, "UTF-8" },
    { "txn newline", K_TXN, NULL, "a\nb", 0, 0, 0, SQLLOCK_EINVAL,
      "control" },
    { "txn C1 control", K_TXN, NULL, "a\xc2\x85z", 0, 0, 0, SQLLOCK_EINVAL,
      "control" },
    { "record NULL key", K_REC, NULL, NULL, F_NULL, 0, 0, SQLLOCK_EINVAL,
      "NULL" },
    { "record empty key", K_REC, NULL, "", F_RAW, 0, 0, SQLLOCK_EINVAL,
      "empty" },
    { "record 1 MB key", K_REC, NULL, NULL, 0, MB, 0, SQLLOCK_EINVAL,
      "255" },
    { "record \\xff key", K_REC, NULL, "\xff", 0, 0, 0, SQLLOCK_EINVAL,
      "UTF-8" },
    { "record truncated UTF-8 key", K_REC, NULL, "\xe2\x82", 0, 0, 0,
      SQLLOCK_EINVAL, "UTF-8" },
    { "record escape-sequence key", K_REC, NULL, "\x1b[2J", 0, 0, 0,
      SQLLOCK_EINVAL, "control" },

    /* Names that are valid: stored and found literally, never read as
     * SQL, LIKE patterns or escapes. */
    { "lease SQL injection", K_TRY, NULL, "'; DROP TABLE sqllock_lease; --",
      0, 0, 0, SQLLOCK_OK, NULL },
    { "lease always-true", K_TRY, NULL, "x' OR '1'='1", 0, 0, 0, SQLLOCK_OK,
      NULL },
    { "lease %", K_TRY, NULL, "%", 0, 0, 0, SQLLOCK_OK, NULL },
    { "lease victi% (LIKE)", K_TRY, NULL, "victi%", 0, 0, 0, SQLLOCK_OK,
      NULL },
    { "lease victi_ (LIKE)", K_TRY, NULL, "victi_", 0, 0, 0, SQLLOCK_OK,
      NULL },
    { "lease backslash", K_TRY, NULL, "\\", 0, 0, 0, SQLLOCK_OK, NULL },
    { "lease \\' escape", K_TRY, NULL, "\\'; DELETE FROM sqllock_lease; #",
      0, 0, 0, SQLLOCK_OK, NULL },
    { "lease backquote", K_TRY, NULL, "`x`; DROP TABLE sqllock_lease", 0, 0,
      0, SQLLOCK_OK, NULL },
    { "lease double quote", K_TRY, NULL, "\"x\"", 0, 0, 0, SQLLOCK_OK, NULL },
    { "lease $1 and ?", K_TRY, NULL, "$1 ? :name @v", 0, 0, 0, SQLLOCK_OK,
      NULL },
    { "lease %00 text", K_TRY, NULL, "%00\\0\\x00", 0, 0, 0, SQLLOCK_OK,
      NULL },
    { "lease victim + space (PAD SPACE)", K_TRY, NULL, "victim ", 0, 0, 0,
      SQLLOCK_OK, NULL },
    { "lease VICTIM (case)", K_TRY, NULL, "VICTIM", 0, 0, 0, SQLLOCK_OK,
      NULL },
    { "lease 4-byte UTF-8", K_TRY, NULL, "\xf0\x9d\x84\x9e\xf0\x9f\x94\x92", 0,
      0, 0, SQLLOCK_OK, NULL },
    { "lease the victim itself", K_TRY, NULL, "victim", 0, 0, 0,
      SQLLOCK_BUSY, "held" },
    { "txn SQL injection", K_TXN, NULL, "'; DROP TABLE sqllock_row; --", 0,
      0, 0, SQLLOCK_OK, NULL },
    { "txn %_ wildcards", K_TXN, NULL, "vic%_", 0, 0, 0, SQLLOCK_OK, NULL },
    { "txn backslash quote", K_TXN, NULL, "\\'\"`", 0, 0, 0, SQLLOCK_OK,
      NULL },
    { "record SQL injection", K_REC, NULL,
      "'); DELETE FROM sqllock_record; --", 0, 0, 0, SQLLOCK_OK, NULL },
    { "record wildcards", K_REC, NULL, "%_\\%", 0, 0, 0, SQLLOCK_OK, NULL },

    /* Times: huge, overflowing, negative. */
    { "ttl INT64_MAX", K_NEW, NULL, "t", 0, 0, INT64_MAX, SQLLOCK_EINVAL,
      "too large" },
    { "ttl just above the limit", K_NEW, NULL, "t", 0, 0,
      INT64_C(9000000000001), SQLLOCK_EINVAL, "too large" },
    { "ttl at the limit (285 years)", K_NEW, NULL, "ttl-max", 0, 0,
      INT64_C(9000000000000), SQLLOCK_OK, NULL },
    { "ttl INT64_MIN", K_NEW, NULL, "t", 0, 0, INT64_MIN, SQLLOCK_EINVAL,
      "ttl" },
    { "wait INT64_MAX, free lock", K_ACQUIRE, NULL, "wait-max", 0, 0,
      INT64_MAX, SQLLOCK_OK, NULL },
    { "wait INT64_MAX - 1, free lock", K_ACQUIRE, NULL, "wait-max1", 0, 0,
      INT64_MAX - 1, SQLLOCK_OK, NULL },
    { "wait 1 ms on the victim", K_ACQUIRE, NULL, "victim", 0, 0, 1,
      SQLLOCK_TIMEOUT, "victim" },
    { "wait INT64_MIN", K_ACQUIRE, NULL, "w", 0, 0, INT64_MIN,
      SQLLOCK_EINVAL, "wait" },
    { "renew never acquired", K_RENEW, NULL, "victim", 0, 0, 0,
      SQLLOCK_ENOTHELD, "not hold" },
    { "release never acquired", K_RELEASE, NULL, "victim", 0, 0, 0,
      SQLLOCK_ENOTHELD, "not hold" },
    { "txn lock timeout -1", K_TXN_TIMEOUT, NULL, "lt", 0, 0, -1,
      SQLLOCK_EINVAL, "timeout" },
    { "txn lock timeout INT64_MIN", K_TXN_TIMEOUT, NULL, "lt", 0, 0,
      INT64_MIN, SQLLOCK_EINVAL, "timeout" },
    { "txn lock timeout INT64_MAX", K_TXN_TIMEOUT, NULL, "lt-max", 0, 0,
      INT64_MAX, SQLLOCK_OK, NULL },
    { "txn lock timeout 2^31 ms", K_TXN_TIMEOUT, NULL, "lt-2g", 0, 0,
      INT64_C(2147483648), SQLLOCK_OK, NULL },
    { "record value 1 MB + 1", K_REC_VALUE, NULL, "big", 0, 0,
      SQLLOCK_VALUE_MAX + 1, SQLLOCK_EINVAL, "bytes" },
    { "record cas expected INT64_MAX", K_REC_CAS, NULL, NULL, 0, 0,
      INT64_MAX, SQLLOCK_EINVAL, "overflow" },
    { "record cas expected -1", K_REC_CAS, NULL, NULL, 0, 0, -1,
      SQLLOCK_EINVAL, "version" },
    { "record cas expected 2 (wrong)", K_REC_CAS, NULL, NULL, 0, 0, 2,
      SQLLOCK_CONFLICT, "version|conflict|changed" },

    /* Application tables: identifiers are checked, values are bound. */
    { "table name with SQL", K_TBL_NAME, NULL,
      "inv; DROP TABLE sqllock_lease", F_RAW, 0, 0, SQLLOCK_EINVAL,
      "table name" },
    { "table name quoted", K_TBL_NAME, NULL, "\"inv\"", F_RAW, 0, 0,
      SQLLOCK_EINVAL, "table name" },
    { "table name 1 MB", K_TBL_NAME, NULL, NULL, F_RAW, MB, 0,
      SQLLOCK_EINVAL, "table name" },
    { "column with backquote", K_TBL_COL, NULL, "qty` = 0, `fence", F_RAW, 0,
      0, SQLLOCK_EINVAL, "column" },
    { "column with comment", K_TBL_COL, NULL, "qty/**/", F_RAW, 0, 0,
      SQLLOCK_EINVAL, "column" },
    { "text key always-true", K_TBL_GET, NULL, "' OR '1'='1", F_RAW, 0, 0,
      SQLLOCK_NOTFOUND, "no row|not found|no such" },
    { "text key with SQL, row exists", K_TBL_GET, NULL,
      "k'; DROP TABLE sqllock_lease; --", F_RAW, 0, 0, SQLLOCK_OK, NULL },
    { "text key LIKE %", K_TBL_GET, NULL, "%", F_RAW, 0, 0,
      SQLLOCK_NOTFOUND, "no row|not found|no such" },
    /* A value the database refuses for its column is bad input. (SQLite
     * types values, not columns: it stores the text, or turns an
     * overflowing sum into a REAL, so these run on the others.) */
    { "text into a number column", K_TBL_VALUE, "postgres",
      "1; DROP TABLE x", F_RAW, 0, 0, SQLLOCK_EINVAL, "invalid" },
    { "text into a number column", K_TBL_VALUE, "mysql", "1; DROP TABLE x",
      F_RAW, 0, 0, SQLLOCK_EINVAL, "qty" },
    { "qty + INT64_MAX overflows", K_TBL_ADD, "postgres", NULL, 0, 0,
      INT64_MAX, SQLLOCK_EINVAL, "range" },
    { "qty + INT64_MAX overflows", K_TBL_ADD, "mysql", NULL, 0, 0,
      INT64_MAX, SQLLOCK_EINVAL, "range" },
    /* Application values are the application's bytes: PostgreSQL
     * refuses what is not valid in its encoding; SQLite, and MySQL for
     * this column, compare the bytes and find no row. */
    { "text key invalid UTF-8", K_TBL_GET, "postgres", "k\xff", F_RAW, 0,
      0, SQLLOCK_EINVAL, "invalid byte sequence" },
    { "text key invalid UTF-8", K_TBL_GET, "mysql", "k\xff", F_RAW, 0, 0,
      SQLLOCK_NOTFOUND, "no row|not found|no such" },
    { "text key invalid UTF-8", K_TBL_GET, "sqlite", "k\xff", F_RAW, 0, 0,
      SQLLOCK_NOTFOUND, "no row|not found|no such" },
    { "fence column with SQL", K_FENCE_COL, NULL, "fence = 0 --", F_RAW, 0,
      0, SQLLOCK_EINVAL, "fence column" },
    { "fencing token 0", K_FENCE_TOKEN, NULL, NULL, 0, 0, 0,
      SQLLOCK_EINVAL, "token" },
    { "fencing token INT64_MIN", K_FENCE_TOKEN, NULL, NULL, 0, 0, INT64_MIN,
      SQLLOCK_EINVAL, "token" },
    { "fencing token stale", K_FENCE_TOKEN, NULL, NULL, 0, 0, 6,
      SQLLOCK_LOST, "newer|larger|token|lost" },

    /* URLs. %00 is the one way to put a NUL byte into a name the API
     * takes; it is refused wherever it appears. */
    { "URL %00 in a sqlite path", K_OPEN, "sqlite",
      "sqlite://{dir}/a%00b.db", 0, 0, 0, SQLLOCK_EURL, "NUL" },
    { "URL 1 MB sqlite path", K_OPEN, "sqlite", "sqlite://{dir}/{big}", 0, 0,
      0, SQLLOCK_ECONNECT, "open|name|long" },
    { "URL sqlite unknown parameter", K_OPEN, "sqlite",
      "sqlite://{dir}/x.db?vfs=unix-none", 0, 0, 0, SQLLOCK_EURL, "vfs" },
    { "URL sqlite busy_timeout overflow", K_OPEN, "sqlite",
      "sqlite://{dir}/x.db?busy_timeout=99999999999999999999", 0, 0, 0,
      SQLLOCK_EURL, "busy_timeout" },
    { "URL sqlite busy_timeout negative", K_OPEN, "sqlite",
      "sqlite://{dir}/x.db?busy_timeout=-1", 0, 0, 0, SQLLOCK_EURL,
      "busy_timeout" },
    { "URL control character", K_OPEN, "sqlite", "sqlite://{dir}/a\tb.db", 0,
      0, 0, SQLLOCK_EURL, "control" },
    { "URL port 99999999", K_OPEN, "postgres",
      "postgres://h:99999999/db", 0, 0, 0, SQLLOCK_EURL, "port" },
    { "URL port 0", K_OPEN, "postgres", "postgres://h:0/db", 0, 0, 0,
      SQLLOCK_EURL, "port" },
    { "URL port -1", K_OPEN, "mysql", "mysql://u@h:-1/db", 0, 0, 0,
      SQLLOCK_EURL, "port" },
    { "URL port 65536", K_OPEN, "mysql", "mysql://u@h:65536/db", 0, 0, 0,
      SQLLOCK_EURL, "port" },
    { "URL unclosed [", K_OPEN, "postgres", "postgres://u@[::1/db", 0, 0, 0,
      SQLLOCK_EURL, "[" },
    { "URL bad %-escape", K_OPEN, "postgres", "postgres://u:p%zz@h/db", 0,
      0, 0, SQLLOCK_EURL, "escape" },
    { "URL truncated %-escape", K_OPEN, "mysql", "mysql://u:p@h/db%4", 0, 0,
      0, SQLLOCK_EURL, "escape" },
    { "URL %00 in a password", K_OPEN, "postgres",
      "{scheme}://{user}:a%00b@{hostport}/{db}", 0, 0, 0, SQLLOCK_EURL,
      "NUL" },
    { "URL %00 in a user", K_OPEN, "mysql",
      "{scheme}://a%00b:p@{hostport}/{db}", 0, 0, 0, SQLLOCK_EURL, "NUL" },
    { "URL unknown scheme with creds", K_OPEN, NULL,
      "pgsql://u:secret@h/db", 0, 0, 0, SQLLOCK_ESCHEME, "pgsql" },
    /* The real password followed by an encoded "&options=...": taken
     * literally, it is a wrong password. Read as a parameter, the
     * connect would succeed. */
    { "URL password smuggles options", K_OPEN, "postgres",
      "{scheme}://{user}:{pw}%26options%3D-c%20synchronous_commit%3Doff"
      "@{hostport}/{db}", 0, 0, 0, SQLLOCK_EPERM, "password|auth" },
    { "URL password smuggles init_command", K_OPEN, "mysql",
      "{scheme}://{user}:{pw}%3Finit_command%3DSET%20autocommit%3D0"
      "@{hostport}/{db}", 0, 0, 0, SQLLOCK_EPERM, "denied" },
    { "URL database name smuggles options", K_OPEN, "postgres",
      "{scheme}://{user}:{pw}@{hostport}/{db}%3Foptions%3D-csearch_path"
      "%3Devil", 0, 0, 0, SQLLOCK_ECONNECT, "does not exist" },
    { "URL database name with SQL", K_OPEN, "mysql",
      "{scheme}://{user}:{pw}@{hostport}/{db}%60%3B%20DROP%20TABLE%20x", 0,
      0, 0, SQLLOCK_EPERM, "denied" },
    { "URL unknown libpq parameter", K_OPEN, "postgres",
      "{url}{q}init_command=DROP%20TABLE%20sqllock_lease", 0, 0, 0,
      SQLLOCK_EURL, "init_command" },
    { "URL bad sslmode", K_OPEN, "postgres", "{url}{q}sslmode=bogus", 0, 0,
      0, SQLLOCK_EURL, "sslmode" },
    { "URL MySQL init_command", K_OPEN, "mysql",
      "{url}{q}init_command=DROP%20TABLE%20sqllock_lease", 0, 0, 0,
      SQLLOCK_EURL, "init_command" },
    { "URL MySQL local_infile", K_OPEN, "mysql", "{url}{q}local_infile=1", 0,
      0, 0, SQLLOCK_EURL, "local_infile" },
    { "URL MySQL LOCAL_INFILE", K_OPEN, "mysql", "{url}{q}LOCAL_INFILE=1", 0,
      0, 0, SQLLOCK_EURL, "LOCAL_INFILE" },
    { "URL MySQL relative socket", K_OPEN, "mysql",
      "{url}{q}socket=..%2Fsock", 0, 0, 0, SQLLOCK_EURL, "socket" },
    { "URL MySQL bad ssl_mode", K_OPEN, "mysql", "{url}{q}ssl_mode=off", 0,
      0, 0, SQLLOCK_EURL, "ssl_mode" },
    { "URL MySQL parameter without value", K_OPEN, "mysql",
      "{url}{q}local_infile", 0, 0, 0, SQLLOCK_EURL, "name=value" },
    /* PostgreSQL options= is the user's own session configuration: it is
     * allowed, and the library keeps its contract under it or says why
     * it cannot. */
    { "URL options synchronous_commit=off", K_OPEN_TRY, "postgres",
      "{url}{q}options=-csynchronous_commit%3Doff", 0, 0, 0, SQLLOCK_OK,
      NULL },
    { "URL options synchronous_commit=local", K_OPEN_TRY, "postgres",
      "{url}{q}options=-csynchronous_commit%3Dlocal", 0, 0, 0, SQLLOCK_OK,
      NULL },
    { "URL options synchronous_commit=remote_apply", K_OPEN_TRY, "postgres",
      "{url}{q}options=-csynchronous_commit%3Dremote_apply", 0, 0, 0,
      SQLLOCK_OK, NULL },
    { "URL options serializable", K_OPEN_TRY, "postgres",
      "{url}{q}options=-cdefault_transaction_isolation%3Dserializable", 0, 0,
      0, SQLLOCK_OK, NULL },
    { "URL options read only", K_OPEN_TRY, "postgres",
      "{url}{q}options=-cdefault_transaction_read_only%3Don", 0, 0, 0,
      SQLLOCK_EPERM, "read-only" },
    { "URL options search_path elsewhere", K_OPEN_TRY, "postgres",
      "{url}{q}options=-csearch_path%3Dpg_catalog", 0, 0, 0,
      SQLLOCK_ENOSCHEMA, "init" },
};

/* The input name of case `c`: NULL, the bytes as written, or `big` bytes
 * (the prefix, then the case's name repeated, then 'n'); malloc'd. */
static char *case_name(const fixture *f, const api_case *c)
{
    char *s;
    size_t n, o;

    if ((c->flags & F_NULL) || (c->name == NULL && c->big == 0))
        return NULL;
    if (c->big > 0) {
        const char *unit = c->name != NULL ? c->name : "n";
        size_t ul = strlen(unit);
        s = malloc(c->big + 1);
        assert_non_null(s);
        o = (c->flags & F_RAW) ? 0 : strlen(f->prefix);
        memcpy(s, f->prefix, o);
        while (o + ul <= c->big) {
            memcpy(s + o, unit, ul);
            o += ul;
        }
        memset(s + o, 'n', c->big - o);
        s[c->big] = '\0';
        return s;
    }
    n = strlen(f->prefix) + strlen(c->name) + 1;
    s = malloc(n);
    assert_non_null(s);
    snprintf(s, n, "%s%s", (c->flags & F_RAW) ? "" : f->prefix, c->name);
    return s;
}

/* A lease round trip: held, listed under exactly this name with this
 * owner, released. */
static void lease_round_trip(fixture *f, sqllock_db *db, sqllock_lease *l,
                             const char *name, const char *label)
{
    tu_row r;

    assert_string_equal(sqllock_lease_name(l), name);
    assert_int_equal(tu_find(f->vdb, name, &r), SQLLOCK_OK);
    if (r.found != 1)
        fail_msg("%s: the name did not round-trip (%d rows)", label,
                 r.found);
    assert_string_equal(r.owner, sqllock_lease_owner(l));
    assert_int_equal(r.token, sqllock_lease_token(l));
    EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, label);
}

static int run_table_case(fixture *f, const api_case *c, const char *name)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_table t = { NULL, "id", "version" };
    sqllock_cell key = SQLLOCK_TEXT("plain");
    sqllock_cell set = { "qty", SQLLOCK_OP_SET, NULL, 1 };
    int64_t vals[1], ver = 0;
    const char *cols[1] = { "qty" };

    (void)o;
    t.table = f->app;
    switch (c->kind) {
    case K_TBL_GET:
        key.text = name;
        return sqllock_table_get(f->db, &t, &key, cols, 1, vals, &ver);
    case K_TBL_NAME:
        t.table = name;
        return sqllock_table_update(f->db, &t, &key, &set, 1, NULL, 0);
    case K_TBL_COL:
        set.column = name;
        return sqllock_table_update(f->db, &t, &key, &set, 1, NULL, 0);
    case K_TBL_VALUE:
        set.text = name;
        return sqllock_table_update(f->db, &t, &key, &set, 1, NULL, 0);
    case K_TBL_ADD:
        set.op = SQLLOCK_OP_ADD;
        set.number = c->num;
        return sqllock_table_update(f->db, &t, &key, &set, 1, NULL, 0);
    case K_FENCE_COL:
        return sqllock_table_fenced_update(f->db, &t, &key, name, 100, &set,
                                           1, NULL, 0);
    case K_FENCE_TOKEN:
        return sqllock_table_fenced_update(f->db, &t, &key, "fence", c->num,
                                           &set, 1, NULL, 0);
    default:
        return -1;
    }
}

/* Runs one case; returns its status, having checked the round trip of a
 * case that must succeed (and undone it). */
static int run_api_case(fixture *f, const api_case *c, const char *name,
                        sqllock_db **msg_db)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;
    sqllock_db *db = f->db;
    int rc;

    *msg_db = f->db;
    o.ttl_ms = 30000;
    switch (c->kind) {
    case K_NEW:
        o.ttl_ms = c->num;
        /* fall through */
    case K_TRY:
    case K_ACQUIRE:
    case K_RENEW:
    case K_RELEASE:
        rc = sqllock_lease_new(db, name, &o, &l);
        if (rc != SQLLOCK_OK)
            return rc;
        if (c->kind == K_RENEW)
            rc = sqllock_lease_renew(l);
        else if (c->kind == K_RELEASE)
            rc = sqllock_lease_release(l);
        else if (c->kind == K_ACQUIRE)
            rc = sqllock_lease_acquire(l, c->num);
        else
            rc = sqllock_lease_try_acquire(l);
        if (rc == SQLLOCK_OK && c->kind != K_RENEW && c->kind != K_RELEASE) {
            if (c->kind == K_NEW) {
                /* The server's expiry is the ttl away, not wrapped. */
                tu_row r;
                assert_int_equal(tu_find(f->vdb, name, &r), SQLLOCK_OK);
                if (r.remaining_ms < c->num - INT64_C(86400000) ||
                    r.remaining_ms > c->num)
                    fail_msg("%s: the server's expiry is %lld ms away, "
                             "want %lld", c->label,
                             (long long)r.remaining_ms, (long long)c->num);
                /* A renewal does the same arithmetic. */
                EXPECT_RC(db, sqllock_lease_renew(l), SQLLOCK_OK, c->label);
            }
            lease_round_trip(f, db, l, name, c->label);
            ho_forget_name(f, name);
        }
        sqllock_lease_free(l);
        return rc;
    case K_TXN:
    case K_TXN_TIMEOUT: {
        sqllock_txn_options to = SQLLOCK_TXN_OPTIONS_INIT;
        sqllock_txn *t = NULL;
        const char *names[1];
        int got = -1;

        names[0] = name;
        to.lock_timeout_ms = c->kind == K_TXN_TIMEOUT ? c->num : 0;
        rc = sqllock_txn_begin(db, &to, &t);
        if (rc != SQLLOCK_OK)
            return rc;
        rc = sqllock_txn_lock(t, names, 1, SQLLOCK_LOCK_WAIT, &got);
        if (rc == SQLLOCK_OK) {
            char sql[200];
            sqllock_value arg = sqllock__text(name);
            int64_t n = -1;
            int has = 0;
            assert_int_equal(got, 1);
            /* The row has exactly this name (read in the transaction). */
            EXPECT_RC(db, sqllock__exec_sql(db, ho_ph(f, "SELECT count(*) "
                                                      "FROM sqllock_row WHERE "
                                                      "name = ?", sql,
                                                      sizeof sql),
                                            &arg, 1, &has, &n, NULL),
                      SQLLOCK_OK, c->label);
            if (n != 1)
                fail_msg("%s: the row-lock name did not round-trip (%lld "
                         "rows)", c->label, (long long)n);
            EXPECT_RC(db, sqllock_txn_commit(t), SQLLOCK_OK, c->label);
        }
        sqllock_txn_free(t);
        if (rc == SQLLOCK_OK)
            ho_forget_name(f, name);
        return rc;
    }
    case K_REC: {
        void *v = NULL;
        size_t len = 0;
        int64_t ver = 0;

        rc = sqllock_record_create(db, name, "v\0'", 3);
        if (rc != SQLLOCK_OK)
            return rc;
        EXPECT_RC(db, sqllock_record_get(db, name, &v, &len, &ver),
                  SQLLOCK_OK, c->label);
        assert_int_equal(len, 3);
        assert_memory_equal(v, "v\0'", 3);
        assert_int_equal(ver, 1);
        sqllock_free(v);
        EXPECT_RC(db, sqllock_record_cas(db, name, 1, "w", 1, &ver),
                  SQLLOCK_OK, c->label);
        assert_int_equal(ver, 2);
        EXPECT_RC(db, sqllock_record_delete(db, name, 2), SQLLOCK_OK,
                  c->label);
        return rc;
    }
    case K_REC_VALUE: {
        char *v = calloc(1, (size_t)c->num);
        assert_non_null(v);
        rc = sqllock_record_create(db, name, v, (size_t)c->num);
        free(v);
        return rc;
    }
    case K_REC_CAS: {
        char key[80];
        snprintf(key, sizeof key, "%svictim", f->prefix);
        return sqllock_record_cas(db, key, c->num, "x", 1, NULL);
    }
    case K_OPEN:
    case K_OPEN_TRY: {
        sqllock_db *o_db = NULL;
        char *url = ho_expand_url(f, c->name);
        if (url == NULL)
            return -2;
        rc = sqllock_open(url, NULL, &o_db);
        free(url);
        if (o_db == NULL)
            fail_msg("%s: sqllock_open() left no handle (%s)", c->label,
                     sqllock_errname(rc));
        if (c->kind == K_OPEN_TRY) {
            char lname[80];
            if (rc != SQLLOCK_OK)
                fail_msg("%s: open: %s: %s", c->label, sqllock_errname(rc),
                         sqllock_errmsg(o_db));
            snprintf(lname, sizeof lname, "%sopen-try", f->prefix);
            rc = sqllock_lease_new(o_db, lname, &o, &l);
            if (rc == SQLLOCK_OK)
                rc = sqllock_lease_try_acquire(l);
            if (rc == SQLLOCK_OK) {
                lease_round_trip(f, o_db, l, lname, c->label);
                ho_forget_name(f, lname);
            }
            sqllock_lease_free(l);
        }
        /* The message is read before the handle goes. */
        *msg_db = o_db;
        return rc;
    }
    default:
        return run_table_case(f, c, name);
    }
}

void test_hostile_api_table(void **state)
{
    fixture *f = *state;
    size_t i, ran = 0, skipped = 0;

    for (i = 0; i < sizeof api_cases / sizeof api_cases[0]; i++) {
        const api_case *c = &api_cases[i];
        sqllock_db *mdb = NULL;
        snapshot before;
        char *name;
        int rc;

        if (c->drv != NULL && !ho_is_drv(f, c->drv))
            continue;
        name = (c->kind == K_OPEN || c->kind == K_OPEN_TRY)
                   ? NULL : case_name(f, c);
        ho_snap(f, &before);
        rc = run_api_case(f, c, name, &mdb);
        if (rc == -2) {
            printf("hostile [%s]: skip \"%s\": the URL has no password\n",
                   f->drv, c->label);
            skipped++;
        } else {
            if (rc != c->want)
                fail_msg("%s: got %s, want %s (message: %s)", c->label,
                         sqllock_errname(rc), sqllock_errname(c->want),
                         sqllock_errmsg(mdb));
            if (c->want != SQLLOCK_OK) {
                if (sqllock_errcode(mdb) != c->want)
                    fail_msg("%s: sqllock_errcode() is %s, not %s", c->label,
                             sqllock_errname(sqllock_errcode(mdb)),
                             sqllock_errname(c->want));
                if (!ho_msg_has(sqllock_errmsg(mdb), c->msg))
                    fail_msg("%s: message \"%s\" mentions none of \"%s\"",
                             c->label, sqllock_errmsg(mdb), c->msg);
            }
            /* No message carries a password from a URL. */
            if (f->parts->password != NULL &&
                strlen(f->parts->password) >= 4 &&
                strstr(sqllock_errmsg(mdb), f->parts->password) != NULL)
                fail_msg("%s: the message shows the password: %s", c->label,
                         sqllock_errmsg(mdb));
            ho_expect_unchanged(f, &before, c->want != SQLLOCK_OK, c->label);
            ran++;
        }
        if (mdb != f->db)
            sqllock_close(mdb);
        ho_snap_free(&before);
        free(name);
    }
    printf("hostile [%s]: %zu API cases ran, %zu skipped (table of %zu)\n",
           f->drv, ran, skipped, sizeof api_cases / sizeof api_cases[0]);
}

/* A name the C API cannot carry: bytes after a NUL are not part of it
 * (a C string ends there). "x\0y" is the lock "x", not another. */
void test_hostile_embedded_nul_ends_the_name(void **state)
{
    fixture *f = *state;
    char a[80], b[80];
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *la = NULL, *lb = NULL;
    size_t p = strlen(f->prefix);

    snprintf(a, sizeof a, "%snul", f->prefix);
    memcpy(b, a, p + 3);
    memcpy(b + p + 3, "\0tail", 6);
    o.ttl_ms = 30000;
    EXPECT_RC(f->db, sqllock_lease_new(f->db, a, &o, &la), SQLLOCK_OK, "a");
    EXPECT_RC(f->vdb, sqllock_lease_new(f->vdb, b, &o, &lb), SQLLOCK_OK, "b");
    assert_string_equal(sqllock_lease_name(lb), a);
    EXPECT_RC(f->db, sqllock_lease_try_acquire(la), SQLLOCK_OK, "acquire");
    EXPECT_RC(f->vdb, sqllock_lease_try_acquire(lb), SQLLOCK_BUSY,
              "the same lock");
    EXPECT_RC(f->db, sqllock_lease_release(la), SQLLOCK_OK, "release");
    ho_forget_name(f, a);
    sqllock_lease_free(la);
    sqllock_lease_free(lb);
}
