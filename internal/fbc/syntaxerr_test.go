package fbc

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"
)

// TestSyntaxErrorPosition: a syntax error in a JSON file is told as a JSON
// error at the offending byte, with the package it stands in when the file
// or its directory named one, even where the file is read on as YAML
// (operator-registry reads a JSON stream whose second value does not parse
// on as YAML, whose error would name the wrong line and format).
func TestSyntaxErrorPosition(t *testing.T) {
	const pkg = "{\n  \"schema\": \"olm.package\",\n  \"name\": \"p\"\n}\n"
	tests := []struct {
		name  string
		files map[string]string
		// file is the failing file; bad is the text whose first byte is
		// the fault.
		file, bad string
		wantPkg   string
		want      string // in the message
	}{
		{"stray token in the second value", map[string]string{
			"p/catalog.json": pkg + "{\n  \"schema\": \"olm.channel\", oops\n  \"name\": \"c\"\n}\n",
		}, "p/catalog.json", "oops", "p", "JSON: invalid character 'o'"},
		{"stray token in the third value", map[string]string{
			"p/catalog.json": pkg + "{\"schema\":\"olm.channel\",\"package\":\"q\",\"name\":\"c\"}\n{\n  \"schema\": \"olm.channel\" oops\n}\n",
		}, "p/catalog.json", "oops", "q", "JSON: invalid character 'o'"},
		{"stray token in the first value, the package in the directory", map[string]string{
			"p/a.json": pkg,
			"p/b.json": "{\n  \"schema\": \"olm.channel\",\n  ]\n}\n",
		}, "p/b.json", "]", "p", "JSON: invalid character ']'"},
		{"no package known", map[string]string{
			"p/b.json": "{\n  \"schema\": \"olm.channel\",\n  ]\n}\n",
		}, "p/b.json", "]", "", "JSON: invalid character ']'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for name, data := range tt.files {
				fsys[name] = &fstest.MapFile{Data: []byte(data)}
			}
			err := Walk(context.Background(), fsys, Limits{}, func(context.Context, Blob) error { return nil })
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not an *Error", err)
			}
			data := []byte(tt.files[tt.file])
			at := bytes.Index(data, []byte(tt.bad))
			want := Position{Path: tt.file, Line: 1, Column: 1}.advance(data[:at])
			if pe.Pos != want {
				t.Errorf("position %s, want %s (the fault's byte %d)", pe.Pos, want, at)
			}
			if pe.Package != tt.wantPkg {
				t.Errorf("package %q, want %q", pe.Package, tt.wantPkg)
			}
			if !strings.Contains(pe.Err.Error(), tt.want) || strings.Contains(pe.Err.Error(), "YAML") {
				t.Errorf("message %q, want %q and no YAML", pe.Err, tt.want)
			}
		})
	}
}
