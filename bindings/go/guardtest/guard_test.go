//go:build sqllock_guard

// Package guardtest checks the guard (contract G1) through database/sql
// with the drivers applications use: pgx (stdlib), go-sql-driver/mysql
// and mattn/go-sqlite3. They are not the module's dependencies: this
// package builds only with the tag sqllock_guard, in GOPATH mode over
// Debian's /usr/share/gocode (bindings/go/run_tests.sh does it).
package guardtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v4/stdlib"
	_ "github.com/mattn/go-sqlite3"

	"sqllock.dev/sqllock"
)

var testURL string

func TestMain(m *testing.M) {
	testURL = os.Getenv("SQLLOCK_TEST_URL")
	if testURL == "" {
		dir, err := os.MkdirTemp("", "sqllock-go-guard-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer os.RemoveAll(dir)
		testURL = "sqlite://" + filepath.Join(dir, "t.db")
	}
	db, err := sqllock.Open(testURL, sqllock.InitSchema())
	if err != nil {
		fmt.Fprintln(os.Stderr, "cannot open the test database:", err)
		os.Exit(1)
	}
	db.Close()
	os.Exit(m.Run())
}

// appDB opens the application's own connection pool to the test
// database through database/sql, and says how its driver writes
// placeholders.
func appDB(t *testing.T, driver string) (*sql.DB, sqllock.GuardStyle, func(int) string) {
	t.Helper()
	u, err := url.Parse(testURL)
	if err != nil {
		t.Fatal(err)
	}
	var conn *sql.DB
	style, ph := sqllock.Qmark, func(int) string { return "?" }
	switch driver {
	case "postgres":
		conn, err = sql.Open("pgx", testURL)
		style = sqllock.Dollar(3)
		ph = func(i int) string { return fmt.Sprintf("$%d", i) }
	case "mysql":
		pw, _ := u.User.Password()
		conn, err = sql.Open("mysql", fmt.Sprintf("%s:%s@tcp(%s)%s", u.User.Username(), pw, u.Host, u.Path))
	case "sqlite":
		conn, err = sql.Open("sqlite3", "file:"+strings.TrimPrefix(testURL, "sqlite://")+"?_busy_timeout=5000")
	default:
		t.Fatalf("no database/sql driver for %s", driver)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn, style, ph
}

// G1: a guarded write in the application's own transaction commits while
// the lease is held, and changes no row after another owner took it over.
func TestG1GuardThroughDatabaseSQL(t *testing.T) {
	ctx := context.Background()
	db, err := sqllock.Open(testURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	app, style, ph := appDB(t, db.Driver())
	table := fmt.Sprintf("go_guard_%d", os.Getpid())
	if _, err := app.ExecContext(ctx, "CREATE TABLE "+table+" (id INTEGER PRIMARY KEY, qty INTEGER NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	defer app.ExecContext(ctx, "DROP TABLE "+table)
	if _, err := app.ExecContext(ctx, "INSERT INTO "+table+" (id, qty) VALUES (7, 10)"); err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("go-guard-%d-%d", os.Getpid(), time.Now().UnixNano()%1000000)
	lease, err := db.Lock(ctx, name, sqllock.TTL(10*time.Second), sqllock.Wait(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	cond, args, err := lease.Guard(style)
	if err != nil {
		t.Fatal(err)
	}
	update := fmt.Sprintf("UPDATE %s SET qty = qty - %s WHERE id = %s AND %s", table, ph(1), ph(2), cond)
	guarded := func() int64 {
		tx, err := app.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		res, err := tx.ExecContext(ctx, update, append([]any{1, 7}, args...)...)
		if err != nil {
			t.Fatalf("guarded update: %v", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := guarded(); n != 1 {
		t.Fatalf("G1: guarded update while held changed %d rows, want 1", n)
	}
	// Another owner takes the name over.
	other, err := sqllock.Open(testURL)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.ForceRelease(ctx, name, true); err != nil {
		t.Fatal(err)
	}
	thief, err := other.TryLock(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer thief.Release(ctx)
	if n := guarded(); n != 0 {
		t.Fatalf("G1 broken: guarded update after a takeover changed %d rows", n)
	}
	var qty int
	if err := app.QueryRowContext(ctx, "SELECT qty FROM "+table+" WHERE id = 7").Scan(&qty); err != nil {
		t.Fatal(err)
	}
	if qty != 9 {
		t.Fatalf("qty %d, want 9", qty)
	}
	if err := lease.Release(ctx); !errors.Is(err, sqllock.ErrLost) {
		t.Fatalf("release after the takeover: %v", err)
	}
	// The stale hold has no guard any more.
	if _, _, err := lease.Guard(style); !errors.Is(err, sqllock.ErrNotHeld) {
		t.Fatalf("guard of a released lease: %v", err)
	}
}
