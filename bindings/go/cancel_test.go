package sqllock

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// A fair wait (M3) is ONE C wait; these tests check that a context's end
// stops it at once all the same (sqllock_lease_cancel from the binding's
// watcher goroutine: the one call E3 allows from another thread), L9's
// errors as for a plain wait, nothing held and the queue place given up.

// queueRows counts the fair queue's rows of name (NAME "\x1fq" ...).
func queueRows(t *testing.T, db *DB, name string) int {
	t.Helper()
	rows, err := db.List(context.Background())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	n := 0
	for _, r := range rows {
		if strings.HasPrefix(r.Name, name+"\x1fq") {
			n++
		}
	}
	return n
}

// holderOf is the owner of name's row ("" when none is listed).
func holderOf(t *testing.T, db *DB, name string) string {
	t.Helper()
	rows, err := db.List(context.Background())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	for _, r := range rows {
		if r.Name == name && r.Remaining > 0 {
			return r.Owner
		}
	}
	return ""
}

type lockResult struct {
	l   *Lease
	err error
	at  time.Time
}

// fairWait starts a fair Lock of name under ctx and waits until its row
// is in the queue (M3), so that what follows acts on a queued waiter.
func fairWait(t *testing.T, ctx context.Context, db *DB, name string, opts ...LockOption) <-chan lockResult {
	t.Helper()
	res := make(chan lockResult, 1)
	go func() {
		l, err := db.Lock(ctx, name, append([]LockOption{Fair()}, opts...)...)
		res <- lockResult{l, err, time.Now()}
	}()
	eventually(t, 30*time.Second, "the fair waiter's queue row", func() bool {
		return queueRows(t, db, name) > 0
	})
	return res
}

// M3, L9, E3: a fair wait with no deadline behind a holder, its context
// cancelled once it is queued, ends promptly with the cancel error, holds
// nothing, leaves the queue, and the binding takes the lock afterwards.
func TestM3L9FairWaitCancelled(t *testing.T) {
	db := open(t)
	bg := context.Background()
	n := name(t, "fc")
	a, err := db.Lock(bg, n, TTL(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release(bg)

	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	res := fairWait(t, ctx, db, n) // no Wait, no deadline
	start := time.Now()
	cancel()
	var r lockResult
	select {
	case r = <-res:
	case <-time.After(60 * time.Second):
		t.Fatal("L9: the cancelled fair wait did not end within 60 s")
	}
	took := r.at.Sub(start)
	t.Logf("cancelled fair wait ended after %v", took)
	if took > 10*time.Second {
		t.Errorf("L9: the cancelled fair wait took %v (bound 10 s)", took)
	}
	if r.l != nil {
		t.Fatalf("L9: a lease from a cancelled wait (err %v)", r.err)
	}
	mustErr(t, r.err, context.Canceled, "cancelled fair wait")
	mustErr(t, r.err, ErrCanceled, "cancelled fair wait")
	if errors.Is(r.err, ErrTimeout) {
		t.Errorf("a cancel is not a timeout: %v", r.err)
	}
	// Out of the queue at once (the C wait deleted its row), and the
	// lock still the first holder's.
	if q := queueRows(t, db, n); q != 0 {
		t.Errorf("M3: %d queue rows left after the cancel", q)
	}
	if h := holderOf(t, db, n); h != a.Owner() {
		t.Errorf("L1: holder %q after the cancel, want %q", h, a.Owner())
	}

	// The binding waits fair again on the name and gets it at the
	// release: no stale cancel request, no dead queue place before it.
	res = fairWait(t, bg, db, n, Wait(60*time.Second))
	if err := a.Release(bg); err != nil {
		t.Fatal(err)
	}
	r = <-res
	if r.err != nil {
		t.Fatalf("M3: the fair wait after a cancelled one: %v", r.err)
	}
	if !r.l.Held() || r.l.Token() <= a.Token() {
		t.Errorf("state %v token %d after %d", r.l.State(), r.l.Token(), a.Token())
	}
	if err := r.l.Release(bg); err != nil {
		t.Fatal(err)
	}
	if q := queueRows(t, db, n); q != 0 {
		t.Errorf("M3: %d queue rows left", q)
	}
}

// M3, L9: a fair wait bounded only by its context's deadline (no Wait)
// ends at the deadline with context.DeadlineExceeded / ErrTimeout, not a
// cancel, holding nothing and out of the queue.
func TestM3L9FairWaitContextDeadline(t *testing.T) {
	db := open(t)
	bg := context.Background()
	n := name(t, "fd")
	a, err := db.Lock(bg, n, TTL(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release(bg)

	const limit = 2 * time.Second
	start := time.Now()
	ctx, cancel := context.WithTimeout(bg, limit)
	defer cancel()
	l, err := db.Lock(ctx, n, Fair())
	took := time.Since(start)
	t.Logf("fair wait with a %v deadline ended after %v", limit, took)
	if l != nil {
		t.Fatalf("a lease past the deadline (err %v)", err)
	}
	mustErr(t, err, context.DeadlineExceeded, "fair wait past its deadline")
	mustErr(t, err, ErrTimeout, "fair wait past its deadline")
	if errors.Is(err, context.Canceled) || errors.Is(err, ErrCanceled) {
		t.Errorf("a deadline is not a cancel: %v", err)
	}
	if took < limit-50*time.Millisecond {
		t.Errorf("L9: ended after %v, before its deadline %v", took, limit)
	}
	if took > limit+10*time.Second {
		t.Errorf("L9: ended %v after its deadline", took-limit)
	}
	if q := queueRows(t, db, n); q != 0 {
		t.Errorf("M3: %d queue rows left after the deadline", q)
	}
	if h := holderOf(t, db, n); h != a.Owner() {
		t.Errorf("L1: holder %q, want %q", h, a.Owner())
	}
}

// M3, L9: a cancel that meets the grant (the holder releases as the
// context is cancelled) either returns the held lease, or returns the
// cancel error with nothing held (a grant it raced is released first).
func TestM3L9FairCancelMeetsGrant(t *testing.T) {
	db := open(t)
	bg := context.Background()
	n := name(t, "fg")
	for i := 0; i < 6; i++ {
		a, err := db.Lock(bg, n, TTL(60*time.Second), Wait(30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(bg)
		res := fairWait(t, ctx, db, n)
		// The cancel before the release, just after it, or once the
		// waiter's grant is in the table.
		if i%3 == 0 {
			go cancel()
		}
		if err := a.Release(bg); err != nil {
			t.Fatal(err)
		}
		if i%3 == 2 {
			eventually(t, 30*time.Second, "the waiter's grant", func() bool {
				h := holderOf(t, db, n)
				return h != "" && h != a.Owner()
			})
		}
		cancel()
		r := <-res
		switch {
		case r.err == nil:
			if !r.l.Held() {
				t.Errorf("round %d: a returned lease not held: %v", i, r.l.State())
			}
			if err := r.l.Release(bg); err != nil {
				t.Fatal(err)
			}
		case errors.Is(r.err, context.Canceled):
			// Nothing held: another owner takes it at once.
			b, err := db.TryLock(bg, n)
			if err != nil {
				t.Fatalf("round %d: L1: not free after a cancelled wait: %v", i, err)
			}
			b.Release(bg)
		default:
			t.Fatalf("round %d: %v", i, r.err)
		}
		if q := queueRows(t, db, n); q != 0 {
			t.Errorf("round %d: M3: %d queue rows left", i, q)
		}
		t.Logf("round %d: %v", i, r.err)
	}
}
