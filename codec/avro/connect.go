package avro

import "github.com/bucketsink/sink/codec"

// ConnectName is the Kafka Connect logical type of the field at path of writer schema s, as Confluent's
// AvroConverter records it ("connect.name" beside the field's type, through a union with null): how a
// Debezium change event written in Avro says that a long is a MicroTimestamp, or an int a Date. "" when
// the field has none, or s has no such field; an error when s cannot be parsed.
func ConnectName(s *codec.Schema, path []string) (string, error) {
	n, err := parseSchema(s)
	if err != nil {
		return "", err
	}
	for _, name := range path {
		n = nonNull(n)
		var next *node
		for i := range n.fields {
			if n.fields[i].name == name {
				next = n.fields[i].typ
				break
			}
		}
		if next == nil {
			return "", nil
		}
		n = next
	}
	return nonNull(n).connect, nil
}
