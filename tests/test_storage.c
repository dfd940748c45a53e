/*
 * test_storage.c -- fault 6 of issue 7 on SQLite, the driver whose
 * database is a file the process writes itself: the disk fills up, or the
 * file is read-only. A lock call then fails with a clear status
 * (SQLLOCK_EFULL, SQLLOCK_EPERM) and nothing already held is harmed: the
 * holder's row is unchanged, it is released once the fault is gone, the
 * file passes PRAGMA integrity_check, and tokens keep growing (L5).
 *
 * The disk fills up through a VFS shim, the way SQLite's own tests inject
 * faults: every write returns SQLITE_FULL, as the unix VFS does on ENOSPC.
 * When the test runs as root it also fills a real 1 MiB tmpfs. A
 * read-only file is one the process may not write: mode 0444 in a 0555
 * directory, and when the test runs as root (which ignores modes) the
 * child that opens it drops to the user "nobody" first.
 *
 * PostgreSQL and MySQL report a full disk from the server (SQLSTATE 53100;
 * errors 1021, 1114): the drivers map those to SQLLOCK_EFULL too, which a
 * test on loopback servers cannot provoke safely.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdatomic.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <sqlite3.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"

/* ------------------------------------------------------------------ */
/* A VFS that can fail every write with SQLITE_FULL                    */
/* ------------------------------------------------------------------ */

typedef struct full_file {
    sqlite3_file base;         /* pMethods = &full_io */
    sqlite3_file *real;        /* the unix VFS's file, right after */
} full_file;

static sqlite3_vfs *real_vfs;
static sqlite3_vfs full_vfs;
static atomic_int disk_full;

#define REAL(f) (((full_file *)(f))->real)

static int f_close(sqlite3_file *f)
{
    return REAL(f)->pMethods->xClose(REAL(f));
}

static int f_read(sqlite3_file *f, void *p, int n, sqlite3_int64 off)
{
    return REAL(f)->pMethods->xRead(REAL(f), p, n, off);
}

static int f_write(sqlite3_file *f, const void *p, int n, sqlite3_int64 off)
{
    if (atomic_load(&disk_full))
        return SQLITE_FULL;
    return REAL(f)->pMethods->xWrite(REAL(f), p, n, off);
}

static int f_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    return REAL(f)->pMethods->xTruncate(REAL(f), size);
}

static int f_sync(sqlite3_file *f, int flags)
{
    return REAL(f)->pMethods->xSync(REAL(f), flags);
}

static int f_size(sqlite3_file *f, sqlite3_int64 *size)
{
    return REAL(f)->pMethods->xFileSize(REAL(f), size);
}

static int f_lock(sqlite3_file *f, int level)
{
    return REAL(f)->pMethods->xLock(REAL(f), level);
}

static int f_unlock(sqlite3_file *f, int level)
{
    return REAL(f)->pMethods->xUnlock(REAL(f), level);
}

static int f_reserved(sqlite3_file *f, int *out)
{
    return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out);
}

static int f_fcntl(sqlite3_file *f, int op, void *arg)
{
    return REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}

static int f_sector(sqlite3_file *f)
{
    return REAL(f)->pMethods->xSectorSize(REAL(f));
}

static int f_devchar(sqlite3_file *f)
{
    return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f));
}

static int f_shmmap(sqlite3_file *f, int pg, int size, int extend,
                    void volatile **pp)
{
    return REAL(f)->pMethods->xShmMap(REAL(f), pg, size, extend, pp);
}

static int f_shmlock(sqlite3_file *f, int off, int n, int flags)
{
    return REAL(f)->pMethods->xShmLock(REAL(f), off, n, flags);
}

static void f_shmbarrier(sqlite3_file *f)
{
    REAL(f)->pMethods->xShmBarrier(REAL(f));
}

static int f_shmunmap(sqlite3_file *f, int del)
{
    return REAL(f)->pMethods->xShmUnmap(REAL(f), del);
}

/* Version 2: the WAL's shared memory, no memory-mapped reads. */
static const sqlite3_io_methods full_io = {
    2, f_close, f_read, f_write, f_truncate, f_sync, f_size, f_lock,
    f_unlock, f_reserved, f_fcntl, f_sector, f_devchar, f_shmmap,
    f_shmlock, f_shmbarrier, f_shmunmap, NULL, NULL
};

static int full_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f,
                     int flags, int *out_flags)
{
    full_file *ff = (full_file *)f;
    int rc;

    (void)vfs;
    ff->real = (sqlite3_file *)&ff[1];
    rc = real_vfs->xOpen(real_vfs, name, ff->real, flags, out_flags);
    ff->base.pMethods = ff->real->pMethods != NULL ? &full_io : NULL;
    return rc;
}

