package sqllock

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// E1: every status of the C table has a sentinel, and errors.Is matches
// by status.
func TestE1StatusSentinels(t *testing.T) {
	seen := 0
	for rc := 1; rc < statusEnd+8; rc++ {
		if statusName(rc) == "SQLLOCK_UNKNOWN" {
			continue
		}
		seen++
		s := Sentinel(rc)
		if s == nil {
			t.Errorf("status %d (%s) has no sentinel", rc, statusName(rc))
			continue
		}
		err := &Error{Status: rc, Msg: "x"}
		if !errors.Is(err, s) {
			t.Errorf("errors.Is fails for %s", statusName(rc))
		}
		if errors.Is(err, Sentinel(rc%32+1)) && rc%32+1 != rc {
			t.Errorf("%s matches another status", statusName(rc))
		}
	}
	if seen != len(sentinels) {
		t.Errorf("%d statuses in the C table, %d sentinels", seen, len(sentinels))
	}
}

// L1, L5: a held lock is busy for another owner; tokens increase.
func TestL1TryLockBusyAndTokens(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	n := name(t, "a")
	a, err := db.TryLock(ctx, n, TTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.TryLock(ctx, n, TTL(10*time.Second))
	mustErr(t, err, ErrBusy, "second TryLock")
	if !strings.Contains(err.Error(), "token") {
		t.Errorf("busy error does not name the holder: %v", err)
	}
	if a.State() != Held || !a.Held() || a.Remaining() <= 0 {
		t.Errorf("state %v remaining %v", a.State(), a.Remaining())
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	mustErr(t, a.Release(ctx), ErrNotHeld, "second Release")
	b, err := db.TryLock(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	if b.Token() <= a.Token() {
		t.Errorf("L5: token %d after %d", b.Token(), a.Token())
	}
	b.Release(ctx)
}

// L1 with real contention: 16 goroutines bump a counter file under the
// lock; it must end exact.
func TestL1ExclusionGoroutines(t *testing.T) {
	db := open(t)
	n := name(t, "x")
	path := filepath.Join(t.TempDir(), "counter")
	const workers, each = 16, 4
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for j := 0; j < each; j++ {
				l, err := db.Lock(ctx, n, TTL(10*time.Second), Wait(90*time.Second))
				if err != nil {
					errs <- err
					return
				}
				if err := bump(path, time.Millisecond); err != nil {
					errs <- err
				}
				if err := l.Release(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := readCounter(t, path); got != workers*each {
		t.Fatalf("L1 broken: counter %d, want %d", got, workers*each)
	}
	if c := db.Conns(); c > db.MaxConns() {
		t.Errorf("pool has %d connections, max %d", c, db.MaxConns())
	}
}

// L1 across processes: 4 children (this test binary re-run) bump one
// counter file under the lock.
func TestL1ExclusionProcesses(t *testing.T) {
	n := name(t, "p")
	path := filepath.Join(t.TempDir(), "counter")
	const procs, each = 4, 5
	var cmds []*exec.Cmd
	for i := 0; i < procs; i++ {
		c := exec.Command(os.Args[0], "-test.run=^$")
		c.Env = append(os.Environ(), "SQLLOCK_GO_CHILD=1", "SQLLOCK_GO_URL="+testURL,
			"SQLLOCK_GO_LOCK="+n, "SQLLOCK_GO_COUNTER="+path, "SQLLOCK_GO_N=5")
		c.Stderr = os.Stderr
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("child: %v", err)
		}
	}
	if got := readCounter(t, path); got != procs*each {
		t.Fatalf("L1 broken across processes: counter %d, want %d", got, procs*each)
	}
}

// L9 cancellation: cancelling a blocked wait returns within about a
// second and leaves nothing held.
func TestL9CancelBlockedWait(t *testing.T) {
	db := open(t)
	n := name(t, "c")
	holder, err := db.TryLock(context.Background(), n)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var started time.Time
	go func() {
		_, err := db.Lock(ctx, n, TTL(10*time.Second))
		done <- err
	}()
	time.Sleep(300 * time.Millisecond) // let it wait (the test holds either way)
	started = time.Now()
	cancel()
	err = <-done
	if took := time.Since(started); took > 3*time.Second {
		t.Errorf("cancel took %v", took)
	}
	mustErr(t, err, context.Canceled, "cancelled Lock")
	mustErr(t, err, ErrCanceled, "cancelled Lock")
	holder.Release(context.Background())
	l, err := db.TryLock(context.Background(), n)
	if err != nil {
		t.Fatalf("the cancelled wait left the lock held: %v", err)
	}
	l.Release(context.Background())
}

// L9: a cancel racing the grant never leaves the lock held.
func TestL9CancelRacingGrant(t *testing.T) {
	db := open(t)
	n := name(t, "r")
	bg := context.Background()
	for i := 0; i < 5; i++ {
		holder, err := db.Lock(bg, n, Wait(30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(bg)
		done := make(chan error, 1)
		go func() {
			l, err := db.Lock(ctx, n)
			if err == nil {
				err = l.Release(bg)
			}
			done <- err
		}()
		time.Sleep(time.Duration(50*i) * time.Millisecond)
		holder.Release(bg)
		cancel()
		<-done
		l, err := db.Lock(bg, n, Wait(30*time.Second))
		if err != nil {
			t.Fatalf("round %d: lock left held: %v", i, err)
		}
		l.Release(bg)
	}
}

// A context deadline is ErrTimeout and DeadlineExceeded; Wait is
// ErrTimeout alone.
func TestL9Deadline(t *testing.T) {
	db := open(t)
	n := name(t, "d")
	bg := context.Background()
	holder, err := db.TryLock(bg, n)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release(bg)
	ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = db.Lock(ctx, n)
	mustErr(t, err, context.DeadlineExceeded, "deadline")
	mustErr(t, err, ErrTimeout, "deadline")
	if took := time.Since(start); took < 250*time.Millisecond || took > 5*time.Second {
		t.Errorf("deadline wait took %v", took)
	}
	_, err = db.Lock(bg, n, Wait(200*time.Millisecond))
	mustErr(t, err, ErrTimeout, "Wait")
	if !strings.Contains(err.Error(), "holder") {
		t.Errorf("a timeout does not name the holder: %v", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Error("Wait's timeout claims a context deadline")
	}
}

// L7, L4: the watchdog reports the loss when another owner frees and
// takes the lease; Release then says Lost.
func TestL7LostOnTakeover(t *testing.T) {
	db := open(t)
	other := open(t)
	n := name(t, "l")
	bg := context.Background()
	l, err := db.Lock(bg, n, TTL(3*time.Second), RenewEvery(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Lost():
		t.Fatal("lost at once")
	default:
	}
	if err := other.ForceRelease(bg, n, true); err != nil {
		t.Fatal(err)
	}
	thief, err := other.TryLock(bg, n)
	if err != nil {
		t.Fatal(err)
	}
	defer thief.Release(bg)
	select {
	case <-l.Lost():
	case <-time.After(20 * time.Second):
		t.Fatal("Lost() did not fire")
	}
	mustErr(t, l.Err(), ErrLost, "Err()")
	if l.State() != LostState {
		t.Errorf("state %v", l.State())
	}
	mustErr(t, l.Release(bg), ErrLost, "release of a lost lease")
	if thief.Token() <= l.Token() {
		t.Errorf("L5: takeover token %d <= %d", thief.Token(), l.Token())
	}
}

// NoRenew: Renew finds the loss itself.
func TestL4NoRenewRenewLost(t *testing.T) {
	db := open(t)
	n := name(t, "n")
	bg := context.Background()
	l, err := db.TryLock(bg, n, NoRenew())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Renew(bg); err != nil {
		t.Fatal(err)
	}
	if err := db.ForceRelease(bg, n, true); err != nil {
		t.Fatal(err)
	}
	mustErr(t, l.Renew(bg), ErrLost, "renew after a forced release")
	select {
	case <-l.Lost():
	default:
		t.Fatal("Lost() not closed")
	}
}

// E2: bad input gets a clear error, never a crash.
func TestE2BadInput(t *testing.T) {
	bg := context.Background()
	db := open(t)
	for _, c := range []struct {
		name string
		opts []LockOption
	}{
		{"", nil},
		{strings.Repeat("x", 300), nil},
		{"a\x00b", nil},
		{"ctl\x01", nil},
		{"ok", []LockOption{TTL(-time.Second)}},
		{"ok", []LockOption{TTL(0)}},
		{"ok", []LockOption{Wait(-time.Second)}},
	} {
		_, err := db.Lock(bg, c.name, append([]LockOption{Wait(0)}, c.opts...)...)
		mustErr(t, err, ErrInvalid, "TryLock "+strings.ToValidUTF8(c.name[:min(len(c.name), 10)], "?"))
		if err.Error() == "" {
			t.Error("empty message")
		}
	}
	_, err := db.Semaphore(bg, "s", 0)
	mustErr(t, err, ErrInvalid, "semaphore of 0 permits")
	_, err = Open("")
	mustErr(t, err, ErrInvalid, "empty URL")
	_, err = Open("postgres://[::1/x")
	mustErr(t, err, ErrURL, "bad URL")
	_, err = Open("nosuch://x/y")
	mustErr(t, err, ErrScheme, "unknown scheme")
	_, err = Open("postgres://u:p@127.0.0.1:1/x", ConnectTimeout(2*time.Second))
	mustErr(t, err, ErrConnect, "dead server")
	_, err = Open(testURL, MaxConns(0))
	mustErr(t, err, ErrInvalid, "MaxConns 0")
	closed := open(t)
	closed.Close()
	_, err = closed.TryLock(bg, "x")
	mustErr(t, err, ErrMisuse, "closed DB")
	_, err = closed.Records().Get(bg, "x")
	mustErr(t, err, ErrMisuse, "closed DB records")
	closed.Close()
}

func min(a, b int) int {
	if a < b {
		return a
	}
	return b
}

// Close frees held leases' handles without crashing; their methods then
// say so.
func TestE4CloseWithHeldLease(t *testing.T) {
	db, err := Open(testURL)
	if err != nil {
		t.Fatal(err)
	}
	bg := context.Background()
	l, err := db.TryLock(bg, name(t, "h"), TTL(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	mustErr(t, l.Release(bg), ErrNotHeld, "release after Close")
	_ = l.State()
}

// The pool: a wait takes a connection of its own, so short calls go on
// beside it; with every connection waiting, a wait for one is bounded.
func TestPoolWaitDoesNotBlockShortCalls(t *testing.T) {
	db := open(t, MaxConns(2))
	bg := context.Background()
	n := name(t, "w")
	holder, err := db.TryLock(bg, n)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(bg)
	done := make(chan error, 1)
	go func() {
		_, err := db.Lock(ctx, n)
		done <- err
	}()
	eventually(t, 10*time.Second, "the wait's connection", func() bool { return db.Conns() == 2 })
	start := time.Now()
	for i := 0; i < 5; i++ {
		l, err := db.TryLock(bg, name(t, "other"))
		if err != nil {
			t.Fatal(err)
		}
		l.Release(bg)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("short calls beside a wait took %v", took)
	}
	// Both connections taken (first: shared; second: the wait): a second
	// wait waits for a connection within its own deadline.
	_, err = db.Lock(bg, n, Wait(300*time.Millisecond))
	mustErr(t, err, ErrTimeout, "wait with the pool exhausted")
	cancel()
	mustErr(t, <-done, context.Canceled, "first wait")
	holder.Release(bg)
}

// Leases are safe to share: state readers race releases (go test -race).
func TestLeaseConcurrentReaders(t *testing.T) {
	db := open(t)
	bg := context.Background()
	l, err := db.TryLock(bg, name(t, "s"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var stop atomic.Bool
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				_ = l.State()
				_ = l.Remaining()
				_ = l.Token()
				_ = l.Err()
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	if err := l.Release(bg); err != nil {
		t.Fatal(err)
	}
	stop.Store(true)
	wg.Wait()
}

// G1: the guard's text and arguments; a released lease has none.
func TestG1GuardText(t *testing.T) {
	db := open(t)
	bg := context.Background()
	n := name(t, "g")
	l, err := db.TryLock(bg, n)
	if err != nil {
		t.Fatal(err)
	}
	cond, args, err := l.Guard(Dollar(3))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cond, "$3") || !strings.Contains(cond, "$4") {
		t.Errorf("Dollar(3) guard: %s", cond)
	}
	if len(args) != 2 || args[0] != n || args[1] != l.Token() {
		t.Errorf("guard args %v", args)
	}
	cond, _, err = l.Guard(Qmark)
	if err != nil || strings.Count(cond, "?") != 2 {
		t.Errorf("Qmark guard: %q %v", cond, err)
	}
	// The guard holds on the library's own connection too: a guarded
	// statement sees the lease while held.
	q, ph := "SELECT 1 WHERE ", Qmark
	if db.Driver() == "postgres" {
		ph = Dollar(1)
	} else if db.Driver() == "mysql" {
		q = "SELECT 1 FROM DUAL WHERE "
	}
	cond, args, _ = l.Guard(ph)
	res, err := db.Exec(bg, q+cond, args...)
	if err != nil || !res.HasRow {
		t.Fatalf("guarded select while held: %+v %v", res, err)
	}
	l.Release(bg)
	_, _, err = l.Guard(Qmark)
	mustErr(t, err, ErrNotHeld, "guard of a released lease")
}
