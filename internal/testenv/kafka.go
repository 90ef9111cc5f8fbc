package testenv

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// checkKafka sends one metadata request and requires an active controller, so the broker can serve groups.
func checkKafka(ctx context.Context, addrs []string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DialTimeout(5*time.Second))
	if err != nil {
		return fmt.Errorf("creating client: %w", err)
	}
	defer cl.Close()
	md, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	if err != nil {
		return fmt.Errorf("requesting metadata: %w", err)
	}
	if len(md.Brokers) == 0 || md.Controller < 0 {
		return errors.New("metadata shows no broker or no active controller")
	}
	return nil
}

// CreateTopic creates topic name with the given partitions (replication factor 1), waits until every partition
// has a leader, and deletes the topic when the test ends.
func CreateTopic(t testing.TB, brokers []string, name string, partitions int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatalf("creating Kafka admin client for %v: %v", brokers, err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, int32(partitions), 1, nil, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("creating topic %s (%d partitions) on %v: %v", name, partitions, brokers, err)
	}
	t.Cleanup(func() { deleteTopic(t, brokers, name) })

	// CreateTopics returns once the controller accepted the topic; brokers learn of it (and elect leaders) shortly
	// after, and a producer started before that sees UNKNOWN_TOPIC_OR_PARTITION.
	for {
		md, err := adm.Metadata(ctx, name)
		if err == nil && topicReady(md, name, partitions) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("topic %s on %v: partitions have no leader after 60 s (last metadata error: %v)", name, brokers, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func topicReady(md kadm.Metadata, name string, partitions int) bool {
	td, ok := md.Topics[name]
	if !ok || td.Err != nil || len(td.Partitions) != partitions {
		return false
	}
	for _, p := range td.Partitions {
		if p.Err != nil || p.Leader < 0 {
			return false
		}
	}
	return true
}

func deleteTopic(t testing.TB, brokers []string, name string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Logf("deleting topic %s: %v", name, err)
		return
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).DeleteTopic(ctx, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Logf("deleting topic %s: %v", name, err)
	}
}