/* Makes the shim the default VFS of this process: every connection the
 * driver opens from now on writes through it. */
static int install_full_vfs(void **state)
{
    (void)state;
    if (real_vfs != NULL)
        return 0;
    real_vfs = sqlite3_vfs_find(NULL);
    if (real_vfs == NULL)
        return -1;
    full_vfs = *real_vfs;
    full_vfs.zName = "sqllock_test_full";
    full_vfs.szOsFile = (int)sizeof(full_file) + real_vfs->szOsFile;
    full_vfs.xOpen = full_open;
    return sqlite3_vfs_register(&full_vfs, 1) == SQLITE_OK ? 0 : -1;
}

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */

static sqllock_db *open_url(const char *url)
{
    sqllock_db *db = NULL;

    if (sqllock_open(url, NULL, &db) != SQLLOCK_OK)
        fail_msg("open %s: %s", url, sqllock_errmsg(db));
    return db;
}

static sqllock_lease *lease_on(sqllock_db *db, const char *name)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;

    o.ttl_ms = 60000;
    EXPECT_RC(db, sqllock_lease_new(db, name, &o, &l), SQLLOCK_OK, name);
    return l;
}

/* The row of `name` still names `owner` and `token`. */
static void expect_row(sqllock_db *db, const char *name, const char *owner,
                       int64_t token)
{
    tu_row r;

    memset(&r, 0, sizeof r);
    r.want = name;
    EXPECT_RC(db, tu_find(db, name, &r), SQLLOCK_OK, "list");
    if (r.found != 1 || strcmp(r.owner, owner) != 0 || r.token != token)
        fail_msg("the held lease '%s' changed: found %d, owner %s token %lld "
                 "(want %s, %lld)", name, r.found, r.owner,
                 (long long)r.token, owner, (long long)token);
}

