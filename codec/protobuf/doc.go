// Package protobuf is the Protobuf codec: record values in the Confluent wire format (magic byte, schema id,
// message-index array) whose writer schema is a Protobuf file in the schema registry.
//
// A writer schema is either `.proto` text, compiled in process with protocompile (no protoc on the machine), or
// the base64 of a serialized FileDescriptorProto, which Confluent's Python serializer registers (from a
// protoc-generated module, whose fields carry no json_name: a missing one is taken as the default, as protoc
// does). Its imports are the schema's references (each again text or a descriptor), else the files every
// Confluent serializer imports without registering them: google/protobuf/*.proto, google/type/*.proto,
// confluent/meta.proto and confluent/type/decimal.proto (a reference of the same name wins). `.proto` text
// comes as each client prints it: the Go serializer's printer, the Java serializer's normalized form (fully
// qualified names with a leading dot, option literals), or the source itself.
//
// The message a record holds is named by its message indexes (the first message of the file is [0], the second
// [1], a message nested in it [1, 0]); the plan of each (schema id, message indexes) is compiled on the first
// record that names it and kept for the plan's life. It walks the Protobuf wire format of the record straight
// into the mapper's values: fields the topic does not read are skipped by wire type, nothing is built per
// record but the values themselves.
//
// Presence follows Protobuf: a field with explicit presence (a message, a wrapper, google.protobuf.Timestamp,
// a oneof member, proto3 `optional`, any proto2 singular field) that is not on the wire is Absent, so its
// column stays unset; a proto3 scalar without presence reads as its default value (0, "", false), as every
// Protobuf library reads it, since a writer never puts a default value on the wire.
//
// A Plan is immutable once compiled and safe for concurrent use; the per-message plans are added under a lock
// and read without one.
package protobuf
