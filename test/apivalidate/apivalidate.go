// Package apivalidate checks, in tests, that what the server answers is what
// openapi.yaml promises: the route and status are documented, the documented
// headers are there and well formed, and the body matches its schema.
//
// Objects are checked strictly: a field the spec does not list fails the
// check (the spec itself stays open, so that adding a field later does not
// break clients). JSON Lines bodies are checked line by line, and gzip bodies
// are decompressed first.
//
// Use Check (or CheckRecorder) on answers a test already has, wrap a
// client's transport with Transport so that every answer is checked, or get
// a checked generated client from NewClient.
package apivalidate

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	legacyrouter "github.com/getkin/kin-openapi/routers/legacy"

	catalogd "github.com/catalogd/catalogd"
	"github.com/catalogd/catalogd/client"
)

// Validator checks HTTP answers against the embedded API description.
// It is safe for concurrent use.
type Validator struct {
	router routers.Router
}

// New loads and validates the embedded API description (catalogd.OpenAPISpec)
// and returns a Validator for it; it fails t at once if the description is
// invalid.
func New(t testing.TB) *Validator {
	t.Helper()
	v, err := newValidator(catalogd.OpenAPISpec)
	if err != nil {
		t.Fatalf("apivalidate: %v", err)
	}
	return v
}

// NewClient returns a generated API client for the server at base whose
// every answer is checked against the API description.
func NewClient(t testing.TB, base string) *client.ClientWithResponses {
	t.Helper()
	hc := &http.Client{Transport: New(t).Transport(t, http.DefaultTransport), Timeout: 30 * time.Second}
	c, err := client.NewClientWithResponses(base, client.WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newValidator(spec []byte) (*Validator, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(spec)
	if err != nil {
		return nil, fmt.Errorf("load openapi.yaml: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("openapi.yaml is not a valid OpenAPI document: %w", err)
	}
	// Match paths only: tests talk to httptest servers on any address.
	doc.Servers = nil
	closeObjects(doc)
	router, err := legacyrouter.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("route openapi.yaml: %w", err)
	}
	return &Validator{router: router}, nil
}

// Check fails t (with Errorf, so it may be called from any goroutine) when
// the answer with this status, header and body is not what the API
// description documents for req. body is the body as sent: a gzip body
// (Content-Encoding: gzip) is decompressed before it is checked.
func (v *Validator) Check(t testing.TB, req *http.Request, status int, header http.Header, body []byte) {
	t.Helper()
	if err := v.Validate(req, status, header, body); err != nil {
		t.Errorf("apivalidate: %v", err)
	}
}

// CheckRecorder is Check for an answer recorded by httptest.ResponseRecorder.
func (v *Validator) CheckRecorder(t testing.TB, req *http.Request, rec *httptest.ResponseRecorder) {
	t.Helper()
	res := rec.Result()
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Errorf("apivalidate: read recorded body: %v", err)
		return
	}
	v.Check(t, req, res.StatusCode, res.Header, body)
}

// Transport returns a RoundTripper that sends requests with base (or
// http.DefaultTransport when base is nil) and Checks every answer before
// handing it back unchanged, its body buffered. Transport errors are passed
// through unchecked.
func (v *Validator) Transport(t testing.TB, base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{v: v, t: t, base: base}
}

type transport struct {
	v    *Validator
	t    testing.TB
	base http.RoundTripper
}

func (rt *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := rt.base.RoundTrip(req)
	if err != nil {
		return res, err
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("apivalidate: read body of %s %s: %w", req.Method, req.URL, err)
	}
	res.Body = io.NopCloser(bytes.NewReader(body))
	rt.v.Check(rt.t, req, res.StatusCode, res.Header, body)
	return res, nil
}

// Validate is Check returning the mismatch as an error instead of failing a
// test; nil means the answer matches the API description.
func (v *Validator) Validate(req *http.Request, status int, header http.Header, body []byte) error {
	what := fmt.Sprintf("%s %s → %d", req.Method, req.URL.RequestURI(), status)

	// HEAD is answered like GET, without a body.
	routed := req
	if req.Method == http.MethodHead {
		routed = req.Clone(req.Context())
		routed.Method = http.MethodGet
	}
	// A name holding '/' travels escaped (%2F) in its segment; the router
	// matches on the decoded path, where that '/' would split the name, so
	// route on the path as sent.
	if req.URL.RawPath != "" {
		u := *routed.URL
		u.Path, u.RawPath = req.URL.EscapedPath(), ""
		if routed == req {
			routed = req.Clone(req.Context())
		}
		routed.URL = &u
	}
	route, pathParams, err := v.router.FindRoute(routed)
	if err != nil {
		return fmt.Errorf("%s: no operation in openapi.yaml matches %s %s: %v", what, routed.Method, req.URL.Path, err)
	}
	responses := route.Operation.Responses
	if responses.Status(status) == nil && responses.Default() == nil {
		return fmt.Errorf("%s: status %d is not documented for operation %s (documented: %s)",
			what, status, route.Operation.OperationID, strings.Join(documentedStatuses(responses), ", "))
	}
	if status == http.StatusNotModified || req.Method == http.MethodHead {
		// openapi3filter does not check these; a 304 must have no body.
		if status == http.StatusNotModified && len(body) > 0 {
			return fmt.Errorf("%s: a 304 answer has a body of %d bytes", what, len(body))
		}
		return nil
	}

	if enc := header.Get("Content-Encoding"); enc != "" {
		if !strings.EqualFold(enc, "gzip") {
			return fmt.Errorf("%s: Content-Encoding %q: only gzip is documented", what, enc)
		}
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return fmt.Errorf("%s: Content-Encoding gzip, but the body is not gzip: %v", what, err)
		}
		if body, err = io.ReadAll(zr); err != nil {
			return fmt.Errorf("%s: Content-Encoding gzip, but the body is not gzip: %v", what, err)
		}
	}

	input := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request:    req,
			PathParams: pathParams,
			Route:      route,
		},
		Status: status,
		Header: header,
		Options: &openapi3filter.Options{
			IncludeResponseStatus:   true,
			MultiError:              true,
			SchemaValidationOptions: []openapi3.SchemaValidationOption{openapi3.DisableSchemaErrorDetails()},
		},
	}
	input.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), input); err != nil {
		return fmt.Errorf("%s (operation %s): %v\nbody: %s", what, route.Operation.OperationID, err, excerpt(body))
	}

	mediaType, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	switch mediaType {
	case "application/jsonl":
		if status == http.StatusOK {
			if err := checkJSONLines(body); err != nil {
				return fmt.Errorf("%s (operation %s): %v", what, route.Operation.OperationID, err)
			}
		}
	case "application/problem+json":
		var p struct {
			Status int `json:"status"`
		}
		if err := json.Unmarshal(body, &p); err == nil && p.Status != status {
			return fmt.Errorf("%s (operation %s): problem document says status %d", what, route.Operation.OperationID, p.Status)
		}
	}
	return nil
}

