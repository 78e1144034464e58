package fbc

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"
)

// TestDecodeErrorsInAuthorsWords: a blob of the wrong shape is refused with
// what is wrong in JSON and YAML terms, at the blob's position, and never
// with the Go types of the decoders.
func TestDecodeErrorsInAuthorsWords(t *testing.T) {
	tests := []struct {
		name, file, data, want string
	}{
		{"field of the wrong kind", "a.json", `{"schema":"olm.package","name":"a","defaultChannel":["x"]}`,
			`a.json:1:1: invalid catalog: parse olm.package "a": field "defaultChannel" is a list, want a string`},
		{"properties as an object", "b.json", "\n" + `{"schema":"olm.bundle","name":"b","package":"a","properties":{"x":1}}`,
			`b.json:2:1: invalid catalog: parse olm.bundle "b": field "properties" is an object, want a list`},
		{"YAML entries as a number", "c.yaml", "schema: olm.channel\nname: c\npackage: a\nentries: 5\n",
			`c.yaml:1:1: invalid catalog: parse olm.channel "c": field "entries" is a number, want a list`},
		{"a blob that is a string", "d.json", "just some text\n",
			"d.json:1:1: invalid catalog: a blob must be an object of fields (a JSON object or a YAML mapping), not a string"},
		{"a blob that is a list", "e.json", "[1, 2]\n",
			"e.json:1:1: invalid catalog: a blob must be an object of fields (a JSON object or a YAML mapping), not a list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{tt.file: {Data: []byte(tt.data)}}
			err := Walk(context.Background(), fsys, Limits{}, func(context.Context, Blob) error { return nil })
			if !errors.Is(err, ErrInvalidCatalog) {
				t.Fatalf("error %v is not ErrInvalidCatalog", err)
			}
			if !strings.HasSuffix(err.Error(), tt.want) {
				t.Errorf("error\n%s\ndoes not end in\n%s", err, tt.want)
			}
			for _, goWord := range []string{"Go value", "Go struct", "interface {}", "map[string]", "<=="} {
				if strings.Contains(err.Error(), goWord) {
					t.Errorf("error %q says %q", err, goWord)
				}
			}
		})
	}
}
