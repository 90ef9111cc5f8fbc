package config

import (
	"errors"
	"fmt"

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
// Validate's; after a successful Validate it does not fail for a configured topic.
func (c *Config) Policy(name string) (*bucketer.Policy, error) {
	t, ok := c.Topics[name]
	if !ok {
		return nil, fmt.Errorf("topics.%s: no such topic; configured: %v", name, c.TopicNames())
	}
	p, err := bucketer.New(t.Spec())
	if err != nil {
		v := &validator{}
		addBucketErrors(v, "topics."+name, err)
		return nil, errors.Join(v.problems...)
	}
	return p, nil
}

// Policies compiles the bucket policy of every topic, keyed by topic name.
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
	}
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
