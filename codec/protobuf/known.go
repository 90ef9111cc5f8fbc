package protobuf

import (
	"embed"
	"io/fs"
	"path"

	"github.com/bufbuild/protocompile"
)

// known holds the files Confluent's serializers (Java, Python, Go) import without registering a reference:
// confluent/meta.proto, confluent/type/decimal.proto and google/type/*.proto. google/protobuf/*.proto come from
// protocompile's standard imports. The files declare the same packages, messages, enums, fields and numbers as
// the originals, without their comments and language options, which decoding never reads.
//
//go:embed known
var known embed.FS

// knownImport returns the known file imported as name, if there is one.
func knownImport(name string) (protocompile.SearchResult, bool) {
	if !fs.ValidPath(name) {
		return protocompile.SearchResult{}, false
	}
	f, err := known.Open(path.Join("known", name))
	if err != nil {
		return protocompile.SearchResult{}, false
	}
	return protocompile.SearchResult{Source: f}, true
}
