package sqllock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// mine is the rows of List whose name starts with prefix, in List's order.
func mine(t *testing.T, db *DB, prefix string) []LeaseInfo {
	t.Helper()
	rows, err := db.List(context.Background())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	var out []LeaseInfo
	for _, r := range rows {
		if strings.HasPrefix(r.Name, prefix) {
			out = append(out, r)
		}
	}
	return out
}

// expired takes a lease on name with a short ttl and no renewal, and
// waits (on the server's view, never a fixed sleep) until it has expired
// for the reaper too: Remaining < 0, not <= 0, since the reaper deletes
// only rows with expires_at < now (a row at its expiry millisecond is free
// to take over, but not yet reaped).
func expired(t *testing.T, db *DB, name string) *Lease {
	t.Helper()
	l, err := db.TryLock(context.Background(), name, TTL(200*time.Millisecond), NoRenew())
	if err != nil {
		t.Fatalf("TryLock %s: %v", name, err)
	}
	eventually(t, 30*time.Second, "the lease of "+name+" expired", func() bool {
		h, err := db.Lookup(context.Background(), name)
		if err != nil {
			t.Fatalf("Lookup %s: %v", name, err)
		}
		return h.Remaining < 0
	})
	return l
}

// List shows each held lease's row -- owner, holder, token (L5), time
// left -- in name order, and no row once released.
func TestListShowsHeldLeasesInNameOrder(t *testing.T) {
	db := open(t)
	bg := context.Background()
	base := name(t, "")
	var held []*Lease
	for _, s := range []string{"c", "a", "b"} { // not in name order
		l, err := db.TryLock(bg, base+s, TTL(30*time.Second), Holder("go-list-"+s))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
	}
	rows := mine(t, db, base)
	if len(rows) != 3 || rows[0].Name != base+"a" || rows[1].Name != base+"b" ||
		rows[2].Name != base+"c" {
		t.Fatalf("List: want the rows a, b, c in name order, got %+v", rows)
	}
	byName := map[string]*Lease{}
	for _, l := range held {
		byName[l.Name()] = l
	}
	for _, r := range rows {
		l := byName[r.Name]
		if r.Token != l.Token() || r.Owner != l.Owner() ||
			r.Holder != "go-list-"+r.Name[len(base):] {
			t.Errorf("List row %+v: want token %d, owner %q", r, l.Token(), l.Owner())
		}
		if r.Remaining <= 0 || r.Remaining > 31*time.Second {
			t.Errorf("%s: Remaining %v, want in (0, 30 s]", r.Name, r.Remaining)
		}
		if !r.ExpiresAt.After(r.AcquiredAt) {
			t.Errorf("%s: ExpiresAt %v not after AcquiredAt %v", r.Name, r.ExpiresAt, r.AcquiredAt)
		}
	}
	if err := held[1].Release(bg); err != nil { // "a"
		t.Fatal(err)
	}
	rows = mine(t, db, base)
	if len(rows) != 2 || rows[0].Name != base+"b" || rows[1].Name != base+"c" {
		t.Fatalf("List after releasing a: want b, c, got %+v", rows)
	}
	for _, l := range []*Lease{held[0], held[2]} {
		if err := l.Release(bg); err != nil {
			t.Fatal(err)
		}
	}
	if rows = mine(t, db, base); len(rows) != 0 {
		t.Fatalf("List after every release: %+v", rows)
	}
}

