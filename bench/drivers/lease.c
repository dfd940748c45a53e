/*
 * drivers/lease.c -- bench_drivers' default run (and --fast, --no-wakeup,
 * --only): the floor, the library's SQL by hand, sqllock and the native
 * lock, at every client count, in one table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "drivers/drivers.h"

/* The library scenario's label, which says its flags. */
static const char *lib_label(void)
{
    switch (g_lease_flags & (SQLLOCK_LEASE_NO_WAKEUP | SQLLOCK_LEASE_FAST)) {
    case SQLLOCK_LEASE_NO_WAKEUP:
        return "sqllock, no wake-up";
    case SQLLOCK_LEASE_FAST:
        return "sqllock, fast mode";
    case SQLLOCK_LEASE_NO_WAKEUP | SQLLOCK_LEASE_FAST:
        return "sqllock, fast mode, no wake-up";
    default:
        return "sqllock acquire+release";
    }
}

static void print_header(const char *driver, const char *desc,
                         const config *cfg)
{
    printf("\n%s (%s), %g s x %d, median\n", driver, desc, cfg->secs,
           cfg->reps);
}

static void print_row(const row *r, double vs_floor, double vs_hand)
{
    printf("%-32s %7d %9.0f %9.0f %9.0f", r->label, r->clients, r->med.rate,
           r->med.p50, r->med.p99);
    if (vs_floor > 0)
        printf(" %10.2f", vs_floor);
    else
        printf(" %10s", "");
    if (vs_hand > 0)
        printf(" %11.2f", vs_hand);
    else
        printf(" %11s", "");
    printf(" %12.1f\n", r->med.cpu_us);
}

/* Their names in the common results CSV. */
static const char *const sc_names[SC_COUNT] = {
    "floor", "by hand", "sqllock", "native lock"
};

/* The four scenarios (three on SQLite) at every client count, one
 * table. */
