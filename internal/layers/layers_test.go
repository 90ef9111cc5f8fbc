package layers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
)

const module = "github.com/bucketsink/sink"

// pkg is the part of `go list -json` the rules read. Imports are the production imports: a test may
// reach across layers to build its fixtures (the mapper's tests write through cassandra, say).
type pkg struct {
	ImportPath string
	Imports    []string
}

var (
	loadOnce sync.Once
	loaded   map[string][]string // package (relative to the module) -> its imports of the module (relative)
	loadErr  error
)

// graph lists every package of the module once per test binary, with `go list -e -json` (-e: a
// broken package, an import cycle say, is still listed with its imports, so the rule it breaks is named).
func graph(t *testing.T) map[string][]string {
	t.Helper()
	loadOnce.Do(func() { loaded, loadErr = list() })
	if loadErr != nil {
		t.Fatalf("listing the module's packages: %v", loadErr)
	}
	return loaded
}

func list() (map[string][]string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("listing the packages needs the go command on PATH: %w", err)
	}
	cmd := exec.Command(goTool, "list", "-e", "-json", module+"/...")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, errors.Join(err, errors.New(stderr.String()))
	}
	g := make(map[string][]string)
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		name, ok := relative(p.ImportPath)
		if !ok {
			continue
		}
		var own []string
		for _, imp := range p.Imports {
			if rel, ok := relative(imp); ok {
				own = append(own, rel)
			}
		}
		g[name] = own
	}
	if len(g) == 0 {
		return nil, errors.New("go list found no package of " + module)
	}
	return g, nil
}

// relative is a module package's path below the module ("pipeline/offsets"), or false for another
// module's package.
func relative(path string) (string, bool) {
	if path == module {
		return ".", true
	}
	return strings.CutPrefix(path, module+"/")
}

// within reports whether p is root or one of its subpackages.
func within(p, root string) bool {
	return p == root || strings.HasPrefix(p, root+"/")
}

// importsOnly fails for every import of pkgName that allowed does not accept.
func importsOnly(t *testing.T, pkgName string, allowed func(string) bool, rule string) {
	t.Helper()
	imports, ok := graph(t)[pkgName]
	if !ok {
		t.Fatalf("package %s is not in the module any more; update the rule %q", pkgName, rule)
	}
	for _, imp := range imports {
		if !allowed(imp) {
			t.Errorf("%s imports %s: %s", pkgName, imp, rule)
		}
	}
}

// TestStorageNeverImportsDecoding: cassandra, the row format and the table description never depend
// on the mapper, so the writer and the schema check get a row's values and a table's shape without a
// JSON decoder.
func TestStorageNeverImportsDecoding(t *testing.T) {
	for _, p := range []string{"cassandra", "packed", "schema"} {
		importsOnly(t, p, func(imp string) bool { return !within(imp, "mapper") && !within(imp, "codec") },
			"storage, the row format and the table description never import the mapper or the codecs")
	}
}

// TestCodecsKnowOnlyTheRowFormat: the decoding room sits under the mapper. The seam (codec) and each
// codec decode into values of the packed row format's types and may use bucketer's time range; they
// know no column plan, table, writer or pipeline, so a new codec is a package that cannot reach into
// the mapper's per-record path. Only the registry client reads config (its schema_registry block).
func TestCodecsKnowOnlyTheRowFormat(t *testing.T) {
	g := graph(t)
	for name := range g {
		if !within(name, "codec") {
			continue
		}
		importsOnly(t, name, func(imp string) bool {
			switch {
			case imp == "packed", imp == "bucketer", imp == "codec" && name != "codec":
				return true
			case imp == "config":
				return name == "codec/registry"
			}
			return false
		}, "a codec imports only codec, packed and bucketer (the registry client also config)")
	}
	for name, imports := range g {
		for _, imp := range imports {
			// draft (sink init's drafting) reads the seam's Leaf and Field, never a codec itself.
			if within(imp, "codec") && !within(name, "codec") && !within(name, "mapper") && !within(name, "cmd") &&
				!within(name, "pipeline") && name != "bench" && !(name == "draft" && imp == "codec") {
				t.Errorf("%s imports %s: the codecs serve the mapper (and the pipeline, the commands and the harnesses that wire it)", name, imp)
			}
		}
	}
}

// TestDecodingNeverImportsStorage: the mapper writes rows in the packed format for a schema.Table
// and knows neither the writer nor the pipeline that carries its rows.
func TestDecodingNeverImportsStorage(t *testing.T) {
	importsOnly(t, "mapper", func(imp string) bool { return !within(imp, "cassandra") && !within(imp, "pipeline") },
		"the mapper never imports cassandra or the pipeline")
}

