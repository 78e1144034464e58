package catalogcli

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/catalogd/catalogd/client"
)

// apiError is an answer other than 200, made one line a person can act on.
type apiError struct {
	status int
	// param is the problem's parameter: which name was not found.
	param string
	msg   string
}

func (e *apiError) Error() string { return e.msg }

// notFound reports whether err is a 404 about param.
func notFound(err error, param string) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.status == http.StatusNotFound && ae.param == param
}

// asFlag names the flag behind a query parameter the server refused, where
// the two are named differently (the API's version is --range, its q is
// --search), so that the message points at what the user typed.
func asFlag(err error, param, flag, value string) error {
	var ae *apiError
	if errors.As(err, &ae) && ae.status == http.StatusBadRequest && ae.param == param {
		return fmt.Errorf("%s %q: %w", flag, value, err)
	}
	return err
}

// listHints say, for the parameter a 404 names, how to list what exists.
var listHints = map[string]string{
	"catalog": "list the catalogs with `kubectl catalog catalogs`",
	"package": "list the packages with `kubectl catalog packages`",
	"channel": "list the channels with `kubectl catalog channels PACKAGE`",
	"bundle":  "list the versions with `kubectl catalog versions PACKAGE`",
	"from":    "list the versions with `kubectl catalog versions PACKAGE`",
}

// unreachable is a request that got no answer at all.
func (c *conn) unreachable(err error) error {
	// The URL is in the message already; keep the line short.
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("cannot reach catalogd at %s: %w; %s", c.where, err, c.hint)
}

// failed turns a non-200 answer into an error. catalogd answers problem
// documents (RFC 9457) whose detail already says what was wrong; anything
// else came from on the way (the Kubernetes API server's proxy, an
// Ingress) and is reported with where it was sent.
func (c *conn) failed(rsp *http.Response, body []byte) error {
	if strings.HasPrefix(rsp.Header.Get("Content-Type"), "application/problem+json") {
		var p client.Problem
		if json.Unmarshal(body, &p) == nil && p.Detail != "" {
			msg := p.Detail
			if len(p.Candidates) > 0 {
				msg += " (candidates: " + strings.Join(p.Candidates, ", ") + ")"
			}
			if hint, ok := listHints[p.Parameter]; ok && rsp.StatusCode == http.StatusNotFound {
				msg += "; " + hint
			}
			return &apiError{status: rsp.StatusCode, param: p.Parameter, msg: msg}
		}
	}
	// A Kubernetes Status (from the service proxy) says why in "message".
	var status struct {
		Message string `json:"message"`
	}
	detail := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &status) == nil && status.Message != "" {
		detail = status.Message
	}
	if len(detail) > 200 {
		detail = detail[:200] + "..."
	}
	msg := fmt.Sprintf("%s answered %s: %s", c.where, rsp.Status, detail)
	switch rsp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		msg += "; reading catalogs through the cluster needs get on services/proxy for the catalogd Service (config/viewer)"
	case http.StatusNotFound, http.StatusServiceUnavailable, http.StatusBadGateway:
		if c.hint != "" {
			msg += "; " + c.hint
		}
	}
	return &apiError{status: rsp.StatusCode, msg: msg}
}
