package cassandra

import (
	"testing"

	"github.com/bucketsink/sink/config"
)

// TestZeroFieldsMeanConfigDefaults: a config.Cassandra or WriterConfig built in Go without defaults
// gets exactly what config.ApplyDefaults would have set, so the package has no default of its own
// that could drift from config's.
func TestZeroFieldsMeanConfigDefaults(t *testing.T) {
	applied := &config.Config{Cassandra: config.Cassandra{Hosts: []string{"h"}}}
	applied.ApplyDefaults()

	bare, bareCons, err := newCluster(config.Cassandra{Hosts: []string{"h"}})
	if err != nil {
		t.Fatal(err)
	}
	full, fullCons, err := newCluster(applied.Cassandra)
	if err != nil {
		t.Fatal(err)
	}
	if bare.Timeout != full.Timeout || bare.ConnectTimeout != full.ConnectTimeout || bare.NumConns != full.NumConns || bareCons != fullCons {
		t.Errorf("zero cassandra fields: timeout %v connect %v conns %d consistency %v; config's defaults: %v %v %d %v",
			bare.Timeout, bare.ConnectTimeout, bare.NumConns, bareCons, full.Timeout, full.ConnectTimeout, full.NumConns, fullCons)
	}

	w := applied.Writer
	want := WriterConfig{MaxInFlight: w.MaxInFlight, RetryInitial: w.RetryInitial.Std(), RetryMax: w.RetryMax.Std(),
		Group: GroupConfig{MaxPartitions: w.GroupMaxPartitions, MaxBytes: int(w.GroupMaxBytes)}}
	if got := NewWriter(nil, WriterConfig{}, nil).cfg; got != want {
		t.Errorf("zero WriterConfig became %+v; config's writer defaults are %+v", got, want)
	}

	if got, want := KeyspaceDDL(&config.Config{}, "ks"), KeyspaceDDL(applied, "ks"); got != want {
		t.Errorf("no replication:\n got %s\nwant %s (config's default)", got, want)
	}
}
