package batcher

// RowOverhead is the part of Row.Size that is not the values': the framing of one batch entry around
// them (kind, prepared id with its length, value count), as the mapper counts it.
const RowOverhead = 24

// RowShape is what a Target's statement binds, as far as Cassandra's count of a batch's size needs it
// (DataSize). A row's values are bound in Target.Columns order, then its TTL and write timestamp.
type RowShape struct {
	// KeyColumns is how many of the columns are the partition key (their bytes are Row.Key's: a
	// composite key frames each with 3 bytes); 0 says the shape is unknown.
	KeyColumns int
	// Clustering is how many are clustering columns, Regular how many are the others, each a cell (a
	// tuple bound element by element is one column).
	Clustering, Regular int
	// TTL: the statement binds a TTL (the row then expires); Timestamp: it binds the write timestamp.
	TTL, Timestamp bool
}

// Cassandra's count of a batch (BatchStatement.verifyBatchSize, against batch_size_warn_threshold
// and batch_size_fail_threshold, for a batch of several partitions) is the sum of its partition
// updates' data sizes (PartitionUpdate.dataSize in Cassandra 5.0): per partition its (empty) static
// row and its deletion info, per row its clustering values, its liveness and its deletion, per cell
// a timestamp, a TTL and a local deletion time with the value. The partition key is not counted, nor
// the TTL and timestamp bound, and an unset value makes no cell.
const (
	partitionData = 8 + 13 + 8 // the empty static row (liveness 8, deletion 13), the partition deletion (8)
	rowData       = 8 + 13     // a row's liveness (its timestamp) and row deletion
	expiringData  = 4 + 8      // an expiring row's liveness adds its TTL and its expiration time
	cellData      = 8 + 4 + 8  // a cell's timestamp, TTL and local deletion time
)

// adjust is what Cassandra counts of a row beyond its Size, less its partition key's bytes: Size
// counts every bound value with a 4-byte length, and RowOverhead. A delete (Target.Delete, by the
// partition key) counts nothing per row: its partition deletion is partitionData's.
func (s RowShape) adjust(del bool) int {
	a := -RowOverhead - 4*(s.KeyColumns+s.Clustering) + (cellData-4)*s.Regular
	if !del {
		a += rowData
	}
	if s.TTL {
		a += expiringData - 4 - 4 // the TTL is bound as an int
	}
	if s.Timestamp {
		a -= 4 + 8 // the write timestamp is bound as a bigint
	}
	return a
}

// DataSize is what Cassandra counts of b against its batch size thresholds: each row's Size adjusted
// by its Target's Shape, with partitionData per partition. It is exact, to the byte, for rows of
// frozen values without unset values (checked against Cassandra 5.0's warning). It counts more than
// the server for an unset value (as the null cell it is not: 20 bytes), and less for a row its table
// expires by a default_time_to_live the statement does not bind (12 bytes) and for a non-frozen
// collection, whose elements are cells each (12 bytes more an entry of a map, 16 an element of a set,
// 32 of a list, less 12 for the column). A row of a Target without a Shape is counted at five times
// its Size, which no row of frozen values exceeds.
//
// For a batch of one partition it costs a few instructions, whatever its rows.
func DataSize(b *Batch) int {
	if len(b.Rows) == 0 {
		return 0
	}
	s := b.Target.Shape
	if s.KeyColumns == 0 {
		return 5*b.Bytes + partitionData*max(b.Partitions, 1)
	}
	a := s.adjust(b.Target.Delete)
	if b.Partitions <= 1 {
		return b.Bytes + len(b.Rows)*(a-keyBytes(b.Rows[0].Key, s.KeyColumns)) + partitionData
	}
	n := b.Bytes
	for i := 0; i < len(b.Rows); {
		j := i + PartitionLen(b.Rows[i:])
		n += (j-i)*(a-keyBytes(b.Rows[i].Key, s.KeyColumns)) + partitionData
		i = j
	}
	return n
}

// keyBytes is the bytes of the partition key values in routing key k of cols columns.
func keyBytes(k string, cols int) int {
	if cols == 1 {
		return len(k)
	}
	return len(k) - 3*cols
}
