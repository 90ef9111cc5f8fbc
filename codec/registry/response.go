package registry

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/twmb/franz-go/pkg/sr"
)

// responseError is an answer of the registry that is not a schema, said with the request that got it:
// pkg/sr's own text is only the body's message, and for an empty body (a proxy's bare 404, say) just
// "no response", which names neither the registry nor the status.
type responseError struct{ re *sr.ResponseError }

// maxBodyShown bounds the bytes of a body without a registry message that an error quotes.
const maxBodyShown = 200

func (e responseError) Error() string {
	what := e.re.Message
	switch {
	case len(e.re.Raw) == 0:
		what = "an empty body"
	case what == "" || what == "no response":
		what = string(e.re.Raw[:min(len(e.re.Raw), maxBodyShown)])
	}
	return fmt.Sprintf("%s %s answered %d %s: %s", e.re.Method, redactURL(e.re.URL), e.re.StatusCode, http.StatusText(e.re.StatusCode), what)
}

func (e responseError) Unwrap() error { return e.re }

// redactURL is u without the password of its user information, if any.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	return p.Redacted()
}
