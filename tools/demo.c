/*
 * demo.c -- `sqllock demo`: the classic oversell, shown on this machine.
 *
 * A shop has `stock` items. `workers` processes sell them, each in a loop:
 * read the quantity; stop if none is left; take a card payment (sleep about
 * 2 ms); write quantity - 1; record the sale. Without a lock, several
 * workers read the same quantity and each sells "the last item", so more
 * items are sold than there were. With a sqllock lease around each sale,
 * exactly `stock` items are sold.
 *
 * Each worker is a process of its own with its own database handle, opened
 * after fork(): a handle (and SQLite's connection under it) must never be
 * shared across fork(). The parent closes its own handle before forking,
 * and the workers wait at a pipe until all of them are ready, so they start
 * together.
 *
 * The demo's tables and statements are its own, run with
 * sqllock__exec_sql(); their SQL text is written once, below, in SQLite's
 * dialect. They live next to the sqllock tables in the same file.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "internal.h"

/* The demo's SQL, all of it. */
static const char sql_create_stock[] =
    "CREATE TABLE IF NOT EXISTS demo_stock("
    "id INTEGER PRIMARY KEY, qty INTEGER NOT NULL)";
static const char sql_create_sale[] =
    "CREATE TABLE IF NOT EXISTS demo_sale("
    "id INTEGER PRIMARY KEY, worker INTEGER NOT NULL)";
static const char sql_clear_stock[] = "DELETE FROM demo_stock";
static const char sql_fill_stock[] =
    "INSERT INTO demo_stock(id, qty) VALUES (1, ?)";
static const char sql_clear_sales[] = "DELETE FROM demo_sale";
static const char sql_read_qty[] = "SELECT qty FROM demo_stock WHERE id = 1";
static const char sql_write_qty[] =
    "UPDATE demo_stock SET qty = ? WHERE id = 1";
static const char sql_add_sale[] = "INSERT INTO demo_sale(worker) VALUES (?)";
static const char sql_count_sales[] = "SELECT COUNT(*) FROM demo_sale";

#define DEMO_LOCK_NAME "demo:stock"
#define DEMO_LOCK_TTL_MS 5000
#define DEMO_LOCK_WAIT_MS 30000
#define DEMO_PAYMENT_US 2000
/* How often a worker retries a statement the database reported busy. */
#define DEMO_BUSY_RETRIES 50
#define DEMO_DEFAULT_WORKERS 8
#define DEMO_DEFAULT_STOCK 20
#define DEMO_MAX_WORKERS 256
#define DEMO_MAX_STOCK 1000000

enum demo_mode { DEMO_NO_LOCK, DEMO_LEASE_LOCK, DEMO_MODES_ };

static const char *const mode_names[DEMO_MODES_] = { "no lock",
                                                     "lease lock" };

/* What the demo runs on. */
typedef struct demo {
    char *url;          /* the database URL (allocated) */
    char *dir;          /* the temporary directory, or NULL with --db */
    char *file;         /* the database file in `dir` (allocated) */
    int workers;
    int stock;
} demo;

/* One mode's outcome. */
typedef struct demo_result {
    int64_t sold;
    double seconds;
    int failed_workers;
} demo_result;

