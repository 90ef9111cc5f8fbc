package routing

import "testing"

// TestKeyParts: the entity is the id components of the routing key, the event bucket its last
// component.
func TestKeyParts(t *testing.T) {
	key := "\x00\x03hot\x00" + "\x00\x0d2024-03-01-00\x00" + "\x00\x04\x00\x00\x00\x11\x00"
	entity, eb, ok := KeyParts(key, 1)
	if !ok || entity != "\x00\x03hot\x00" || eb != 17 {
		t.Errorf("KeyParts = %q, %d, %v; want the hot entity, 17", entity, eb, ok)
	}
}
