// Package layers holds no code: its tests assert, from `go list` data, that the module's dependency
// graph reads one way, as docs/DESIGN.md draws it. Bucket arithmetic and configuration sit at the
// bottom; the table description (schema) and the row format (packed) above them; the codecs (codec,
// the seam, and one package per format under it) over the row format; decoding (mapper, which calls
// the codecs) and storage (cassandra) each on top of those but never on each other; the pipeline and its
// subpackages over all of them; the commands on top. A new import that breaks a rule fails here,
// naming the importer and the imported package, before it can make two layers depend on each other.
package layers
