package codec

// ParseUUID parses the 36-character 8-4-4-4-12 form of a UUID, either case.
func ParseUUID(b []byte) ([16]byte, bool) {
	var u [16]byte
	if len(b) != 36 || b[8] != '-' || b[13] != '-' || b[18] != '-' || b[23] != '-' {
		return u, false
	}
	j := 0
	for i := 0; i < 36; {
		// Only the four hyphens checked above are skipped: one anywhere else (…-0000-0000000) is
		// not a hex digit, and skipping it would read the 37th byte.
		if i == 8 || i == 13 || i == 18 || i == 23 {
			i++
			continue
		}
		hi, ok1 := unhex(b[i])
		lo, ok2 := unhex(b[i+1])
		if !ok1 || !ok2 {
			return u, false
		}
		u[j] = hi<<4 | lo
		j++
		i += 2
	}
	return u, true
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
