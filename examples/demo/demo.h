/*
 * demo.h -- the oversell demo (examples/demo/demo.c) as a library, so that
 * the `sqllock demo` command (tools/demo_cmd.c) and the example program
 * examples/demo/main.c run the same code. It uses only <sqllock.h>.
 */
#ifndef SQLLOCK_EXAMPLE_DEMO_H
#define SQLLOCK_EXAMPLE_DEMO_H

/* The demo's exit codes: the tool's own for the same meanings. */
#define DEMO_EXIT_OK 0
#define DEMO_EXIT_FAIL 1       /* a mode but "no lock" sold other than the
                                  stock, or a worker failed */
#define DEMO_EXIT_DB 69        /* the database (or the system) failed */

#define DEMO_DEFAULT_WORKERS 8
#define DEMO_DEFAULT_STOCK 20
#define DEMO_MAX_WORKERS 256
#define DEMO_MAX_STOCK 1000000

/* What the demo runs on. */
typedef struct demo_config {
    /* The database URL, or NULL for a fresh temporary SQLite file that is
     * removed at the end. In a database given here the demo makes its
     * tables demo_stock and demo_sale and drops them at the end. */
    const char *url;
    int workers;               /* 1..DEMO_MAX_WORKERS */
    int stock;                 /* 1..DEMO_MAX_STOCK */
    /* The program's name, for messages on stderr: "<prog>: demo: ...". */
    const char *prog;
} demo_config;

/*
 * Sells the stock with each mode in turn (no lock, lease lock, row lock,
 * optimistic version, conditional UPDATE) and prints the table of what
 * each sold to stdout; errors go to stderr. Returns an exit code (above).
 * *open_status (when not NULL) gets the status of a failed open of the
 * database, SQLLOCK_OK when every open succeeded, so that the caller may
 * say more (e.g. how to build a driver that SQLLOCK_ENOTBUILT names).
 */
int demo_run(const demo_config *cfg, int *open_status);

#endif /* SQLLOCK_EXAMPLE_DEMO_H */
