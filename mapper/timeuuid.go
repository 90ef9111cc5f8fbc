package mapper

import (
	"encoding/binary"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// uuidEpoch is the Unix time of the version 1 UUID epoch, 1582-10-15T00:00:00Z, in seconds.
const uuidEpoch = -12219292800

// maxUUIDTicks is the largest 60-bit UUID time (100 ns units; early in the year 5236).
const maxUUIDTicks = 1<<60 - 1

// timeUUID builds the deterministic version 1 UUID of a record: its 60-bit time is t in 100 ns
// units since 1582-10-15, and its 14-bit clock sequence and 48-bit node come from the record's
// Kafka coordinates, so a replay of the same record produces the same UUID.
//
// The 61 coordinate bits are offset + FNV-1a-64(topic, 0x00, partition) modulo 2^61. For one
// topic partition, records whose offsets differ (by less than 2^61, i.e. always) get different
// bits, so two records of one partition never share a UUID even at the same instant; records
// of different partitions collide only if their event times are equal to the 100 ns and their
// hashes happen to line up (odds 2^-61 per pair). The node's multicast bit is set, as RFC 9562
// asks of a node that is not a MAC address, which is why 61 and not 62 bits are free.
// It reports false when t is outside the UUID's range (before 1582-10-15 or after 5236).
func timeUUID(t time.Time, topic string, partition int32, offset int64) (gocql.UUID, bool) {
	var u gocql.UUID
	sec := t.Unix() - uuidEpoch
	if sec < 0 || uint64(sec) > maxUUIDTicks/10_000_000 {
		return u, false
	}
	ticks := uint64(sec)*1e7 + uint64(t.Nanosecond()/100)
	if ticks > maxUUIDTicks {
		return u, false
	}
	binary.BigEndian.PutUint32(u[0:4], uint32(ticks))            // time_low
	binary.BigEndian.PutUint16(u[4:6], uint16(ticks>>32))        // time_mid
	binary.BigEndian.PutUint16(u[6:8], uint16(ticks>>48)|0x1000) // version 1, time_hi

	h := uint64(fnvOffset)
	for i := 0; i < len(topic); i++ {
		h = (h ^ uint64(topic[i])) * fnvPrime
	}
	h *= fnvPrime // the 0 byte that ends the topic name (h ^ 0 is h)
	var pb [4]byte
	binary.BigEndian.PutUint32(pb[:], uint32(partition))
	for _, c := range pb {
		h = (h ^ uint64(c)) * fnvPrime
	}
	bits := (h + uint64(offset)) & (1<<61 - 1)

	clock := uint16(bits>>47) & 0x3fff
	binary.BigEndian.PutUint16(u[8:10], clock|0x8000) // RFC 4122 variant 10
	// Node: 48 bits with the multicast bit (the lowest bit of its first byte, bit 40) forced to 1;
	// the remaining 47 bits take bits 0-46 of the coordinates.
	low := bits & (1<<47 - 1)
	node := low&(1<<40-1) | 1<<40 | (low>>40)<<41
	u[10] = byte(node >> 40)
	u[11] = byte(node >> 32)
	binary.BigEndian.PutUint32(u[12:16], uint32(node))
	return u, true
}

// FNV-1a 64 constants (the same function bucketer uses for event buckets).
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)