static void expect_intact(sqllock_db *db)
{
    sqlite3 *h = sqllock_db_native(db);
    sqlite3_stmt *st = NULL;
    const unsigned char *text;

    assert_non_null(h);
    assert_int_equal(sqlite3_prepare_v2(h, "PRAGMA integrity_check", -1,
                                        &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    text = sqlite3_column_text(st, 0);
    if (text == NULL || strcmp((const char *)text, "ok") != 0)
        fail_msg("integrity_check: %s", text ? (const char *)text : "NULL");
    sqlite3_finalize(st);
}

/*
 * The common part of the full-disk tests. `fill` makes the disk full and
 * `unfill` frees it again. A holder holds lease a; while the disk is full
 * another handle's acquire of b fails with SQLLOCK_EFULL, its try on a
 * cannot succeed, the holder's renewal and release fail with EFULL and the
 * holder keeps its hold; afterwards a is released, b is taken with a
 * larger token, and the file is intact.
 */
static void full_disk_case(const char *url, void (*fill)(void *),
                           void (*unfill)(void *), void *ctx)
{
    sqllock_db *holder = open_url(url), *other;
    sqllock_lease *a, *b, *a2;
    char owner[SQLLOCK_OWNER_LEN + 1];
    int64_t token;
    int rc;

    EXPECT_RC(holder, sqllock_init(holder), SQLLOCK_OK, "init");
    other = open_url(url);
    a = lease_on(holder, "storage-a");
    b = lease_on(other, "storage-b");
    a2 = lease_on(other, "storage-a");
    EXPECT_RC(holder, sqllock_lease_try_acquire(a), SQLLOCK_OK, "take a");
    snprintf(owner, sizeof owner, "%s", sqllock_lease_owner(a));
    token = sqllock_lease_token(a);
    fill(ctx);
    EXPECT_RC(other, sqllock_lease_try_acquire(b), SQLLOCK_EFULL,
              "acquire on a full disk");
    expect_msg_any(other, "full disk", "full");
    rc = sqllock_lease_try_acquire(a2);
    if (rc != SQLLOCK_BUSY && rc != SQLLOCK_EFULL)
        fail_msg("try on the held lease with a full disk: %s (%s)",
                 sqllock_errname(rc), sqllock_errmsg(other));
    EXPECT_RC(holder, sqllock_lease_renew(a), SQLLOCK_EFULL,
              "renew on a full disk");
    EXPECT_RC(holder, sqllock_lease_release(a), SQLLOCK_EFULL,
              "release on a full disk");
    assert_int_equal(sqllock_lease_count(a), 1);
    unfill(ctx);
    expect_row(other, "storage-a", owner, token);
    EXPECT_RC(holder, sqllock_lease_release(a), SQLLOCK_OK,
              "release once there is space");
    EXPECT_RC(other, sqllock_lease_try_acquire(b), SQLLOCK_OK,
              "acquire once there is space");
    if (!(sqllock_lease_token(b) > token))
        fail_msg("L5: token %lld after %lld", (long long)sqllock_lease_token(b),
                 (long long)token);
    EXPECT_RC(other, sqllock_lease_release(b), SQLLOCK_OK, "release b");
    expect_intact(other);
    sqllock_lease_free(a);
    sqllock_lease_free(b);
    sqllock_lease_free(a2);
    sqllock_close(other);
    sqllock_close(holder);
}

/* ------------------------------------------------------------------ */
/* The tests                                                           */
/* ------------------------------------------------------------------ */

static void vfs_fill(void *ctx)
{
    (void)ctx;
    atomic_store(&disk_full, 1);
}

static void vfs_unfill(void *ctx)
{
    (void)ctx;
    atomic_store(&disk_full, 0);
}

/* Fault 6: every write fails with SQLITE_FULL (the VFS shim). */
static void test_fault6_E1_disk_full_vfs(void **state)
{
    char *dir = tu_mkdtemp();
    char url[PATH_MAX + 32];
    (void)state;

    snprintf(url, sizeof url, "sqlite://%s/full.db", dir);
    full_disk_case(url, vfs_fill, vfs_unfill, NULL);
    tu_rmdir(dir);
    free(dir);
}

typedef struct tmpfs_fill {
    char path[PATH_MAX];
    int fd;
} tmpfs_fill;

/* Writes a file until the file system has no space left. */
static void tmpfs_do_fill(void *ctx)
{
    tmpfs_fill *t = ctx;
    static char block[4096];

    t->fd = open(t->path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(t->fd >= 0);
    while (write(t->fd, block, sizeof block) > 0)
        ;
    /* The last partial page too. */
    while (write(t->fd, block, 1) > 0)
        ;
    assert_int_equal(errno, ENOSPC);
}

static void tmpfs_undo_fill(void *ctx)
{
    tmpfs_fill *t = ctx;

    close(t->fd);
    assert_int_equal(unlink(t->path), 0);
}

/* Fault 6 on a real file system: a 1 MiB tmpfs that fills up (ENOSPC).
 * Mounting needs root; elsewhere the VFS test above stands in. */
static void test_fault6_E1_disk_full_tmpfs(void **state)
{
    char *dir = tu_mkdtemp();
    char url[PATH_MAX + 32];
    tmpfs_fill t;
    (void)state;

    if (geteuid() != 0 ||
        mount("sqllock-test", dir, "tmpfs", 0, "size=1m,mode=0700") != 0) {
        const char *why = geteuid() != 0 ? "not root" : strerror(errno);
        tu_rmdir(dir);
        free(dir);
        tu_cannot_run("no tmpfs of 1 MB to fill (mounting one needs root): "
                      "%s", why);
    }
    snprintf(url, sizeof url, "sqlite://%s/full.db", dir);
    snprintf(t.path, sizeof t.path, "%s/filler", dir);
    full_disk_case(url, tmpfs_do_fill, tmpfs_undo_fill, &t);
    assert_int_equal(umount(dir), 0);
    tu_rmdir(dir);
    free(dir);
}

typedef struct ro_shared {
    int go;                    /* set by the parent once the file is ready */
    int open_rc, acquire_rc, busy_rc, list_rc;
    char msg[512];
} ro_shared;

/* The read-only child: drops to "nobody" when root, then tries. */
static void ro_child(ro_shared *sh, const char *url)
{
    sqllock_db *db = NULL;
    sqllock_lease *l = NULL, *held = NULL;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    tu_row r;
    int64_t t0 = tu_now_ms();

    while (!__atomic_load_n(&sh->go, __ATOMIC_SEQ_CST)) {
        if (tu_now_ms() - t0 > 30000)
            _exit(4);
        tu_sleep_ms(1);
    }
    if (geteuid() == 0) {
        struct passwd *pw = getpwnam("nobody");
        if (pw == NULL || setgid(pw->pw_gid) != 0 ||
            setuid(pw->pw_uid) != 0)
            _exit(3);
    }
    sh->open_rc = sqllock_open(url, NULL, &db);
    snprintf(sh->msg, sizeof sh->msg, "%s", sqllock_errmsg(db));
    if (sh->open_rc == SQLLOCK_OK) {
        o.ttl_ms = 60000;
        sqllock_lease_new(db, "storage-b", &o, &l);
        sqllock_lease_new(db, "storage-a", &o, &held);
        sh->acquire_rc = sqllock_lease_try_acquire(l);
        snprintf(sh->msg, sizeof sh->msg, "%s", sqllock_errmsg(db));
        sh->busy_rc = sqllock_lease_try_acquire(held);
        memset(&r, 0, sizeof r);
        r.want = "storage-a";
        sh->list_rc = tu_find(db, "storage-a", &r);
    }
    sqllock_lease_free(l);
    sqllock_lease_free(held);
    sqllock_close(db);
    _exit(0);
}

/* Fault 6: a database file the process may not write. Acquire fails with
 * SQLLOCK_EPERM and a message that says so; the lease held by a writer
 * stays as it was and is released normally afterwards. */
static void test_fault6_E1_read_only_file(void **state)
{
    char *dir = tu_mkdtemp();
    char url[PATH_MAX + 32], path[PATH_MAX + 16];
    const char *const suffixes[] = { "", "-wal", "-shm" };
    ro_shared *sh = tu_shared_map(sizeof *sh);
    sqllock_db *holder;
    sqllock_lease *a;
    char owner[SQLLOCK_OWNER_LEN + 1];
    int64_t token;
    size_t i;
    pid_t pid;
    (void)state;

    snprintf(url, sizeof url, "sqlite://%s/ro.db", dir);
    /* Forked before the holder opens: a child that inherited the open
     * handle would end with it unfreed (a leak under valgrind). */
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* The child never returns here: it frees the parent's heap copy
         * of the directory itself, or valgrind counts it as lost when
         * the optimiser keeps no pointer to it on the child's stack. */
        free(dir);
        ro_child(sh, url);
    }
    holder = open_url(url);
    EXPECT_RC(holder, sqllock_init(holder), SQLLOCK_OK, "init");
    a = lease_on(holder, "storage-a");
    EXPECT_RC(holder, sqllock_lease_try_acquire(a), SQLLOCK_OK, "take a");
    snprintf(owner, sizeof owner, "%s", sqllock_lease_owner(a));
    token = sqllock_lease_token(a);
    for (i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        snprintf(path, sizeof path, "%s/ro.db%s", dir, suffixes[i]);
        chmod(path, 0444);
    }
    assert_int_equal(chmod(dir, 0555), 0);
    __atomic_store_n(&sh->go, 1, __ATOMIC_SEQ_CST);
    assert_int_equal(tu_wait(pid), 0);
    assert_int_equal(chmod(dir, 0700), 0);
    for (i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        snprintf(path, sizeof path, "%s/ro.db%s", dir, suffixes[i]);
        chmod(path, 0600);
    }
    printf("    read-only: open %s, acquire %s (%s), try on the held lease "
           "%s, list %s\n", sqllock_errname(sh->open_rc),
           sqllock_errname(sh->acquire_rc), sh->msg,
           sqllock_errname(sh->busy_rc), sqllock_errname(sh->list_rc));
    if (sh->open_rc == SQLLOCK_OK) {
        if (sh->acquire_rc != SQLLOCK_EPERM)
            fail_msg("acquire on a read-only file: %s (%s), want EPERM",
                     sqllock_errname(sh->acquire_rc), sh->msg);
        assert_true(sh->busy_rc == SQLLOCK_BUSY || sh->busy_rc == SQLLOCK_EPERM);
    } else if (sh->open_rc != SQLLOCK_EPERM) {
        fail_msg("open of a read-only file: %s (%s), want OK or EPERM",
                 sqllock_errname(sh->open_rc), sh->msg);
    }
    assert_true(tu_contains_ci(sh->msg, "read"));
    expect_row(holder, "storage-a", owner, token);
    EXPECT_RC(holder, sqllock_lease_release(a), SQLLOCK_OK, "release a");
    expect_intact(holder);
    sqllock_lease_free(a);
    sqllock_close(holder);
    munmap(sh, sizeof *sh);
    tu_rmdir(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fault6_E1_disk_full_vfs),
        cmocka_unit_test(test_fault6_E1_disk_full_tmpfs),
        cmocka_unit_test(test_fault6_E1_read_only_file),
    };

    return tu_unit_result("storage", "sqlite",
                          cmocka_run_group_tests_name("storage [sqlite]",
                                                      tests, install_full_vfs,
                                                      NULL));
}
