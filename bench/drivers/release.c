/*
 * drivers/release.c -- bench_drivers --release-compare, PostgreSQL only:
 * the library's asynchronous release commit against a plain DELETE, both
 * by hand, with the server's WAL syncs per pair.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "drivers/drivers.h"

/* PostgreSQL: the library's asynchronous release commit against a plain
 * DELETE, both by hand. */
void release_compare(const config *cfg, const char *url)
{
#if defined(SQLLOCK_HAVE_POSTGRES)
    const bench_driver *bd;
    worker *ws;
    sqllock_db *db;
    char desc[200], pattern[64];
    row rows[8][3];
    pair_fn fns[3] = { pg_hand_pair_plain, pg_hand_pair, lib_pair };
    int c, s, rep, rc;

    db = bu_open(url);
    rc = sqllock_init(db);
    if (rc != SQLLOCK_OK)
        bu_die("sqllock_init on %s: %s", url, sqllock_errmsg(db));
    if (strcmp(sqllock_db_driver(db), "postgres") != 0) {
        fprintf(stderr, "bench_drivers: --release-compare is for PostgreSQL "
                "only; skipping %s\n", sqllock_db_driver(db));
        sqllock_close(db);
        return;
    }
    bd = find_driver("postgres");
    load_sql(bd);
    ws = calloc((size_t)cfg->max_clients, sizeof *ws);
    if (ws == NULL)
        bu_die("out of memory");
    for (c = 0; c < cfg->nclients; c++) {
        int n = cfg->clients[c];

        rows[c][0].label = "by hand, plain DELETE";
        rows[c][1].label = "by hand, DELETE + async commit";
        rows[c][2].label = "sqllock (async commit)";
        open_workers(bd, url, ws, n);
        if (c == 0)
            bd->describe(&ws[0], desc, sizeof desc);
        for (s = 0; s < 3; s++) {
            rows[c][s].clients = n;
            rows[c][s].nreps = cfg->reps;
        }
        for (rep = 0; rep < cfg->reps; rep++) {
            for (s = 0; s < 3; s++) {
                int k = (s + rep) % 3;
                long long w0 = pg_wal_syncs(ws, n), w1;
                run_point(ws, n, fns[k], cfg->secs, &rows[c][k].reps[rep]);
                w1 = pg_wal_syncs(ws, n);
                /* The warm-up pairs are counted in the syncs too. */
                rows[c][k].wal[rep] = (double)(w1 - w0) /
                    (double)(rows[c][k].reps[rep].pairs + n * WARMUP_PAIRS);
                fprintf(stderr, "  release-compare %d clients, run %d: "
                        "%-30s %8.0f pairs/s %.2f WAL syncs/pair\n", n,
                        rep + 1, rows[c][k].label, rows[c][k].reps[rep].rate,
                        rows[c][k].wal[rep]);
            }
        }
        for (s = 0; s < 3; s++)
            finish_row(&rows[c][s]);
        if (c == cfg->nclients - 1) {
            snprintf(pattern, sizeof pattern, "sqllock-bench:%ld:%%",
                     (long)getpid());
            bd->cleanup(&ws[0], pattern);
        }
        close_workers(bd, ws, n);
    }
    free(ws);
    sqllock_close(db);

    printf("\npostgres release commit (%s), %g s x %d, median\n", desc,
           cfg->secs, cfg->reps);
    printf("%-32s %7s %9s %9s %9s %10s %15s\n", "release statement",
           "clients", "pairs/s", "p50 us", "p99 us", "vs plain",
           "WAL syncs/pair");
    for (c = 0; c < cfg->nclients; c++) {
        for (s = 0; s < 3; s++) {
            const row *r = &rows[c][s];
            printf("%-32s %7d %9.0f %9.0f %9.0f %10.2f %15.2f\n", r->label,
                   r->clients, r->med.rate, r->med.p50, r->med.p99,
                   r->med.rate / rows[c][0].med.rate, r->wal_per_pair);
            csv_row(cfg, "postgres-release", desc, r,
                    r->med.rate / rows[c][0].med.rate, 0);
            res_put(cfg, "release", "postgres", r->label, r, 0,
                    s == 0 ? NULL : rows[c][0].label, rows[c][0].med.rate,
                    r->wal_per_pair, "WAL syncs/pair");
        }
    }
    printf("  WAL syncs/pair: pg_stat_wal.wal_sync over the run (the WAL "
           "writer's included) / pairs;\n  other sessions on the server "
           "add to it.\n");
    fflush(stdout);
#else
    (void)cfg;
    bu_die("--release-compare needs the postgres driver, which was not built "
        "(url %s)", url);
#endif
}