// TestTheSeamImportsOnlyTheRowFormat: package codec, the interface every codec implements and the
// mapper calls, depends on the row format's types and nothing else of the project.
func TestTheSeamImportsOnlyTheRowFormat(t *testing.T) {
	importsOnly(t, "codec", func(imp string) bool { return imp == "packed" }, "codec imports packed only")
}

// TestRowFormatImportsNothingOfTheProject: packed is the shared vocabulary of mapper and cassandra,
// so it may not lean on either, nor on anything else of the module.
func TestRowFormatImportsNothingOfTheProject(t *testing.T) {
	importsOnly(t, "packed", func(string) bool { return false }, "packed imports nothing of the project")
}

// TestTableDescriptionImportsOnlyConfigAndBucketer: the table description is derived from the
// validated configuration alone.
func TestTableDescriptionImportsOnlyConfigAndBucketer(t *testing.T) {
	importsOnly(t, "schema", func(imp string) bool { return imp == "config" || imp == "bucketer" },
		"schema imports config and bucketer only")
}

// TestSplitRoutingRulesSitBelowTheirUsers: the pure rules of hot-entity splits (package routing) are
// read by the mapper, the cassandra package and the reader alike, so they lean on nothing but the
// bucket arithmetic, the configuration and the table description; and the reader learns where a
// split sends a row from them, never from the mapper (it plans reads without a JSON decoder).
func TestSplitRoutingRulesSitBelowTheirUsers(t *testing.T) {
	importsOnly(t, "routing", func(imp string) bool { return imp == "bucketer" || imp == "config" || imp == "schema" },
		"routing imports bucketer, config and schema only")
	importsOnly(t, "reader", func(imp string) bool { return !within(imp, "mapper") },
		"the reader never imports the mapper: the split rules it shares with the writer are in routing")
}

// TestBucketArithmeticIsTheBottomLayer: bucketer imports nothing of the project, and config only
// bucketer (it compiles each topic's policy).
func TestBucketArithmeticIsTheBottomLayer(t *testing.T) {
	importsOnly(t, "bucketer", func(string) bool { return false }, "bucketer imports nothing of the project")
	importsOnly(t, "config", func(imp string) bool { return imp == "bucketer" }, "config imports bucketer only")
}

// TestOnlyCommandsAndHarnessesImportThePipeline: the pipeline is the top layer. Outside its own tree
// only the commands and the harnesses that drive it as a whole (`sink bench`, the reader's oracle)
// import it or its subpackages, and no subpackage imports its parent.
func TestOnlyCommandsAndHarnessesImportThePipeline(t *testing.T) {
	harnesses := []string{"bench", "reader/readertest"}
	g := graph(t)
	names := make([]string, 0, len(g))
	for name := range g {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		for _, imp := range g[name] {
			if !within(imp, "pipeline") {
				continue
			}
			switch {
			case within(name, "pipeline") && imp == "pipeline":
				t.Errorf("%s imports its parent pipeline: a subpackage is a part the pipeline wires, never the other way", name)
			case within(name, "pipeline"), within(name, "cmd"), slices.Contains(harnesses, name):
			default:
				t.Errorf("%s imports %s: only the pipeline itself, cmd and the harnesses %v may", name, imp, harnesses)
			}
		}
	}
}

// TestPipelineRoomsImportDownwards: inside the pipeline's tree every import runs down a fixed order of
// floors, so none runs back up and no two rooms lean on each other. The root wires every room and reaches
// storage (cassandra, routing, schema, packed) only through its rooms: the routing table through
// pipeline/split, the rollups' pending table through pipeline/rollup; a room that needs the partition reaches it through an interface the partition
// implements (writestage.Owner, dlsend.Partition, split.Worker), never by importing the root.
func TestPipelineRoomsImportDownwards(t *testing.T) {
	// The pipeline packages each room may import; a room not listed imports none.
	rooms := map[string][]string{
		"pipeline/budget":     {"pipeline/offsets"},
		"pipeline/deadletter": {"pipeline/consumer"},
		"pipeline/writestage": {"pipeline/consumer", "pipeline/deadletter", "pipeline/metrics", "pipeline/offsets"},
		"pipeline/dlsend":     {"pipeline/deadletter", "pipeline/metrics"},
		"pipeline/split":      {"pipeline/metrics", "pipeline/writestage"},
		"pipeline/rollup":     {"pipeline/metrics"},
	}
	g := graph(t)
	for name := range g {
		if name == "pipeline" || !within(name, "pipeline") {
			continue
		}
		allowed := rooms[name]
		importsOnly(t, name, func(imp string) bool { return !within(imp, "pipeline") || slices.Contains(allowed, imp) },
			"inside pipeline/ a room imports only the rooms below it")
	}
	importsOnly(t, "pipeline", func(imp string) bool {
		return imp != "cassandra" && imp != "routing" && imp != "schema" && imp != "packed"
	}, "the pipeline root reaches storage only through its rooms (pipeline/split, pipeline/rollup)")
}