void bench_url(const config *cfg, const char *url)
{
    const bench_driver *bd;
    worker *ws;
    sqllock_db *db;
    char desc[200], pattern[64];
    row rows[8][SC_COUNT];
    int c, s, rep, rc, nsc;
    long left = 0;

    db = bu_open(url);
    rc = sqllock_init(db);
    if (rc != SQLLOCK_OK)
        bu_die("sqllock_init on %s: %s", url, sqllock_errmsg(db));
    bd = find_driver(sqllock_db_driver(db));
    if (bd == NULL)
        bu_die("%s: the bench has no '%s' part", url, sqllock_db_driver(db));
    load_sql(bd);
    floor_setup(cfg, bd, db);
#if defined(SQLLOCK_HAVE_POSTGRES)
    g_pg_unnamed = strcmp(bd->name, "postgres") == 0 &&
                   strstr(url, "pooler=transaction") != NULL;
#endif
    nsc = bd->native_pair != NULL ? SC_COUNT : SC_NATIVE;
#if defined(SQLLOCK_HAVE_POSTGRES)
    if (g_pg_unnamed)
        nsc = SC_NATIVE;
#endif
    if (cfg->only == SC_NATIVE + 1 && nsc == SC_NATIVE)
        fprintf(stderr, "bench_drivers: %s has no native lock; nothing to "
                "run with --only native\n", bd->name);
    ws = calloc((size_t)cfg->max_clients, sizeof *ws);
    if (ws == NULL)
        bu_die("out of memory");
    for (c = 0; c < cfg->nclients; c++) {
        pair_fn fns[SC_COUNT];
        int n = cfg->clients[c];

        fns[SC_FLOOR] = bd->floor_pair;
        fns[SC_HAND] = bd->hand_pair;
        fns[SC_LIB] = lib_pair;
        fns[SC_NATIVE] = bd->native_pair;
        rows[c][SC_FLOOR].label = bd->floor_label;
        rows[c][SC_HAND].label = "lock SQL by hand";
        rows[c][SC_LIB].label = lib_label();
        rows[c][SC_NATIVE].label = bd->native_label;
        open_workers(bd, url, ws, n);
        if (c == 0)
            bd->describe(&ws[0], desc, sizeof desc);
        for (s = 0; s < nsc; s++) {
            rows[c][s].clients = n;
            rows[c][s].nreps = cfg->reps;
            memset(rows[c][s].wal, 0, sizeof rows[c][s].wal);
            memset(rows[c][s].reps, 0, sizeof rows[c][s].reps);
        }
        for (rep = 0; rep < cfg->reps; rep++) {
            for (s = 0; s < nsc; s++) {
                /* A rotating order, so no scenario always runs first. */
                int k = (s + rep) % nsc;
                if (cfg->only != 0 && cfg->only != k + 1)
                    continue;
                run_point(ws, n, fns[k], cfg->secs, &rows[c][k].reps[rep]);
                fprintf(stderr, "  %s %d clients, run %d: %-29s %8.0f "
                        "pairs/s (%ld pairs, slowest %.0f ms)\n", bd->name,
                        n, rep + 1, rows[c][k].label,
                        rows[c][k].reps[rep].rate, rows[c][k].reps[rep].pairs,
                        rows[c][k].reps[rep].max / 1000);
            }
        }
        for (s = 0; s < nsc; s++)
            finish_row(&rows[c][s]);
        if (c == cfg->nclients - 1) {
            snprintf(pattern, sizeof pattern, "sqllock-bench:%ld:%%",
                     (long)getpid());
            left = bd->cleanup(&ws[0], pattern);
        }
        close_workers(bd, ws, n);
    }
    free(ws);
    sqllock_close(db);

    print_header(bd->name, desc, cfg);
    printf("%-32s %7s %9s %9s %9s %10s %11s %12s\n", "scenario", "clients",
           "pairs/s", "p50 us", "p99 us", "vs floor", "vs by-hand",
           "client CPU");
    for (c = 0; c < cfg->nclients; c++) {
        double fl = rows[c][SC_FLOOR].med.rate;
        double hand = rows[c][SC_HAND].med.rate;
        double lib = rows[c][SC_LIB].med.rate;

        print_row(&rows[c][SC_FLOOR], 0, 0);
        print_row(&rows[c][SC_HAND], hand / fl, 0);
        print_row(&rows[c][SC_LIB], lib / fl, lib / hand);
        csv_row(cfg, bd->name, desc, &rows[c][SC_FLOOR], 1.0, 0);
        csv_row(cfg, bd->name, desc, &rows[c][SC_HAND], hand / fl, 0);
        csv_row(cfg, bd->name, desc, &rows[c][SC_LIB], lib / fl, lib / hand);
        if (nsc > SC_NATIVE) {
            double nat = rows[c][SC_NATIVE].med.rate;
            print_row(&rows[c][SC_NATIVE], nat / fl, 0);
            csv_row(cfg, bd->name, desc, &rows[c][SC_NATIVE], nat / fl, 0);
        }
        for (s = 0; s < nsc; s++) {
            const char *name = sc_names[s];
            /* --only: the scenarios that did not run get no row. */
            if (cfg->only != 0 && cfg->only != s + 1)
                continue;
            if (s == SC_LIB && g_lease_flags != 0)
                name = lib_label();
            res_put(cfg, g_lease_flags & SQLLOCK_LEASE_FAST ? "fast"
                                                            : "uncontended",
                    bd->name, name, &rows[c][s], 0,
                    s == SC_FLOOR ? NULL : "floor", fl,
                    rows[c][s].med.cpu_us, "us CPU/pair");
        }
    }
    printf("  client CPU: this process's user+system CPU per pair, in us "
           "(all clients' threads)\n");
    if (bd->native_note != NULL)
        printf("  %s\n", bd->native_note);
    if (bd->floor_note != NULL)
        printf("  %s\n", bd->floor_note);
    if (left != 0)
        printf("  cleanup: removed %ld leftover lease rows\n", left);
    fflush(stdout);
}

