// Command sqllock-interop is the Go worker of the interoperability test
// (tests/interop/): it takes the same names as the C, Python and Node
// workers at the same time, and appends what it held to a file.
//
//	sqllock-interop ROLE URL NAME N OUT COUNTER PERMITS HOLD_MS
//
// ROLE is lock, sem or leader. Each hold appends one line to OUT (opened
// O_APPEND, one write per line): "ROLE TOKEN T0 T1 OK|LOST", times in
// microseconds of the library's clock (sqllock.Now()).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"sqllock.dev/sqllock"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "sqllock-interop:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 8 {
		return fmt.Errorf("usage: sqllock-interop ROLE URL NAME N OUT COUNTER PERMITS HOLD_MS")
	}
	role, url, name, outPath, counter := args[0], args[1], args[2], args[4], args[5]
	n, err1 := strconv.Atoi(args[3])
	permits, err2 := strconv.Atoi(args[6])
	holdMs, err3 := strconv.Atoi(args[7])
	if err1 != nil || err2 != nil || err3 != nil || n < 0 || holdMs < 0 {
		return fmt.Errorf("N, PERMITS and HOLD_MS must be non-negative integers")
	}
	hold := time.Duration(holdMs) * time.Millisecond
	out, err := os.OpenFile(outPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	// The whole run must end within 120 s.
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	// The schema may be new (idempotent, any number of processes at once).
	db, err := sqllock.Open(url, sqllock.InitSchema())
	if err != nil {
		return err
	}
	defer db.Close()
	switch role {
	case "lock":
		return lockRole(ctx, db, name, n, out, counter, hold)
	case "sem":
		return semRole(ctx, db, name, n, out, permits, hold)
	case "leader":
		return leaderRole(ctx, db, name, n, out, hold)
	}
	return fmt.Errorf("unknown role %q (lock, sem or leader)", role)
}

// line appends one line with one write(), so that the lines of several
// processes never interleave.
func line(out *os.File, role string, token, t0, t1 int64, lost bool) error {
	ok := "OK"
	if lost {
		ok = "LOST"
	}
	_, err := out.Write([]byte(fmt.Sprintf("%s %d %d %d %s\n", role, token, t0, t1, ok)))
	return err
}

func lost(l *sqllock.Lease) bool {
	select {
	case <-l.Lost():
		return true
	default:
		return false
	}
}

func lockRole(ctx context.Context, db *sqllock.DB, name string, n int, out *os.File,
	counter string, hold time.Duration) error {
	for i := 0; i < n; i++ {
		l, err := db.Lock(ctx, name, sqllock.TTL(10*time.Second), sqllock.Wait(120*time.Second))
		if err != nil {
			return err
		}
		t0 := sqllock.Now()
		v, err := readCounter(counter)
		if err != nil {
			l.Release(context.Background())
			return err
		}
		time.Sleep(hold / 2)
		if err := writeCounter(counter, v+1); err != nil {
			l.Release(context.Background())
			return err
		}
		time.Sleep(hold / 2)
		t1 := sqllock.Now()
		was := lost(l)
		if err := l.Release(context.Background()); err != nil {
			if !isLost(err) {
				return err
			}
			was = true
		}
		if err := line(out, "lock", l.Token(), t0, t1, was); err != nil {
			return err
		}
	}
	return nil
}

func isLost(err error) bool { return err != nil && errors.Is(err, sqllock.ErrLost) }

func readCounter(path string) (int, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return 0, nil
	}
	return strconv.Atoi(s)
}

// writeCounter writes a temporary file and renames it over the counter.
func writeCounter(path string, v int) error {
	tmp := fmt.Sprintf("%s.go.%d", path, os.Getpid())
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(v)+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func semRole(ctx context.Context, db *sqllock.DB, name string, n int, out *os.File,
	permits int, hold time.Duration) error {
	for i := 0; i < n; i++ {
		p, err := db.Semaphore(ctx, name, permits, sqllock.TTL(10*time.Second),
			sqllock.Wait(120*time.Second))
		if err != nil {
			return err
		}
		t0 := sqllock.Now()
		time.Sleep(hold)
		t1 := sqllock.Now()
		was := lost(p.Lease)
		if err := p.Release(context.Background()); err != nil {
			if !isLost(err) {
				return err
			}
			was = true
		}
		if err := line(out, "sem", p.Token(), t0, t1, was); err != nil {
			return err
		}
	}
	return nil
}

func leaderRole(ctx context.Context, db *sqllock.DB, name string, n int, out *os.File,
	hold time.Duration) error {
	ld, err := db.Campaign(name, sqllock.TTL(3*time.Second))
	if err != nil {
		return err
	}
	defer ld.Close()
	for i := 0; i < n; i++ {
		var term sqllock.Term
		select {
		case term = <-ld.Terms():
		case <-ctx.Done():
			return fmt.Errorf("elected %d of %d times: %v", i, n, ctx.Err())
		}
		if term.Ctx.Err() != nil {
			i-- // a term that ended before it was read does not count
			continue
		}
		t0 := sqllock.Now()
		time.Sleep(hold)
		t1 := sqllock.Now()
		was := term.Ctx.Err() != nil || !ld.IsLeader()
		if err := line(out, "leader", term.Token, t0, t1, was); err != nil {
			return err
		}
		if err := ld.Resign(); err != nil && !isLost(err) && !errors.Is(err, sqllock.ErrNotHeld) {
			return fmt.Errorf("resign: %v", err)
		}
	}
	return nil
}
