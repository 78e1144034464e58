package unpack

import (
	"regexp"
)

// urlInText matches a URL in an error message: scheme, optional userinfo,
// then the rest up to a query or fragment, and the query itself.
// Punctuation that ends a sentence or a quoted URL is left out of the query.
var urlInText = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://)([^/?#\s"'<>@]*@)?([^?#\s"'<>]*)(\?[^#\s"'<>]*[^#\s"'<>:;,.)])?`)

// redactError returns err with a message from which URL query strings and
// userinfo are removed, keeping errors.Is and errors.As working through it.
//
// Unpack errors end up in status conditions and API responses. Registries
// redirect blob downloads to storage URLs whose query carries a signed,
// still-valid token (X-Amz-Signature and the like); go-containerregistry
// redacts query values in its own registry errors, but a failed request is
// reported by net/http as a *url.Error with the full URL, and a storage
// server's error body can echo it. Rather than find every place, the text of
// the final error is scrubbed.
func redactError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := urlInText.ReplaceAllStringFunc(msg, func(u string) string {
		m := urlInText.FindStringSubmatch(u)
		out := m[1] + m[3]
		if m[2] != "" {
			out = m[1] + "REDACTED@" + m[3]
		}
		if m[4] != "" {
			out += "?REDACTED"
		}
		return out
	})
	if clean == msg {
		return err
	}
	return &redactedError{err: err, msg: clean}
}

type redactedError struct {
	err error
	msg string
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