static int64_t now_us(void)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        return 0;
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void sleep_us(long us)
{
    struct timespec ts;

    ts.tv_sec = us / 1000000;
    ts.tv_nsec = (us % 1000000) * 1000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Runs one of the demo's statements, retrying (a bounded number of times)
 * while SQLite says the database is busy. */
static int exec_retry(sqllock_db *db, const char *sql,
                      const sqllock_value *args, int nargs, int64_t *first)
{
    int has_row = 0, i, rc = SQLLOCK_EDBBUSY;

    for (i = 0; i < DEMO_BUSY_RETRIES && rc == SQLLOCK_EDBBUSY; i++) {
        if (i > 0)
            sleep_us(1000 + (long)(now_us() % 4000));
        rc = sqllock__exec_sql(db, sql, args, nargs, &has_row, first, NULL);
    }
    if (rc == SQLLOCK_OK && first != NULL && !has_row)
        rc = sqllock__fail(db, SQLLOCK_EDB, "demo: the stock row is missing");
    return rc;
}

/* One sale, under the lease when there is one. Sets *done when the stock
 * is empty. Returns a status. */
static int sell_one(sqllock_db *db, sqllock_lease *lease, int worker,
                    int *done)
{
    sqllock_value arg;
    int64_t qty = 0;
    int rc = SQLLOCK_OK, rel;

    if (lease != NULL) {
        rc = sqllock_lease_acquire(lease, DEMO_LOCK_WAIT_MS);
        if (rc != SQLLOCK_OK)
            return rc;
    }
    rc = exec_retry(db, sql_read_qty, NULL, 0, &qty);
    if (rc == SQLLOCK_OK && qty <= 0) {
        *done = 1;
    } else if (rc == SQLLOCK_OK) {
        sleep_us(DEMO_PAYMENT_US);            /* the card payment */
        arg = sqllock__int(qty - 1);
        rc = exec_retry(db, sql_write_qty, &arg, 1, NULL);
        if (rc == SQLLOCK_OK) {
            arg = sqllock__int(worker);
            rc = exec_retry(db, sql_add_sale, &arg, 1, NULL);
        }
    }
    if (lease != NULL) {
        rel = sqllock_lease_release(lease);
        if (rc == SQLLOCK_OK)
            rc = rel;
    }
    return rc;
}

/* A worker process's body; returns its exit code. */
static int worker_main(const demo *d, enum demo_mode mode, int worker,
                       int gate)
{
    sqllock_lease_options lo = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *lease = NULL;
    sqllock_db *db = NULL;
    char holder[64], byte;
    int rc, done = 0;

    rc = sqllock_open(d->url, NULL, &db);
    if (rc == SQLLOCK_OK && mode == DEMO_LEASE_LOCK) {
        snprintf(holder, sizeof holder, "sqllock demo worker %d", worker);
        lo.ttl_ms = DEMO_LOCK_TTL_MS;
        lo.holder = holder;
        rc = sqllock_lease_new(db, DEMO_LOCK_NAME, &lo, &lease);
    }
    /* Wait at the gate: the parent closes its end once all are forked. */
    while (read(gate, &byte, 1) < 0 && errno == EINTR)
        ;
    while (rc == SQLLOCK_OK && !done)
        rc = sell_one(db, lease, worker, &done);
    if (rc != SQLLOCK_OK)
        cli_db_error(db, rc, "demo: worker %d (%s)", worker,
                     mode_names[mode]);
    sqllock_lease_free(lease);
    sqllock_close(db);
    return rc == SQLLOCK_OK ? 0 : 1;
}

/* Waits for every started worker; counts those that did not exit 0. */
static int reap_workers(const pid_t *pids, int n)
{
    int i, failed = 0;

    for (i = 0; i < n; i++) {
        int ws = 0;
        pid_t r;

        do
            r = waitpid(pids[i], &ws, 0);
        while (r < 0 && errno == EINTR);
        if (r < 0 || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
            if (r >= 0 && WIFSIGNALED(ws))
                cli_error("demo: worker %d was killed by signal %d", i,
                          WTERMSIG(ws));
            else
                cli_error("demo: worker %d failed (exit %d)", i,
                          r < 0 ? -1 : WEXITSTATUS(ws));
            failed++;
        }
    }
    return failed;
}

/* Opens the demo database on the parent's side. */
static int open_parent(const demo *d, sqllock_db **db)
{
    int rc = sqllock_open(d->url, NULL, db);

    if (rc != SQLLOCK_OK) {
        cli_db_error(*db, rc, "demo: cannot open the database");
        sqllock_close(*db);
        *db = NULL;
    }
    return rc;
}

/* Refills the stock and clears the sales before a mode runs. */
static int reset_shop(const demo *d)
{
    sqllock_db *db;
    sqllock_value arg = sqllock__int(d->stock);
    int rc = open_parent(d, &db);

    if (rc != SQLLOCK_OK)
        return rc;
    rc = exec_retry(db, sql_clear_stock, NULL, 0, NULL);
    if (rc == SQLLOCK_OK)
        rc = exec_retry(db, sql_fill_stock, &arg, 1, NULL);
    if (rc == SQLLOCK_OK)
        rc = exec_retry(db, sql_clear_sales, NULL, 0, NULL);
    if (rc != SQLLOCK_OK)
        cli_db_error(db, rc, "demo: cannot reset the stock");
    sqllock_close(db);
    return rc;
}

/* Runs one mode: W workers sell until the stock is gone. */
static int run_mode(demo *d, enum demo_mode mode, demo_result *res)
{
    pid_t *pids;
    sqllock_db *db;
    int gate[2], started, rc;
    int64_t t0;

    memset(res, 0, sizeof *res);
    rc = reset_shop(d);
    if (rc != SQLLOCK_OK)
        return rc;
    pids = calloc((size_t)d->workers, sizeof *pids);
    if (pids == NULL || pipe(gate) != 0) {
        cli_error("demo: %s", strerror(pids == NULL ? ENOMEM : errno));
        free(pids);
        return SQLLOCK_ESYS;
    }
    fflush(NULL);   /* so that no worker writes out the parent's buffers */
    for (started = 0; started < d->workers; started++) {
        pid_t pid = fork();

        if (pid < 0) {
            cli_error("demo: fork: %s", strerror(errno));
            break;
        }
        if (pid == 0) {
            int code;

            close(gate[1]);
            free(pids);
            code = worker_main(d, mode, started, gate[0]);
            close(gate[0]);
            free(d->url);
            free(d->dir);
            free(d->file);
            exit(code);
        }
        pids[started] = pid;
    }
    close(gate[0]);
    t0 = now_us();
    close(gate[1]);                 /* opens the gate */
    res->failed_workers = reap_workers(pids, started);
    res->seconds = (double)(now_us() - t0) / 1e6;
    free(pids);
    if (started < d->workers)
        return SQLLOCK_ESYS;

    rc = open_parent(d, &db);
    if (rc != SQLLOCK_OK)
        return rc;
    rc = exec_retry(db, sql_count_sales, NULL, 0, &res->sold);
    if (rc != SQLLOCK_OK)
        cli_db_error(db, rc, "demo: cannot count the sales");
    sqllock_close(db);
    return rc;
}

/* Appends `path` to `out` percent-encoded for a URL's path. */
static void encode_path(char *out, const char *path)
{
    static const char hex[] = "0123456789ABCDEF";

    out += strlen(out);
    for (; *path != '\0'; path++) {
        unsigned char c = (unsigned char)*path;

        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
            || (c >= '0' && c <= '9') || strchr("/._-~", c) != NULL) {
            *out++ = (char)c;
        } else {
            *out++ = '%';
            *out++ = hex[c >> 4];
            *out++ = hex[c & 15];
        }
    }
    *out = '\0';
}