// checkJSONLines checks that body is newline-terminated lines each holding
// one JSON object with a string "schema", as catalogd's /api/v1 serves FBC.
func checkJSONLines(body []byte) error {
	if len(body) > 0 && body[len(body)-1] != '\n' {
		return errors.New("JSON Lines body does not end with a newline")
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		var blob map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &blob); err != nil {
			return fmt.Errorf("JSON Lines line %d is not a JSON object: %v: %s", n, err, excerpt(sc.Bytes()))
		}
		var schema string
		if err := json.Unmarshal(blob["schema"], &schema); err != nil || schema == "" {
			return fmt.Errorf("JSON Lines line %d has no string \"schema\": %s", n, excerpt(sc.Bytes()))
		}
	}
	return sc.Err()
}

// closeObjects makes every object schema that lists properties, and says
// nothing of additional ones, reject properties it does not list, so a
// misspelt or undocumented field fails the check. Members of an allOf are
// left open, since each lists only part of the whole object's properties.
func closeObjects(doc *openapi3.T) {
	seen := map[*openapi3.Schema]bool{}
	partial := map[*openapi3.Schema]bool{}
	var walk func(ref *openapi3.SchemaRef)
	walk = func(ref *openapi3.SchemaRef) {
		if ref == nil || ref.Value == nil || seen[ref.Value] {
			return
		}
		s := ref.Value
		seen[s] = true
		for _, m := range s.AllOf {
			if m != nil && m.Value != nil {
				partial[m.Value] = true
			}
		}
		for _, p := range s.Properties {
			walk(p)
		}
		walk(s.Items)
		walk(s.AdditionalProperties.Schema)
		walk(s.Not)
		for _, list := range []openapi3.SchemaRefs{s.AllOf, s.AnyOf, s.OneOf} {
			for _, m := range list {
				walk(m)
			}
		}
	}
	if doc.Components != nil {
		for _, s := range doc.Components.Schemas {
			walk(s)
		}
		for _, r := range doc.Components.Responses {
			if r.Value != nil {
				for _, mt := range r.Value.Content {
					walk(mt.Schema)
				}
			}
		}
	}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			for _, r := range op.Responses.Map() {
				if r.Value != nil {
					for _, mt := range r.Value.Content {
						walk(mt.Schema)
					}
				}
			}
		}
	}
	closed := false
	for s := range seen {
		ap := &s.AdditionalProperties
		if len(s.Properties) > 0 && !partial[s] && ap.Has == nil && ap.Schema == nil {
			ap.Has = &closed
		}
	}
}

func documentedStatuses(responses *openapi3.Responses) []string {
	var out []string
	for code := range responses.Map() {
		out = append(out, code)
	}
	slices.SortFunc(out, func(a, b string) int {
		ai, aerr := strconv.Atoi(a)
		bi, berr := strconv.Atoi(b)
		if aerr == nil && berr == nil {
			return ai - bi
		}
		return strings.Compare(a, b)
	})
	return out
}

func excerpt(b []byte) string {
	const max = 2048
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}
