/*
 * schema.c -- the tables the library needs: sqllock_init() creates them
 * (the dialect's DDL script, idempotent), reads their version, and lets
 * the driver install what a current schema may still lack (upgrade()).
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* Reads the schema version; *version is 0 when the schema table is
 * missing. */
static int read_schema_version(sqllock_db *db, int64_t *version)
{
    int rc, has_row = 0;

    *version = 0;
    rc = sqllock__run(db, SQLLOCK_SQL_SCHEMA_VERSION, NULL, 0,
                      "reading the schema version");
    if (rc == SQLLOCK_ENOSCHEMA)
        return SQLLOCK_OK;
    if (rc != SQLLOCK_OK)
        return rc;
    rc = sqllock__fetch(db, SQLLOCK_SQL_SCHEMA_VERSION, &has_row,
                        "reading the schema version");
    if (rc == SQLLOCK_OK && has_row)
        *version = db->drv->column_int64(db->stmts[SQLLOCK_SQL_SCHEMA_VERSION], 0);
    sqllock__end(db, SQLLOCK_SQL_SCHEMA_VERSION);
    return rc;
}

/* What a current schema may still lack (the driver's upgrade(), version
 * 6: MySQL's one-round-trip acquire routine). */
static int upgrade(sqllock_db *db)
{
    sqllock_dberr err;
    int rc;

    if (db->drv->upgrade == NULL)
        return sqllock__ok(db);
    if ((rc = sqllock__connected(db)) != SQLLOCK_OK)
        return rc;
    memset(&err, 0, sizeof err);
    rc = db->drv->upgrade(db->conn, &err);
    if (rc != SQLLOCK_OK) {
        err.status = rc;
        return sqllock__db_error(db, &err, "upgrading the sqllock schema");
    }
    db->no_routine = 0;
    db->no_wake_routine = 0;
    db->no_many_routine = 0;
    return sqllock__ok(db);
}

int sqllock_init(sqllock_db *db)
{
    sqllock_dberr err;
    int64_t version;
    int rc;

    if (db == NULL)
        return SQLLOCK_EINVAL;
    if (db->drv == NULL) {
        char why[SQLLOCK__ERRMSG_MAX];
        /* The reason is in the buffer being written: copy it first. */
        memcpy(why, db->errmsg, sizeof why);
        return sqllock__fail(db, SQLLOCK_EMISUSE, "sqllock_init: the "
                             "handle's open failed: %s", why);
    }
    if ((rc = sqllock__refuse_borrowed(db, "sqllock_init")) != SQLLOCK_OK)
        return rc;
    rc = read_schema_version(db, &version);
    if (rc != SQLLOCK_OK)
        return rc;
    if (version > SQLLOCK_SCHEMA_VERSION)
        return sqllock__fail(db, SQLLOCK_ESCHEMAVER, "the database has "
                             "sqllock schema version %lld; this library "
                             "knows versions up to %d", (long long)version,
                             SQLLOCK_SCHEMA_VERSION);
    /* A current version row means the whole script ran once (the row is
     * its last statement): nothing to do. Skipping it keeps init within
     * the run-time grants (DESIGN S2: an application with only SELECT,
     * INSERT, UPDATE and DELETE may call it at every start), and keeps
     * the script's DDL locks (on PostgreSQL, CREATE INDEX IF NOT EXISTS
     * locks the lease table against writes) off a live lock table. */
    if (version == SQLLOCK_SCHEMA_VERSION)
        return upgrade(db);
    rc = sqllock__connected(db);
    if (rc != SQLLOCK_OK)
        return rc;
    /* The script is idempotent (CREATE ... IF NOT EXISTS, inserts that
     * ignore existing rows), so running it over a complete schema, or from
     * several processes at once, changes nothing. */
    memset(&err, 0, sizeof err);
    rc = db->drv->exec_script(db->conn, db->drv->dialect->schema, &err);
    if (rc != SQLLOCK_OK) {
        err.status = rc;
        return sqllock__db_error(db, &err, "creating the sqllock schema");
    }
    rc = read_schema_version(db, &version);
    if (rc != SQLLOCK_OK)
        return rc;
    if (version != SQLLOCK_SCHEMA_VERSION)
        return sqllock__fail(db, SQLLOCK_ESCHEMAVER, "after creating the "
                             "schema its version reads %lld, not %d",
                             (long long)version, SQLLOCK_SCHEMA_VERSION);
    return upgrade(db);
}
