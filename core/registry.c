/*
 * registry.c -- drivers by URL scheme.
 *
 * A small table guarded by a mutex, like sqlite3_vfs_register(): the
 * built-in drivers are registered once on first use, an application may add
 * its own, and registering the same driver twice is harmless.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <strings.h>

#include "internal.h"

#define REGISTRY_MAX 32

typedef struct entry {
    const char *scheme;
    const sqllock_driver *drv;
} entry;

/* A scheme whose driver was refused for its version, so that an open on
 * it can say why rather than "no driver". */
typedef struct refused {
    char scheme[32];
    char name[32];
    int version;
} refused;

static pthread_mutex_t registry_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t builtin_once = PTHREAD_ONCE_INIT;
static entry registry[REGISTRY_MAX];
static int registry_len;
static refused refusals[REGISTRY_MAX];
static int refusals_len;

/* The schemes of the drivers sqllock ships, built into this copy or not,
 * so that "not built" can be told apart from "unknown". */
static const char *const known_schemes[] = {
    "sqlite", "postgres", "postgresql", "mysql", "mariadb", NULL
};

#ifdef SQLLOCK_HAVE_SQLITE
extern const sqllock_driver sqllock__sqlite_driver;
#endif
#ifdef SQLLOCK_HAVE_POSTGRES
extern const sqllock_driver sqllock__postgres_driver;
#endif
#ifdef SQLLOCK_HAVE_MYSQL
extern const sqllock_driver sqllock__mysql_driver;
#endif

static void register_builtin_once(void)
{
#ifdef SQLLOCK_HAVE_SQLITE
    sqllock_driver_register(&sqllock__sqlite_driver);
#endif
#ifdef SQLLOCK_HAVE_POSTGRES
    sqllock_driver_register(&sqllock__postgres_driver);
#endif
#ifdef SQLLOCK_HAVE_MYSQL
    sqllock_driver_register(&sqllock__mysql_driver);
#endif
}

void sqllock__register_builtin(void)
{
    pthread_once(&builtin_once, register_builtin_once);
}

int sqllock__scheme_known(const char *scheme)
{
    int i;

    for (i = 0; known_schemes[i] != NULL; i++)
        if (strcasecmp(known_schemes[i], scheme) == 0)
            return 1;
    return 0;
}

/* Remembers (or forgets, version 0) that `scheme`'s driver was refused;
 * with registry_mutex held. */
static void note_refusal(const char *scheme, const char *name, int version)
{
    int i;

    for (i = 0; i < refusals_len; i++)
        if (strcasecmp(refusals[i].scheme, scheme) == 0)
            break;
    if (version == 0) {
        if (i < refusals_len)
            refusals[i] = refusals[--refusals_len];
        return;
    }
    if (i == refusals_len) {
        if (refusals_len == REGISTRY_MAX)
            return;
        refusals_len++;
    }
    snprintf(refusals[i].scheme, sizeof refusals[i].scheme, "%s", scheme);
    snprintf(refusals[i].name, sizeof refusals[i].name, "%s", name);
    refusals[i].version = version;
}

int sqllock__scheme_refused(const char *scheme, char *name, size_t size)
{
    int i, version = 0;

    pthread_mutex_lock(&registry_mutex);
    for (i = 0; i < refusals_len; i++) {
        if (strcasecmp(refusals[i].scheme, scheme) == 0) {
            snprintf(name, size, "%s", refusals[i].name);
            version = refusals[i].version;
            break;
        }
    }
    pthread_mutex_unlock(&registry_mutex);
    return version;
}

/* The statements every dialect gives (sqllock_driver.h). */
static int has_required_statements(const sqllock_driver *drv)
{
    const sqllock_dialect *d = drv->dialect;
    int id;

    if (d->stmts == NULL || d->nstmts <= SQLLOCK_SQL_TXN_LOCK_TIMEOUT)
        return 0;
    for (id = SQLLOCK_SQL_LEASE_ACQUIRE; id <= SQLLOCK_SQL_TXN_LOCK_TIMEOUT;
         id++) {
        if ((id == SQLLOCK_SQL_TOKEN_NEXT ||
             id == SQLLOCK_SQL_LEASE_SET_TOKEN) &&
            (drv->caps & SQLLOCK_CAP_RETURNING))
            continue;
        if (d->stmts[id].text == NULL)
            return 0;
    }
    return 1;
}

int sqllock_driver_register(const sqllock_driver *drv)
{
    int i, j, rc = SQLLOCK_OK;

    if (drv == NULL || drv->version < 1 || drv->name == NULL ||
        drv->schemes == NULL || drv->schemes[0] == NULL)
        return SQLLOCK_EINVAL;
    /* An older layout: none of its fields past `version`, `name` and
     * `schemes` may be read. */
    if (drv->version < SQLLOCK_DRIVER_VERSION_MIN) {
        pthread_mutex_lock(&registry_mutex);
        for (j = 0; drv->schemes[j] != NULL; j++)
            note_refusal(drv->schemes[j], drv->name, drv->version);
        pthread_mutex_unlock(&registry_mutex);
        return SQLLOCK_EUNSUPPORTED;
    }
    if (drv->dialect == NULL || !has_required_statements(drv) ||
        drv->connect == NULL ||
        drv->disconnect == NULL || drv->prepare == NULL ||
        drv->finalize == NULL || drv->execute == NULL ||
        drv->fetch == NULL || drv->column_int64 == NULL ||
        drv->column_text == NULL || drv->affected_rows == NULL ||
        drv->reset == NULL || drv->exec_script == NULL)
        return SQLLOCK_EINVAL;
    /* Without RETURNING the core's acquire needs a transaction and the
     * generated token. */
    if (!(drv->caps & SQLLOCK_CAP_RETURNING) &&
        (drv->begin == NULL || drv->commit == NULL ||
         drv->rollback == NULL || drv->insert_id == NULL))
        return SQLLOCK_EINVAL;
    pthread_mutex_lock(&registry_mutex);
    for (j = 0; drv->schemes[j] != NULL && rc == SQLLOCK_OK; j++) {
        for (i = 0; i < registry_len; i++)
            if (strcasecmp(registry[i].scheme, drv->schemes[j]) == 0)
                break;
        if (i == registry_len) {
            if (registry_len == REGISTRY_MAX) {
                rc = SQLLOCK_ENOMEM;
                break;
            }
            registry_len++;
        }
        registry[i].scheme = drv->schemes[j];
        registry[i].drv = drv;
        note_refusal(drv->schemes[j], drv->name, 0);
    }
    pthread_mutex_unlock(&registry_mutex);
    return rc;
}

const sqllock_driver *sqllock_driver_find(const char *scheme)
{
    const sqllock_driver *drv = NULL;
    int i;

    if (scheme == NULL)
        return NULL;
    sqllock__register_builtin();
    pthread_mutex_lock(&registry_mutex);
    for (i = 0; i < registry_len; i++) {
        if (strcasecmp(registry[i].scheme, scheme) == 0) {
            drv = registry[i].drv;
            break;
        }
    }
    pthread_mutex_unlock(&registry_mutex);
    return drv;
}
