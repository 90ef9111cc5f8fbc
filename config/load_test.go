package config

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

func loadValid(t *testing.T, path string, environ []string) *Config {
	t.Helper()
	c, err := Load(path, environ)
	if err != nil {
		t.Fatalf("Load(%s): %v", path, err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate(%s):\n%s", path, strings.Join(Problems(err), "\n"))
	}
	return c
}

func TestLocalExampleDefaults(t *testing.T) {
	c := loadValid(t, "../examples/local.yaml", nil)
	tp := c.Topics["readings"]
	checks := []struct {
		name      string
		got, want any
	}{
		{"topic", tp.Topic, "sensor-readings"},
		{"keyspace inherited", tp.Keyspace, "sink_demo"},
		{"consistency inherited", tp.Consistency, "LOCAL_ONE"},
		{"gc_grace", tp.GCGrace, Duration(24 * time.Hour)},
		{"ttl", tp.TTL, Duration(7 * 24 * time.Hour)},
		{"event buckets", tp.Bucket.EventBuckets, 1},
		{"bucket column", tp.Bucket.Column, "bucket"},
		{"write timestamp", tp.WriteTimestamp, "kafka"},
		{"budget", tp.PartitionBudget, Bytes(100_000_000)},
		{"group", c.Kafka.Group, "sink-demo"},
		{"client id", c.Kafka.ClientID, "sink"},
		{"rebalance", c.Kafka.RebalanceTimeout, Duration(time.Minute)},
		{"batch rows", c.Writer.BatchMaxRows, 400},
		{"batch bytes", c.Writer.BatchMaxBytes, Bytes(64 << 10)},
		{"linger", c.Writer.Linger, Duration(time.Millisecond)},
		{"metrics", c.Metrics.Address, "127.0.0.1:9464"},
	}
	for _, ck := range checks {
		if !reflect.DeepEqual(ck.got, ck.want) {
			t.Errorf("%s = %v, want %v", ck.name, ck.got, ck.want)
		}
	}
}

// An explicit zero in the file keeps its meaning; only absent keys take defaults.
func TestExplicitZeroIsNotDefaulted(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	base, err := os.ReadFile("../examples/local.yaml")
	if err != nil {
		t.Fatal(err)
	}
	extra := "\nwriter: {linger: 0s, top_partitions: 0}\n"
	if err := os.WriteFile(path, append(base, extra...), 0o600); err != nil {
		t.Fatal(err)
	}
	c := loadValid(t, path, []string{"SINK_METRICS__ADDRESS="})
	if c.Writer.Linger != 0 || c.Writer.TopPartitions != 0 || c.Metrics.Address != "" {
		t.Errorf("linger %v top %d address %q: explicit zeros were replaced by defaults", c.Writer.Linger, c.Writer.TopPartitions, c.Metrics.Address)
	}
	if c.Writer.MaxInFlight != DefaultMaxInFlight {
		t.Errorf("max_in_flight = %d, want the default %d", c.Writer.MaxInFlight, DefaultMaxInFlight)
	}
}

func TestEnvOverrides(t *testing.T) {
	env := []string{
		"SINK_KAFKA__BROKERS=a:9092, b:9092",
		"SINK_CASSANDRA__AUTH__USERNAME=sink",
		"SINK_CASSANDRA__AUTH__PASSWORD=hunter2",
		"SINK_TOPICS__READINGS__TTL=30d",
		"SINK_TOPICS__READINGS__BUCKET__WIDTH=1h",
		"SINK_TOPICS__READINGS__BUCKET__EVENT_BUCKETS=4",
		"SINK_TOPICS__READINGS__ID=device_id,site_id",
		"SINK_WRITER__MAX_IN_FLIGHT=32",
		"SINK_CASSANDRA__REPLICATION__CLASS=NetworkTopologyStrategy",
		"SINK_CASSANDRA__REPLICATION__REPLICATION_FACTOR=",
		"SINK_LOG__LEVEL=DEBUG",
		"SINK_TEST_KAFKA=127.0.0.1:9092", // not configuration: no section prefix
		"PATH=/usr/bin",
	}
	c, err := Load("../examples/local.yaml", env)
	if err != nil {
		t.Fatal(err)
	}
	tp := c.Topics["readings"]
	if got := c.Kafka.Brokers; !reflect.DeepEqual(got, []string{"a:9092", "b:9092"}) {
		t.Errorf("brokers = %q", got)
	}
	if c.Cassandra.Auth.Password.Reveal() != "hunter2" || c.Cassandra.Auth.Username != "sink" {
		t.Errorf("auth not overridden")
	}
	if tp.TTL != Duration(30*Day) || tp.Bucket.Width != "1h" || tp.Bucket.EventBuckets != 4 {
		t.Errorf("topic overrides: ttl %v width %q event buckets %d", tp.TTL, tp.Bucket.Width, tp.Bucket.EventBuckets)
	}
	if !reflect.DeepEqual(tp.ID, []string{"device_id", "site_id"}) {
		t.Errorf("id = %q", tp.ID)
	}
	if c.Writer.MaxInFlight != 32 || c.Log.Level != "debug" {
		t.Errorf("max_in_flight %d level %q", c.Writer.MaxInFlight, c.Log.Level)
	}
	if c.Cassandra.Replication["class"] != "NetworkTopologyStrategy" {
		t.Errorf("replication = %v", c.Cassandra.Replication)
	}
}

// A topic whose file key has a dash is reachable with an underscore in the variable name.
func TestEnvReachesDashedTopic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	b, err := os.ReadFile("../examples/local.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), "  readings:\n", "  sensor-readings:\n", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path, []string{"SINK_TOPICS__SENSOR_READINGS__TTL=2w"})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Topics["sensor-readings"].TTL; got != Duration(14*Day) {
		t.Errorf("ttl = %v, want 14d", got)
	}
	if len(c.Topics) != 1 {
		t.Errorf("topics = %v, want only sensor-readings", c.TopicNames())
	}
}

