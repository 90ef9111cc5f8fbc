package bucketer_test

import (
	"fmt"
	"time"

	"github.com/bucketsink/sink/bucketer"
)

// The worked example of the package documentation; go test checks its output.
func Example() {
	at, _ := time.Parse(time.RFC3339, "2024-01-15T14:37:12+05:30")
	p, err := bucketer.New(bucketer.Spec{Width: "1h", EventBuckets: 4})
	if err != nil {
		panic(err)
	}
	i := p.Index(at)
	fmt.Println(at.Unix(), i, p.Start(i).Unix(), p.Start(i).Format(time.RFC3339))
	fmt.Println(p.Text(i), p.KeyInt(i), p.CQLType())

	w, _ := bucketer.New(bucketer.Spec{Width: "week"})
	fmt.Println(w.Text(w.Index(at)), w.Index(at), w.KeyInt(w.Index(at)))

	// The event bucket hashes the canonical text of the clustering value(s), not the id.
	fmt.Println(bucketer.EventBucket([]byte("2024-01-15T09:07:12.000Z"), p.EventBuckets()))
	h := bucketer.NewIDHash()
	h.PartString("2024-01-15T09:07:12.000Z")
	h.PartString("7")
	fmt.Println(h.Sum64(), h.Bucket(4))
	// Output:
	// 1705309632 473697 1705309200 2024-01-15T09:00:00Z
	// 2024-01-15-09 2024011509 text
	// 2024-W03 2820 202403
	// 1
	// 350632916081792452 0
}

// A reader walking a day of hourly, 2-way event-bucketed, daily-sliced partitions newest first.
func ExamplePolicy_Enumerate() {
	p, _ := bucketer.New(bucketer.Spec{Width: "1h", Slice: "1d", EventBuckets: 2})
	from := time.Date(2024, 1, 16, 1, 0, 0, 0, time.UTC) // included
	// to is excluded, but the instants just after it are in the range, so the bucket that
	// starts at to is visited.
	to := time.Date(2024, 1, 15, 23, 0, 0, 0, time.UTC)
	parts, err := p.Enumerate(from, to, 100)
	if err != nil {
		panic(err)
	}
	for _, pt := range parts {
		fmt.Println("readings_"+pt.Slice, p.Text(pt.Index), pt.EventBucket)
	}
	// Output:
	// readings_20240116 2024-01-16-01 0
	// readings_20240116 2024-01-16-01 1
	// readings_20240116 2024-01-16-00 0
	// readings_20240116 2024-01-16-00 1
	// readings_20240115 2024-01-15-23 0
	// readings_20240115 2024-01-15-23 1
}

func ExampleNew_error() {
	_, err := bucketer.New(bucketer.Spec{Width: "7m", Key: "date"})
	fmt.Println(err)
	// Output:
	// width: "7m" does not divide a day and is not whole days; use one of 1s, 2s, 3s, 4s, 5s, 6s, 8s, 9s, 10s, 12s, 15s, 16s, 18s, 20s, 24s, 25s, 27s, 30s, 32s, 36s, 40s, 45s, 48s, 50s, 54s, 1m, 64s, 72s, 75s, 80s, 90s, 96s, 100s, 108s, 2m, 128s, 135s, 144s, 150s, 160s, 3m, 192s, 200s, 216s, 225s, 4m, 270s, 288s, 5m, 320s, 6m, 384s, 400s, 432s, 450s, 8m, 9m, 576s, 10m, 640s, 675s, 12m, 800s, 864s, 15m, 16m, 18m, 1152s, 20m, 1350s, 24m, 1600s, 1728s, 30m, 32m, 36m, 40m, 45m, 48m, 3200s, 3456s, 1h, 72m, 80m, 90m, 96m, 2h, 144m, 160m, 3h, 4h, 288m, 6h, 8h, 12h, 1d, whole days up to 10000d (2d, 3d, ...), week, month or year
}
