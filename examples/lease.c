/*
 * lease.c -- the smallest complete use of a sqllock lease.
 *
 *   example_lease [URL]     (default: sqlite:///tmp/sqllock-example.db)
 *
 * Takes the lock "nightly-report" for 30 s, waiting up to 10 s for it, does
 * its work while checking that the lease is still trustworthy, passes the
 * fencing token on to whatever it writes, and releases.
 */
#include <stdio.h>

#include <sqllock.h>

int main(int argc, char **argv)
{
    const char *url = argc > 1 ? argv[1] : "sqlite:///tmp/sqllock-example.db";
    sqllock_lease_options lopts = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_db *db = NULL;
    sqllock_lease *lease = NULL;
    int rc;

    rc = sqllock_open(url, NULL, &db);
    if (rc == SQLLOCK_OK)
        rc = sqllock_init(db);     /* once per database; needs CREATE */
    if (rc != SQLLOCK_OK) {
        fprintf(stderr, "open: %s\n", sqllock_errmsg(db));
        sqllock_close(db);
        return 1;
    }

    lopts.ttl_ms = 30000;
    rc = sqllock_lease_new(db, "nightly-report", &lopts, &lease);
    if (rc == SQLLOCK_OK)
        rc = sqllock_lease_acquire(lease, 10000);
    if (rc == SQLLOCK_TIMEOUT) {
        printf("someone else is running the report\n");
    } else if (rc != SQLLOCK_OK) {
        fprintf(stderr, "acquire: %s\n", sqllock_errmsg(db));
    } else {
        printf("holding the lock: token %lld, owner %s, %lld ms to trust it\n",
               (long long)sqllock_lease_token(lease),
               sqllock_lease_owner(lease),
               (long long)sqllock_lease_remaining_ms(lease));
        /* ... work; before each write, check the lease is still ours and
         * send the token along so storage can refuse a stale holder ... */
        if (sqllock_lease_remaining_ms(lease) > 0)
            printf("writing report with fencing token %lld\n",
                   (long long)sqllock_lease_token(lease));
        rc = sqllock_lease_release(lease);
        if (rc == SQLLOCK_LOST)
            fprintf(stderr, "the lease was lost before release: another "
                    "holder may have run concurrently\n");
    }
    sqllock_lease_free(lease);
    sqllock_close(db);
    return rc == SQLLOCK_OK || rc == SQLLOCK_TIMEOUT ? 0 : 1;
}
