package consumer

import (
	"encoding/binary"

	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kgo"
)

// lz4 batches are decoded here, straight into the consumer's pooled buffers.
//
// franz-go streams an lz4 frame through pierrec/lz4's Reader, which takes a buffer of the frame's
// declared block size from its own pools for every frame, and another for the compressed block: a
// frame written by franz-go declares 4 MiB blocks, so a 16 KiB batch took 8 MiB to decompress, and at a
// steady rate those pools held about 12 MB, more than half of the sink's live heap (docs/PERFORMANCE.md,
// "Memory"). With the collector's goal held fixed while the buffer is nearly empty (internal/memlimit),
// every MiB of them was a MiB less room for garbage, and more collections. A frame's blocks are
// decoded here one after the other into the batch's pooled buffer (fetchPools), which holds only what
// the batch decompresses to.
//
// Only the common frame is read: independent blocks, no dictionary. Anything else (dependent blocks, a
// dictionary, a legacy or skippable frame, a corrupt frame) goes to franz-go's own decompressor, which
// reads or refuses it as before; so does every other codec. The frame's checksums are not verified:
// franz-go has checked the batch's CRC-32C, which covers the compressed bytes.
type decompressor struct {
	pools *fetchPools
	other kgo.Decompressor
}

func newDecompressor(pools *fetchPools) *decompressor {
	return &decompressor{pools: pools, other: kgo.DefaultDecompressor(pools)}
}

// maxDecompressed is franz-go's default bound on what a batch may decompress to
// (kgo.MaxDecompressBatchBytes); a larger lz4 batch goes to franz-go's decompressor, which refuses it.
const maxDecompressed = 1 << 30

// Decompress implements kgo.Decompressor.
func (d *decompressor) Decompress(src []byte, codec kgo.CompressionCodecType) ([]byte, error) {
	if codec != kgo.CodecLz4 {
		return d.other.Decompress(src, codec)
	}
	out, ok := d.lz4Frames(d.pools.GetDecompressBytes(src, codec)[:0], src)
	if ok {
		return out, nil
	}
	d.recycle(out)
	return d.other.Decompress(src, codec)
}

// recycle gives b back to the pool, cleared as franz-go gives back the buffers it is done with.
func (d *decompressor) recycle(b []byte) {
	clear(b[:cap(b)])
	d.pools.PutDecompressBytes(b[:0])
}

const lz4Magic = 0x184D2204

// lz4Frames appends the decoded lz4 frames of src to dst; false when src holds anything but complete
// frames of independent blocks without a dictionary, or decodes past maxDecompressed (dst is then the
// buffer to recycle).
func (d *decompressor) lz4Frames(dst, src []byte) ([]byte, bool) {
	for len(src) > 0 {
		// Magic, FLG, BD, [content size], header checksum.
		if len(src) < 7 || binary.LittleEndian.Uint32(src) != lz4Magic {
			return dst, false
		}
		flg, bd := src[4], src[5]
		sizeIndex := int(bd>>4) & 7
		if flg>>6 != 1 || flg&0x20 == 0 || flg&0x03 != 0 || bd&0x8F != 0 || sizeIndex < 4 {
			return dst, false // version, dependent blocks, reserved bit or dictionary; BD's reserved bits
		}
		blockMax := 1 << (8 + 2*sizeIndex) // 4: 64 KiB … 7: 4 MiB
		head := 7
		if flg&0x08 != 0 {
			head += 8
		}
		if len(src) < head {
			return dst, false
		}
		src = src[head:]
		for {
			if len(src) < 4 {
				return dst, false
			}
			n := binary.LittleEndian.Uint32(src)
			src = src[4:]
			if n == 0 {
				break // EndMark
			}
			raw := n&(1<<31) != 0
			n &^= 1 << 31
			if int(n) > blockMax || len(src) < int(n) {
				return dst, false
			}
			block := src[:n]
			src = src[n:]
			if flg&0x10 != 0 { // block checksum
				if len(src) < 4 {
					return dst, false
				}
				src = src[4:]
			}
			if raw {
				if len(dst)+len(block) > maxDecompressed {
					return dst, false
				}
				if cap(dst)-len(dst) < len(block) {
					dst = d.grow(dst, len(block))
				}
				dst = append(dst, block...)
				continue
			}
			for {
				room := dst[len(dst):cap(dst)]
				if k, err := lz4.UncompressBlock(block, room); err == nil {
					dst = dst[:len(dst)+k]
					break
				}
				// Too little room, or a corrupt block: with a whole block's room it can only be the latter.
				if len(room) >= blockMax || cap(dst) >= maxDecompressed {
					return dst, false
				}
				dst = d.grow(dst, min(blockMax, 4*len(block)+64))
			}
		}
		if flg&0x04 != 0 { // content checksum
			if len(src) < 4 {
				return dst, false
			}
			src = src[4:]
		}
	}
	return dst, true
}

// grow returns dst with room for at least n more bytes: a pooled buffer of the next power of two that
// fits, at least twice dst's capacity; dst itself goes back to the pool.
func (d *decompressor) grow(dst []byte, n int) []byte {
	want := max(len(dst)+n, 2*cap(dst))
	k := poolClass(want)
	var next []byte
	if k < poolClasses {
		if v, ok := d.pools.bytes[k].Get().(*[]byte); ok {
			next = (*v)[:0] // a class-k buffer holds at least 1<<k bytes
		}
	}
	if next == nil {
		next = make([]byte, 0, 1<<k)
	}
	next = append(next, dst...)
	d.recycle(dst)
	return next
}
