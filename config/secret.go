package config

import (
	"fmt"
	"log/slog"
)

// redacted is what every printing path shows instead of a secret.
const redacted = "[redacted]"

// Reveal returns the secret itself, for handing to a driver. It is the only way to read it.
func (s Secret) Reveal() string { return string(s) }

// IsSet reports whether a secret was configured, without revealing it.
func (s Secret) IsSet() bool { return s != "" }

// String implements fmt.Stringer; %v, %s and %+v of a struct holding a Secret all land here.
func (s Secret) String() string { return redacted }

// GoString implements fmt.GoStringer, for %#v.
func (s Secret) GoString() string { return `config.Secret("` + redacted + `")` }

// Format covers every other verb (%d, %x, %q ...) so none of them prints the bytes.
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		fmt.Fprint(f, s.GoString())
		return
	}
	fmt.Fprint(f, redacted)
}

// LogValue implements slog.LogValuer.
func (s Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

// MarshalText implements encoding.TextMarshaler (also used by YAML and JSON encoders).
func (s Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// MarshalJSON implements json.Marshaler.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *Secret) UnmarshalText(text []byte) error {
	*s = Secret(text)
	return nil
}
