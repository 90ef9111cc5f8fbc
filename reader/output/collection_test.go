package output

import (
	"net"
	"testing"
)

// An inet inside a collection is one value (net.IP is a slice of bytes), printed as its address,
// as a blob in a collection prints as its hex; neither is a list of numbers.
func TestCollectionOfByteSlicesPrintsEachAsOneValue(t *testing.T) {
	for _, c := range []struct {
		typ  string
		v    any
		want string
	}{
		{"list<inet>", []net.IP{net.IPv4(38, 239, 75, 115).To4(), net.ParseIP("2001:db8::1")}, `["38.239.75.115","2001:db8::1"]`},
		{"set<blob>", [][]byte{{0xca, 0xfe}}, `["0xcafe"]`},
		{"map<text, inet>", map[string]net.IP{"a": net.IPv4(10, 0, 0, 1).To4()}, `{"a":"10.0.0.1"}`},
	} {
		if got := collectionText(c.typ, c.v); got != c.want {
			t.Errorf("%s: got %s, want %s", c.typ, got, c.want)
		}
	}
}