// M1: a primitive's rows keep the name C gives them (BASE 0x1f TAG), and
// Lookup takes that name back.
func TestListPrimitiveRowNames(t *testing.T) {
	db := open(t)
	bg := context.Background()
	base := name(t, "sem")
	p, err := db.Semaphore(bg, base, 2, TTL(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release(bg)
	var permit *LeaseInfo
	for _, r := range mine(t, db, base) {
		if strings.HasPrefix(r.Name, base+"\x1fp") {
			r := r
			permit = &r
		}
	}
	if permit == nil || permit.Token != p.Token() {
		t.Fatalf("List: no permit row %q+\"\\x1fp<i>\" with token %d: %+v",
			base, p.Token(), mine(t, db, base))
	}
	h, err := db.Lookup(bg, permit.Name)
	if err != nil || h.Token != p.Token() {
		t.Fatalf("Lookup(%q) = %+v, %v", permit.Name, h, err)
	}
}

// P1, P4: one pass deletes the expired row and leaves the live one; the
// name's next token is still larger (L5).
func TestP1P4ReapOnlyExpiredL5TokensGrow(t *testing.T) {
	db := open(t)
	bg := context.Background()
	base := name(t, "")
	live, err := db.TryLock(bg, base+"live", TTL(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Release(bg)
	old := expired(t, db, base+"old")
	n, err := db.Reap(bg, 0, 0) // batch 0: the default
	if err != nil {
		t.Fatalf("Reap: %v", err)
	}
	if n < 1 {
		t.Fatalf("Reap deleted %d rows, want the expired one at least", n)
	}
	_, err = db.Lookup(bg, base+"old")
	mustErr(t, err, ErrNotFound, "P1: the expired row after Reap")
	rows := mine(t, db, base)
	if len(rows) != 1 || rows[0].Name != base+"live" || rows[0].Remaining <= 0 {
		t.Fatalf("P1: after Reap want only the live row, got %+v", rows)
	}
	if !live.Held() {
		t.Fatal("P1: the live lease is no longer held")
	}
	again, err := db.TryLock(bg, base+"old", TTL(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if again.Token() <= old.Token() {
		t.Errorf("L5: token after the reap %d <= %d before", again.Token(), old.Token())
	}
	if err := again.Release(bg); err != nil {
		t.Fatal(err)
	}
	if err := old.Release(bg); err == nil {
		t.Error("release of a lease that expired, was reaped and taken again succeeded")
	}
}

// E2: bad input to List, Reap and StartReaper is a clear error.
func TestE2ReapBadInput(t *testing.T) {
	db := open(t)
	bg := context.Background()
	if _, err := db.Reap(bg, time.Second, 0); err != nil {
		t.Fatalf("Reap with batch 0 (the default): %v", err)
	}
	for _, c := range []struct {
		grace time.Duration
		batch int
	}{{0, -1}, {0, 2_000_000}, {0, 1 << 40}, {-time.Second, 10}, {-time.Nanosecond, 10}} {
		n, err := db.Reap(bg, c.grace, c.batch)
		mustErr(t, err, ErrInvalid, "Reap(grace "+c.grace.String()+", batch)")
		if n != 0 {
			t.Errorf("Reap(%v, %d) with an error deleted %d", c.grace, c.batch, n)
		}
	}
	for what, opts := range map[string][]ReaperOption{
		"negative interval": {ReapEvery(-time.Second)},
		"negative grace":    {ReapGrace(-time.Millisecond)},
		"negative batch":    {ReapBatch(-1)},
		"huge batch":        {ReapBatch(2_000_000)},
	} {
		r, err := StartReaper(testURL, opts...)
		mustErr(t, err, ErrInvalid, "StartReaper with a "+what)
		if r != nil {
			t.Errorf("StartReaper with a %s returned a Reaper", what)
		}
	}
	// A bad URL is reported by StartReaper itself, with C's status.
	for url, want := range map[string]error{
		"":              ErrInvalid,
		"nosuch://x/y":  ErrScheme,
		"no url at all": ErrURL,
		"sqlite:x\x00y": ErrInvalid,
	} {
		r, err := StartReaper(url)
		mustErr(t, err, want, "StartReaper("+url+")")
		if r != nil {
			t.Errorf("StartReaper(%q) returned a Reaper", url)
		}
	}
	db.Close()
	_, err := db.List(bg)
	mustErr(t, err, ErrMisuse, "List on a closed DB")
	_, err = db.Reap(bg, 0, 0)
	mustErr(t, err, ErrMisuse, "Reap on a closed DB")
}

// P1, P3: the reaper thread deletes an expired row (and not a live one),
// and stops promptly; Stop is idempotent from any goroutine, and Stats
// keeps the last counters.
func TestP1P3ReaperThread(t *testing.T) {
	db := open(t)
	bg := context.Background()
	base := name(t, "")
	live, err := db.TryLock(bg, base+"live", TTL(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Release(bg)
	old := expired(t, db, base+"old")
	defer old.Release(bg)
	r, err := StartReaper(testURL, ReapEvery(100*time.Millisecond))
	if err != nil {
		t.Fatalf("StartReaper: %v", err)
	}
	defer r.Stop()
	eventually(t, 60*time.Second, "the reaper deleted the expired row", func() bool {
		_, err := db.Lookup(bg, base+"old")
		return r.Stats().Reaped >= 1 && errors.Is(err, ErrNotFound)
	})
	if s := r.Stats(); s.Passes < 1 || s.Errors > s.Passes {
		t.Errorf("Stats %+v", s)
	} else if s.Errors > 0 {
		t.Logf("the reaper counted %d failed passes of %d (last: %v)", s.Errors, s.Passes, s.LastErr)
	}
	// Stop from several goroutines at once, Stats beside them (-race).
	t0 := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.Stats()
			r.Stop()
			r.Stats()
		}()
	}
	wg.Wait()
	if d := time.Since(t0); d > 20*time.Second {
		t.Errorf("P3: Stop took %v", d)
	}
	r.Stop()
	if s := r.Stats(); s.Reaped < 1 || s.Passes < 1 {
		t.Errorf("Stats after Stop lost the counters: %+v", s)
	}
	h, err := db.Lookup(bg, base+"live")
	if err != nil || h.Remaining <= 0 || !live.Held() {
		t.Fatalf("P1: the live lease after the reaper: %+v, %v", h, err)
	}
}

// BenchmarkList100: one List over a table holding 100 leases of its own
// (plus whatever else the database holds).
func BenchmarkList100(b *testing.B) {
	db, err := Open(testURL)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	bg := context.Background()
	base := fmt.Sprintf("go-bench-list-%d-", os.Getpid())
	for i := 0; i < 100; i++ {
		l, err := db.TryLock(bg, fmt.Sprintf("%s%03d", base, i), NoRenew())
		if err != nil {
			b.Fatal(err)
		}
		defer l.Release(bg)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := db.List(bg); err != nil {
			b.Fatal(err)
		}
	}
}