func TestEnvErrorsNameTheVariable(t *testing.T) {
	_, err := Load("../examples/local.yaml", []string{
		"SINK_KAFKA_BROKERS=x:1",
		"SINK_TOPICS__READINGS__BUKCET__WIDTH=1h",
		"SINK_WRITER__LINGER=5",
		"SINK_LOG=debug",
	})
	want := []string{
		`SINK_KAFKA_BROKERS: not a config key: levels are separated by a double underscore, e.g. SINK_KAFKA__BROKERS`,
		`SINK_LOG: not a config key: name a key inside the section, levels separated by a double underscore, e.g. SINK_KAFKA__BROKERS`,
		`topics.readings.bukcet (from SINK_TOPICS__READINGS__BUKCET__WIDTH): unknown key; did you mean "bucket"?`,
		`writer.linger (from SINK_WRITER__LINGER): "5" has a number without a unit; use ns, us, ms, s, m, h, d or w, e.g. 5s`,
	}
	if got := Problems(err); !reflect.DeepEqual(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestPasswordFile(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load("../examples/local.yaml", []string{
		"SINK_CASSANDRA__AUTH__USERNAME=sink",
		"SINK_CASSANDRA__AUTH__PASSWORD=ignored",
		"SINK_CASSANDRA__AUTH__PASSWORD_FILE=" + pw,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Cassandra.Auth.Password.Reveal(); got != "s3cret" {
		t.Errorf("password = %q, want the file's content without its newline", got)
	}

	_, err = Load("../examples/local.yaml", []string{"SINK_KAFKA__SASL__PASSWORD_FILE=" + filepath.Join(dir, "missing")})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Path != "kafka.sasl.password_file" || !strings.Contains(fe.Problem, "no such file") {
		t.Errorf("missing password file: %v, want a kafka.sasl.password_file error", err)
	}
}

// A sliced topic that does not say how a missing slice is handled creates it (the slice's table is the
// one `sink schema --apply` would create); an unsliced topic gets no value, which validate requires.
func TestMissingSliceDefaultsToCreateForSlicedTopicsOnly(t *testing.T) {
	c := loadValid(t, "../examples/metrics-slices.yaml", nil)
	for name, tp := range c.Topics {
		if got := tp.Bucket.MissingSlice; got != MissingSliceCreate {
			t.Errorf("topics.%s.bucket.missing_slice = %q, want %q", name, got, MissingSliceCreate)
		}
	}
	c = loadValid(t, "../examples/local.yaml", nil)
	if got := c.Topics["readings"].Bucket.MissingSlice; got != "" {
		t.Errorf("unsliced topic: bucket.missing_slice = %q, want none", got)
	}
}

func TestSchemaRegistryPasswordFromFileOrEnvironment(t *testing.T) {
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("r3gistry\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := loadValid(t, "../examples/avro-sensors.yaml", []string{
		"SINK_SCHEMA_REGISTRY__AUTH__USERNAME=sink", "SINK_SCHEMA_REGISTRY__AUTH__PASSWORD_FILE=" + pw,
	})
	if got := c.SchemaRegistry.Auth.Password.Reveal(); got != "r3gistry" {
		t.Errorf("password_file: password = %q, want the file's content without its newline", got)
	}
	c = loadValid(t, "../examples/avro-sensors.yaml", []string{
		"SINK_SCHEMA_REGISTRY__AUTH__USERNAME=sink", "SINK_SCHEMA_REGISTRY__AUTH__PASSWORD=from-env",
	})
	if got := c.SchemaRegistry.Auth.Password.Reveal(); got != "from-env" {
		t.Errorf("environment: password = %q, want from-env", got)
	}
	if c.SchemaRegistry.Timeout != DefaultRegistryTimeout {
		t.Errorf("timeout %v, want the default %v", c.SchemaRegistry.Timeout, DefaultRegistryTimeout)
	}
}

// TestLoadReadsAPipeOnce guards against a config read from a pipe (`--config /dev/stdin`,
// `--config <(envsubst < tmpl)`) being read twice, the second time empty: it loaded as a config
// with no brokers, no hosts and no topics.
func TestLoadReadsAPipeOnce(t *testing.T) {
	b, err := os.ReadFile("../examples/local.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// What a shell's <(...) hands over: /dev/fd/N of a pipe, whose writer closes when done.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fifo := fmt.Sprintf("/proc/self/fd/%d", r.Fd())
	wrote := make(chan error, 1)
	go func() {
		_, err := w.Write(b)
		w.Close()
		wrote <- err
	}()
	c := loadValid(t, fifo, nil)
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if got := c.TopicNames(); len(got) != 1 || got[0] != "readings" || c.Kafka.Group != "sink-demo" {
		t.Errorf("topics %v, group %q: the pipe's config was not the one loaded", got, c.Kafka.Group)
	}
}

// TestLoadRefusesAnOversizedFile guards against a huge file (a log given by mistake, or a generated
// config gone wrong) being parsed for minutes: past MaxFileBytes it is refused before parsing.
func TestLoadRefusesAnOversizedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.yaml")
	line := "# " + strings.Repeat("x", 1021) + "\n"
	if err := os.WriteFile(path, []byte(strings.Repeat(line, 5<<10)), 0o600); err != nil { // 5 MiB of comments
		t.Fatal(err)
	}
	start := time.Now()
	_, err := Load(path, nil)
	if err == nil || !strings.Contains(err.Error(), "larger than 4MiB") {
		t.Fatalf("a 5 MiB file: %v; want it refused as larger than 4MiB", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("refusing it took %s", d)
	}
}

// TestLoadManyKeysInOneMappingIsLinear guards against the YAML parser's decoding into maps, which
// compares each key of a mapping with every key before it: 40,000 keys took 17 s. 60,000 data
// centres in cassandra.replication (1 MiB, under the size cap) now load in well under a second of CPU.
func TestLoadManyKeysInOneMappingIsLinear(t *testing.T) {
	b, err := os.ReadFile("../examples/local.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	sb.WriteString("\n    class: NetworkTopologyStrategy\n")
	for i := range 60_000 {
		fmt.Fprintf(&sb, "    dc%d: 3\n", i)
	}
	text := strings.Replace(string(b), ` {class: SimpleStrategy, replication_factor: "1"}`, sb.String(), 1)
	path := filepath.Join(t.TempDir(), "wide.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	// CPU time, not wall time: the machine may be busy with other work. The quadratic decoding took
	// about 100 s of it here; the linear walk half a second, ten times that under the race detector.
	before := cpuTime(t)
	c := loadValid(t, path, nil)
	if d := cpuTime(t) - before; d > 20*time.Second {
		t.Errorf("loading 60,000 keys of one mapping took %s of CPU", d)
	}
	if len(c.Cassandra.Replication) != 60_001 {
		t.Errorf("%d replication keys, want 60001", len(c.Cassandra.Replication))
	}
}

// TestLoadIsInterruptible guards against a load deaf to Ctrl-C: one waiting on a pipe nobody writes
// returns when its context ends, and so does one whose context has ended before the parse.
func TestLoadIsInterruptible(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "config.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// A writer that opens the pipe and then writes nothing until the test ends.
	opened := make(chan *os.File, 1)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			opened <- nil
			return
		}
		opened <- f
	}()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := LoadContext(ctx, fifo, nil)
		errc <- err
	}()
	w := <-opened
	if w == nil {
		t.Fatal("opening the pipe for writing failed")
	}
	defer w.Close()
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("interrupted load: %v; want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the load did not return after its context was cancelled")
	}

	done, cancelAll := context.WithCancel(context.Background())
	cancelAll()
	if _, err := LoadContext(done, "../examples/local.yaml", nil); !errors.Is(err, context.Canceled) {
		t.Errorf("load with an ended context: %v; want context.Canceled", err)
	}
}

// TestCheckNamesTheVariableOfEveryProblem: problems of keys set from the environment, found while
// loading and while validating, come in one run, each naming its variable.
func TestCheckNamesTheVariableOfEveryProblem(t *testing.T) {
	_, err := Check(context.Background(), "../examples/local.yaml", []string{
		"SINK_WRITER__MAX_IN_FLIGHT=many",
		"SINK_KAFKA__START_OFFSET=newest",
		"SINK_TOPICS__READINGS__TTL=1500ms",
		"SINK_KAFKA__BROKERS=a:9092,nope",
	})
	got := strings.Join(Problems(err), "\n")
	for _, want := range []string{
		"writer.max_in_flight (from SINK_WRITER__MAX_IN_FLIGHT): expected an integer",
		"kafka.start_offset (from SINK_KAFKA__START_OFFSET): \"newest\" is not valid",
		"topics.readings.ttl (from SINK_TOPICS__READINGS__TTL): 1s500ms is not whole seconds",
		"kafka.brokers[1] (from SINK_KAFKA__BROKERS): \"nope\" is not host:port",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	if n := len(Problems(err)); n != 4 {
		t.Errorf("%d problems, want 4:\n%s", n, got)
	}
}

// TestSettingsSayWhereEachValueCameFrom: every key of a loaded config is listed with its value
// after defaults and overrides, and its source: the file, a variable (named), or the default.
func TestSettingsSayWhereEachValueCameFrom(t *testing.T) {
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := loadValid(t, "../examples/local.yaml", []string{
		"SINK_WRITER__LINGER=20ms",
		"SINK_CASSANDRA__AUTH__USERNAME=sink",
		"SINK_CASSANDRA__AUTH__PASSWORD_FILE=" + pw,
		"SINK_SCHEMA_REGISTRY__AUTH__USERNAME=sink",
		"SINK_SCHEMA_REGISTRY__AUTH__PASSWORD=hunter2",
	})
	got := map[string]Setting{}
	for _, s := range c.Settings() {
		got[s.Key] = s
	}
	for _, want := range []Setting{
		{Key: "kafka.group", Value: "sink-demo", Source: FromFile},
		{Key: "kafka.client_id", Value: "sink", Source: FromDefault},
		{Key: "kafka.brokers", Value: "[127.0.0.1:9092]", Source: FromFile},
		{Key: "writer.linger", Value: "20ms", Source: FromEnvironment, Env: "SINK_WRITER__LINGER"},
		{Key: "writer.max_buffered_bytes", Value: "48MiB", Source: FromDefault},
		{Key: "cassandra.auth.password", Value: "[redacted]", Source: FromEnvironment, Env: "SINK_CASSANDRA__AUTH__PASSWORD_FILE"},
		{Key: "schema_registry.auth.password", Value: "[redacted]", Source: FromEnvironment, Env: "SINK_SCHEMA_REGISTRY__AUTH__PASSWORD"},
		{Key: "kafka.sasl.password", Value: "", Source: FromDefault},
		{Key: "cassandra.replication", Value: "{class: SimpleStrategy, replication_factor: 1}", Source: FromFile},
		{Key: "topics.readings.ttl", Value: "7d", Source: FromFile},
		{Key: "topics.readings.keyspace", Value: "sink_demo", Source: FromDefault},
		{Key: "topics.readings.columns[2].field", Value: "site.id", Source: FromFile},
		{Key: "topics.readings.clustering[0].order", Value: "desc", Source: FromFile},
		{Key: "topics.readings.bucket.slice", Value: "", Source: FromDefault},
	} {
		if got[want.Key] != want {
			t.Errorf("%s: %+v, want %+v", want.Key, got[want.Key], want)
		}
	}
	for _, s := range c.Settings() {
		if strings.Contains(s.Value, "s3cret") || strings.Contains(s.Value, "hunter2") {
			t.Errorf("%s shows a secret: %q", s.Key, s.Value)
		}
	}
	// Every key of Keys appears, the topic's under its name.
	for _, k := range Keys() {
		path := strings.Replace(k.Path, TopicPlaceholder, "readings", 1)
		path = strings.Replace(path, "[]", "[0]", 1)
		if strings.Contains(path, ".rollups[0].") {
			continue // the example has no rollups: checked below on one that has
		}
		if strings.Contains(path, ".fields[]") {
			continue // the example has no UDT column: TestUDTColumnSettings has one
		}
		if _, ok := got[path]; !ok {
			t.Errorf("%s is not in Settings", path)
		}
	}
	rc, err := Load("../examples/sensor-rollups.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	rolled := map[string]Setting{}
	for _, s := range rc.Settings() {
		rolled[s.Key] = s
	}
	for _, k := range Keys() {
		if !strings.Contains(k.Path, ".rollups[].") {
			continue
		}
		path := strings.Replace(strings.Replace(k.Path, TopicPlaceholder, "readings", 1), "[]", "[0]", -1)
		if _, ok := rolled[path]; !ok {
			t.Errorf("%s is not in Settings", path)
		}
	}
	if s := rolled["topics.readings.rollups[0].grace"]; s.Value != "2m" || s.Source != FromFile {
		t.Errorf("topics.readings.rollups[0].grace: %+v, want 2m from the file", s)
	}
}

// cpuTime is the CPU time the test process has used so far.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestLoadTakesAnEmptyDocumentAfterTheConfig guards against refusing a file that ends in a "---"
// line (as templating tools and concatenated manifests leave it), or a "---" followed only by
// comments or a null: such a second document holds no key the parser could drop, and the loader
// before the one-document rule took these files. A second document with keys stays refused.
func TestLoadTakesAnEmptyDocumentAfterTheConfig(t *testing.T) {
	b, err := os.ReadFile("../examples/local.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tail := range []string{"\n---\n", "\n---\n# nothing here\n", "\n---\n...\n", "\n---\n~\n", "\n---\n---\n"} {
		path := filepath.Join(t.TempDir(), "sink.yaml")
		if err := os.WriteFile(path, append(append([]byte(nil), b...), tail...), 0o600); err != nil {
			t.Fatal(err)
		}
		if c := loadValid(t, path, nil); c.Kafka.Group != "sink-demo" {
			t.Errorf("ending in %q: group %q, not the file's", tail, c.Kafka.Group)
		}
	}
	path := filepath.Join(t.TempDir(), "sink.yaml")
	if err := os.WriteFile(path, append(append([]byte(nil), b...), "\n---\n---\nkafka: {group: other}\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path, nil); err == nil || !strings.Contains(err.Error(), "a second YAML document") {
		t.Errorf("a document with keys after an empty one: got %v, want it refused", err)
	}
}
