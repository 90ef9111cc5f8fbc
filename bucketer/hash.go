package bucketer

// The event-bucket hash is FNV-1a, 64 bits, over the canonical text of the values the mapper
// hashes (the clustering values, or the event_bucket_field column: see the package doc), joined
// by 0x00. It is part of the on-disk contract: changing it would move every row of every split
// entity to another partition.
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// EventBucket returns the event bucket among n of one hashed value (its canonical text): the
// FNV-1a 64-bit hash of the bytes, as an unsigned integer, modulo n. n <= 1 means no event
// buckets and gives 0.
func EventBucket(id []byte, n int) int {
	if n <= 1 {
		return 0
	}
	h := NewIDHash()
	h.write(id)
	return int(h.sum % uint64(n))
}

// EventBucketString is EventBucket for a value held as a string; it does not allocate.
func EventBucketString(id string, n int) int {
	if n <= 1 {
		return 0
	}
	h := NewIDHash()
	h.writeString(id)
	return int(h.sum % uint64(n))
}

// IDHash hashes several values (the canonical texts of a row's clustering values) part by part
// without building the joined bytes: the hash of parts a, b, c equals EventBucket over
// a + 0x00 + b + 0x00 + c. The zero value is not ready;
// start from NewIDHash.
type IDHash struct {
	sum   uint64
	parts int
}

// NewIDHash returns the hash of no bytes.
func NewIDHash() IDHash { return IDHash{sum: fnvOffset64} }

// Part adds one value; every part after the first is preceded by a 0x00 byte.
func (h *IDHash) Part(b []byte) {
	if h.parts > 0 {
		h.writeByte(0)
	}
	h.parts++
	h.write(b)
}

// PartString is Part for a string.
func (h *IDHash) PartString(s string) {
	if h.parts > 0 {
		h.writeByte(0)
	}
	h.parts++
	h.writeString(s)
}

// Sum64 is the FNV-1a 64-bit hash of the bytes added so far.
func (h IDHash) Sum64() uint64 { return h.sum }

// Bucket is the event bucket among n of the bytes added so far (0 when n <= 1).
func (h IDHash) Bucket(n int) int {
	if n <= 1 {
		return 0
	}
	return int(h.sum % uint64(n))
}

func (h *IDHash) writeByte(c byte) {
	h.sum ^= uint64(c)
	h.sum *= fnvPrime64
}

func (h *IDHash) write(b []byte) {
	s := h.sum
	for _, c := range b {
		s ^= uint64(c)
		s *= fnvPrime64
	}
	h.sum = s
}

func (h *IDHash) writeString(str string) {
	s := h.sum
	for i := 0; i < len(str); i++ {
		s ^= uint64(str[i])
		s *= fnvPrime64
	}
	h.sum = s
}
