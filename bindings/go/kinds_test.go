package sqllock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// M1: never more than N permits held at once, with real contention.
func TestM1SemaphoreBound(t *testing.T) {
	db := open(t)
	n := name(t, "s")
	const permits, workers, each = 3, 8, 3
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	seen := make([]atomic.Int32, permits)
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for j := 0; j < each; j++ {
				p, err := db.Semaphore(ctx, n, permits, TTL(10*time.Second), Wait(90*time.Second))
				if err != nil {
					errs <- err
					return
				}
				now := inside.Add(1)
				for {
					m := most.Load()
					if now <= m || most.CompareAndSwap(m, now) {
						break
					}
				}
				if p.Index() < 0 || p.Index() >= permits || p.Token() <= 0 {
					errs <- fmt.Errorf("permit %d token %d", p.Index(), p.Token())
				} else if seen[p.Index()].Add(1) != 1 {
					errs <- fmt.Errorf("M1: permit %d held twice", p.Index())
				}
				time.Sleep(5 * time.Millisecond)
				seen[p.Index()].Add(-1)
				inside.Add(-1)
				if err := p.Release(ctx); err != nil {
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
	if m := most.Load(); m > permits || m < 1 {
		t.Fatalf("M1: %d permits held at once, bound %d", m, permits)
	}
	live, err := db.SemaphoreCount(context.Background(), n)
	if err != nil || live != 0 {
		t.Fatalf("live permits after all released: %d, %v", live, err)
	}
	// N1: the name is a semaphore now; a plain lease is refused.
	_, err = db.TryLock(context.Background(), n)
	mustErr(t, err, ErrKind, "plain lease on a semaphore's name")
}

// M2: shared holds never overlap an exclusive one.
func TestM2SharedExclusive(t *testing.T) {
	db := open(t)
	n := name(t, "rw")
	var readers, writers atomic.Int32
	var maxReaders atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	work := func(shared bool) {
		defer wg.Done()
		ctx := context.Background()
		for j := 0; j < 3; j++ {
			var l *Lease
			var err error
			if shared {
				l, err = db.Shared(ctx, n, TTL(10*time.Second), Wait(90*time.Second))
			} else {
				l, err = db.Exclusive(ctx, n, TTL(10*time.Second), Wait(90*time.Second))
			}
			if err != nil {
				errs <- err
				return
			}
			if shared {
				r := readers.Add(1)
				if writers.Load() != 0 {
					errs <- errors.New("M2: a reader beside a writer")
				}
				if r > maxReaders.Load() {
					maxReaders.Store(r)
				}
			} else if writers.Add(1) != 1 || readers.Load() != 0 {
				errs <- errors.New("M2: a writer beside another holder")
			}
			time.Sleep(5 * time.Millisecond)
			if shared {
				readers.Add(-1)
			} else {
				writers.Add(-1)
			}
			if err := l.Release(ctx); err != nil {
				errs <- err
				return
			}
		}
	}
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go work(false)
	}
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go work(true)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Two readers at once are allowed.
	ctx := context.Background()
	a, err := db.Shared(ctx, n, Wait(0))
	if err != nil {
		t.Fatal(err)
	}
	b, err := db.Shared(ctx, n, Wait(0))
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exclusive(ctx, n, Wait(0))
	mustErr(t, err, ErrBusy, "writer beside readers")
	a.Release(ctx)
	b.Release(ctx)
	w, err := db.Exclusive(ctx, n, Wait(0))
	if err != nil {
		t.Fatal(err)
	}
	w.Release(ctx)
}

// M4: one leader at a time between two candidates; Resign hands over.
func TestM4LeaderHandOver(t *testing.T) {
	db := open(t)
	n := name(t, "e")
	a, err := db.Campaign(n, TTL(3*time.Second), Holder("a"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := db.Campaign(n, TTL(3*time.Second), Holder("b"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	next := func(what string) (*Leader, Term) {
		select {
		case term := <-a.Terms():
			return a, term
		case term := <-b.Terms():
			return b, term
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no term", what)
		}
		return nil, Term{}
	}
	first, t1 := next("first election")
	other := a
	if first == a {
		other = b
	}
	if !first.IsLeader() || other.IsLeader() {
		t.Fatal("M4: not exactly one leader")
	}
	if first.Token() != t1.Token {
		t.Errorf("token %d, term %d", first.Token(), t1.Token)
	}
	info, err := db.LeaderOf(context.Background(), n)
	if err != nil || info.Token != t1.Token {
		t.Fatalf("LeaderOf: %+v %v", info, err)
	}
	start := time.Now()
	if err := first.Resign(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-t1.Ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the resigned term's context did not end")
	}
	if t1.Err() != nil {
		t.Errorf("a hand-over's term error: %v", t1.Err())
	}
	second, t2 := next("hand-over")
	if second != other {
		t.Fatal("the resigned candidate won again at once")
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("hand-over took %v", took)
	}
	if t2.Token <= t1.Token {
		t.Errorf("M4: term %d after %d", t2.Token, t1.Token)
	}
	if first.IsLeader() {
		t.Fatal("M4: two leaders after the hand-over")
	}
	_, err = db.TryLock(context.Background(), n)
	mustErr(t, err, ErrKind, "plain lease on an election's name")
}

// O1, O2: records, compare-and-set, and the retry helper under
// contention ends exact.
func TestO2Records(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	r := db.Records()
	key := name(t, "k")
	_, err := r.Get(ctx, key)
	mustErr(t, err, ErrNotFound, "Get of a missing record")
	if err := r.Create(ctx, key, []byte("0")); err != nil {
		t.Fatal(err)
	}
	mustErr(t, r.Create(ctx, key, []byte("x")), ErrConflict, "second Create")
	rec, err := r.Get(ctx, key)
	if err != nil || string(rec.Value) != "0" || rec.Version != 1 {
		t.Fatalf("Get: %+v %v", rec, err)
	}
	if _, err := r.CAS(ctx, key, 5, []byte("x")); !errors.Is(err, ErrConflict) {
		t.Fatalf("CAS with a stale version: %v", err)
	}
	v, err := r.CAS(ctx, key, 1, []byte("0"))
	if err != nil || v != 2 {
		t.Fatalf("CAS: %d %v", v, err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 3; j++ {
				_, err := r.Update(ctx, key, 200, func(old []byte, exists bool) ([]byte, error) {
					n, err := strconv.Atoi(string(old))
					return []byte(strconv.Itoa(n + 1)), err
				})
				if err != nil {
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
	rec, _ = r.Get(ctx, key)
	if string(rec.Value) != "24" {
		t.Fatalf("O2: counter %s, want 24", rec.Value)
	}
	// An error of the function ends the update and is returned.
	stop := errors.New("sold out")
	if _, err := r.Update(ctx, key, 0, func([]byte, bool) ([]byte, error) { return nil, stop }); err != stop {
		t.Fatalf("Update's function error: %v", err)
	}
	if err := r.Delete(ctx, key, rec.Version); err != nil {
		t.Fatal(err)
	}
}

// R1, R2: row locks exclude another transaction (NOWAIT fails) until
// commit.
func TestR1RowLockTransactions(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	a, b := name(t, "a"), name(t, "b")
	tx, err := db.Begin(ctx, LockTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	got, err := tx.Lock(ctx, LockWait, b, a)
	if err != nil || !got[0] || !got[1] {
		t.Fatalf("Lock: %v %v", got, err)
	}
	tx2, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tx2.Lock(ctx, LockNoWait, a)
	if !errors.Is(err, ErrLocked) && !errors.Is(err, ErrDBBusy) {
		t.Fatalf("R1: second transaction's NOWAIT: %v", err)
	}
	tx2.Rollback()
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	mustErr(t, tx.Rollback(), ErrMisuse, "rollback after commit")
	tx3, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx3.Lock(ctx, LockNoWait, a); err != nil {
		t.Fatalf("lock after the commit: %v", err)
	}
	if err := tx3.Records().Create(ctx, a, []byte("in-txn")); err != nil {
		t.Fatal(err)
	}
	if err := tx3.Rollback(); err != nil {
		t.Fatal(err)
	}
	_, err = db.Records().Get(ctx, a)
	mustErr(t, err, ErrNotFound, "record of a rolled-back transaction")
}

// L12: LockMany takes all names or none.
func TestL12LockMany(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	a, b, c := name(t, "a"), name(t, "b"), name(t, "c")
	held, err := db.TryLock(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.LockMany(ctx, []string{a, b, c}, Wait(0))
	mustErr(t, err, ErrBusy, "LockMany with one name held")
	for _, n := range []string{a, b} {
		l, err := db.TryLock(ctx, n)
		if err != nil {
			t.Fatalf("L12: %s left held by a failed LockMany: %v", n, err)
		}
		l.Release(ctx)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		held.Release(ctx)
	}()
	ls, err := db.LockMany(ctx, []string{c, a, b}, Wait(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		if l.Token() <= 0 || !l.Held() {
			t.Errorf("%s: token %d state %v", l.Name(), l.Token(), l.State())
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// M3: a fair lock works as a lock (its waits are single C waits).
func TestM3FairLock(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	n := name(t, "f")
	a, err := db.Lock(ctx, n, Fair(), Wait(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(200 * time.Millisecond)
		a.Release(ctx)
	}()
	b, err := db.Lock(ctx, n, Fair(), Wait(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if b.Token() <= a.Token() {
		t.Errorf("token %d after %d", b.Token(), a.Token())
	}
	b.Release(ctx)
}

// M3, E2: only a lease waits in a fair queue; the other kinds refuse
// Fair() (their waits would be single C waits no context could end).
func TestM3FairOnlyForLock(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	n := name(t, "fk")
	if _, err := db.Semaphore(ctx, n, 2, Fair()); !errors.Is(err, ErrInvalid) {
		t.Errorf("Semaphore with Fair(): %v", err)
	}
	if _, err := db.Shared(ctx, n, Fair()); !errors.Is(err, ErrInvalid) {
		t.Errorf("Shared with Fair(): %v", err)
	}
	if _, err := db.Exclusive(ctx, n, Fair()); !errors.Is(err, ErrInvalid) {
		t.Errorf("Exclusive with Fair(): %v", err)
	}
}

// E3 with one connection: every goroutine shares it in turn, waits
// included (slices of 200 ms let the others in).
func TestE3OneConnection(t *testing.T) {
	db := open(t, MaxConns(1))
	n := name(t, "one")
	var inside atomic.Int32
	var total atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for j := 0; j < 2; j++ {
				l, err := db.Lock(ctx, n, Wait(60*time.Second))
				if err != nil {
					errs <- err
					return
				}
				if inside.Add(1) != 1 {
					errs <- errors.New("L1: two holders")
				}
				total.Add(1)
				time.Sleep(2 * time.Millisecond)
				inside.Add(-1)
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
	if total.Load() != 8 || db.Conns() != 1 {
		t.Fatalf("holds %d, connections %d", total.Load(), db.Conns())
	}
}

// R1, R4: the application's own rows, locked in a transaction that also
// runs the application's statements.
func TestR4LockRowsAndExec(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	table := fmt.Sprintf("go_rows_%d", os.Getpid())
	if _, err := db.Exec(ctx, "CREATE TABLE "+table+" (id INTEGER PRIMARY KEY, qty INTEGER NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	defer db.Exec(ctx, "DROP TABLE "+table)
	ph := func(i int) string {
		if db.Driver() == "postgres" {
			return fmt.Sprintf("$%d", i)
		}
		return "?"
	}
	for id := 1; id <= 2; id++ {
		if _, err := db.Exec(ctx, "INSERT INTO "+table+" (id, qty) VALUES ("+ph(1)+", "+ph(2)+")", id, 10); err != nil {
			t.Fatal(err)
		}
	}
	tbl := Table{Table: table, KeyColumn: "id"}
	tx, err := db.Begin(ctx, LockTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	got, err := tx.LockRows(ctx, tbl, LockWait, 2, 1)
	if err != nil || !got[0] || !got[1] {
		t.Fatalf("LockRows: %v %v", got, err)
	}
	other, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = other.LockRows(ctx, tbl, LockNoWait, 1)
	if !errors.Is(err, ErrLocked) && !errors.Is(err, ErrDBBusy) {
		t.Fatalf("R1: NOWAIT on a locked row: %v", err)
	}
	other.Rollback()
	res, err := tx.Exec(ctx, "UPDATE "+table+" SET qty = qty - 1 WHERE id = "+ph(1), 1)
	if err != nil || res.Affected != 1 {
		t.Fatalf("Exec in the transaction: %+v %v", res, err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	res, err = db.Exec(ctx, "SELECT qty FROM "+table+" WHERE id = 1")
	if err != nil || !res.HasRow || res.First != 9 {
		t.Fatalf("after commit: %+v %v", res, err)
	}
	tx, err = db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tx.LockRows(ctx, tbl, LockNoWait, 99)
	mustErr(t, err, ErrNotFound, "LockRows of a missing key")
	tx.Rollback()
	_, err = db.Begin(ctx, LockTimeout(-time.Second))
	mustErr(t, err, ErrInvalid, "negative lock timeout")
}