/* Makes the temporary directory and the URL of the file in it. */
static int make_temp_db(demo *d)
{
    const char *tmp = getenv("TMPDIR");
    size_t n;

    if (tmp == NULL || *tmp == '\0')
        tmp = "/tmp";
    n = strlen(tmp) + 64;
    d->dir = malloc(n);
    d->file = malloc(n);
    d->url = malloc(3 * n + 16);
    if (d->dir == NULL || d->file == NULL || d->url == NULL) {
        cli_error("demo: %s", strerror(ENOMEM));
        free(d->dir);
        d->dir = NULL;
        return CLI_EXIT_DB;
    }
    snprintf(d->dir, n, "%s/sqllock-demo-XXXXXX", tmp);
    if (mkdtemp(d->dir) == NULL) {
        cli_error("demo: cannot make a directory in %s: %s", tmp,
                  strerror(errno));
        free(d->dir);
        d->dir = NULL;
        return CLI_EXIT_DB;
    }
    snprintf(d->file, n, "%s/demo.db", d->dir);
    strcpy(d->url, d->file[0] == '/' ? "sqlite://" : "sqlite:");
    encode_path(d->url, d->file);
    return CLI_EXIT_OK;
}

/* Removes the temporary directory and SQLite's files in it. */
static void remove_temp_db(const demo *d)
{
    static const char *const suffixes[] = { "", "-wal", "-shm", "-journal" };
    size_t i, n;
    char *path;

    if (d->dir == NULL)
        return;
    n = strlen(d->file) + 16;
    path = malloc(n);
    for (i = 0; path != NULL && i < sizeof suffixes / sizeof *suffixes; i++) {
        snprintf(path, n, "%s%s", d->file, suffixes[i]);
        if (unlink(path) != 0 && errno != ENOENT)
            cli_error("demo: cannot remove %s: %s", path, strerror(errno));
    }
    free(path);
    if (rmdir(d->dir) != 0)
        cli_error("demo: cannot remove %s: %s", d->dir, strerror(errno));
}

/* Makes the sqllock schema and the demo's tables. Returns an exit code. */
static int prepare_db(const demo *d)
{
    sqllock_db *db;
    int rc = open_parent(d, &db);

    if (rc != SQLLOCK_OK)
        return CLI_EXIT_DB;
    if (strcmp(sqllock_db_driver(db), "sqlite") != 0) {
        cli_error("demo: the demo's own SQL is written for SQLite; give "
                  "--db a sqlite: URL, or none for a temporary file");
        sqllock_close(db);
        return CLI_EXIT_USAGE;
    }
    rc = sqllock_init(db);
    if (rc != SQLLOCK_OK)
        cli_db_error(db, rc, "demo: cannot create the sqllock schema");
    if (rc == SQLLOCK_OK) {
        rc = exec_retry(db, sql_create_stock, NULL, 0, NULL);
        if (rc == SQLLOCK_OK)
            rc = exec_retry(db, sql_create_sale, NULL, 0, NULL);
        if (rc != SQLLOCK_OK)
            cli_db_error(db, rc, "demo: cannot create the demo's tables");
    }
    sqllock_close(db);
    return rc == SQLLOCK_OK ? CLI_EXIT_OK : CLI_EXIT_DB;
}

