package sqllock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The suite reads one URL from SQLLOCK_TEST_URL (a database of its own,
// schema maybe not initialised); without it, a temporary SQLite file.
var testURL string

func TestMain(m *testing.M) {
	if os.Getenv("SQLLOCK_GO_CHILD") != "" {
		os.Exit(childMain())
	}
	testURL = os.Getenv("SQLLOCK_TEST_URL")
	if testURL == "" {
		dir, err := os.MkdirTemp("", "sqllock-go-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer os.RemoveAll(dir)
		testURL = "sqlite://" + filepath.Join(dir, "t.db")
	}
	db, err := Open(testURL, InitSchema())
	if err != nil {
		fmt.Fprintf(os.Stderr, "cannot open the test database: %v\n", err)
		os.Exit(1)
	}
	db.Close()
	os.Exit(m.Run())
}

// open opens the test database for one test and closes it at its end.
func open(t *testing.T, opts ...DBOption) *DB {
	t.Helper()
	db, err := Open(testURL, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// name is a lock name of this test and process, so that runs and other
// suites sharing the database never meet.
func name(t *testing.T, suffix string) string {
	return fmt.Sprintf("go-%d-%s-%s-%d", os.Getpid(), t.Name(), suffix, time.Now().UnixNano()%1000000)
}

// eventually polls cond until it holds or the deadline passes (no fixed
// sleeps: the machine may be loaded).
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(within)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// bump reads the integer in file path, sleeps, and writes it back plus
// one: a lost update unless the caller holds a lock that excludes every
// other bumper.
func bump(path string, pause time.Duration) error {
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	n := 0
	if s := strings.TrimSpace(string(b)); s != "" {
		if n, err = strconv.Atoi(s); err != nil {
			return err
		}
	}
	time.Sleep(pause)
	tmp := fmt.Sprintf("%s.%d.%d", path, os.Getpid(), time.Now().UnixNano())
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(n+1)), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func readCounter(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// childMain is a child process of TestL1ExclusionProcesses: N holds of
// the lock, each bumping the counter file.
func childMain() int {
	url, lock, path := os.Getenv("SQLLOCK_GO_URL"), os.Getenv("SQLLOCK_GO_LOCK"), os.Getenv("SQLLOCK_GO_COUNTER")
	n, _ := strconv.Atoi(os.Getenv("SQLLOCK_GO_N"))
	db, err := Open(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer db.Close()
	ctx := context.Background()
	for i := 0; i < n; i++ {
		l, err := db.Lock(ctx, lock, TTL(10*time.Second), Wait(60*time.Second))
		if err != nil {
			fmt.Fprintln(os.Stderr, "lock:", err)
			return 1
		}
		if err := bump(path, time.Millisecond); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if err := l.Release(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "release:", err)
			return 1
		}
	}
	return 0
}

func mustErr(t *testing.T, err error, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got %v, want %v", what, err, target)
	}
}
