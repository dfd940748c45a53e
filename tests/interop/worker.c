/*
 * The C process of the interoperability test (tests/interop/run.py):
 *
 *   sqllock_interop_c ROLE URL NAME N OUT COUNTER PERMITS HOLD_MS
 *
 * ROLE lock: N holds of the lease NAME (ttl 10 s, watched), each reading
 * the integer in COUNTER, then writing it plus one, HOLD_MS apart; role
 * sem: N holds of a permit of the semaphore NAME of PERMITS permits; role
 * leader: N terms of the election NAME (ttl 3 s), each HOLD_MS long,
 * then resigned. Each hold appends "ROLE TOKEN T0 T1 OK|LOST" to OUT in
 * one write(): T0 after the grant, T1 before the release, microseconds
 * of CLOCK_MONOTONIC (sqllock_now_us()), the same clock in every process
 * of the host. The Python, Go and Node.js workers do the same; run.py
 * checks the lines of all of them together.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sqllock.h"

#define WAIT_MS 120000

static void nap_ms(int64_t ms)
{
    struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static int die(const char *what, int rc, const char *msg)
{
    fprintf(stderr, "interop C worker: %s: %s (%s)\n", what,
            sqllock_errname(rc), msg ? msg : "");
    return 1;
}

/* One line, one write(): O_APPEND keeps the lines of several processes
 * whole. */
static int note(const char *out, const char *role, int64_t token, int64_t t0,
                int64_t t1, int lost)
{
    char line[160];
    int n = snprintf(line, sizeof line, "%s %" PRId64 " %" PRId64 " %" PRId64
                     " %s\n", role, token, t0, t1, lost ? "LOST" : "OK");
    int fd = open(out, O_WRONLY | O_APPEND | O_CREAT, 0644);

    if (fd < 0 || write(fd, line, (size_t)n) != n) {
        perror(out);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    return 0;
}

/* The counter's read-increment-write, split by a pause so that two
 * holders at once would lose an increment. */
static int bump(const char *path, int64_t hold_ms)
{
    long long v = 0;
    FILE *f = fopen(path, "r");

    if (f) {
        if (fscanf(f, "%lld", &v) != 1)
            v = 0;
        fclose(f);
    }
    nap_ms(hold_ms / 2);
    f = fopen(path, "w");
    if (!f || fprintf(f, "%lld\n", v + 1) < 0 || fclose(f) != 0) {
        perror(path);
        return -1;
    }
    nap_ms(hold_ms - hold_ms / 2);
    return 0;
}

static int run_lock(sqllock_db *db, const char *name, int n, const char *out,
                    const char *counter, int64_t hold_ms)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    o.ttl_ms = 10000;
    for (int i = 0; i < n; i++) {
        sqllock_lease *l = NULL;
        int rc = sqllock_lease_new(db, name, &o, &l);
        if (rc == SQLLOCK_OK)
            rc = sqllock_lease_acquire(l, WAIT_MS);
        if (rc == SQLLOCK_OK)
            rc = sqllock_lease_watch(l, NULL);
        if (rc != SQLLOCK_OK) {
            sqllock_lease_free(l);
            return die("lock", rc, sqllock_errmsg(db));
        }
        int64_t token = sqllock_lease_token(l), t0 = sqllock_now_us();
        if (bump(counter, hold_ms) != 0) {
            sqllock_lease_free(l);
            return 1;
        }
        int64_t t1 = sqllock_now_us();
        int lost = sqllock_lease_state(l) == SQLLOCK_STATE_LOST;
        rc = sqllock_lease_release(l);
        sqllock_lease_free(l);
        if (rc == SQLLOCK_LOST)
            lost = 1;
        else if (rc != SQLLOCK_OK)
            return die("release", rc, sqllock_errmsg(db));
        if (note(out, "lock", token, t0, t1, lost) != 0)
            return 1;
    }
    return 0;
}

