package protobuf

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/bucketsink/sink/codec"
)

// maxReferenceDepth bounds how deep references may nest: a registry never needs more, and a cycle stops here.
const maxReferenceDepth = 32

// files is what a schema and its references resolve to, by import path.
type files map[string]protocompile.SearchResult

// parseFile compiles the writer schema s with its references and returns its file descriptor.
func parseFile(s *codec.Schema) (protoreflect.FileDescriptor, error) {
	src := files{}
	root := "sink-registry-schema-" + strconv.Itoa(s.ID) + ".proto"
	if err := src.add(root, s.Text); err != nil {
		return nil, err
	}
	if err := src.references(s, 0); err != nil {
		return nil, err
	}
	if r := src[root]; r.Proto != nil {
		// A descriptor keeps the name its writer gave it; its imports are resolved by that name.
		root = r.Proto.GetName()
		src[root] = r
	}
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(protocompile.ResolverFunc(func(path string) (protocompile.SearchResult, error) {
			if r, ok := src[path]; ok {
				return r, nil
			}
			if r, ok := knownImport(path); ok {
				return r, nil
			}
			return protocompile.SearchResult{}, fmt.Errorf("import %q: %w (not among the schema's references)", path, fs.ErrNotExist)
		})),
	}
	out, err := c.Compile(context.Background(), root)
	if err != nil {
		return nil, fmt.Errorf("compiling the protobuf schema: %w", err)
	}
	return out[0], nil
}

// references adds the schemas s references, under the names s imports them by, and theirs in turn.
func (src files) references(s *codec.Schema, depth int) error {
	if depth > maxReferenceDepth {
		return errors.New("schema references nest deeper than 32 levels (a cycle?)")
	}
	for _, r := range s.References {
		if r.Schema == nil {
			return fmt.Errorf("reference %q (subject %s version %d) was not resolved", r.Name, r.Subject, r.Version)
		}
		if _, ok := src[r.Name]; ok {
			continue
		}
		if err := src.add(r.Name, r.Schema.Text); err != nil {
			return fmt.Errorf("reference %q: %w", r.Name, err)
		}
		if err := src.references(r.Schema, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// add records one file: a serialized FileDescriptorProto in base64 (Confluent's Python serializer registers
// that), else `.proto` text.
func (src files) add(name, text string) error {
	if fd, ok := descriptor(text); ok {
		defaultJSONNames(fd)
		if fd.GetName() == "" || !strings.HasPrefix(name, "sink-registry-schema-") {
			// A referenced descriptor is imported by its reference name.
			fd.Name = proto.String(name)
		}
		src[name] = protocompile.SearchResult{Proto: fd}
		return nil
	}
	src[name] = protocompile.SearchResult{Source: strings.NewReader(text)}
	return nil
}

// descriptor reads text as the base64 of a serialized FileDescriptorProto. `.proto` text is never valid base64
// (it has spaces, semicolons, braces), so the two forms cannot be confused.
func descriptor(text string) (*descriptorpb.FileDescriptorProto, bool) {
	t := strings.TrimSpace(text)
	if t == "" {
		return nil, false
	}
	raw, err := base64.StdEncoding.DecodeString(t)
	if err != nil {
		return nil, false
	}
	fd := &descriptorpb.FileDescriptorProto{}
	if len(raw) == 0 || proto.Unmarshal(raw, fd) != nil {
		return nil, false
	}
	return fd, true
}

// defaultJSONNames gives every field of fd that has no json_name the default one. protoc leaves json_name out
// of the descriptors it embeds in generated code (Python's `serialized_pb`, which Confluent's Python serializer
// registers), and protocompile reads a missing json_name as a custom empty one, so any message with two fields
// would fail to link on a name conflict that does not exist. The codec never reads JSON names; this only keeps
// such descriptors compiling, as protoc itself would compile their source.
func defaultJSONNames(fd *descriptorpb.FileDescriptorProto) {
	fields := func(fs []*descriptorpb.FieldDescriptorProto) {
		for _, f := range fs {
			if f.JsonName == nil {
				f.JsonName = proto.String(jsonCamelCase(f.GetName()))
			}
		}
	}
	var walk func(ms []*descriptorpb.DescriptorProto)
	walk = func(ms []*descriptorpb.DescriptorProto) {
		for _, m := range ms {
			fields(m.GetField())
			fields(m.GetExtension())
			walk(m.GetNestedType())
		}
	}
	fields(fd.GetExtension())
	walk(fd.GetMessageType())
}

// jsonCamelCase is Protobuf's default JSON name of a field: underscores dropped, the lower-case letter after
// one upper-cased (`device_id` → `deviceId`), as protoc and protobuf-go derive it.
func jsonCamelCase(name string) string {
	b := make([]byte, 0, len(name))
	under := false
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == '_' {
			under = true
			continue
		}
		if under && 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		b = append(b, c)
		under = false
	}
	return string(b)
}
