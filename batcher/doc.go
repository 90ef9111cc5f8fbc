// Package batcher groups rows into single-partition batches under row, byte and linger limits.
package batcher
