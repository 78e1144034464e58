package catalogs

import (
	"reflect"
	"testing"
)

func TestListOrder(t *testing.T) {
	r := NewTable()
	for _, c := range []Catalog{
		{Name: "b", Priority: 0}, {Name: "a", Priority: 0}, {Name: "z", Priority: 10}, {Name: "m", Priority: -5},
	} {
		r.Put(c)
	}
	var got []string
	for _, c := range r.List() {
		got = append(got, c.Name)
	}
	if want := []string{"z", "a", "b", "m"}; !reflect.DeepEqual(got, want) {
		t.Errorf("List order = %v, want %v", got, want)
	}
}

func TestUpdate(t *testing.T) {
	r := NewTable()
	if r.Update("missing", func(c *Catalog) { c.LastError = "boom" }) {
		t.Error("Update of an unknown catalog reported success")
	}
	r.Put(Catalog{Name: "a", Priority: 3})
	if !r.Update("a", func(c *Catalog) { c.LastError = "boom" }) {
		t.Fatal("Update of a known catalog failed")
	}
	if c, _ := r.Get("a"); c.Priority != 3 || c.LastError != "boom" {
		t.Errorf("after Update: %+v", c)
	}
	r.Delete("a")
	if _, ok := r.Get("a"); ok {
		t.Error("Delete left the catalog")
	}
}

func TestLoaded(t *testing.T) {
	r := NewTable()
	if r.Loaded() {
		t.Fatal("a new table says it is loaded")
	}
	r.MarkLoaded()
	if !r.Loaded() {
		t.Error("MarkLoaded did not stick")
	}
}

func TestState(t *testing.T) {
	for _, tc := range []struct {
		unavailable, contentFailed, indexed bool
		want                                State
	}{
		{false, false, false, Pending},
		{false, false, true, Serving},
		{true, false, false, Unavailable},
		// Switched off while the loop has not removed the index yet: it
		// answers nothing already.
		{true, false, true, Unavailable},
		// Content that cannot index, and nothing older to serve.
		{false, true, false, Failed},
		// A live index keeps serving whatever newer content did.
		{false, true, true, Serving},
		// Switched off, how its content failed no longer matters.
		{true, true, false, Unavailable},
	} {
		c := Catalog{Unavailable: tc.unavailable, ContentFailed: tc.contentFailed}
		if got := c.State(tc.indexed); got != tc.want {
			t.Errorf("unavailable %v, content failed %v, indexed %v: %s, want %s", tc.unavailable, tc.contentFailed, tc.indexed, got, tc.want)
		}
	}
}
