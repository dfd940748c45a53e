package sqllock

import (
	"context"
	"testing"
)

// BenchmarkPair is an uncontended TryLock+Release pair (no watchdog), for
// `go test -bench Pair -cpuprofile`; cmd/sqllock-bench has the figures
// against C.
func BenchmarkPair(b *testing.B) {
	db, err := Open(testURL)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	n := "go-bench-pair"
	for i := 0; i < b.N; i++ {
		l, err := db.TryLock(ctx, n, NoRenew())
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
