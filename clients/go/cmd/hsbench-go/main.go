// Command hsbench-go measures gets per second through the Go client against
// `hsd serve --demo` (table test.user, ids 1..100000): one get per round
// trip on one connection, pipelined gets on one connection, and many
// goroutines each doing one get per call over a Pool.
//
//	go run ./cmd/hsbench-go -addr 127.0.0.1:9998 -seconds 3
//
// Each mode runs for -seconds after a short warm-up and prints one line.
// Keep runs short on a shared machine.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	hs "github.com/hsd-project/hsd/clients/go/handlersocket"
)

var columns = []string{"user_name", "user_email", "created"}

func main() {
	addr := flag.String("addr", "127.0.0.1:9998", "hsd read port")
	seconds := flag.Float64("seconds", 3, "length of each measured run")
	batch := flag.Int("batch", 100, "gets per pipelined call")
	rows := flag.Int("rows", 100_000, "ids are 1..rows")
	goroutines := flag.Int("goroutines", 64, "goroutines sharing the pool")
	poolSize := flag.Int("pool", 8, "connections in the pool")
	modes := flag.String("modes", "single,pipelined,pool", "which runs, comma separated")
	flag.Parse()
	log.SetFlags(0)
	ctx := context.Background()
	spec := hs.IndexSpec{DB: "test", Table: "user", Columns: columns}
	d := time.Duration(*seconds * float64(time.Second))

	conn, err := hs.Dial(ctx, *addr, nil)
	if err != nil {
		log.Fatal(err)
	}
	users, err := conn.OpenIndex(ctx, spec)
	if err != nil {
		log.Fatal(err)
	}
	if row, err := users.Get(ctx, hs.Int(1)); err != nil || row == nil {
		log.Fatalf("no test.user rows (start hsd with --demo): %v", err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	key := func(r *rand.Rand) []byte { return hs.Int(int64(r.IntN(*rows) + 1)) }

	for _, mode := range strings.Split(*modes, ",") {
		switch mode {
		case "single":
			measure("one get per round trip (1 connection)", d, 1, func(int) int {
				if _, err := users.Get(ctx, key(rng)); err != nil {
					log.Fatal(err)
				}
				return 1
			})
		case "pipelined":
			keys := make([][]byte, *batch)
			measure(fmt.Sprintf("pipelined, %d per call (1 connection)", *batch), d, 1, func(int) int {
				for i := range keys {
					keys[i] = key(rng)
				}
				got, err := users.GetMany(ctx, keys...)
				if err != nil {
					log.Fatal(err)
				}
				return len(got)
			})
		case "pool":
			pool, err := hs.NewPool(*addr, *poolSize, nil)
			if err != nil {
				log.Fatal(err)
			}
			pooled, err := pool.OpenIndex(ctx, spec)
			if err != nil {
				log.Fatal(err)
			}
			rngs := make([]*rand.Rand, *goroutines)
			for i := range rngs {
				rngs[i] = rand.New(rand.NewPCG(uint64(i), 3))
			}
			label := fmt.Sprintf("%d goroutines, one get per call (pool of %d)", *goroutines, *poolSize)
			measure(label, d, *goroutines, func(g int) int {
				if _, err := pooled.Get(ctx, key(rngs[g])); err != nil {
					log.Fatal(err)
				}
				return 1
			})
			pool.Close()
		default:
			log.Fatalf("unknown mode %q (single, pipelined, pool)", mode)
		}
	}
	conn.Close()
}

// measure runs step in n goroutines for a warm-up, then for d, and prints
// the gets per second of the measured part.
func measure(label string, d time.Duration, n int, step func(goroutine int) int) {
	var done atomic.Int64
	var measuring atomic.Bool
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				got := step(g)
				if measuring.Load() {
					done.Add(int64(got))
				}
			}
		}()
	}
	time.Sleep(min(d/5, 500*time.Millisecond)) // warm-up
	measuring.Store(true)
	start := time.Now()
	time.Sleep(d)
	measuring.Store(false)
	elapsed := time.Since(start)
	close(stop)
	wg.Wait()
	total := done.Load()
	fmt.Fprintf(os.Stdout, "%-50s %10.0f gets/s  (%d in %.1f s)\n", label, float64(total)/elapsed.Seconds(), total, elapsed.Seconds())
}
