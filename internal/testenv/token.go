package testenv

// The token arithmetic below is what the driver and Cassandra compute for a partition: tests use it to check that
// a row's key is its routing key, and to build keys for batches written by hand. The sink itself never computes
// a token (the driver routes by the key).

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// AppendRoutingKey appends the routing key of a partition to dst: the bytes the driver and
// Cassandra hash to the partition's token. components are the serialized partition-key values in
// key order. One component is its own routing key; several are each written as a 2-byte big-endian
// length, the bytes, then a 0x00 byte (Cassandra's CompositeType encoding). A component longer than
// 65535 bytes cannot be encoded; Cassandra refuses such a key anyway.
func AppendRoutingKey(dst []byte, components ...[]byte) []byte {
	if len(components) == 1 {
		return append(dst, components[0]...)
	}
	for _, c := range components {
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(c)))
		dst = append(dst, c...)
		dst = append(dst, 0)
	}
	return dst
}

// Token returns the Murmur3Partitioner token of a routing key: the first 64 bits (h1) of
// MurmurHash3 x64 128 with seed 0, computed the way Cassandra's Java code does, which sign-extends
// the tail bytes (so standard Go murmur3 packages disagree for keys with a byte >= 0x80 in their
// last len%16 bytes), and with math.MinInt64 mapped to math.MaxInt64 as the partitioner does.
// It equals CQL token(pk...) and orders partitions around the ring.
func Token(key []byte) int64 {
	const (
		c1 = 0x87c37b91114253d5
		c2 = 0x4cf5ad432745937f
	)
	var h1, h2 uint64
	n := len(key)
	for len(key) >= 16 {
		k1 := binary.LittleEndian.Uint64(key)
		k2 := binary.LittleEndian.Uint64(key[8:])
		key = key[16:]

		k1 *= c1
		k1 = bits.RotateLeft64(k1, 31)
		k1 *= c2
		h1 ^= k1
		h1 = bits.RotateLeft64(h1, 27)
		h1 += h2
		h1 = h1*5 + 0x52dce729

		k2 *= c2
		k2 = bits.RotateLeft64(k2, 33)
		k2 *= c1
		h2 ^= k2
		h2 = bits.RotateLeft64(h2, 31)
		h2 += h1
		h2 = h2*5 + 0x38495ab5
	}

	// The Java tail reads each byte as a signed long: 0x80..0xff become negative and set every
	// higher bit. sx reproduces that.
	sx := func(b byte) uint64 { return uint64(int64(int8(b))) }
	var k1, k2 uint64
	switch len(key) {
	case 15:
		k2 ^= sx(key[14]) << 48
		fallthrough
	case 14:
		k2 ^= sx(key[13]) << 40
		fallthrough
	case 13:
		k2 ^= sx(key[12]) << 32
		fallthrough
	case 12:
		k2 ^= sx(key[11]) << 24
		fallthrough
	case 11:
		k2 ^= sx(key[10]) << 16
		fallthrough
	case 10:
		k2 ^= sx(key[9]) << 8
		fallthrough
	case 9:
		k2 ^= sx(key[8])
		k2 *= c2
		k2 = bits.RotateLeft64(k2, 33)
		k2 *= c1
		h2 ^= k2
		fallthrough
	case 8:
		k1 ^= sx(key[7]) << 56
		fallthrough
	case 7:
		k1 ^= sx(key[6]) << 48
		fallthrough
	case 6:
		k1 ^= sx(key[5]) << 40
		fallthrough
	case 5:
		k1 ^= sx(key[4]) << 32
		fallthrough
	case 4:
		k1 ^= sx(key[3]) << 24
		fallthrough
	case 3:
		k1 ^= sx(key[2]) << 16
		fallthrough
	case 2:
		k1 ^= sx(key[1]) << 8
		fallthrough
	case 1:
		k1 ^= sx(key[0])
		k1 *= c1
		k1 = bits.RotateLeft64(k1, 31)
		k1 *= c2
		h1 ^= k1
	}

	h1 ^= uint64(n)
	h2 ^= uint64(n)
	h1 += h2
	h2 += h1
	h1 = fmix64(h1)
	h2 = fmix64(h2)
	h1 += h2

	t := int64(h1)
	if t == math.MinInt64 {
		return math.MaxInt64
	}
	return t
}

func fmix64(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}
