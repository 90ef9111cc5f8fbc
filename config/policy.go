package config

import (
	"errors"
	"fmt"
	"time"

	"github.com/bucketsink/sink/bucketer"
)

// Spec returns the topic's bucket policy in the form package bucketer compiles.
func (t Topic) Spec() bucketer.Spec {
	return bucketer.Spec{
		Width:        t.Bucket.Width,
		Key:          t.Bucket.Key,
		Layout:       t.Bucket.Layout,
		Slice:        t.Bucket.Slice,
		EventBuckets: t.Bucket.EventBuckets,
		Rolling:      t.Bucket.Rolling,
	}
}

// Policy compiles the bucket policy of topics.<name>. Its errors name the key path, like
// Validate's; after a successful Validate it does not fail for a configured topic. A latest-value
// entry (bucket width none) has no policy: nil, which is not sliced (bucketer.Policy.Sliced).
func (c *Config) Policy(name string) (*bucketer.Policy, error) {
	t, ok := c.Topics[name]
	if !ok {
		return nil, fmt.Errorf("topics.%s: no such topic; configured: %v", name, c.TopicNames())
	}
	if t.Latest() {
		return nil, nil
	}
	p, err := bucketer.New(t.Spec())
	if err != nil {
		v := &validator{}
		addBucketErrors(v, "topics."+name, err)
		return nil, errors.Join(v.problems...)
	}
	return p, nil
}

// Policies compiles the bucket policy of every topic, keyed by topic name; a latest-value entry has
// none (its value is nil).
func (c *Config) Policies() (map[string]*bucketer.Policy, error) {
	out := make(map[string]*bucketer.Policy, len(c.Topics))
	var errs []error
	for _, name := range c.TopicNames() {
		p, err := c.Policy(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[name] = p
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func (c *Config) validateBucket(v *validator, p string, t Topic) {
	if t.Bucket.Width == "" {
		v.add(p+".bucket.width", "empty; choose a width such as 1h or 1d (run `sink plan` to size it), or week, month or year")
		return
	}
	if _, err := bucketer.New(t.Spec()); err != nil {
		addBucketErrors(v, p, err)
		return
	}
	if t.Bucket.Rolling > 0 {
		validateRollingTTL(v, p, t)
	}
}

// validateRollingTTL: a rolling key comes round again after Rolling buckets, and the rows of the
// previous cycle are still in that partition unless they have expired. The partition of bucket b
// is reused from start(b) + Rolling×w; its last rows have event times just short of start(b) + w,
// so with the TTL counted from the event time they expire by then exactly when
// ttl <= (Rolling-1)×w. Counted from the write, each row written after its bucket ended lives on
// for that lag as well, which no bound on the TTL can cover (docs/CONFIG.md says so).
func validateRollingTTL(v *validator, p string, t Topic) {
	w, err := bucketer.ParseWidth(t.Bucket.Width)
	if err != nil {
		return // reported by bucketer.New
	}
	var shortest time.Duration // the shortest bucket of the width
	switch w.Unit {
	case bucketer.Week:
		shortest = Week
	case bucketer.Month:
		shortest = 28 * Day
	case bucketer.Year:
		shortest = 365 * Day
	default:
		shortest = time.Duration(w.Seconds) * time.Second
	}
	cycle := Duration(shortest * time.Duration(t.Bucket.Rolling))
	bound := Duration(shortest * time.Duration(t.Bucket.Rolling-1))
	switch {
	case t.Bucket.Rolling == 1:
		v.add(p+".bucket.rolling", "1 reuses the one key at every bucket, so the previous bucket's rows are always still there; use at least 2")
	case t.TTL <= 0 || t.TTL > bound:
		v.add(p+".ttl", "%s with bucket.rolling %d of %s: a key is reused %s after its bucket starts, and a row of the bucket's last moment must have expired by then; set ttl to at most %s (rolling - 1 buckets), with ttl_from: event_time, or the partition grows without bound",
			ttlText(t.TTL), t.Bucket.Rolling, t.Bucket.Width, cycle, bound)
	}
	if f := t.TTLField; f != nil && f.Max > bound {
		v.add(p+".ttl_field.max", "%s with bucket.rolling %d of %s: a record's TTL may reach it, past the reuse of its bucket's key; set it to at most %s (rolling - 1 buckets)",
			f.Max, t.Bucket.Rolling, t.Bucket.Width, bound)
	}
}

func ttlText(d Duration) string {
	if d <= 0 {
		return "no ttl"
	}
	return d.String()
}

// addBucketErrors prefixes each bucketer.FieldError with the key path of its Spec field.
func addBucketErrors(v *validator, p string, err error) {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	for _, e := range errs {
		var fe *bucketer.FieldError
		if errors.As(e, &fe) {
			v.add(p+".bucket."+fe.Field, "%v", fe.Err)
		} else {
			v.add(p+".bucket", "%v", e)
		}
	}
}