/* Runs both modes and prints the table; returns the exit code. */
static int run_demo(demo *d)
{
    demo_result res[DEMO_MODES_];
    int m, failed = 0, rc;
    int64_t oversold[DEMO_MODES_];

    rc = prepare_db(d);
    if (rc != CLI_EXIT_OK)
        return rc;
    for (m = 0; m < DEMO_MODES_; m++) {
        if (run_mode(d, (enum demo_mode)m, &res[m]) != SQLLOCK_OK)
            return CLI_EXIT_DB;
        failed += res[m].failed_workers;
        oversold[m] = res[m].sold > d->stock ? res[m].sold - d->stock : 0;
    }
    printf("%-12s%9s%7s%6s%10s%13s\n", "mode", "workers", "stock", "sold",
           "oversold", "purchases/s");
    for (m = 0; m < DEMO_MODES_; m++)
        printf("%-12s%9d%7d%6" PRId64 "%10" PRId64 "%13.1f\n", mode_names[m],
               d->workers, d->stock, res[m].sold, oversold[m],
               res[m].seconds > 0 ? (double)res[m].sold / res[m].seconds
                                  : 0.0);
    if (oversold[DEMO_NO_LOCK] > 0)
        printf("Without a lock, %" PRId64 " more items were sold than "
               "there were: oversell happens on this machine.\n",
               oversold[DEMO_NO_LOCK]);
    else
        printf("Without a lock, no oversell happened this time on this "
               "machine (the race depends on timing: try more --workers).\n");
    if (fflush(stdout) != 0)
        return CLI_EXIT_DB;
    if (failed > 0) {
        cli_error("demo: %d worker%s failed: the results above are not "
                  "complete", failed, failed == 1 ? "" : "s");
        return CLI_EXIT_FAIL;
    }
    if (res[DEMO_LEASE_LOCK].sold != d->stock) {
        cli_error("demo: with the lease lock, %" PRId64 " items were sold, "
                  "not %d: the lock failed", res[DEMO_LEASE_LOCK].sold,
                  d->stock);
        return CLI_EXIT_FAIL;
    }
    return CLI_EXIT_OK;
}

int cli_cmd_demo(const cli_ctx *ctx, int argc, char **argv)
{
    cli_ctx c = *ctx;
    const char *workers_text = NULL, *stock_text = NULL;
    int help = 0, npos, rc;
    const cli_opt opts[] = {
        { "db", &c.db_opt, NULL }, { "workers", &workers_text, NULL },
        { "stock", &stock_text, NULL }, { "help", NULL, &help },
        { NULL, NULL, NULL }
    };
    int64_t workers = DEMO_DEFAULT_WORKERS, stock = DEMO_DEFAULT_STOCK;
    demo d;
    char *shown;

    rc = cli_parse("demo", argc, argv, opts, NULL, 0, &npos, NULL);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (help)
        return cli_help();
    if (workers_text != NULL)
        rc = cli_parse_int("demo", "workers", workers_text, 1,
                           DEMO_MAX_WORKERS, &workers);
    if (rc == CLI_EXIT_OK && stock_text != NULL)
        rc = cli_parse_int("demo", "stock", stock_text, 1, DEMO_MAX_STOCK,
                           &stock);
    if (rc != CLI_EXIT_OK)
        return rc;

    memset(&d, 0, sizeof d);
    d.workers = (int)workers;
    d.stock = (int)stock;
    /* Only an explicit --db is used: the demo never touches the database
     * of $SQLLOCK_DB or the tool's default file. */
    if (c.db_opt != NULL) {
        d.url = malloc(strlen(c.db_opt) + 1);
        if (d.url == NULL) {
            cli_error("demo: %s", strerror(ENOMEM));
            return CLI_EXIT_DB;
        }
        strcpy(d.url, c.db_opt);
        shown = sqllock__url_redact(d.url);
        printf("database: %s\n", shown != NULL ? shown : "(given by --db)");
        free(shown);
        rc = CLI_EXIT_OK;
    } else {
        rc = make_temp_db(&d);
        if (rc == CLI_EXIT_OK)
            printf("database: %s (temporary, removed at the end)\n", d.file);
    }
    if (rc == CLI_EXIT_OK)
        rc = run_demo(&d);
    remove_temp_db(&d);
    free(d.url);
    free(d.dir);
    free(d.file);
    return rc;
}
