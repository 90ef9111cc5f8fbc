package avro

import (
	"fmt"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

func fmtAny(v any) string { return fmt.Sprint(v) }

func fmtUUID(u [16]byte) string { return gocql.UUID(u).String() }