static int run_sem(sqllock_db *db, const char *name, int n, const char *out,
                   int permits, int64_t hold_ms)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_sem *s = NULL;
    int rc;

    o.ttl_ms = 10000;
    if ((rc = sqllock_sem_new(db, name, permits, &o, &s)) != SQLLOCK_OK)
        return die("semaphore", rc, sqllock_errmsg(db));
    for (int i = 0; i < n; i++) {
        if ((rc = sqllock_sem_acquire(s, WAIT_MS)) != SQLLOCK_OK)
            break;
        sqllock_lease *l = sqllock_sem_lease(s);
        int64_t token = sqllock_lease_token(l), t0 = sqllock_now_us();
        nap_ms(hold_ms);
        int64_t t1 = sqllock_now_us();
        int lost = sqllock_lease_state(l) == SQLLOCK_STATE_LOST;
        rc = sqllock_sem_release(s);
        if (rc == SQLLOCK_LOST)
            lost = 1;
        else if (rc != SQLLOCK_OK)
            break;
        if (note(out, "sem", token, t0, t1, lost) != 0) {
            sqllock_sem_free(s);
            return 1;
        }
    }
    if (rc != SQLLOCK_OK && rc != SQLLOCK_LOST) {
        die("semaphore", rc, sqllock_errmsg(db));
        sqllock_sem_free(s);
        return 1;
    }
    sqllock_sem_free(s);
    return 0;
}

static int run_leader(const char *url, const char *name, int n,
                      const char *out, int64_t hold_ms)
{
    sqllock_leader_options o = SQLLOCK_LEADER_OPTIONS_INIT;
    sqllock_leader *ld = NULL;
    char why[256];
    int64_t end = sqllock_now_us() + (int64_t)WAIT_MS * 1000;
    int rc;

    o.ttl_ms = 3000;
    rc = sqllock_leader_start(url, name, &o, &ld, why, sizeof why);
    if (rc != SQLLOCK_OK)
        return die("leader", rc, why);
    for (int i = 0; i < n;) {
        if (sqllock_now_us() > end) {
            sqllock_leader_stop(ld);
            fprintf(stderr, "interop C worker: %d of %d terms in %d s\n", i,
                    n, WAIT_MS / 1000);
            return 1;
        }
        if (!sqllock_leader_is_leader(ld)) {
            nap_ms(5);
            continue;
        }
        int64_t token = sqllock_leader_token(ld), t0 = sqllock_now_us();
        nap_ms(hold_ms);
        int64_t t1 = sqllock_now_us();
        int lost = !sqllock_leader_is_leader(ld) ||
                   sqllock_leader_token(ld) != token;
        rc = sqllock_leader_resign(ld);
        if (rc == SQLLOCK_LOST)
            lost = 1;
        if (note(out, "leader", token, t0, t1, lost) != 0)
            break;
        i++;
    }
    sqllock_leader_stop(ld);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 9) {
        fprintf(stderr, "usage: %s ROLE URL NAME N OUT COUNTER PERMITS "
                "HOLD_MS\n", argv[0]);
        return 2;
    }
    const char *role = argv[1], *url = argv[2], *name = argv[3];
    int n = atoi(argv[4]), permits = atoi(argv[7]);
    int64_t hold_ms = atoll(argv[8]);

    if (strcmp(role, "leader") == 0)
        return run_leader(url, name, n, argv[5], hold_ms);

    sqllock_db *db = NULL;
    int rc = sqllock_open(url, NULL, &db), ret;
    if (rc != SQLLOCK_OK) {
        ret = die("open", rc, sqllock_errmsg(db));
        sqllock_close(db);
        return ret;
    }
    if (strcmp(role, "lock") == 0)
        ret = run_lock(db, name, n, argv[5], argv[6], hold_ms);
    else if (strcmp(role, "sem") == 0)
        ret = run_sem(db, name, n, argv[5], permits, hold_ms);
    else {
        fprintf(stderr, "interop C worker: unknown role %s\n", role);
        ret = 2;
    }
    sqllock_close(db);
    return ret;
}
