package cassandra

import (
	"context"
	"fmt"
	"strings"

	"github.com/bucketsink/sink/schema"
)

// ProbeTarget is one table the readiness probe reads: its keyspace, name and partition key, and the
// consistency the sink writes it at ("" is the session's cassandra.consistency).
type ProbeTarget struct {
	Keyspace     string
	Table        string
	PartitionKey []string
	Consistency  string
}

// ProbeTargets lists, for every keyspace and write consistency of the described tables, the tables the probe
// may read, in topic order. A sliced topic's tables come and go with their slices, so they are left out; so is
// a consistency of ANY, which no read can be asked at.
func ProbeTargets(tables schema.Tables, consistencyOf func(topic string) string) []ProbeTarget {
	var out []ProbeTarget
	for _, name := range tables.Names() {
		t := tables[name]
		if t.Policy != nil {
			if _, sliced := t.Policy.Sliced(); sliced {
				continue
			}
		}
		cons := consistencyOf(name)
		if strings.EqualFold(cons, "ANY") {
			continue
		}
		out = append(out, ProbeTarget{Keyspace: t.Keyspace, Table: t.Name, PartitionKey: t.PartitionKey, Consistency: cons})
	}
	return out
}

// Probe asks Cassandra whether a write could succeed now at the consistency the sink writes with, for
// /readyz while no write has answered that lately. For each keyspace and consistency among targets it reads
// one partition (the one at token 0) of the first of its tables that exists, at that consistency: the
// coordinator answers only when enough replicas of that partition are alive for the consistency, so a ring
// that lost its quorum fails the probe (Unavailable) while a slow one that answers passes it. With no table
// to read (none created yet) it falls back to asking the node for its version, which says only that it
// answers. The read is a one-partition read of a partition that normally holds nothing: cheap for the node.
func (s *Session) Probe(ctx context.Context, targets []ProbeTarget) error {
	type group struct{ keyspace, consistency string }
	var groups []group
	byGroup := map[group][]ProbeTarget{}
	for _, t := range targets {
		g := group{t.Keyspace, strings.ToUpper(t.Consistency)}
		if _, ok := byGroup[g]; !ok {
			groups = append(groups, g)
		}
		byGroup[g] = append(byGroup[g], t)
	}
	read := false
	for _, g := range groups {
		cons := s.cons
		if g.consistency != "" {
			c, err := parseConsistency(g.consistency)
			if err != nil {
				return fmt.Errorf("consistency of keyspace %s: %w", g.keyspace, err)
			}
			cons = c
		}
		for _, t := range byGroup[g] {
			err := s.gs.Query(probeStatement(t)).Consistency(cons).ExecContext(ctx)
			if err == nil {
				read = true
				break
			}
			if c, _ := classify(err); c == classMissing {
				continue // not created yet: its rows wait anyway; try the keyspace's next table
			}
			return fmt.Errorf("reading %s.%s at %s: %w", t.Keyspace, t.Table, cons, err)
		}
	}
	if read {
		return nil
	}
	if err := s.gs.Query("SELECT release_version FROM system.local").ExecContext(ctx); err != nil {
		return fmt.Errorf("no table to read yet, and the node does not answer: %w", err)
	}
	return nil
}

// probeStatement reads the partition at token 0 of t: SELECT k FROM ks.t WHERE token(k, ...) = 0 LIMIT 1.
// Every name was validated as a CQL identifier (config) and is re-checked by schema.Describe.
func probeStatement(t ProbeTarget) string {
	key := strings.Join(t.PartitionKey, ", ")
	return "SELECT " + t.PartitionKey[0] + " FROM " + t.Keyspace + "." + t.Table + " WHERE token(" + key + ") = 0 LIMIT 1"
}
